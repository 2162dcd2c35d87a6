"""The locked environment: ``requirements.lock`` (made by ``make lock`` from requirements.txt),
what it must satisfy, the conda environment generated from it, and how the running environment
compares with it.

The lock lists every package requirements.txt needs but torch, at one version, with the sha256
of each of its files; torch is installed first and alone (its CPU or CUDA build is a machine's
choice), and its CUDA builds bring CUDA libraries the lock does not list. ``make setup``
installs the lock with ``--require-hashes``. Provenance records carry the lock's sha256 and the
sha256 of the running environment's package list, and name every locked package the environment
lacks or holds at another version.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.errors import InputFormatError

LOCK = "requirements.lock"
REQUIREMENTS = "requirements.txt"
SLURM_REQUIREMENTS = "requirements-slurm.txt"
SLURM_LOCK = "requirements-slurm.lock"
CONDA_ENVIRONMENT = "envs/hybrid-ir.yaml"
TESTS_SECTION = "# Tests"
"""The comment in requirements.txt after which its pins are for tests and linters only."""
OUTSIDE_LOCK = "torch"
"""Installed before the lock, alone: the one package a lock entry may depend on unlisted."""
PROJECT = "hybrid-ir"


def canonicalize_name(name: str) -> str:
    """PEP 503's normalized form of a distribution's name."""
    return re.sub(r"[-_.]+", "-", name).lower()


_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)\s*\\?$")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})\s*\\?$")


@dataclass
class LockedPackage:
    """One entry of the lock: its pin, the sha256 of the files it may be installed from, and
    what needs it (package names, or ``-r requirements.txt``)."""

    name: str
    version: str
    file: str
    line: int
    hashes: list[str] = field(default_factory=list)
    needed_by: list[str] = field(default_factory=list)


def read_lock(path: str | Path) -> dict[str, LockedPackage]:
    """The entries of a uv / pip-tools lock with hashes, by canonical name. A line that is
    neither a pin, a hash nor a comment, a pin without a hash or a package listed twice is an
    error naming the file and line."""
    packages: dict[str, LockedPackage] = {}
    current: LockedPackage | None = None
    with open(path, encoding="utf-8") as lines:
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line:
                continue
            if not raw[0].isspace() and not line.startswith("#"):
                _close(path, current)
                pin = _PIN.fullmatch(line)
                if pin is None:
                    raise InputFormatError(path, number, f"not a pin `name==version \\`: {line!r}")
                name = canonicalize_name(pin[1])
                if name in packages:
                    where = packages[name].line
                    raise InputFormatError(path, number, f"{name} is locked twice (line {where})")
                current = packages[name] = LockedPackage(name, pin[2], str(path), number)
            elif line.startswith("--hash="):
                hashed = _HASH.fullmatch(line)
                if current is None or hashed is None:
                    raise InputFormatError(path, number, f"not a sha256 of a pin above: {line!r}")
                current.hashes.append(hashed[1])
            elif line.startswith("#") and current is not None and raw[0].isspace():
                # `# via a` on one line, or `# via` and then `#   a`, `#   b` below it
                text = line.lstrip("#").strip()
                parent = text[4:].strip() if text == "via" or text.startswith("via ") else text
                if parent:
                    current.needed_by.append(parent)
            elif not line.startswith("#"):
                raise InputFormatError(path, number, f"not a pin, a hash or a comment: {line!r}")
    _close(path, current)
    if not packages:
        raise InputFormatError(path, None, "locks no package")
    return packages


def _close(path: str | Path, package: LockedPackage | None) -> None:
    if package is not None and not package.hashes:
        raise InputFormatError(
            path, package.line, f"{package.name}=={package.version} has no --hash=sha256"
        )


def read_requirements(path: str | Path, runtime_only: bool = False) -> dict[str, tuple[str, int]]:
    """requirements.txt's pins (canonical name -> version, line); ``runtime_only`` stops at its
    tests section. A line that is not an exact pin is an error naming the file and line."""
    pins: dict[str, tuple[str, int]] = {}
    with open(path, encoding="utf-8") as lines:
        for number, raw in enumerate(lines, 1):
            if runtime_only and raw.startswith(TESTS_SECTION):
                break
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            pin = _PIN.fullmatch(line)
            if pin is None:
                raise InputFormatError(path, number, f"not an exact pin `name==version`: {line!r}")
            pins[canonicalize_name(pin[1])] = (pin[2], number)
    return pins


def unsatisfied(
    requirements: str | Path, lock: str | Path, base: str | Path | None = None
) -> list[str]:
    """One line per way ``lock`` (over ``base``, for a lock of what an environment adds to
    another) fails ``requirements``: a pin neither locks or one locked at another version, and
    an entry needed by a package neither locked nor torch. Empty when it holds."""
    pins = read_requirements(requirements)
    locked = {**(read_lock(base) if base else {}), **read_lock(lock)}
    problems = []
    for name, (version, line) in pins.items():
        entry = locked.get(name)
        if entry is None:
            problems.append(f"{lock}: lacks {name}, which {requirements}:{line} pins {version}")
        elif entry.version != version:
            problems.append(
                f"{entry.file}:{entry.line}: locks {name} {entry.version}, but "
                f"{requirements}:{line} pins {version} (run make lock)"
            )
    for entry in locked.values():
        for parent in entry.needed_by:
            if parent.startswith("-") or canonicalize_name(parent) in (*locked, OUTSIDE_LOCK):
                continue
            problems.append(
                f"{entry.file}:{entry.line}: {entry.name} is needed by {parent}, which is not "
                "locked"
            )
    return problems


def overlay_lock(full: str | Path, base: str | Path) -> str:
    """The entries of the lock ``full`` (resolved with ``base`` as a constraint) that ``base``
    does not lock, with its header: the lock of what an environment layered over ``base``'s
    adds (``make setup-slurm``'s plugins over ``.venv``)."""
    locked = read_lock(base)
    kept, keep = [], True
    for raw in Path(full).read_text(encoding="utf-8").splitlines(keepends=True):
        if raw.startswith("#") or not raw.strip():  # the header, or what follows the entries
            keep = True
        elif not raw[0].isspace():  # an entry's pin; its hashes and comments follow indented
            keep = canonicalize_name(raw.split("==", 1)[0]) not in locked
        if keep:
            kept.append(raw)
    return "".join(kept)


def runtime_closure(requirements: str | Path, lock: str | Path) -> dict[str, str]:
    """The locked packages the runtime pins of ``requirements`` (those before its tests
    section) and torch need, with their versions: what a workflow job imports, without the
    test runners and linters."""
    locked = read_lock(lock)
    needed = set(read_requirements(requirements, runtime_only=True)) | {OUTSIDE_LOCK}
    grew = True
    while grew:
        grew = False
        for entry in locked.values():
            parents = {canonicalize_name(parent) for parent in entry.needed_by}
            if entry.name not in needed and parents & needed:
                needed.add(entry.name)
                grew = True
    return {name: locked[name].version for name in sorted(needed & set(locked))}


def conda_environment(requirements: str | Path, lock: str | Path, torch_version: str) -> str:
    """``envs/hybrid-ir.yaml``, generated from ``lock`` (``make lock`` writes it): conda gives
    Python 3.11 and pip, and pip installs the runtime part of the lock at its versions, torch
    first in the list."""
    pins = [f"torch=={torch_version}"] + [
        f"{name}=={version}" for name, version in runtime_closure(requirements, lock).items()
    ]
    lines = [
        f"# Generated by `make lock` from {LOCK}: do not edit (tests/test_lock.py checks that it",
        "# matches). The conda environment every rule names (snakemake --sdm conda): conda gives",
        "# Python 3.11 and pip; pip installs the packages the workflow's jobs import, at the",
        "# lock's versions. torch comes from PyPI (on Linux x86-64, its CUDA build). The rules'",
        "# scripts import this package from the workflow's src/, which the Snakefile puts on",
        "# PYTHONPATH, so it is not installed here.",
        "name: hybrid-ir",
        "channels:",
        "  - conda-forge",
        "  - nodefaults",
        "dependencies:",
        "  - python=3.11",
        "  - pip",
        "  - pip:",
        *(f"      - {pin}" for pin in pins),
    ]
    return "\n".join(lines) + "\n"


def write_locks(torch_version: str, slurm_full_lock: str | Path, root: str | Path = ".") -> None:
    """The last step of ``make lock``: write :data:`SLURM_LOCK` (what ``slurm_full_lock``, the
    plugins' lock resolved over :data:`LOCK`, adds to it) and :data:`CONDA_ENVIRONMENT` under
    ``root``."""
    root = Path(root)
    with atomic_output(root / SLURM_LOCK) as out:
        out.write(overlay_lock(slurm_full_lock, root / LOCK))
    text = conda_environment(root / REQUIREMENTS, root / LOCK, torch_version)
    with atomic_output(root / CONDA_ENVIRONMENT) as out:
        out.write(text)


def installed() -> dict[str, str]:
    """The running environment's distributions (canonical name -> version), as the names of
    their ``.dist-info`` / ``.egg-info`` folders on ``sys.path`` give them (the first on the
    path wins, as for imports; reading each one's metadata would take every job 0.1 s), this
    project's own left out: its code is recorded by commit. A folder inside a package (what
    setuptools adds for its vendored copies once imported) is not the environment's, so what a
    job imported does not change the list."""
    versions: dict[str, str] = {}
    for entry in sys.path:
        if os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(entry)), "__init__.py")):
            continue
        try:
            folders = sorted(os.scandir(entry or "."), key=lambda folder: folder.name)
        except OSError:
            continue
        for folder in folders:
            stem, dot, kind = folder.name.rpartition(".")
            if dot and kind in ("dist-info", "egg-info") and "-" in stem:
                name, _, version = stem.partition("-")
                versions.setdefault(canonicalize_name(name), version.partition("-")[0])
    versions.pop(PROJECT, None)
    return dict(sorted(versions.items()))


def freeze_sha256(versions: Mapping[str, str]) -> str:
    """sha256 of the sorted ``name==version`` lines of ``versions`` (``pip freeze --all``'s
    list with canonical names, this project left out)."""
    text = "".join(f"{name}=={version}\n" for name, version in sorted(versions.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def mismatches(locked: Mapping[str, LockedPackage], versions: Mapping[str, str]) -> list[str]:
    """Each locked package the environment lacks or holds at another version."""
    found = []
    for name, entry in sorted(locked.items()):
        version = versions.get(name)
        if version != entry.version:
            held = "not installed" if version is None else f"installed {version}"
            found.append(f"{name} {entry.version} locked, {held}")
    return found


@cache
def environment_record(lock: Path) -> dict[str, object]:
    """What a provenance record says of the environment: the lock's sha256 (``None`` without a
    lock), the running environment's :func:`freeze_sha256` and its :func:`mismatches` with the
    lock."""
    versions = installed()
    record: dict[str, object] = {"lock_sha256": None, "freeze_sha256": freeze_sha256(versions)}
    if lock.is_file():
        record["lock_sha256"] = hashlib.sha256(lock.read_bytes()).hexdigest()
        record["lock_mismatches"] = mismatches(read_lock(lock), versions)
    return record
