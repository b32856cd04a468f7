"""Build the C simulator core ``mpsched.envs._core``.

Everything else is declared in ``pyproject.toml``; this file exists only because the
extension module needs a ``setuptools.Extension``.
"""

from pathlib import Path

from setuptools import Extension, setup

CORE_DIR = Path("envs") / "core"
CORE_SOURCES = sorted(str(p) for p in CORE_DIR.glob("*.c") if p.name != "episode_main.c")

setup(
    ext_modules=[
        Extension(
            "mpsched.envs._core",
            sources=CORE_SOURCES,
            include_dirs=[str(CORE_DIR)],
            extra_compile_args=[
                "-O2",
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Wshadow",
                "-Wno-unused-parameter",
                "-Wno-missing-field-initializers",
                "-fno-strict-aliasing",
            ],
        )
    ]
)
