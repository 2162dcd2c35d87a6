"""Shared fixtures: the raw-data mirror (for count checks on the real collections)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _mirror() -> Path | None:
    candidate = Path(os.environ.get("HYBRID_IR_MIRROR", REPO.parent / "shared" / "data"))
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The real raw-data mirror; tests that need it are marked ``mirror``."""
    path = _mirror()
    if path is None:
        pytest.skip("raw-data mirror not found: set HYBRID_IR_MIRROR or place it at ../shared/data")
    return path
