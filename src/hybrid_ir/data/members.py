"""Member lists: a raw archive that was packed from many upstream files, described file by file
so that it can be rebuilt from its upstream repository.

A member list (``workflow/resources/members/<manifest path>.json``, beside the manifest) names
the repository, commit and folder the archive was packed from, the tar header fields its members
share, each member's name, type, mode, size and sha256, and the sha256 of the whole
uncompressed tar stream. :func:`assemble` packs downloaded members into the same GNU tar,
byte for byte (the ``tar_sha256`` says so), then compresses it as ``gzip -9n`` did, which gives
the mirror's archive itself where GNU gzip is installed. A row is verified either by the
archive's sha256 or by its tar stream's, which covers every member and header.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.errors import FetchError, InputFormatError, quoted

_SHA256 = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20
MEMBER_TYPES = {"file": tarfile.REGTYPE, "directory": tarfile.DIRTYPE}


def safe_relative(path: str) -> bool:
    """Relative, without empty, ``.`` or ``..`` parts, NUL or line breaks: joined to a folder,
    it names something inside it."""
    return (
        bool(path)
        and not path.startswith("/")
        and not any(character in path for character in "\0\n\r\\")
        and all(part not in ("", ".", "..") for part in path.split("/"))
    )


@dataclass(frozen=True)
class Member:
    name: str
    type: str
    mode: int
    size: int = 0
    sha256: str = ""


@dataclass(frozen=True)
class MemberList:
    archive: str
    repository: str
    commit: str
    upstream_folder: str
    mtime: int
    uname: str
    gname: str
    tar_sha256: str
    members: tuple[Member, ...]

    def files(self) -> Iterator[Member]:
        return (member for member in self.members if member.type == "file")

    def upstream_path(self, member: Member) -> str:
        return f"{self.upstream_folder}{member.name}"

    def total_size(self) -> int:
        return sum(member.size for member in self.files())

    def describe(self) -> str:
        files = sum(1 for _ in self.files())
        return (
            f"{files} files of {self.repository}@{self.commit[:12]}:{self.upstream_folder}, "
            "packed as the member list says"
        )


def member_list_path(manifest: str | Path, archive: str) -> Path:
    """Where the member list of manifest row ``archive`` lies, if it has one."""
    return Path(manifest).parent / "members" / f"{archive}.json"


def find_member_list(manifest: str | Path, archive: str) -> MemberList | None:
    path = member_list_path(manifest, archive)
    return load_member_list(path) if path.is_file() else None


def load_member_list(path: str | Path) -> MemberList:
    """A member list, every name and digest checked: a name that would leave the folder it is
    unpacked into, or an upstream path that would leave the repository, is an error."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputFormatError(path, getattr(error, "lineno", None), f"not JSON: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("members"), list):
        raise InputFormatError(path, None, "not a member list: no 'members' list")
    head: dict[str, Any] = {key: document.get(key) for key in _HEAD_FIELDS}
    for key, kind in _HEAD_FIELDS.items():
        if not isinstance(head[key], kind) or isinstance(head[key], bool):
            raise InputFormatError(path, None, f"member list without a valid {key!r}")
    if not _SHA256.fullmatch(head["tar_sha256"]):
        raise InputFormatError(path, None, f"bad tar_sha256 {quoted(head['tar_sha256'])}")
    folder = head["upstream_folder"]
    if folder and not (folder.endswith("/") and safe_relative(folder.rstrip("/"))):
        raise InputFormatError(
            path, None, f"upstream_folder {quoted(folder)} must be a relative folder ending in /"
        )
    members = tuple(
        _member(entry, path, number) for number, entry in enumerate(document["members"], 1)
    )
    names = [member.name for member in members]
    if len(set(names)) != len(names):
        repeated = next(name for name in names if names.count(name) > 1)
        raise InputFormatError(path, None, f"member {quoted(repeated)} listed twice")
    return MemberList(**head, members=members)


_HEAD_FIELDS: dict[str, type] = {
    "archive": str, "repository": str, "commit": str, "upstream_folder": str, "mtime": int,
    "uname": str, "gname": str, "tar_sha256": str,
}  # fmt: skip


def _member(entry: object, path: str | Path, number: int) -> Member:
    def bad(problem: str) -> InputFormatError:
        return InputFormatError(path, None, f"member {number}: {problem}")

    if not isinstance(entry, dict):
        raise bad("not an object")
    name, kind, mode = entry.get("name"), entry.get("type"), entry.get("mode")
    if not isinstance(name, str) or not safe_relative(name):
        raise bad(
            f"name {quoted(name)} must be a relative path without empty, . or .. parts, "
            "so that it stays inside the folder it is unpacked into"
        )
    if kind not in MEMBER_TYPES:
        raise bad(f"type {quoted(kind)} is not one of {', '.join(MEMBER_TYPES)}")
    if not isinstance(mode, str) or not re.fullmatch(r"0[0-7]{3,4}", mode):
        raise bad(f"mode {quoted(mode)} is not an octal string such as '0644'")
    if kind == "directory":
        return Member(name, kind, int(mode, 8))
    size, sha256 = entry.get("size"), entry.get("sha256")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise bad(f"size {quoted(size)} is not a whole number of bytes")
    if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
        raise bad(f"bad sha256 {quoted(sha256)}")
    return Member(name, kind, int(mode, 8), size, sha256)


def member_list_from_archive(
    archive: Path, path: str, repository: str, commit: str, upstream_folder: str
) -> MemberList:
    """The member list of a mirror archive (``path`` is its manifest path), made once: every
    member must share one mtime and owner, as the packing gave them."""
    try:
        return _member_list_from_tar(archive, path, repository, commit, upstream_folder)
    except (tarfile.TarError, EOFError, OSError) as error:
        if isinstance(error, OSError) and not isinstance(error, gzip.BadGzipFile):
            raise
        raise FetchError(
            f"{archive}: not a readable tar archive (plain, gzip, bzip2 or xz): "
            f"{str(error).splitlines()[-1].strip()}"
        ) from None


def _member_list_from_tar(
    archive: Path, path: str, repository: str, commit: str, upstream_folder: str
) -> MemberList:
    members = []
    shared: set[tuple[float, str, str]] = set()
    with tarfile.open(archive) as tar:
        for info in tar:
            kind = next((k for k, v in MEMBER_TYPES.items() if v == info.type), None)
            if kind is None or not safe_relative(info.name):
                raise FetchError(f"{archive}: member {quoted(info.name)} is not a file or folder")
            shared.add((info.mtime, info.uname, info.gname))
            if kind == "directory":
                members.append(Member(info.name, kind, info.mode))
                continue
            extracted = tar.extractfile(info)
            assert extracted is not None  # a regular file
            digest = _stream_sha256(extracted.read)
            members.append(Member(info.name, kind, info.mode, info.size, digest))
    if len(shared) != 1:
        raise FetchError(f"{archive}: members differ in mtime or owner; no member list can say it")
    ((mtime, uname, gname),) = shared
    if mtime != int(mtime):
        raise FetchError(f"{archive}: member mtime {mtime} is not whole seconds")
    with gzip.open(archive, "rb") as stream:
        tar_sha256 = hashlib.file_digest(stream, "sha256").hexdigest()
    return MemberList(
        archive=path,
        repository=repository,
        commit=commit,
        upstream_folder=upstream_folder,
        mtime=int(mtime),
        uname=uname,
        gname=gname,
        tar_sha256=tar_sha256,
        members=tuple(members),
    )


def write_member_list(member_list: MemberList, path: str | Path) -> None:
    """One member a line, so that a diff of two lists shows the members that changed."""
    head = {key: value for key, value in asdict(member_list).items() if key != "members"}
    lines = [json.dumps(head, indent=1)[:-2] + ',\n "members": [']
    entries = []
    for member in member_list.members:
        entry: dict[str, Any] = {
            "name": member.name,
            "type": member.type,
            "mode": f"{member.mode:04o}",
        }
        if member.type == "file":
            entry |= {"size": member.size, "sha256": member.sha256}
        entries.append("  " + json.dumps(entry))
    lines.append(",\n".join(entries))
    lines.append(" ]\n}")
    with atomic_output(path) as out:
        out.write("\n".join(lines) + "\n")


def assemble(member_list: MemberList, files: Path, destination: Path) -> None:
    """Pack the verified members under ``files`` (named as in the archive) into
    ``destination``: the archive's GNU tar stream, checked against ``tar_sha256``, then gzip."""
    tar_path = destination.with_name(destination.name + ".tar")
    try:
        with (
            open(tar_path, "wb") as raw,
            tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar,
        ):
            for member in member_list.members:
                info = tarfile.TarInfo(member.name)
                info.type = MEMBER_TYPES[member.type]
                info.mode, info.mtime = member.mode, member_list.mtime
                info.uname, info.gname = member_list.uname, member_list.gname
                if member.type == "directory":
                    tar.addfile(info)
                    continue
                info.size = member.size
                with open(files / member.name, "rb") as content:
                    tar.addfile(info, content)
        actual = sha256_of(tar_path)
        if actual != member_list.tar_sha256:
            raise FetchError(
                f"{member_list.archive}: the tar packed from its verified members has sha256 "
                f"{actual}, the member list says {member_list.tar_sha256}"
            )
        _gzip(tar_path, destination)
    finally:
        tar_path.unlink(missing_ok=True)


def _gzip(source: Path, destination: Path) -> None:
    """``gzip -9n``: GNU gzip's own deflate where it is installed (it made the mirror's
    archives, and zlib's level 9 gives other bytes), else zlib's with the same header fields."""
    gnu = shutil.which("gzip")
    if gnu and subprocess.run(
        [gnu, "--version"], capture_output=True, text=True, check=False
    ).stdout.startswith("gzip 1."):
        with open(source, "rb") as plain, open(destination, "wb") as out:
            subprocess.run([gnu, "-9n", "-c"], stdin=plain, stdout=out, check=True)
        return
    with open(source, "rb") as plain, open(destination, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as out:
            shutil.copyfileobj(plain, out, _CHUNK)


def gunzipped_sha256(archive: Path) -> str | None:
    """The sha256 of a gzip file's uncompressed content; None when it is not gzip."""
    try:
        with gzip.open(archive, "rb") as stream:
            return _stream_sha256(stream.read)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None


def sha256_of(path: Path) -> str:
    with open(path, "rb") as handle:
        return _stream_sha256(handle.read)


def _stream_sha256(read: Callable[[int], bytes]) -> str:
    digest = hashlib.sha256()
    while chunk := read(_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()
