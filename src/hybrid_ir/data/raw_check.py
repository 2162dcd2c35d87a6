"""Raw files checked against the manifest again whenever a job reads them, not only when fetched.

A file edited after its fetch would otherwise be read as it is by every job that Snakemake runs
again, while provenance still names the manifest's sha256. Hashing every raw input of every job
would cost minutes on a full collection, so a verified file leaves a stamp (its size, mtime and
sha256, under ``.snakemake/hybrid_ir/verified/``): a file whose size and mtime are the stamp's
is taken as verified, and any other is hashed again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from hybrid_ir import paths
from hybrid_ir.data.fetch import ManifestEntry, accepted_digest, load_manifest
from hybrid_ir.data.formats import atomic_output
from hybrid_ir.data.members import MemberList, find_member_list
from hybrid_ir.errors import FetchError

STAMPS = Path(".snakemake/hybrid_ir/verified")


def _stamp_path(file: Path, stamps: Path) -> Path:
    key = hashlib.sha256(str(file.resolve()).encode()).hexdigest()
    return stamps / f"{key}.json"


def _identity(file: Path) -> dict[str, int]:
    status = file.stat()
    return {"size": status.st_size, "mtime_ns": status.st_mtime_ns}


def remember_verified(
    file: Path, stamps: Path = STAMPS, identity: dict[str, int] | None = None
) -> None:
    """Stamp ``file`` as verified with the size and mtime it had when it was hashed (default:
    now), so that a change made while it was being hashed is not taken as verified."""
    with atomic_output(_stamp_path(file, stamps)) as out:
        json.dump({"file": str(file), **(identity or _identity(file))}, out)


def _stamped(file: Path, stamps: Path) -> bool:
    try:
        with open(_stamp_path(file, stamps), encoding="utf-8") as handle:
            stamp = json.load(handle)
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and {
        key: stamp.get(key) for key in ("size", "mtime_ns")
    } == _identity(file)


def raw_file_problem(
    file: Path, entry: ManifestEntry, members: MemberList | None, stamps: Path = STAMPS
) -> str | None:
    """None when ``file`` is the manifest row's file; else what is wrong with it, in words."""
    if not file.is_file():
        return "no longer on disk"
    if _stamped(file, stamps):
        return None
    identity = _identity(file)
    actual = accepted_digest(file, entry, members)
    if actual is None:
        remember_verified(file, stamps, identity)
        return None
    expected = f"sha256 {entry.sha256}" + (f" ({entry.size} bytes)" if entry.size else "")
    return (
        f"its bytes are not the manifest's: expected {expected}, the file has sha256 {actual} "
        f"({file.stat().st_size} bytes)"
    )


def check_raw_inputs(
    inputs: Iterable[str], manifest: str | Path, stamps: Path = STAMPS
) -> dict[str, str]:
    """Check every input under ``results/raw/`` against ``manifest``; mirror path -> sha256 of
    those checked. A changed file fails naming it, both digests and how to get the original."""
    prefix = paths.raw("")
    raw = [name for name in map(str, inputs) if name.startswith(prefix)]
    if not raw:
        return {}
    rows = load_manifest(manifest)
    checked = {}
    for name in raw:
        path = name[len(prefix) :]
        entry = rows.get(path)
        if entry is None:
            raise FetchError(f"{name}: not in the manifest {manifest}")
        problem = raw_file_problem(Path(name), entry, find_member_list(manifest, path), stamps)
        if problem is not None:
            raise FetchError(
                f"{name} changed since it was fetched: {problem}; delete it and run again to "
                "fetch the original, or restore it"
            )
        checked[path] = entry.sha256
    return checked


def raw_input_problems(
    raw_inputs: Mapping[str, str], manifest: str | Path = paths.MANIFEST, stamps: Path = STAMPS
) -> dict[str, str]:
    """Raw file (mirror path) -> what is wrong with its copy under ``results/raw/``, for each
    one recorded with ``sha256`` whose copy no longer has those bytes (provenance's flag).
    Without ``manifest`` (a workflow run with its own), a copy must have exactly the recorded
    sha256."""
    rows = load_manifest(manifest) if Path(manifest).is_file() else {}
    problems = {}
    for path, sha256 in raw_inputs.items():
        row = rows.get(path)
        if row is not None and row.sha256 != sha256:
            problems[path] = f"the manifest now pins sha256 {row.sha256}"
            continue
        entry = row or ManifestEntry(path, sha256, 0, "", "", "", "", "")
        members = find_member_list(manifest, path) if row is not None else None
        problem = raw_file_problem(Path(paths.raw(path)), entry, members, stamps)
        if problem is not None:
            problems[path] = problem
    return problems
