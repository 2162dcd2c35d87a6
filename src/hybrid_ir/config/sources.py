"""Which configuration file sets a key: what an error about the key names, where a user goes to
fix it.

The workflow's start reads the layers (config.yaml, each ``--configfile``, ``--config``) and
keeps them in :data:`LAYERS_FILE`, so that a job's error found long after validation (a fold
count larger than the topics, a batch that does not split over the processes) names the file
too. This module stays small and light: every job imports it to report its errors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from hybrid_ir.errors import ConfigError

LAYERS_FILE = Path(".snakemake") / "hybrid_ir" / "config_layers.json"
"""The current start's layers, in the workflow's working directory (beside Snakemake's own
state, on the file system a cluster's jobs share)."""

Layers = Sequence[tuple[str, Mapping]]


def key_source(key: str, layers: Layers) -> str | None:
    """The layer (its file, or ``--config``) that sets the longest prefix of a dotted ``key``
    (``tables.paper000-table1.notes``; a name may itself hold dots, as ``hybrid-0.8`` does), the
    topmost on a tie: where a user goes to fix it. None when no layer sets its first part."""
    best: tuple[int, str] | None = None
    for name, layer in layers:
        node: object = layer
        rest, depth = key, 0
        while isinstance(node, Mapping) and rest:
            found = next(
                (k for k in sorted(map(str, node), key=len, reverse=True)
                 if rest == k or rest.startswith(k + ".")),
                None,
            )  # fmt: skip
            if found is None:
                break
            node, rest, depth = node[found], rest[len(found) + 1 :], depth + 1
        if depth and (best is None or depth >= best[0]):
            best = (depth, name)
    return best[1] if best else None


def attributed_message(message: str, layers: Layers) -> str:
    """``message`` with its ``config: <key>`` prefix naming the layer that sets the key
    (unchanged when it has no such prefix or no layer sets the key)."""
    head, colon, rest = message.partition(": ")
    if head != "config" or not colon:
        return message
    key = rest.split(": ", 1)[0].split(" ", 1)[0]
    source = key_source(key, layers)
    return f"{source}: {rest}" if source else message


def attributed(error: ConfigError, layers: Layers) -> ConfigError:
    """``error`` with its ``config: <key>:`` prefix naming the layer that sets the key."""
    message = attributed_message(str(error), layers)
    return error if message == str(error) else ConfigError(message)


def write_layers(layers: Layers, path: Path = LAYERS_FILE) -> None:
    """Keep the layers for this start's jobs (rewritten only when they changed)."""
    text = json.dumps([[name, layer] for name, layer in layers], default=str, sort_keys=True)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def read_layers(path: Path = LAYERS_FILE) -> list[tuple[str, Mapping]]:
    """The layers the workflow's start kept; none when there are none or they cannot be read
    (an error is then reported with ``config:`` as its source)."""
    try:
        return [(name, layer) for name, layer in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError):
        return []
