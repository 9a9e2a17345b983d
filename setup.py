"""Extension modules of budgetsvm and the Cython directives they share.

All metadata lives in pyproject.toml; this file only lists the compiled modules.
Set BSVM_DEBUG=1 to rebuild with bounds and initialisation checks switched on.
"""
import os
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("BSVM_DEBUG", "") not in ("", "0")
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}
COMPILE_ARGS = ["-O0", "-g"] if DEBUG else ["-O3"]

extensions = [
    Extension(
        f"budgetsvm.{path.stem}",
        [str(path)],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=COMPILE_ARGS,
    )
    for path in sorted(Path("budgetsvm").glob("_*.pyx"))
    # BSVM_ONLY=_dcd,_parse builds just those modules (for quick rebuilds during development);
    # BSVM_ONLY=none builds none (the Makefile's editable install; it compiles with build_ext).
    if not os.environ.get("BSVM_ONLY") or path.stem in os.environ["BSVM_ONLY"].split(",")
]

setup(ext_modules=cythonize(extensions, compiler_directives=DIRECTIVES, quiet=True))
