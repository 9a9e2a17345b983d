"""Extension modules of budgetsvm and the Cython directives they share.

All metadata lives in pyproject.toml; this file only lists the compiled modules.
Set BSVM_DEBUG=1 to rebuild with bounds and initialisation checks switched on, and
BSVM_PORTABLE=1 to build without the build machine's vector instructions (for binaries that
must run on other machines).
"""
import os
import sys
import tempfile
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("BSVM_DEBUG", "") not in ("", "0")
PORTABLE = os.environ.get("BSVM_PORTABLE", "") not in ("", "0")
# Tried together, kept when the compiler accepts them: -march=native lets the solver loops use
# the build machine's vector instructions (AVX2/AVX-512 on x86: about 25% less BSGD time on
# ijcnn1); -ffp-contract=off keeps every multiply and add separately rounded (no fused
# multiply-add), so a model is bit for bit the one a portable build computes.
NATIVE_FLAGS = ["-march=native", "-ffp-contract=off"]
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



class ProbingBuildExt(build_ext):
    """build_ext that adds the optional compiler flags the compiler accepts."""

    def build_extensions(self):
        if not self.extensions:
            return
        extra = []
        if not DEBUG and not PORTABLE and self._accepts(NATIVE_FLAGS):
            extra = NATIVE_FLAGS
        print(f"budgetsvm: compiling {len(self.extensions)} Cython modules with "
              f"{' '.join(COMPILE_ARGS + extra)}", file=sys.stderr)
        for ext in self.extensions:
            ext.extra_compile_args = COMPILE_ARGS + extra
        super().build_extensions()

    def _accepts(self, flags):
        with tempfile.TemporaryDirectory() as tmp:
            probe = Path(tmp) / "probe.c"
            probe.write_text("int main(void) { return 0; }\n")
            try:
                self.compiler.compile([str(probe)], output_dir=tmp, extra_postargs=flags)
            except Exception:
                return False
        return True


setup(ext_modules=cythonize(extensions, compiler_directives=DIRECTIVES, quiet=True),
      cmdclass={"build_ext": ProbingBuildExt})
