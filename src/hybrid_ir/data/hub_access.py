"""Whether this process may ask the Hugging Face hub: off in every compute job, which reads
files only, and on in the jobs that fetch pinned models (:mod:`hybrid_ir.data.hub`). A module of
its own, so that every job's code version (:mod:`hybrid_ir.planning.code_digest`) covers this
switch and not the hub cache's code."""

from __future__ import annotations

import os
import sys


def set_hub_access(allowed: bool) -> None:
    """Allow or forbid this process's requests to the hub (huggingface_hub's offline mode,
    which transformers follows too), also when the client was imported already."""
    value = "0" if allowed else "1"
    os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = value
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        vars(constants)["HF_HUB_OFFLINE"] = not allowed  # read once, at its import
