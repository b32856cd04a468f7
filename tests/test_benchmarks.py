"""The benchmark scripts under benchmarks/ run: each one's imports resolve and its
argument parser answers --help (their measurements are not tests); core_build_options'
fixed-shape sources replace what they should."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


def test_there_are_benchmark_scripts() -> None:
    assert len(SCRIPTS) >= 5


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_script_starts(script: Path) -> None:
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


@pytest.fixture(scope="module")
def core_build_options() -> Any:
    spec = importlib.util.spec_from_file_location("core_build_options", BENCHMARKS / "core_build_options.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fix_shape_replaces_reads_and_leaves_writes(core_build_options: Any) -> None:
    source = ("s->n_paths = c->n_paths; for (i = 0; i < s->n_paths; i++) s->starts_pending--; "
              "if (a && s->copies) q = &s->copies; s->copies |= 1; xs->n_paths; b = s->n_paths == 1;")
    fixed, counts = core_build_options.fix_shape(source, {"s->n_paths": "1", "s->copies": "0",
                                                          "s->starts_pending": "0"})
    assert fixed == ("s->n_paths = c->n_paths; for (i = 0; i < (1); i++) s->starts_pending--; "
                     "if (a && (0)) q = &s->copies; s->copies |= 1; xs->n_paths; b = (1) == 1;")
    assert counts == {"s->n_paths": 2, "s->copies": 1, "s->starts_pending": 0}


def test_every_fixed_shape_field_is_read_in_the_core(core_build_options: Any, tmp_path: Path) -> None:
    replaced = core_build_options.fixed_shape_sources(tmp_path / "src")
    assert set(replaced) == set(core_build_options.FIXED_SHAPE)
    assert min(replaced.values()) > 0
    assert (tmp_path / "src" / "sim.c").read_text() != (core_build_options.CORE / "sim.c").read_text()
