"""The stand-in files of make test-paper are the same bytes on every call and in every process."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _digests(module_name: str) -> dict[str, str]:
    module = importlib.import_module(module_name)
    return {path: hashlib.sha256(make()).hexdigest() for path, make in module.FILES.items()}


@pytest.mark.parametrize("module_name", ["standins_math", "standins_text"])
def test_every_generator_gives_the_same_bytes_each_call(module_name: str) -> None:
    first = _digests(module_name)
    for cached in importlib.import_module(module_name).CACHED:
        cached.cache_clear()  # rebuilt from their seeds, not served from memory
    assert _digests(module_name) == first
    # Another interpreter, with another hash seed, writes the same bytes too.
    script = f"import json, test_standins as t; print(json.dumps(t._digests({module_name!r})))"
    environment = os.environ | {"PYTHONHASHSEED": "7", "PYTHONPATH": str(TESTS)}
    output = subprocess.run(
        [sys.executable, "-c", script], env=environment, capture_output=True, text=True, check=True
    )
    assert json.loads(output.stdout) == first
