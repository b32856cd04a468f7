"""The C simulator core (docs/model.md): one extension module, plain C11.

Everything else about the package is in pyproject.toml. The sources are every ``.c`` file
under ``envs/core`` (a native policy's family file under ``envs/core/policies`` is
compiled by being there; ``envs/core/policies/twins.def`` lists its definitions).
"""

from pathlib import Path

from setuptools import Extension, setup

CORE = Path("envs/core")

core = Extension(
    "mpsched.envs._core",
    sources=sorted(str(p) for p in CORE.rglob("*.c")),
    include_dirs=[str(CORE)],
    libraries=["m"],
    depends=sorted(str(p) for p in (*CORE.rglob("*.h"), *CORE.rglob("*.def"))),
    # hidden symbols: calls between the core's files bind directly, not through the PLT
    extra_compile_args=["-O2", "-fvisibility=hidden", "-fno-semantic-interposition", "-std=c11", "-Wall", "-Wextra",
                        "-Wshadow", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
)

setup(ext_modules=[core])
