"""Training checkpoints shared by MLM pretraining, DPR and ColBERT: ``step-NNNNNNN`` directories
under a job's work directory (outside its Snakemake outputs, which a failed job loses), each
written whole or not at all, the newest few kept, read back without running pickled code, and
the global random generators saved as plain data.

What a checkpoint must match to be resumed differs per training (each module fingerprints its
own settings, inputs and code), so matching stays with the callers.
"""

from __future__ import annotations

import os
import pickle
import random
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import numpy as np

from hybrid_ir.errors import HybridIRError

KEEP = 2
"""Checkpoints kept: the newest, and the one before in case the newest is cut by a kill."""
STATE_FILE = "state.pt"
_STEP = re.compile(r"step-(\d+)")


def step_directories(workdir: Path) -> list[tuple[int, Path]]:
    """``(step, directory)`` of every checkpoint under ``workdir``, oldest first."""
    if not workdir.is_dir():
        return []
    found = ((_STEP.fullmatch(p.name), p) for p in workdir.iterdir() if p.is_dir())
    return sorted((int(match.group(1)), path) for match, path in found if match)


def step_directory(workdir: Path, step: int) -> Path:
    return workdir / f"step-{step:07d}"


def save_state(
    workdir: Path, step: int, state: Mapping, texts: Mapping[str, str] | None = None
) -> Path:
    """Write ``state`` (and ``texts``: file name -> content) as step ``step``'s checkpoint,
    through a staging directory renamed into place, so a kill leaves the previous one intact."""
    import torch

    target = step_directory(workdir, step)
    staging = workdir / f".{target.name}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    torch.save(dict(state), staging / STATE_FILE)
    for name, text in (texts or {}).items():
        (staging / name).write_text(text, encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)
    return target


def prune(workdir: Path, keep: int = KEEP) -> None:
    """Remove all but the newest ``keep`` checkpoints."""
    for _, old in step_directories(workdir)[:-keep]:
        shutil.rmtree(old)


def load_state(directory: Path, what: str) -> dict:
    """The state saved in checkpoint ``directory``, unpickled with torch's weights-only loader:
    a checkpoint directory may have been planted or tampered with, and a full unpickler would
    run any code it names. Everything a checkpoint holds (tensors, numbers, strings, lists,
    dicts) passes that loader. ``what`` names the kind of checkpoint in errors."""
    import torch

    file = directory / STATE_FILE
    advice = f"delete {directory} to resume from an earlier checkpoint or start over"
    try:
        state = torch.load(file, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError:
        raise HybridIRError(
            f"{file}: refusing to load this checkpoint: it holds objects other than tensors "
            f"and plain data, which could run code when loaded; {advice}"
        ) from None
    except (OSError, EOFError, RuntimeError) as error:
        reason = next(iter(str(error).splitlines()), "")[:200] or type(error).__name__
        raise HybridIRError(f"{file}: cannot read this checkpoint ({reason}); {advice}") from None
    if not isinstance(state, dict):
        raise HybridIRError(f"{file}: not a {what} checkpoint (no state dict); {advice}")
    return state


def rng_states() -> dict:
    """Python's, NumPy's and torch's global generators (CUDA's where it has started), in types
    torch's weights-only loader reads back."""
    import torch

    legacy = cast(tuple[str, np.ndarray, int, int, float], np.random.get_state(legacy=True))
    kind, keys, position, has_gauss, gauss = legacy
    version, internal, python_gauss = random.getstate()
    return {
        "python": [version, list(internal), python_gauss],
        "numpy": [kind, keys.tolist(), position, has_gauss, gauss],
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else [],
    }


def restore_rng_states(states: Mapping) -> None:
    """Put back what :func:`rng_states` saved; CUDA's only on as many GPUs as it was saved from."""
    import torch

    version, internal, python_gauss = states["python"]
    random.setstate((version, tuple(internal), python_gauss))
    kind, keys, position, has_gauss, gauss = states["numpy"]
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), position, has_gauss, gauss))
    torch.set_rng_state(states["torch"])
    if states["cuda"] and len(states["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(states["cuda"])
