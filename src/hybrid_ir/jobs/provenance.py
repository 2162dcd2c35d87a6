"""Provenance: which code, configuration, data, seeds and machine produced each result.

Every workflow job that runs through :func:`hybrid_ir.jobs.run.run_step` leaves one JSON record per
output under ``results/provenance/<output path>.json``: the rule and wildcards, the inputs, the
sha256 of the output and of every raw file it derives from (the manifest's, carried down from
the fetch records), the seeds among the job's params, the git commit of the workflow (and
whether the tree was dirty), the hash of the effective configuration, the versions of the
packages that decide the numbers, the environment (the sha256 of ``requirements.lock`` and of the
installed package list, and every locked package installed at another version), the device and
the wall time.

Records sit in their own tree, not beside the outputs, so that a table directory holds tables
and so that the byte-for-byte comparisons of results never meet a wall time.
``hybrid-ir provenance RESULT`` follows the records from a result back to the raw files.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from hybrid_ir.data.formats import atomic_output, parse_json, read_document
from hybrid_ir.data.members import sha256_of
from hybrid_ir.data.raw_check import raw_input_problems
from hybrid_ir.errors import HybridIRError, InputFormatError, printable
from hybrid_ir.jobs.environment import LOCK, environment_record
from hybrid_ir.paths import RESULTS

RECORDS = f"{RESULTS}/provenance"

PACKAGES = (
    "torch",
    "transformers",
    "pyserini",
    "pya0",
    "ir-measures",
    "colbert-ai",
    "faiss-cpu",
    "faiss-gpu",
)
"""The distributions whose versions can change a number (absent ones are left out)."""

LOCAL_KEYS = ("mirror", "manifest", "raw_url", "resources", "job_servers")
"""Configuration keys that say where the raw files are, how large a job may be and how its
process starts: they cannot change a result (every raw file is checked against its sha256), so
the configuration hash leaves them out and two machines with the same configuration agree on
it."""

SHORT = 12
"""Hex digits of a commit or hash printed in table footers."""


def record_path(output: str | Path) -> Path:
    """Where the record of ``output`` (a path relative to the working directory) is kept."""
    relative = Path(output)
    if relative.is_absolute():
        relative = relative.relative_to(relative.anchor)
    return Path(RECORDS) / f"{relative.as_posix()}.json"


def config_hash(config: Mapping[str, Any]) -> str:
    """sha256 of the effective configuration (defaults filled in), keys sorted, without
    :data:`LOCAL_KEYS`."""
    kept = {key: value for key, value in config.items() if key not in LOCAL_KEYS}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class GitState:
    commit: str
    """The full commit id, or ``unknown`` outside a git checkout."""
    dirty: bool
    """Tracked files differ from the commit."""

    def describe(self, digits: int = SHORT) -> str:
        commit = self.commit[:digits] if self.commit != "unknown" else self.commit
        return f"{commit} (dirty)" if self.dirty else commit


@cache
def git_state(directory: str) -> GitState:
    """The commit of the checkout holding ``directory``; untracked files (results, caches) do
    not make it dirty, edits to tracked ones do."""

    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", "-C", directory, *arguments], capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.CalledProcessError):
        return GitState("unknown", False)
    return GitState(commit, dirty)


@cache
def package_versions() -> dict[str, str]:
    """Installed versions of :data:`PACKAGES`, and Anserini's from the jar pyserini bundles."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    anserini = anserini_version()
    if anserini:
        versions["anserini"] = anserini
    return versions


def anserini_version() -> str | None:
    """The version in the name of pyserini's ``anserini-<version>-fatjar.jar``, read from the
    distribution's file list, so that no JVM starts."""
    try:
        files = metadata.files("pyserini") or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        name = Path(str(file)).name
        if name.startswith("anserini-") and name.endswith("-fatjar.jar"):
            return name.removeprefix("anserini-").removesuffix("-fatjar.jar")
    return None


def device() -> str:
    """``cuda:<name>`` when the step used torch on a visible GPU, else ``cpu``; torch is only
    asked if the step imported it."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return f"cuda:{torch.cuda.get_device_name(0)}"
    return "cpu"


def seeds(value: Any, where: str = "params") -> dict[str, int]:
    """Every ``seed`` key inside the job's params, by its dotted path."""
    found: dict[str, int] = {}
    if isinstance(value, Mapping):
        for key, item in value.items():
            path = f"{where}.{key}"
            if key == "seed" and isinstance(item, int):
                found[path] = item
            else:
                found.update(seeds(item, path))
    elif isinstance(value, list | tuple):
        for position, item in enumerate(value):
            found.update(seeds(item, f"{where}[{position}]"))
    return found


def output_digest(path: Path) -> str | None:
    """sha256 of a file output; None for a directory (an index), whose files are many."""
    return sha256_of(path) if path.is_file() else None


def _is_text_map(value: object, kind: type = str) -> bool:
    return isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(item, kind) and not isinstance(item, bool)
        for key, item in value.items()
    )


def _is_environment(value: object) -> bool:
    return value is None or (
        isinstance(value, dict)
        and isinstance(value.get("lock_sha256"), str | type(None))
        and isinstance(value.get("freeze_sha256"), str)
        and isinstance(value.get("lock_mismatches", []), list)
        and all(isinstance(item, str) for item in value.get("lock_mismatches", []))
    )


RECORD_FIELDS: dict[str, Callable[[object], bool]] = {
    "output": lambda value: isinstance(value, str),
    "sha256": lambda value: isinstance(value, str | type(None)),
    "rule": lambda value: isinstance(value, str),
    "wildcards": lambda value: _is_text_map(value),
    "inputs": lambda value: isinstance(value, list) and all(isinstance(i, str) for i in value),
    "raw_inputs": lambda value: _is_text_map(value),
    "seeds": lambda value: _is_text_map(value, int),
    "git": lambda value: (
        isinstance(value, dict)
        and isinstance(value.get("commit"), str)
        and isinstance(value.get("dirty"), bool)
    ),
    "config_sha256": lambda value: isinstance(value, str),
    "packages": lambda value: _is_text_map(value),
    "environment": _is_environment,
    "device": lambda value: isinstance(value, str),
    "threads": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "wall_time_s": lambda value: (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    ),
}
"""The fields :func:`write_records` writes that readers use, each with what its value must be
(``environment`` may be absent, in a record older than it)."""


def read_record(output: str | Path) -> dict | None:
    """The provenance record of ``output``, None when it has none; a record that is not JSON,
    or lacks a field or holds it as another type, is an error naming the file."""
    path = record_path(output)
    if not path.is_file():
        return None
    try:
        record = parse_json(read_document(path), path)
    except InputFormatError as error:
        problem = f"not a provenance record: {error.problem}"
        raise InputFormatError(path, error.line, problem) from None
    if not isinstance(record, dict):
        raise InputFormatError(path, 1, "not a provenance record: not a JSON object")
    for field, valid in RECORD_FIELDS.items():
        if not valid(record.get(field)):
            raise InputFormatError(
                path, None, f"provenance record without a valid {field!r} (corrupt or edited?)"
            )
    return record


def inherited_raw_inputs(inputs: list[str]) -> dict[str, str]:
    """Raw file -> sha256 over the records of ``inputs``."""
    raw: dict[str, str] = {}
    for name in inputs:
        record = read_record(name)
        if record:
            raw.update(record["raw_inputs"])
    return dict(sorted(raw.items()))


def _plain(value: Any) -> Any:
    """Snakemake's params and wildcards as JSON (named lists become dicts)."""
    if hasattr(value, "items"):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


@dataclass(frozen=True)
class Identity:
    """What a table's footer names: the code and the configuration."""

    git: GitState
    config_sha256: str

    def footer(self) -> str:
        return (
            f"hybrid-ir at commit {self.git.describe()}, configuration sha256 "
            f"{self.config_sha256[:SHORT]}"
        )


def identity(job: Any) -> Identity:
    """The :class:`Identity` of a Snakemake ``job`` (a script's ``snakemake`` object)."""
    return Identity(git_state(str(job.scriptdir)), config_hash(job.config))


def write_records(job: Any, wall_time_s: float, raw: Mapping[str, str] | None = None) -> None:
    """One record per output of the finished ``job``; ``raw`` is the raw file (mirror path ->
    sha256) the job itself fetched, if any."""
    inputs = [str(name) for name in job.input]
    raw_inputs = {**inherited_raw_inputs(inputs), **(raw or {})}
    params = _plain(dict(job.params.items()))
    shared = {
        "rule": job.rule,
        "wildcards": _plain(dict(job.wildcards.items())),
        "inputs": inputs,
        "raw_inputs": dict(sorted(raw_inputs.items())),
        "seeds": seeds(params),
        "code": params.get("code"),
        "git": {"commit": (state := identity(job).git).commit, "dirty": state.dirty},
        "config_sha256": config_hash(job.config),
        "packages": package_versions(),
        "environment": environment_record(Path(job.scriptdir).resolve().parents[1] / LOCK),
        "device": device(),
        "threads": job.threads,
        "wall_time_s": round(wall_time_s, 3),
    }
    for output in map(str, job.output):
        record = {"output": output, "sha256": output_digest(Path(output)), **shared}
        target = record_path(output)
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(target) as out:
            out.write(json.dumps(record, indent=1) + "\n")


PROVENANCE_STATES = (
    "recorded", "changed", "missing", "unrecorded", "repository", "outside", "listed_above",
)  # fmt: skip
"""A node's ``state`` in :func:`provenance_tree`: its record and the file agree; the file changed
on disk since its record was written; the file is gone; a result without a record; a file of
the workflow's repository (a configuration, an expected-scores file); a path outside the
repository, which is neither read nor followed; an input met before, whose node is not
repeated."""

MAX_CHAIN = 100
"""The most records a chain from a result back to its raw files may pass through: the
workflow's longest is about twenty; more is a set of edited records."""


def _place(result: str | Path) -> tuple[str, str]:
    """``(name, where)``: the path relative to the workflow's directory where it is inside it,
    and ``results``, ``repository`` or ``outside``."""
    absolute = os.path.abspath(result)
    relative = os.path.relpath(absolute)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return Path(result).as_posix(), "outside"
    name = Path(relative).as_posix()
    return name, "results" if name.startswith(f"{RESULTS}/") else "repository"


def _kept_as_result(path: Path) -> bool:
    """A regular file or a folder (an index): what a job writes, and nothing read endlessly
    (a device, a pipe)."""
    return path.is_file() or path.is_dir()


def provenance_tree(result: str | Path) -> dict[str, Any]:
    """What produced ``result`` (a file or folder under ``results/``), as ``hybrid-ir provenance
    --format json`` prints it: ``file``, ``state`` (:data:`PROVENANCE_STATES`) and, where there
    is a record, ``rule``, ``wildcards``, ``sha256``, ``wall_time_s``, ``seeds`` and ``inputs``
    (a node each, back to the raw files); the top node adds ``commit``, ``dirty``,
    ``config_sha256``, ``packages``, ``environment`` (``lock_sha256``, ``freeze_sha256``,
    ``lock_mismatches``; ``null`` in a record older than them), ``device``, ``threads`` and
    ``raw_inputs`` (mirror path -> sha256) and ``raw_input_problems`` (mirror path -> what is
    wrong with its copy under ``results/raw/``, for each copy whose bytes no longer match;
    empty when all do). Only records under ``results/`` are followed and
    only regular files hashed."""
    name, where = _place(result)
    exists = where != "outside" and os.path.lexists(name)
    if where != "results" or (exists and not _kept_as_result(Path(name))):
        raise HybridIRError(
            f"{printable(name)}: not a workflow result (a file or folder under {RESULTS}/)"
        )
    return _node(result, set(), 0)


def _node(result: str | Path, seen: set[str], depth: int) -> dict[str, Any]:
    name, where = _place(result)
    if where == "outside":
        return {"file": name, "state": "outside"}
    on_disk = os.path.lexists(name)
    record = read_record(name) if where == "results" else None
    if record is None:
        state = "unrecorded" if where == "results" else "repository"
        return {"file": name, "state": state if on_disk else "missing"}
    if name in seen:
        return {"file": name, "state": "listed_above"}
    if depth == MAX_CHAIN:
        raise InputFormatError(
            record_path(name),
            None,
            f"provenance records chained more than {MAX_CHAIN} deep: not a chain the workflow "
            "writes (edited records?)",
        )
    if not on_disk:
        state = "missing"
    elif record["sha256"] and not Path(name).is_file():
        state = "changed"
    elif record["sha256"] and sha256_of(Path(name)) != record["sha256"]:
        state = "changed"
    else:
        state = "recorded"
    node: dict[str, Any] = {
        "file": name,
        "state": state,
        "rule": record["rule"],
        "wildcards": record["wildcards"],
    }
    if not seen:
        node |= {
            "commit": record["git"]["commit"],
            "dirty": record["git"]["dirty"],
            "config_sha256": record["config_sha256"],
            "packages": record["packages"],
            "environment": record.get("environment"),
            "device": record["device"],
            "threads": record["threads"],
            "raw_inputs": record["raw_inputs"],
            "raw_input_problems": raw_input_problems(record["raw_inputs"]),
        }
    node |= {
        "sha256": record["sha256"],
        "wall_time_s": record["wall_time_s"],
        "seeds": record["seeds"],
    }
    seen.add(name)
    node["inputs"] = [_node(source, seen, depth + 1) for source in record["inputs"]]
    return node


_NO_RECORD = {
    ("unrecorded", True): (
        "no provenance record: made outside the workflow or before it kept records"
    ),
    ("repository", False): "a file of the workflow's repository",
    ("outside", False): "outside the workflow's repository: not read",
    ("missing", True): "no longer on disk, and no provenance record",
    ("missing", False): "no longer on disk",
}  # fmt: skip
"""The text of a node without a record, by its state and whether it is under results/."""
_FLAGS = {
    "missing": " [no longer on disk]",
    "changed": " [changed on disk since its record was written]",
}


def chain(result: str | Path) -> Iterator[str]:
    """Lines describing ``result`` and, indented below it, each input back to the raw files;
    an input met twice is named again but not expanded again; control characters in a record
    are shown escaped, so that a record cannot recolour or rewrite the terminal."""
    for line in _lines(provenance_tree(result), 0):
        yield printable(line)


def _lines(node: Mapping[str, Any], depth: int) -> Iterator[str]:
    indent = "  " * depth
    name, state = node["file"], node["state"]
    if "rule" not in node:
        if state == "listed_above":
            yield f"{indent}{name} (listed above)"
        else:
            yield f"{indent}{name} ({_NO_RECORD[state, name.startswith(f'{RESULTS}/')]})"
        return
    yield f"{indent}{name}{_FLAGS.get(state, '')}"
    wildcards = node["wildcards"]
    yield f"{indent}  rule {node['rule']}" + (
        " " + ", ".join(f"{k}={v}" for k, v in wildcards.items()) if wildcards else ""
    )
    if "commit" in node:
        git = GitState(node["commit"], node["dirty"])
        packages = ", ".join(f"{k} {v}" for k, v in node["packages"].items())
        yield f"{indent}  commit {git.describe(40)}; configuration sha256 {node['config_sha256']}"
        yield f"{indent}  packages: {packages}"
        yield from _environment_lines(node["environment"], indent)
        threads = node["threads"]
        yield f"{indent}  device {node['device']}, {threads} thread{'s' if threads > 1 else ''}"
    if node["sha256"]:
        yield f"{indent}  sha256 {node['sha256']}"
    yield f"{indent}  wall time {node['wall_time_s']:.1f} s"
    if node["seeds"]:
        yield f"{indent}  seeds: " + ", ".join(f"{k} = {v}" for k, v in node["seeds"].items())
    if node.get("raw_inputs"):
        yield f"{indent}  raw files ({len(node['raw_inputs'])}):"
        problems = node.get("raw_input_problems", {})
        for raw, sha256 in node["raw_inputs"].items():
            flag = f" [{problems[raw]}]" if raw in problems else ""
            yield f"{indent}    {raw} sha256 {sha256}{flag}"
    for child in node["inputs"]:
        yield from _lines(child, depth + 1)


def _environment_lines(environment: Mapping[str, Any] | None, indent: str) -> Iterator[str]:
    if environment is None:
        yield f"{indent}  environment: not recorded"
        return
    lock = environment["lock_sha256"]
    yield (
        f"{indent}  environment: {LOCK} sha256 {lock or 'absent'}; installed packages sha256 "
        f"{environment['freeze_sha256']}"
    )
    differing = environment.get("lock_mismatches") or []
    if differing:
        yield f"{indent}  [installed packages differ from {LOCK}: " + "; ".join(differing) + "]"
