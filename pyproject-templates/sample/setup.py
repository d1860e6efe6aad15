# The C extension is declared here because `ext-modules` in pyproject.toml is still marked
# experimental by setuptools.
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "vouch_sample._native",
            sources=["csrc/_native.c", "csrc/checksum.c"],
            include_dirs=["csrc"],
        )
    ]
)
