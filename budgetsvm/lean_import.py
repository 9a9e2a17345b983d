"""Importing scipy.sparse without the numpy submodules that its import loads and never uses.

scipy (1.15 and later) carries its own copy of array_api_compat. When scipy.sparse is first
imported, that copy builds a numpy namespace by copying every public name of numpy: first
`from numpy import *`, then getattr over dir(numpy). numpy 2 loads most of its submodules on
first access, so this copy imports numpy.f2py, numpy.testing (and unittest with it), numpy.ma,
numpy.polynomial and others, modules no command uses. Without them the imports of bsvm-train
take 0.24 s instead of 0.31 s (medians of 20 alternating runs on a 2-core test machine).

`import_scipy_sparse` hides numpy's not-yet-loaded submodules from numpy's `__all__` and
`dir()` while scipy.sparse is imported, and restores both at once. The compat namespace then
gets the hidden names back: in its `__all__`, and as attributes that a module `__getattr__`
fetches from numpy on first use. Every name it lists therefore resolves to the same object as
after a plain import (tests/test_lean_import.py compares the two).

Only the commands call this (budgetsvm.cli). A program that imports the library imports scipy
as it likes. Where numpy or scipy do not look as expected (numpy 1.x, a scipy whose compat
layer does not clone numpy's names, scipy already imported) this is the plain import.
"""
import importlib
import importlib.util
import os
import sys

COMPAT_NUMPY = "scipy._lib.array_api_compat.numpy"


def import_scipy_sparse():
    """Import scipy.sparse (see the module's docstring) and return it."""
    if "scipy.sparse" in sys.modules or COMPAT_NUMPY in sys.modules or \
            not _scipy_clones_numpy():
        return importlib.import_module("scipy.sparse")
    import numpy
    submodules = getattr(numpy, "__numpy_submodules__", None)
    public, listing = numpy.__dict__.get("__all__"), numpy.__dict__.get("__dir__")
    if not submodules or not isinstance(public, list) or not callable(listing):
        return importlib.import_module("scipy.sparse")
    not_loaded = {name for name in submodules if f"numpy.{name}" not in sys.modules}
    try:
        numpy.__all__ = [name for name in public if name not in not_loaded]
        numpy.__dir__ = lambda: [name for name in listing() if name not in not_loaded]
        return importlib.import_module("scipy.sparse")
    finally:
        numpy.__all__, numpy.__dir__ = public, listing
        # also when the import failed after building the namespace: a caller may go on
        compat = sys.modules.get(COMPAT_NUMPY)
        if compat is not None:
            _give_back(compat, not_loaded - set(vars(compat)), numpy)


def _scipy_clones_numpy():
    """Whether this scipy builds its compat namespace the way the module's docstring says
    (its source calls clone_module), found without importing scipy; else the plain import."""
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        return False
    for folder in spec.submodule_search_locations:
        source = os.path.join(folder, "_lib", "array_api_compat", "numpy", "__init__.py")
        try:
            with open(source, encoding="utf-8") as file:
                return "clone_module(" in file.read()
        except OSError:
            continue
    return False


def _give_back(compat, hidden, numpy):
    """The names that the compat namespace would have copied from numpy, fetched on first use."""
    if not hidden:
        return
    own_getattr = vars(compat).get("__getattr__")

    def __getattr__(name):
        if name in hidden:
            return getattr(numpy, name)
        if own_getattr is not None:
            return own_getattr(name)
        raise AttributeError(f"module {compat.__name__!r} has no attribute {name!r}")

    compat.__getattr__ = __getattr__
    if isinstance(vars(compat).get("__all__"), list):
        compat.__all__ = sorted(set(compat.__all__) | hidden)
