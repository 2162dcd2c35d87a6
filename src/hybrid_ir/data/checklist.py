"""What raw data a configuration needs, what of it is here, and what must be downloaded or
obtained by hand: ``hybrid-ir data``.

Every raw file a configuration names (a collection's sources, an imported run, a keyword file
of structure search) gets one state: ``fetched`` (verified under ``results/raw/``), ``mirror``
(verified in the mirror), ``download`` (missing here, with a pinned URL or a member list),
``by hand`` (missing, and no URL can give its pinned bytes), or ``corrupt`` (a copy is here whose
bytes are not the manifest's). For a file to obtain by hand the listing says what it is, where
it comes from and under which terms, from ``workflow/resources/by-hand.tsv``.
"""

from __future__ import annotations

import concurrent.futures
import csv
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_ir import paths
from hybrid_ir.data.downloads import byte_progress
from hybrid_ir.data.fetch import ManifestEntry, Network, fetch, upstream_url
from hybrid_ir.data.members import MemberList, find_member_list
from hybrid_ir.data.raw_check import raw_file_problem, remember_verified
from hybrid_ir.errors import FetchError, InputFormatError

BY_HAND_COLUMNS = ["path", "what", "where", "terms"]
MAX_CONNECTIONS = 16
"""The most downloads `hybrid-ir data --download` runs side by side: a few per host is polite,
and each file with a member list opens as many again for its members."""
STATES = ("fetched", "mirror", "download", "by hand", "corrupt")
"""A raw file's state, from ready to blocking; the listing orders files by it."""


def required_raw_files(config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every raw file (manifest path) a validated configuration names -> the keys naming it."""
    needed: dict[str, list[str]] = {}

    def need(path: str, key: str) -> None:
        needed.setdefault(path, []).append(key)

    for name, collection in config["collections"].items():
        for role, path in collection["sources"].items():
            need(path, f"collections.{name}.sources.{role}")
    for collection, by_topics in config["external_runs"].items():
        for topics, runs in by_topics.items():
            for system, entry in runs.items():
                path = entry["path"] if isinstance(entry, Mapping) else entry
                need(path, f"external_runs.{collection}.{topics}.{system}")
    for collection, systems in config.get("structure", {}).items():
        for system, entry in systems.items():
            for topics, path in entry.get("keyword_files", {}).items():
                need(path, f"structure.{collection}.{system}.keyword_files.{topics}")
    return dict(sorted(needed.items()))


@dataclass(frozen=True)
class ByHand:
    path: str
    what: str
    where: str
    terms: str


def load_by_hand(path: str | Path) -> dict[str, ByHand]:
    """The catalogue of raw files no pinned URL gives: path -> what, where and terms."""
    rows: dict[str, ByHand] = {}
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        if next(reader, None) != BY_HAND_COLUMNS:
            raise InputFormatError(path, 1, f"header must be {' '.join(BY_HAND_COLUMNS)}")
        for values in reader:
            if len(values) != len(BY_HAND_COLUMNS):
                raise InputFormatError(
                    path, reader.line_num, f"{len(values)} columns, the header has 4"
                )
            rows[values[0]] = ByHand(*values)
    return rows


@dataclass(frozen=True)
class RawFile:
    path: str
    keys: tuple[str, ...]
    state: str
    size: int | None
    source: str
    entry: ManifestEntry | None = None
    members: MemberList | None = None


def checklist(
    needed: Mapping[str, list[str]],
    manifest: Mapping[str, ManifestEntry],
    manifest_path: str | Path,
    mirror: Path | None,
    by_hand: Mapping[str, ByHand],
    network: Network,
) -> list[RawFile]:
    """The state of every needed raw file, ordered by state then path."""
    listed = [
        _raw_file(path, tuple(keys), manifest, manifest_path, mirror, by_hand, network)
        for path, keys in needed.items()
    ]
    return sorted(listed, key=lambda raw: (STATES.index(raw.state), raw.path))


def _raw_file(
    path: str,
    keys: tuple[str, ...],
    manifest: Mapping[str, ManifestEntry],
    manifest_path: str | Path,
    mirror: Path | None,
    by_hand: Mapping[str, ByHand],
    network: Network,
) -> RawFile:
    entry = manifest.get(path)
    if entry is None:
        source = _by_hand_source(path, by_hand, "not in the manifest")
        return RawFile(path, keys, "by hand", None, source)
    members = find_member_list(manifest_path, path)
    copies = [(Path(paths.raw(path)), "fetched", paths.raw(path))]
    if mirror is not None:
        copies.append((mirror / path, "mirror", f"mirror {mirror}"))
    for copy, state, where in copies:
        if copy.is_file():
            problem = raw_file_problem(copy, entry, members)
            if problem is not None:
                where, state = f"{copy}: {problem}", "corrupt"
            return RawFile(path, keys, state, entry.size, where, entry, members)
    if entry.url:
        source = upstream_url(entry.url, network.raw_url)
        return RawFile(path, keys, "download", entry.size, source, entry, members)
    if members is not None:
        size, source = members.total_size(), members.describe()
        return RawFile(path, keys, "download", size, source, entry, members)
    source = _by_hand_source(path, by_hand, entry.where_to_get_it())
    return RawFile(path, keys, "by hand", entry.size, source, entry)


def _by_hand_source(path: str, by_hand: Mapping[str, ByHand], fallback: str) -> str:
    known = by_hand.get(path)
    if known is None:
        return f"{fallback}; no source recorded in workflow/resources/by-hand.tsv"
    return f"{known.what}: {known.where} (terms: {known.terms})"


def human_size(size: int | None) -> str:
    if size is None:
        return "unknown"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def can_run(files: list[RawFile]) -> bool:
    """Whether a run can get every file: here already, or downloadable."""
    return all(raw.state in ("fetched", "mirror", "download") for raw in files)


def all_here(files: list[RawFile]) -> bool:
    """Whether every file is here already, fetched or in the mirror."""
    return all(raw.state in ("fetched", "mirror") for raw in files)


def render(files: list[RawFile], mirror: Path | None) -> Iterator[str]:
    """The listing, a summary line first and the commands for files to obtain by hand last."""
    counts = {state: sum(raw.state == state for raw in files) for state in STATES}
    wanted = [raw for raw in files if raw.state == "download"]
    download = human_size(sum(raw.size or 0 for raw in wanted))
    if any(raw.entry is not None and raw.entry.gzipped_here for raw in wanted):
        # Such a file is downloaded as its uncompressed upstream original, of unrecorded size.
        download = f"at least {download}"
    yield (
        f"{len(files)} raw files needed: {counts['fetched']} fetched, {counts['mirror']} in the "
        f"mirror, {counts['download']} to download ({download}), "
        f"{counts['by hand']} to obtain by hand, {counts['corrupt']} corrupt"
    )
    width = max((len(raw.path) for raw in files), default=4)
    yield f"{'state':<9} {'size':>10}  {'file':<{width}}  source"
    for raw in files:
        yield f"{raw.state:<9} {human_size(raw.size):>10}  {raw.path:<{width}}  {raw.source}"
    by_hand = [raw for raw in files if raw.state == "by hand"]
    if by_hand:
        root = mirror if mirror is not None else Path("<mirror>")
        yield ""
        yield (
            f"To obtain by hand ({len(by_hand)}): put each file at its path in the mirror "
            f"{root}, then:"
        )
        for raw in by_hand:
            yield f"  hybrid-ir manifest add {root / raw.path} --mirror {root}"
    corrupt = [raw for raw in files if raw.state == "corrupt"]
    if corrupt:
        yield ""
        yield f"Corrupt ({len(corrupt)}): delete each copy named above; it is fetched again."
    verdict = "can run" if can_run(files) else "cannot run until the files above are in place"
    yield ""
    yield f"The configuration {verdict}."


def download_missing(
    files: list[RawFile], mirror: Path, network: Network, connections: int
) -> list[str]:
    """Download every ``download`` file into ``mirror`` (partial files under
    ``<mirror>/.partial``, resumed by the next call); the paths that failed, each with why."""
    wanted = [raw for raw in files if raw.state == "download"]
    total = sum(raw.size or 0 for raw in wanted)
    failures: list[str] = []
    with byte_progress(f"download {len(wanted)} files", total) as progress:

        def one(raw: RawFile) -> None:
            assert raw.entry is not None
            destination = mirror / raw.path
            try:
                fetch(
                    raw.entry,
                    None,
                    destination,
                    members=raw.members,
                    network=network,
                    partial_dir=mirror / ".partial",
                    progress=progress,
                )
            except FetchError as error:
                failures.append(str(error))
                return
            remember_verified(destination)

        with concurrent.futures.ThreadPoolExecutor(max(1, connections)) as pool:
            list(pool.map(one, wanted))
    return sorted(failures)
