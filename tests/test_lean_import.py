"""budgetsvm.lean_import: the commands import scipy.sparse without numpy's unused submodules,
and the result is the same namespace as after a plain `import scipy.sparse`.

Each case runs in a fresh interpreter, since the test process has imported scipy long ago."""
import json
import subprocess
import sys

import pytest

# For every name that scipy's numpy compat namespace lists: whether it is numpy's own object
# (`is`), else what it is. Then numpy's own listings, which must be as they were.
DESCRIBE = r"""
import json, sys
import numpy
compat = sys.modules.get("scipy._lib.array_api_compat.numpy")
names = {}
if compat is not None:
    for name in compat.__all__:
        value = getattr(compat, name)
        same = hasattr(numpy, name) and getattr(numpy, name) is value
        kind = f"{type(value).__name__} {getattr(value, '__name__', '')}"
        names[name] = "numpy's" if same else kind
print(json.dumps({"compat": names, "compat_dir": dir(compat) if compat else None,
                  "numpy_all": sorted(numpy.__all__), "numpy_dir": dir(numpy)}))
"""

IMPORTER = "from budgetsvm.lean_import import import_scipy_sparse\n"
PLAIN = "import scipy.sparse\n" + DESCRIBE
LEAN = IMPORTER + "import_scipy_sparse()\n" + DESCRIBE


@pytest.fixture(scope="module")
def compat_namespace():
    """Skips where lean_import is the plain import: a scipy that builds no numpy compat
    namespace, or a numpy (1.x) that does not list its lazily loaded submodules."""
    if not run(PLAIN)["compat"]:
        pytest.skip("this scipy has no array_api_compat numpy namespace: the plain import")
    import numpy
    if not getattr(numpy, "__numpy_submodules__", None):
        pytest.skip(f"numpy {numpy.__version__} does not list its lazy submodules: the plain "
                    f"import")


def python(script):
    """Standard output of the script, run in a fresh interpreter (which must succeed)."""
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True).stdout


def run(script):
    return json.loads(python(script))


def test_the_compat_namespace_is_the_same_as_after_a_plain_import():
    plain, lean = run(PLAIN), run(LEAN)
    assert lean == plain
    # the names hidden during the import are there, and are numpy's objects
    assert {plain["compat"].get(name) for name in ("f2py", "testing", "ma")} <= {"numpy's", None}


MODULES_AFTER = r"""
import sys
from budgetsvm.lean_import import import_scipy_sparse
import_scipy_sparse()
import budgetsvm.io, budgetsvm.model_io, budgetsvm.train
print(" ".join(sorted(m for m in ("numpy.f2py", "numpy.testing", "unittest")
                      if m in sys.modules)))
"""


def test_the_unused_numpy_submodules_are_not_imported(compat_namespace):
    plain = python(MODULES_AFTER.replace("import_scipy_sparse()", "import scipy.sparse")).split()
    lean = python(MODULES_AFTER).split()
    if not plain:
        pytest.skip("this scipy's plain import loads none of them: nothing to save")
    assert lean == []


def test_a_later_attribute_fetches_the_submodule_on_first_use(compat_namespace):
    out = run(IMPORTER + "import_scipy_sparse()\n" + r"""
import json, sys
compat = sys.modules["scipy._lib.array_api_compat.numpy"]
before = "numpy.polynomial" in sys.modules
import numpy
print(json.dumps([before, compat.polynomial is numpy.polynomial,
                  "numpy.polynomial" in sys.modules]))
""")
    assert out == [False, True, True]


def test_missing_names_still_raise_attribute_error(compat_namespace):
    script = IMPORTER + "import_scipy_sparse()\n" + r"""
import sys
compat = sys.modules.get("scipy._lib.array_api_compat.numpy")
try:
    getattr(compat, "no_such_name_at_all")
except AttributeError:
    print("AttributeError")
"""
    assert python(script).strip() == "AttributeError"


def test_after_scipy_it_is_the_plain_import():
    script = ("import scipy.sparse, numpy\nbefore = (list(numpy.__all__), dir(numpy))\n"
              "from budgetsvm.lean_import import import_scipy_sparse\n"
              "assert import_scipy_sparse() is scipy.sparse\n"
              "assert (list(numpy.__all__), dir(numpy)) == before\nprint('ok')")
    assert python(script).strip() == "ok"


def test_the_commands_use_it(tmp_path, compat_namespace):
    # bsvm-train's start (budgetsvm.cli, as the command's argv[0]) and a whole training run
    data = tmp_path / "d.txt"
    data.write_text("1 1:0.5 2:1\n-1 1:-0.5 2:-1\n1 1:0.4\n-1 2:-0.3\n")
    script = (f"import sys\nsys.argv = ['bsvm-train', '-q', '-s', 'dcd', {str(data)!r}, "
              f"{str(tmp_path / 'm')!r}]\n"
              "from budgetsvm.cli import train\n"
              "print(' '.join(m for m in ('numpy.f2py', 'numpy.testing') if m in sys.modules))\n"
              "train.main()")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
    assert (tmp_path / "m").read_text().startswith("budgetsvm_model")


def test_a_failed_import_leaves_numpy_and_the_namespace_whole(compat_namespace):
    # scipy.sparse fails after the compat namespace is built (a module of it cannot be found):
    # the error comes out, numpy's listings are back and the namespace has every name
    failing = "import sys\n" + IMPORTER + """\
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name == "scipy.sparse._csr":
            raise ImportError("no scipy.sparse._csr (test)")
sys.meta_path.insert(0, Missing())
try:
    import_scipy_sparse()
except ImportError as error:
    print("ImportError:", error)
""" + DESCRIBE
    first, described = python(failing).split("\n", 1)
    assert first == "ImportError: no scipy.sparse._csr (test)"
    assert json.loads(described) == run(PLAIN)


def test_a_scipy_that_does_not_clone_numpy_gets_the_plain_import():
    script = ("import sys, numpy\nbefore = list(numpy.__all__)\n"
              "from budgetsvm import lean_import\n"
              "lean_import._scipy_clones_numpy = lambda: False\n"
              "lean_import.import_scipy_sparse()\n"
              "print(list(numpy.__all__) == before, 'numpy.f2py' in sys.modules)")
    plain_loads_f2py = "numpy.f2py" in python(
        "import sys, scipy.sparse; print(sorted(sys.modules))")
    assert python(script).split() == ["True", str(plain_loads_f2py)]
