"""The fetch layer: every raw file comes from the mirror or its pinned upstream URL, checksummed.

The manifest (a TSV committed with the workflow) lists each raw file by its path relative to
the mirror, its sha256 and size, the upstream repository, commit and path it was copied from,
and a pinned raw URL built from them. Some mirror files were gzip-compressed when staged
(``foo.tsv.gz`` from upstream ``foo.tsv``); for those the manifest also records the sha256 of the
uncompressed upstream bytes, which a download is checked against before it is compressed.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import gzip
import hashlib
import http.client
import os
import re
import shutil
import socket
import ssl
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, fields
from pathlib import Path

from hybrid_ir.errors import FetchError, InputFormatError, quoted
from hybrid_ir.formats import atomic_output, make_readable

MIRROR_ENVIRONMENT_VARIABLE = "HYBRID_IR_MIRROR"
RAW_URL = "https://raw.githubusercontent.com/{repository}/{commit}/{path}"
_CHUNK = 1 << 20
_SIZE_MARGIN = 1 << 20
_GZIP_RATIO_BOUND = 64
_MINIMUM_DEADLINE = 180.0
_SLOWEST_ACCEPTED_RATE = 256 << 10  # bytes per second
_SHA256 = re.compile(r"[0-9a-f]{64}")


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
        if not self.repository:
            return self.url or "nowhere upstream: the user's own copy (hybrid-ir manifest add)"
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


def _stays_inside(path: str) -> bool:
    """Whether a manifest path, joined to the mirror or the results folder, names a file inside
    it: relative, and without empty, ``.`` or ``..`` parts (nor a NUL, which no file name has)."""
    return (
        bool(path)
        and not path.startswith("/")
        and "\0" not in path
        and all(part not in ("", ".", "..") for part in path.split("/"))
    )


def load_manifest(path: str | Path) -> dict[str, ManifestEntry]:
    names = [field.name for field in fields(ManifestEntry)]
    entries = {}
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        try:
            if next(reader, None) != names:
                raise InputFormatError(path, 1, f"manifest header must be {' '.join(names)}")
            for values in reader:
                if not values:
                    continue
                entry = _manifest_entry(values, names, path, reader.line_num)
                if entry.path in entries:
                    raise InputFormatError(
                        path, reader.line_num, f"duplicate path {quoted(entry.path)}"
                    )
                entries[entry.path] = entry
        except csv.Error as error:
            raise InputFormatError(path, reader.line_num, f"unreadable row: {error}") from None
        except UnicodeDecodeError:
            raise InputFormatError(path, None, "not UTF-8 text") from None
    if not entries:
        raise InputFormatError(path, None, "no rows after the header")
    return entries


def _manifest_entry(
    values: list[str], names: list[str], manifest: str | Path, line: int
) -> ManifestEntry:
    if len(values) != len(names):
        raise InputFormatError(
            manifest, line, f"{len(values)} columns, the header has {len(names)}"
        )
    row = dict(zip(names, values, strict=True))
    if not _stays_inside(row["path"]):
        raise InputFormatError(
            manifest,
            line,
            f"path {quoted(row['path'])} must be relative, without empty, . or .. parts or "
            "NUL, so that it stays inside the mirror and results folders",
        )
    if not _SHA256.fullmatch(row["sha256"]):
        raise InputFormatError(manifest, line, f"bad sha256 {quoted(row['sha256'])}")
    if row["upstream_sha256"] and not _SHA256.fullmatch(row["upstream_sha256"]):
        raise InputFormatError(
            manifest, line, f"bad upstream_sha256 {quoted(row['upstream_sha256'])}"
        )
    if not re.fullmatch(r"[0-9]+", row["size"]):
        raise InputFormatError(
            manifest, line, f"size must be a whole number of bytes, got {quoted(row['size'])}"
        )
    text_fields = {name: value for name, value in row.items() if name != "size"}
    return ManifestEntry(**text_fields, size=int(row["size"]))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(
    entry: ManifestEntry,
    mirror: Path | None,
    destination: str | Path,
    timeout: float = 60,
    deadline: float | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> str:
    """Place the verified file at ``destination``; return where it came from.

    The file is written under a temporary name in the destination folder and renamed only once
    its checksum matches, so a failed fetch never leaves a file that looks complete.

    Only https:// URLs are downloaded, and redirects are followed only to https:// URLs.
    ``timeout`` bounds each wait on the network, ``deadline`` a whole download in seconds; by
    default three minutes plus the time the largest accepted body (see ``_download_limit``)
    takes at 256 KiB/s. ``ssl_context`` replaces the system's certificate checks, for a server
    whose certificate a private authority signed.
    """
    if not _stays_inside(entry.path):
        raise FetchError(
            f"refusing to fetch {quoted(entry.path)}: a manifest path must be relative, "
            "without empty, . or .. parts or NUL"
        )
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(
        prefix=f".{destination.name}.", suffix=".part", dir=destination.parent
    )
    os.close(fd)
    staging = Path(name)
    try:
        source = _fetch_unverified(entry, mirror, staging, timeout, deadline, ssl_context)
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
    entry: ManifestEntry,
    mirror: Path | None,
    staging: Path,
    timeout: float,
    deadline: float | None,
    ssl_context: ssl.SSLContext | None,
) -> str:
    mirrored = mirror / entry.path if mirror else None
    if mirrored and mirrored.is_file():
        # The stored file itself: a size other than the manifest's is another file, said before
        # its copy and hash (a truncated copy of a large file, say).
        size = mirrored.stat().st_size
        if size != entry.size:
            raise FetchError(
                f"checksum mismatch for {entry.path} (from {mirrored}): expected sha256 "
                f"{entry.sha256} of {entry.size} bytes, got a file of {size} bytes (not hashed); "
                f"get the original from {entry.where_to_get_it()}"
            )
        shutil.copyfile(mirrored, staging)
        return str(mirrored)
    where = f"not in the mirror {mirror}" if mirror else "no mirror configured"
    if not entry.url:
        raise FetchError(
            f"cannot fetch {entry.path}: {where} and it has no download URL; "
            f"place it there, built from {entry.where_to_get_it()}"
        )
    if not _is_https(entry.url):
        raise FetchError(
            f"cannot fetch {entry.path}: {where} and its download URL {quoted(entry.url)} is "
            "not https://, the only kind downloaded; fix the manifest or place the file there"
        )
    try:
        _download(entry, staging, timeout, deadline, ssl_context)
    except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
        reason = getattr(error, "reason", None) or error
        if isinstance(error, urllib.error.HTTPError):
            reason = f"HTTP {error.code}"
        raise FetchError(
            f"cannot fetch {entry.path}: {where} and the download from {entry.url} failed "
            f"({reason}); get it from {entry.where_to_get_it()} and place it in the mirror"
        ) from None
    return entry.url


def _is_https(url: str) -> bool:
    return url.startswith("https://")


def _download_limit(entry: ManifestEntry) -> int:
    """The most bytes a download of ``entry`` may send: past it, the download is cut off.

    A file downloaded as it is stored has the manifest's size; the margin (1 MiB or 1%, the
    larger) lets a slightly different file reach the checksum, whose message says more.

    The upstream file of an entry gzipped here is the uncompressed original, whose size the
    manifest does not record: up to 64 times the size of its gzip is accepted. The staged files
    compress at most 18-fold (text under gzip -9 typically 3- to 20-fold), so 64 leaves room
    for a more redundant file, while a hostile or broken server can fill only a bounded amount
    of disk. (Deflate's own ceiling, about 1032-fold, would never refuse a true file but would
    let a 1 MB entry pull a gigabyte.) A file refused this way can still be placed in the
    mirror by hand.
    """
    expected = entry.size * _GZIP_RATIO_BOUND if entry.gzipped_here else entry.size
    return expected + max(_SIZE_MARGIN, expected // 100)


def _download(
    entry: ManifestEntry,
    staging: Path,
    timeout: float,
    deadline: float | None,
    ssl_context: ssl.SSLContext | None,
) -> None:
    limit = _download_limit(entry)
    if deadline is None:
        deadline = _MINIMUM_DEADLINE + limit / _SLOWEST_ACCEPTED_RATE
    clock = _Deadline(deadline)
    opener = urllib.request.build_opener(
        _HTTPSOnlyRedirects, _DeadlineHTTPSHandler(clock, ssl_context)
    )
    with clock:
        try:
            with opener.open(entry.url, timeout=timeout) as response, open(staging, "wb") as out:
                received = 0
                # read1 returns what one read of the socket brings, so a server that drips
                # bytes cannot keep a read waiting to fill a whole chunk.
                while chunk := response.read1(min(_CHUNK, limit + 1 - received)):
                    received += len(chunk)
                    if received > limit:
                        raise FetchError(
                            f"cannot fetch {entry.path}: the download from {entry.url} sent "
                            f"more than {limit} bytes (the manifest lists {entry.size}); get it "
                            f"from {entry.where_to_get_it()} and place it in the mirror"
                        )
                    out.write(chunk)
        except (urllib.error.URLError, http.client.HTTPException, OSError):
            # A connection cut at the deadline fails in whatever read was waiting.
            if not clock.passed:
                raise
    # Cut at the deadline, a body without a declared length simply ends early.
    if clock.passed:
        raise FetchError(
            f"cannot fetch {entry.path}: the download from {entry.url} took longer than "
            f"{deadline:g} s; get it from {entry.where_to_get_it()} and place it in the mirror"
        )
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


class _Deadline:
    """Shuts a download's sockets once ``seconds`` have passed, wherever the download waits.

    The socket timeout bounds each wait only, so a server that sends a byte before every
    timeout could hold the TLS handshake, the headers or the body for ever; shutting the socket
    down from a timer thread ends any read blocked on it.
    """

    def __init__(self, seconds: float):
        self.passed = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        # An absurd manifest size gives a deadline no timer can wait for (OverflowError).
        self._timer = threading.Timer(min(seconds, threading.TIMEOUT_MAX), self._cut)

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._timer.cancel()
        with self._lock:
            for duplicate in self._sockets:
                duplicate.close()

    def create_connection(self, *args, **kwargs) -> socket.socket:
        connection = socket.create_connection(*args, **kwargs)
        with self._lock:
            # Wrapping for TLS takes the descriptor away from ``connection``; a duplicate
            # descriptor still reaches the socket to shut it down.
            self._sockets.append(connection.dup())
            if self.passed:
                connection.shutdown(socket.SHUT_RDWR)
        return connection

    def _cut(self) -> None:
        with self._lock:
            self.passed = True
            for duplicate in self._sockets:
                with contextlib.suppress(OSError):
                    duplicate.shutdown(socket.SHUT_RDWR)


class _DeadlineHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args, deadline: _Deadline, **kwargs):
        super().__init__(*args, **kwargs)
        # http.client opens every socket of a connection, a proxy tunnel's too, through this.
        self._create_connection = deadline.create_connection


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline, ssl_context: ssl.SSLContext | None):
        super().__init__()
        self._deadline = deadline
        self._ssl_context = ssl_context

    def https_open(self, request):
        connection = functools.partial(_DeadlineHTTPSConnection, deadline=self._deadline)
        return self.do_open(connection, request, context=self._ssl_context)


class _HTTPSOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects to https:// URLs only, so that no redirect downgrades a download."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if not _is_https(newurl):
            fp.close()
            raise urllib.error.URLError(f"redirected to {quoted(newurl)}, which is not https://")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


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


def entry_for_file(file: str | Path, mirror: Path, url: str = "") -> ManifestEntry:
    """A manifest row for a file the user put in the mirror: its path relative to the mirror,
    sha256 and size (and where it can be downloaded, if given)."""
    # The file's own name, not a symlink's target: an alias in the mirror is recorded as the
    # alias (its folders are resolved, as the mirror's are).
    given, root = Path(file).parent.resolve() / Path(file).name, mirror.resolve()
    resolved = given.resolve()
    if not resolved.is_file():
        raise FetchError(f"{file}: no such file")
    if not given.is_relative_to(root):
        raise FetchError(f"{file}: not inside the mirror {mirror}; copy it there first")
    relative = given.relative_to(root).as_posix()
    if url and not _is_https(url):
        raise FetchError(f"{file}: the download URL must be https, got {url!r}")
    return ManifestEntry(
        path=relative,
        sha256=sha256_of(resolved),
        size=resolved.stat().st_size,
        repository="",
        commit="",
        upstream_path="",
        url=url,
        upstream_sha256="",
    )


def add_to_manifest(manifest: str | Path, added: list[ManifestEntry]) -> list[str]:
    """Write ``added`` into the manifest (a row with the same path is replaced); the paths whose
    row changed, in order."""
    entries = load_manifest(manifest)
    changed = [entry.path for entry in added if entries.get(entry.path) != entry]
    entries |= {entry.path: entry for entry in added}
    write_manifest(list(entries.values()), manifest)
    return changed
