"""The fetch layer: every raw file comes from the mirror or its pinned upstream URL, checksummed.

The manifest (a TSV committed with the workflow) lists each raw file by its path relative to
the mirror, its sha256 and size, the upstream repository, commit and path it was copied from,
and a pinned raw URL built from them. Some mirror files were gzip-compressed when staged
(``foo.tsv.gz`` from upstream ``foo.tsv``); for those the manifest also records the sha256 of the
uncompressed upstream bytes, which a download is checked against before it is compressed.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, fields
from pathlib import Path

from hybrid_ir.errors import FetchError, InputFormatError
from hybrid_ir.formats import atomic_output, make_readable

MIRROR_ENVIRONMENT_VARIABLE = "HYBRID_IR_MIRROR"
RAW_URL = "https://raw.githubusercontent.com/{repository}/{commit}/{path}"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ManifestEntry:
    path: str
    sha256: str
    size: int
    repository: str
    commit: str
    upstream_path: str
    url: str
    upstream_sha256: str

    @property
    def gzipped_here(self) -> bool:
        """Whether the mirror holds a gzip of the upstream file rather than the file itself."""
        return bool(self.upstream_sha256)

    def where_to_get_it(self) -> str:
        origin = f"{self.repository}@{self.commit[:12]}:{self.upstream_path}"
        if self.url:
            origin = f"{self.url} ({origin})"
        if self.gzipped_here:
            origin += ", then gzip -9n"
        return origin


def mirror_root(configured: str | Path | None) -> Path | None:
    """The mirror directory: ``$HYBRID_IR_MIRROR`` if set, else the configured path."""
    chosen = os.environ.get(MIRROR_ENVIRONMENT_VARIABLE) or configured
    return Path(chosen).expanduser() if chosen else None


def load_manifest(path: str | Path) -> dict[str, ManifestEntry]:
    names = [field.name for field in fields(ManifestEntry)]
    entries = {}
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        if reader.fieldnames != names:
            raise InputFormatError(path, 1, f"manifest header must be {' '.join(names)}")
        for line_number, row in enumerate(reader, start=2):
            if not re.fullmatch(r"[0-9a-f]{64}", row["sha256"] or ""):
                raise InputFormatError(path, line_number, f"bad sha256 {row['sha256']!r}")
            try:
                entry = ManifestEntry(**{**row, "size": int(row["size"])})
            except (TypeError, ValueError) as error:
                raise InputFormatError(path, line_number, f"malformed row: {error}") from None
            if entry.path in entries:
                raise InputFormatError(path, line_number, f"duplicate path {entry.path}")
            entries[entry.path] = entry
    return entries


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(
    entry: ManifestEntry, mirror: Path | None, destination: str | Path, timeout: float = 60
) -> str:
    """Place the verified file at ``destination``; return where it came from.

    The file is written under a temporary name in the destination folder and renamed only once
    its checksum matches, so a failed fetch never leaves a file that looks complete.
    """
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(
        prefix=f".{destination.name}.", suffix=".part", dir=destination.parent
    )
    os.close(fd)
    staging = Path(name)
    try:
        source = _fetch_unverified(entry, mirror, staging, timeout)
        # A download of a file gzipped when the mirror was staged was checked against the
        # upstream bytes; re-compressing cannot reproduce the mirror copy's exact bytes.
        recompressed = source == entry.url and entry.gzipped_here
        actual = entry.sha256 if recompressed else sha256_of(staging)
        if actual != entry.sha256:
            raise FetchError(
                f"checksum mismatch for {entry.path} (from {source}): expected sha256 "
                f"{entry.sha256}, got {actual}; get the original from {entry.where_to_get_it()}"
            )
        make_readable(staging)
        os.replace(staging, destination)
        return source
    finally:
        staging.unlink(missing_ok=True)


def _fetch_unverified(
    entry: ManifestEntry, mirror: Path | None, staging: Path, timeout: float
) -> str:
    mirrored = mirror / entry.path if mirror else None
    if mirrored and mirrored.is_file():
        shutil.copyfile(mirrored, staging)
        return str(mirrored)
    where = f"not in the mirror {mirror}" if mirror else "no mirror configured"
    if not entry.url:
        raise FetchError(
            f"cannot fetch {entry.path}: {where} and it has no download URL; "
            f"place it there, built from {entry.where_to_get_it()}"
        )
    try:
        _download(entry, staging, timeout)
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", None) or error
        if isinstance(error, urllib.error.HTTPError):
            reason = f"HTTP {error.code}"
        raise FetchError(
            f"cannot fetch {entry.path}: {where} and the download from {entry.url} failed "
            f"({reason}); get it from {entry.where_to_get_it()} and place it in the mirror"
        ) from None
    return entry.url


def _download(entry: ManifestEntry, staging: Path, timeout: float) -> None:
    with urllib.request.urlopen(entry.url, timeout=timeout) as response:
        with open(staging, "wb") as out:
            shutil.copyfileobj(response, out, _CHUNK)
    if not entry.gzipped_here:
        return
    actual = sha256_of(staging)
    if actual != entry.upstream_sha256:
        raise FetchError(
            f"checksum mismatch for {entry.path} (from {entry.url}): expected upstream sha256 "
            f"{entry.upstream_sha256}, got {actual}; get it from {entry.where_to_get_it()}"
        )
    compressed = staging.with_name(staging.name + ".gz")
    with open(staging, "rb") as plain, open(compressed, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as out:
            shutil.copyfileobj(plain, out, _CHUNK)
    os.replace(compressed, staging)


_SOURCES_ROW = re.compile(
    r"^\| `data/(?P<path>[^`]+)` \| (?P<repository>[^|]+?) \| `(?P<upstream_path>[^`]+)` "
    r"\| `(?P<commit>[0-9a-f]{40})` \| (?P<size>\d+) \| `(?P<sha256>[0-9a-f]{64})` \|$"
)


def manifest_from_sources(sources_md: str | Path, mirror: Path) -> list[ManifestEntry]:
    """Build manifest entries from the mirror's SOURCES.md table rows.

    A pinned raw URL exists when the staged file is one upstream file: archives packed here from
    many files have none. For files gzip-compressed here, the upstream checksum is computed from
    the mirror copy's decompressed bytes.
    """
    entries = []
    with open(sources_md, encoding="utf-8") as handle:
        for line in handle:
            match = _SOURCES_ROW.match(line.strip())
            if not match:
                continue
            row = {key: value.strip() for key, value in match.groupdict().items()}
            single_file = " " not in row["upstream_path"] and not row["upstream_path"].endswith("/")
            gzipped_here = row["path"].endswith(".gz") and not row["upstream_path"].endswith(".gz")
            upstream_sha256 = ""
            if gzipped_here and single_file:
                with gzip.open(mirror / row["path"], "rb") as plain:
                    upstream_sha256 = hashlib.file_digest(plain, "sha256").hexdigest()
            entries.append(
                ManifestEntry(
                    path=row["path"],
                    sha256=row["sha256"],
                    size=int(row["size"]),
                    repository=row["repository"],
                    commit=row["commit"],
                    upstream_path=row["upstream_path"],
                    url=RAW_URL.format(
                        repository=row["repository"],
                        commit=row["commit"],
                        path=row["upstream_path"],
                    )
                    if single_file
                    else "",
                    upstream_sha256=upstream_sha256,
                )
            )
    return entries


def write_manifest(entries: list[ManifestEntry], path: str | Path) -> None:
    names = [field.name for field in fields(ManifestEntry)]
    with atomic_output(path) as out:
        writer = csv.writer(out, delimiter="\t", lineterminator="\n")
        writer.writerow(names)
        for entry in sorted(entries, key=lambda entry: entry.path):
            writer.writerow([getattr(entry, name) for name in names])
