"""Test configuration: hypothesis runs derandomized under CI so that a run is repeatable;
locally it explores new examples every time."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
