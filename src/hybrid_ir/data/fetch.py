"""The fetch layer: every raw file comes from the mirror or its pinned upstream URL, checksummed.

The manifest (a TSV committed with the workflow) lists each raw file by its path relative to
the mirror, its sha256 and size, the upstream repository, commit and path it was copied from,
and a pinned raw URL built from them. Some mirror files were gzip-compressed when staged
(``foo.tsv.gz`` from upstream ``foo.tsv``); for those the manifest also records the sha256 of the
uncompressed upstream bytes, which a download is checked against before it is compressed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import csv
import gzip
import hashlib
import os
import re
import shutil
import ssl
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path

from hybrid_ir.data.downloads import (
    ATTEMPTS,
    BACKOFF_S,
    DownloadFailed,
    Progress,
    download,
    is_https,
)
from hybrid_ir.data.formats import atomic_output, make_readable
from hybrid_ir.data.members import (
    Member,
    MemberList,
    assemble,
    gunzipped_sha256,
    safe_relative,
    sha256_of,
)
from hybrid_ir.errors import FetchError, InputFormatError, quoted

MIRROR_ENVIRONMENT_VARIABLE = "HYBRID_IR_MIRROR"
RAW_URL_ENVIRONMENT_VARIABLE = "HYBRID_IR_RAW_URL"
RAW_URL_BASE = "https://raw.githubusercontent.com"
RAW_URL = RAW_URL_BASE + "/{repository}/{commit}/{path}"
_CHUNK = 1 << 20
_SIZE_MARGIN = 1 << 20
_GZIP_RATIO_BOUND = 64
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
    it (see :func:`hybrid_ir.data.members.safe_relative`)."""
    return safe_relative(path)


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


def raw_url_base(configured: str | None) -> str:
    """Where pinned raw-file URLs are served: ``$HYBRID_IR_RAW_URL`` if set, else the configured
    ``raw_url``, else GitHub's raw host (a proxy or a local copy of it takes its place)."""
    chosen = os.environ.get(RAW_URL_ENVIRONMENT_VARIABLE)
    if chosen and not re.match(r"https://[^/]", chosen):
        raise FetchError(
            f"{RAW_URL_ENVIRONMENT_VARIABLE}: {quoted(chosen)} is not an https:// URL, the only "
            "kind downloaded"
        )
    return (chosen or configured or RAW_URL_BASE).rstrip("/")


def upstream_url(url: str, base: str) -> str:
    """``url`` with GitHub's raw host replaced by ``base``; any other URL as it is."""
    if base != RAW_URL_BASE and url.startswith(f"{RAW_URL_BASE}/"):
        return base + url[len(RAW_URL_BASE) :]
    return url


def member_url(members: MemberList, member: Member, base: str) -> str:
    path = urllib.parse.quote(members.upstream_path(member))
    return f"{base}/{members.repository}/{members.commit}/{path}"


@dataclass(frozen=True)
class Network:
    """How downloads behave: ``timeout`` bounds each wait, ``deadline`` one attempt (default:
    three minutes plus the largest accepted body at 256 KiB/s); ``attempts`` and ``backoff_s``
    retry a failed attempt; ``ssl_context`` replaces the system's certificate checks (a server
    whose certificate a private authority signed); ``raw_url`` replaces GitHub's raw host;
    ``connections`` downloads an archive's members side by side."""

    timeout: float = 60
    deadline: float | None = None
    ssl_context: ssl.SSLContext | None = None
    attempts: int = ATTEMPTS
    backoff_s: float = BACKOFF_S
    raw_url: str = RAW_URL_BASE
    connections: int = 4


def fetch(
    entry: ManifestEntry,
    mirror: Path | None,
    destination: str | Path,
    members: MemberList | None = None,
    network: Network = Network(),
    partial_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> str:
    """Place the verified file at ``destination``; return where it came from.

    From the mirror if it holds the file; else downloaded from its pinned URL, or member by
    member when the row has a member list (``members``), each member verified and the archive
    packed as the list says. Downloads go to partial files under ``partial_dir``, which a later
    call resumes (default: a temporary folder beside ``destination``, removed at the end). The
    file reaches ``destination`` under a temporary name in its folder, renamed only once
    verified, so a failed fetch never leaves a file that looks complete.
    """
    if not _stays_inside(entry.path):
        raise FetchError(
            f"refusing to fetch {quoted(entry.path)}: a manifest path must be relative, "
            "without empty, . or .. parts or NUL"
        )
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    mirrored = mirror / entry.path if mirror else None
    if mirrored and mirrored.is_file():
        _copy_verified(entry, members, mirrored, destination)
        return str(mirrored)
    where = f"not in the mirror {mirror}" if mirror else "no mirror configured"
    if not entry.url and members is None:
        raise FetchError(
            f"cannot fetch {entry.path}: {where} and it has no download URL; "
            f"place it there, built from {entry.where_to_get_it()}"
        )
    with contextlib.ExitStack() as stack:
        partials = Path(partial_dir) if partial_dir else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix=f".{destination.name}.", dir=destination.parent)
        ))  # fmt: skip
        if entry.url:
            return _download_verified(entry, destination, partials, network, progress, where)
        assert members is not None
        _assemble_verified(entry, members, destination, partials, network, progress, where)
        return f"{members.describe()} from {network.raw_url}"


def _copy_verified(
    entry: ManifestEntry, members: MemberList | None, mirrored: Path, destination: Path
) -> None:
    # A size other than the manifest's is another file, said before its copy and hash (a
    # truncated copy of a large file, say); an archive packed again from its members may
    # differ in its compression only.
    size = mirrored.stat().st_size
    if size != entry.size and members is None:
        raise FetchError(
            f"checksum mismatch for {entry.path} (from {mirrored}): expected sha256 "
            f"{entry.sha256} of {entry.size} bytes, got a file of {size} bytes (not hashed); "
            f"get the original from {entry.where_to_get_it()}"
        )
    with _staging(destination) as staging:
        shutil.copyfile(mirrored, staging)
        actual = accepted_digest(staging, entry, members)
        if actual is not None:
            raise FetchError(
                f"checksum mismatch for {entry.path} (from {mirrored}): expected sha256 "
                f"{entry.sha256}, got {actual}; get the original from {entry.where_to_get_it()}"
            )


def accepted_digest(file: Path, entry: ManifestEntry, members: MemberList | None) -> str | None:
    """None when ``file`` is the row's file: its sha256 is the manifest's, or its content once
    gunzipped is the one pinned (the upstream file of a row gzipped for the mirror, the tar
    stream of a row with a member list), which a download compressed again has; else the
    file's sha256, for the message."""
    actual = sha256_of(file)
    if actual == entry.sha256:
        return None
    content = entry.upstream_sha256 or (members.tar_sha256 if members is not None else "")
    if content and gunzipped_sha256(file) == content:
        return None
    return actual


@contextlib.contextmanager
def _staging(destination: Path) -> Iterator[Path]:
    """A temporary sibling of ``destination``, renamed to it when the block ends without error."""
    fd, name = tempfile.mkstemp(
        prefix=f".{destination.name}.", suffix=".part", dir=destination.parent
    )
    os.close(fd)
    staging = Path(name)
    try:
        yield staging
        make_readable(staging)
        os.replace(staging, destination)
    finally:
        staging.unlink(missing_ok=True)


def _download_verified(
    entry: ManifestEntry,
    destination: Path,
    partials: Path,
    network: Network,
    progress: Progress | None,
    where: str,
) -> str:
    url = upstream_url(entry.url, network.raw_url)
    if not is_https(url):
        raise FetchError(
            f"cannot fetch {entry.path}: {where} and its download URL {quoted(url)} is "
            "not https://, the only kind downloaded; fix the manifest or place the file there"
        )
    partial = partials / f"{entry.path}.part"
    expected = entry.upstream_sha256 or entry.sha256
    actual = _download_checked(
        url, partial, _download_limit(entry), expected, network, progress, entry, where
    )
    if actual != expected:
        what = "upstream sha256" if entry.gzipped_here else "sha256"
        raise FetchError(
            f"checksum mismatch for {entry.path} (from {url}): expected {what} {expected}, "
            f"got {actual}; the partial download is deleted; get it from "
            f"{entry.where_to_get_it()}"
        )
    with _staging(destination) as staging:
        if entry.gzipped_here:
            # Checked against the upstream bytes; compressing again cannot reproduce the mirror
            # copy's exact bytes, so the manifest's sha256 is not asked of it.
            with open(partial, "rb") as plain, open(staging, "wb") as raw:
                with gzip.GzipFile(
                    filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0
                ) as out:
                    shutil.copyfileobj(plain, out, _CHUNK)
        else:
            shutil.copyfile(partial, staging)
    partial.unlink(missing_ok=True)
    return url


def _download_checked(
    url: str,
    partial: Path,
    limit: int,
    expected: str,
    network: Network,
    progress: Progress | None,
    entry: ManifestEntry,
    where: str,
) -> str:
    """Download ``url`` into ``partial`` and return its sha256; a resumed file of the wrong
    bytes is downloaded once more from the start (its first part may be what was wrong), and a
    file of the wrong bytes is deleted, never resumed."""
    resumed = partial.is_file() and partial.stat().st_size > 0
    for _ in range(2 if resumed else 1):
        try:
            download(
                url, partial, limit, network.timeout, network.deadline, network.ssl_context,
                progress, network.attempts, network.backoff_s,
            )  # fmt: skip
        except DownloadFailed as error:
            raise FetchError(
                f"cannot fetch {entry.path}: {where} and the download from {url} failed "
                f"({error.reason}); get it from {entry.where_to_get_it()} and place it in the "
                "mirror"
            ) from None
        actual = sha256_of(partial)
        if actual == expected:
            return actual
        partial.unlink()
    return actual


def _assemble_verified(
    entry: ManifestEntry,
    members: MemberList,
    destination: Path,
    partials: Path,
    network: Network,
    progress: Progress | None,
    where: str,
) -> None:
    """Download every member not yet verified under the partial folder, check each, pack them
    into ``destination`` and verify the archive; the members are deleted once it is in place."""
    folder = partials / f"{entry.path}.members"

    def one(member: Member) -> None:
        target = folder / member.name
        if target.is_file() and target.stat().st_size == member.size:
            return  # verified and renamed by an earlier call
        url = member_url(members, member, network.raw_url)
        if not is_https(url):
            raise FetchError(f"cannot fetch {entry.path}: {quoted(url)} is not https://")
        partial = target.with_name(target.name + ".part")
        limit = _with_margin(member.size)
        actual = _download_checked(
            url, partial, limit, member.sha256, network, progress, entry, where
        )
        if actual != member.sha256:
            raise FetchError(
                f"checksum mismatch for member {member.name} of {entry.path} (from {url}): "
                f"expected sha256 {member.sha256}, got {actual}; the partial download is deleted"
            )
        os.replace(partial, target)

    files = list(members.files())
    with concurrent.futures.ThreadPoolExecutor(max(1, network.connections)) as pool:
        # list() re-raises the first member's error, after the others have finished.
        list(pool.map(one, files))
    with _staging(destination) as staging:
        assemble(members, folder, staging)
        actual = accepted_digest(staging, entry, members)
        if actual is not None:
            raise FetchError(
                f"checksum mismatch for {entry.path} (packed from its members): expected "
                f"sha256 {entry.sha256}, got {actual}"
            )
    shutil.rmtree(folder, ignore_errors=True)


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
    return _with_margin(entry.size * _GZIP_RATIO_BOUND if entry.gzipped_here else entry.size)


def _with_margin(size: int) -> int:
    return size + max(_SIZE_MARGIN, size // 100)


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
    if url and not is_https(url):
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
