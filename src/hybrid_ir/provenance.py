"""Provenance: which code, configuration, data, seeds and machine produced each result.

Every workflow job that runs through :func:`hybrid_ir.logged.run_step` leaves one JSON record per
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
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from hybrid_ir.environment import LOCK, environment_record
from hybrid_ir.errors import InputFormatError
from hybrid_ir.formats import atomic_output
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

LOCAL_KEYS = ("mirror", "manifest", "resources", "job_servers")
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


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def output_digest(path: Path) -> str | None:
    """sha256 of a file output; None for a directory (an index), whose files are many."""
    return file_sha256(path) if path.is_file() else None


RECORD_FIELDS: dict[str, type | tuple[type, ...]] = {
    "output": str,
    "sha256": (str, type(None)),
    "rule": str,
    "wildcards": dict,
    "inputs": list,
    "raw_inputs": dict,
    "seeds": dict,
    "git": dict,
    "config_sha256": str,
    "packages": dict,
    "device": str,
    "threads": int,
    "wall_time_s": (int, float),
}
"""The fields :func:`write_records` writes that readers use, and their JSON types."""


def read_record(output: str | Path) -> dict | None:
    """The provenance record of ``output``, None when it has none; a record that is not JSON,
    or lacks a field or holds it as another type, is an error naming the file."""
    path = record_path(output)
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as handle:
        try:
            record = json.load(handle)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            line = getattr(error, "lineno", None)
            raise InputFormatError(path, line, f"not a provenance record: {error}") from None
    if not isinstance(record, dict):
        raise InputFormatError(path, 1, "not a provenance record: not a JSON object")
    for field, kind in RECORD_FIELDS.items():
        if not isinstance(record.get(field), kind) or isinstance(record.get(field), bool):
            raise InputFormatError(
                path, None, f"provenance record without a valid {field!r} (corrupt or edited?)"
            )
    if not {"commit", "dirty"} <= record["git"].keys():
        raise InputFormatError(
            path, None, "provenance record without a valid 'git' (corrupt or edited?)"
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
    "recorded", "changed", "missing", "unrecorded", "repository", "listed_above",
)  # fmt: skip
"""A node's ``state`` in :func:`provenance_tree`: its record and the file agree; the file changed
on disk since its record was written; the file is gone; a result without a record; a file of
the workflow's repository (a configuration, an expected-scores file); an input met before,
whose node is not repeated."""


def provenance_tree(result: str | Path, seen: set[str] | None = None) -> dict[str, Any]:
    """What produced ``result``, as ``hybrid-ir provenance --format json`` prints it: ``file``,
    ``state`` (:data:`PROVENANCE_STATES`) and, where there is a record, ``rule``,
    ``wildcards``, ``sha256``, ``wall_time_s``, ``seeds`` and ``inputs`` (a node each, back to
    the raw files); the top node adds ``commit``, ``dirty``, ``config_sha256``, ``packages``,
    ``environment`` (``lock_sha256``, ``freeze_sha256``, ``lock_mismatches``; ``null`` in a
    record older than them), ``device``, ``threads`` and ``raw_inputs`` (mirror path ->
    sha256)."""
    seen = set() if seen is None else seen
    name = Path(result).as_posix()
    on_disk = Path(name).exists()
    record = read_record(name)
    if record is None:
        state = "unrecorded" if name.startswith(f"{RESULTS}/") else "repository"
        return {"file": name, "state": state if on_disk else "missing"}
    if name in seen:
        return {"file": name, "state": "listed_above"}
    if not on_disk:
        state = "missing"
    elif record["sha256"] and file_sha256(Path(name)) != record["sha256"]:
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
        }
    node |= {
        "sha256": record["sha256"],
        "wall_time_s": record["wall_time_s"],
        "seeds": record["seeds"],
    }
    seen.add(name)
    node["inputs"] = [provenance_tree(source, seen) for source in record["inputs"]]
    return node


_NO_RECORD = {
    ("unrecorded", True): (
        "no provenance record: made outside the workflow or before it kept records"
    ),
    ("repository", False): "a file of the workflow's repository",
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
    an input met twice is named again but not expanded again."""
    yield from _lines(provenance_tree(result), 0)


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
        for raw, sha256 in node["raw_inputs"].items():
            yield f"{indent}    {raw} sha256 {sha256}"
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
