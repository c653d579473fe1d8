"""Build of the optional C extension ``roadcheck._accel``; everything else is in pyproject.toml.

The extension is optional: where it cannot be compiled (no C compiler), the install
goes on without it and replay reads native files with its Python path alone.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("roadcheck._accel", ["src/roadcheck/_accel.c"], optional=True,
                             extra_compile_args=["-O2"])])
