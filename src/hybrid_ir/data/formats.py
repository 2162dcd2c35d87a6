"""The canonical intermediate formats, one each, and their readers and writers.

* corpus: JSON Lines, one document per line, keys ``id``, ``title``, ``text`` plus optional fields;
* topics: JSON Lines, one topic per line, keys ``id``, ``title``, ``text`` plus optional fields;
* qrels: TREC format ``qid 0 docid relevance`` with integer relevance (read, written and held
  by :mod:`hybrid_ir.data.qrels`);
* runs: TREC format ``qid Q0 docid rank score tag`` (read and written by
  :mod:`hybrid_ir.data.runs`).

Both are read as trec_eval 10.0 reads them: a line whose first non-blank character is ``#`` is a
comment (:func:`is_comment`), and a run line's fields after the sixth are ignored.

Every writer goes through :func:`atomic_output`, so an interrupted or failed step never leaves a
half-written file under the final name.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import gzip
import io
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

from hybrid_ir.errors import HybridIRError, InputFormatError, cut, printable, quoted

REQUIRED_KEYS = ("id", "title", "text")


# libyaml's parser where PyYAML was built with it: the same documents as yaml.safe_load, about ten
# times faster, which every Snakemake start (a no-op re-run included) feels in the schema,
# configuration and expected-score files it reads.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


MAX_NESTING = 100
"""The deepest nesting of lists and mappings in a YAML or JSON document read from a user
(configuration, expected scores, claims, provenance records), aliases expanded: libyaml's
composer recurses in C and crashes the process on tens of thousands of levels, and Python's own
walks of a document (copying, schema validation, printing) stop at about a thousand. The
workflow's own documents nest about ten deep."""
MAX_DOCUMENT_SIZE = 1 << 24
"""The largest YAML or JSON document read whole (16 MiB, or as many characters of a file opened
as text; the workflow's configuration is about 50 kB): ``/dev/zero`` or a data file given by
mistake is an error, not memory exhausted."""


def read_document(path: str | Path) -> str:
    """The UTF-8 text of a YAML or JSON document, refused past :data:`MAX_DOCUMENT_SIZE`."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_DOCUMENT_SIZE + 1)
    if len(data) > MAX_DOCUMENT_SIZE:
        raise _too_large(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        byte = data[error.start : error.start + 1].hex()
        raise InputFormatError(path, line, f"not UTF-8 text (byte 0x{byte})") from None


def bounded_read(handle: IO[str], name: str | Path) -> str:
    """The rest of a text ``handle``, refused past :data:`MAX_DOCUMENT_SIZE`."""
    text = handle.read(MAX_DOCUMENT_SIZE + 1)
    if len(text) > MAX_DOCUMENT_SIZE:
        raise _too_large(name)
    return text


def _too_large(name: str | Path) -> InputFormatError:
    return InputFormatError(
        name, None, f"larger than {MAX_DOCUMENT_SIZE:,} bytes: not a YAML or JSON document"
    )


def _too_deep(name: str | Path, line: int, aliases: bool = False) -> InputFormatError:
    expanded = " with its aliases expanded" if aliases else ""
    return InputFormatError(
        name, line, f"lists and mappings nested deeper than {MAX_NESTING} levels{expanded}"
    )


def check_yaml_nesting(text: str, name: str | Path) -> None:
    """Refuse ``text`` nested deeper than :data:`MAX_NESTING`, an alias counting as deep as
    its anchor's node, from the parser's events alone (nothing is composed, so nothing
    recurses); the line is where the limit is passed."""
    loader = YAML_LOADER(text)
    depth = 0
    # Per open collection: its anchor, its depth, the deepest level reached inside it.
    open_: list[tuple[str | None, int, int]] = []
    heights: dict[str, int] = {}
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_NESTING:
                    raise _too_deep(name, event.start_mark.line + 1)
                open_.append((event.anchor, depth, depth))
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, start, reached = open_.pop()
                if anchor is not None:
                    heights[anchor] = reached - start + 1
                if open_:
                    outer = open_[-1]
                    open_[-1] = (outer[0], outer[1], max(outer[2], reached))
                depth -= 1
            elif isinstance(event, yaml.ScalarEvent) and event.anchor is not None:
                heights[event.anchor] = 0
            elif isinstance(event, yaml.AliasEvent) and open_:
                reached = depth + heights.get(event.anchor, 0)
                if reached > MAX_NESTING:
                    raise _too_deep(name, event.start_mark.line + 1, aliases=True)
                outer = open_[-1]
                open_[-1] = (outer[0], outer[1], max(outer[2], reached))
    finally:
        loader.dispose()


def parse_yaml(
    text: str, name: str | Path, check: Callable[[yaml.Node], None] | None = None
) -> Any:
    """The single document of ``text`` as ``yaml.safe_load`` gives it, by libyaml where
    available, its nesting bounded first (:func:`check_yaml_nesting`); ``check`` sees the
    composed node graph before anything is constructed."""
    check_yaml_nesting(text, name)
    loader = YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if check is not None:
            check(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_yaml(handle: IO[str]) -> Any:
    """:func:`parse_yaml` of the rest of an open file, refused past :data:`MAX_DOCUMENT_SIZE`."""
    name = getattr(handle, "name", "<yaml>")
    return parse_yaml(bounded_read(handle, name), name)


# A JSON string or bracket: brackets inside strings do not nest.
_JSON_NESTING = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]')


def check_json_nesting(text: str, name: str | Path) -> None:
    """Refuse ``text`` nested deeper than :data:`MAX_NESTING`, before it is parsed: the line
    is where the limit is passed."""
    depth = 0
    for token in _JSON_NESTING.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > MAX_NESTING:
                raise _too_deep(name, text.count("\n", 0, token.start()) + 1)
        elif bracket in ("]", "}"):
            depth -= 1


def parse_json(text: str, name: str | Path) -> Any:
    """The JSON document ``text``, refused in one line naming ``name`` and the line when it is
    not JSON or nests deeper than :data:`MAX_NESTING`."""
    check_json_nesting(text, name)
    try:
        return _STRICT_JSON.decode(text)
    except json.JSONDecodeError as error:
        raise InputFormatError(name, error.lineno, f"invalid JSON: {error.msg}") from None
    except _RepeatedKey as error:
        raise InputFormatError(name, None, _repeated_key(error.key)) from None
    except ValueError as error:  # a number of over 4,300 digits
        raise InputFormatError(name, None, f"invalid JSON: {cut(str(error))}") from None


_FULL_DISK = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""The errors of a write that did not fit (disk, quota, file size)."""


@contextlib.contextmanager
def atomic_output(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temporary sibling of ``path`` (of a symbolic link's target, which it replaces,
    not the link) and rename it to ``path`` only on success. A device or a pipe
    (``/dev/stdout``, ``/dev/null``, a FIFO) is written through, as the shell's ``>`` writes
    it: renaming over one would replace it with a file. Any other file that is not a regular
    file (a directory, a socket) is refused."""
    path = Path(path)
    encoding = None if "b" in mode else "utf-8"
    try:
        if _is_stream(path):
            with open(path, mode, encoding=encoding) as stream:
                yield stream
            return
        target = Path(os.path.realpath(path)) if path.is_symlink() else path
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, mode, encoding=encoding) as handle:
                yield handle
            make_readable(tmp_name)
            os.replace(tmp_name, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
            raise
    except OSError as error:
        # A write or close on a full disk or quota names no file: name the one being written.
        if error.filename is None and error.errno in _FULL_DISK:
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise


def _is_stream(path: Path) -> bool:
    """Whether ``path`` (through symbolic links) is a device or a pipe; False for a regular
    file or none; an error naming it for anything else, which no output may replace."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISREG(mode):
        return False
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode):
        return True
    kind = "a directory" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else None
    raise HybridIRError(
        f"{printable(str(path))}: not written: it is {kind or 'a special file'}, not a regular "
        "file, a device or a pipe"
    )


@contextlib.contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """A staging directory path (not created) renamed to ``path`` only on success.

    The staging name is fixed (``.NAME.tmp`` beside ``path``) and removed first, so that a build
    killed earlier (SIGKILL, a lost node) leaves nothing that a later run trips over or that
    accumulates; a failure removes it too.
    """
    path = Path(path)
    staging = path.with_name(f".{path.name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield staging
        shutil.rmtree(path, ignore_errors=True)
        os.replace(staging, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def make_readable(path: str | Path) -> None:
    """Give a temporary file the permissions a plainly created file would have (umask)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


GZIP_MAGIC = b"\x1f\x8b"
ASCII_WHITESPACE = " \t\n\r\x0b\x0c"
_ASCII_FIELDS = re.compile(f"[{re.escape(ASCII_WHITESPACE)}]+")
# Numbers as trec_eval reads them: ASCII digits only (Python's int() and float() would also take
# "1_0", Arabic-Indic digits and surrounding Unicode spaces). Possessive quantifiers: no part
# can give characters back to the next, so the engine never backtracks into them (a run file's
# reader matches millions of lines with these).
ASCII_INTEGER = re.compile(r"[+-]?+[0-9]++")
ASCII_NUMBER = re.compile(
    r"[+-]?+(?:(?:[0-9]++\.?+[0-9]*+|\.[0-9]++)(?:[eE][+-]?+[0-9]++)?+|nan|inf(?:inity)?)",
    re.IGNORECASE,
)
MAX_RELEVANCE = 1000
_relevance_limit: contextvars.ContextVar[int] = contextvars.ContextVar(
    "relevance_limit", default=MAX_RELEVANCE
)
MAX_LINE_CHARS = 1 << 25
"""The longest line a reader takes (32 Mi characters; config ``max_line_chars``): a file without
line breaks, or one line of gigabytes, is an error once this much is read, before the line is
held whole."""
_line_limit: contextvars.ContextVar[int] = contextvars.ContextVar(
    "line_limit", default=MAX_LINE_CHARS
)


ID_RULE = (
    "an id is a non-empty string without spaces, line breaks or control characters (TREC files "
    "separate fields at whitespace and lines at line breaks)"
)
# ASCII space and controls, the C1 controls (U+0085 ends a line for str.splitlines) and the
# Unicode line and paragraph separators. Other Unicode spaces (U+00A0) stay part of an id, as
# trec_eval and split_fields read them.
_ID_BREAKING = re.compile("[\x00-\x20\x7f-\x9f\u2028\u2029]")
# The same, less the ASCII whitespace that separates the fields of a run or qrels line.
_IN_LINE_BREAKING = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\u2028\u2029]")


def id_problem(value: object) -> str | None:
    """What breaks :data:`ID_RULE` in ``value``, or None for a valid id."""
    if not isinstance(value, str) or not value:
        return f"id {quoted(value)} is not a non-empty string"
    found = _ID_BREAKING.search(value)
    if found:
        return f"id {quoted(value)} contains U+{ord(found.group()):04X}: {ID_RULE}"
    return None


def check_read_ids(path: str | Path, line_number: int, *ids: object) -> None:
    """A reader's guard: the first of ``ids`` that breaks :data:`ID_RULE` names file and line."""
    for value in ids:
        problem = id_problem(value)
        if problem:
            raise InputFormatError(path, line_number, problem)


def check_written_id(value: object, path: str | Path) -> None:
    """A writer's guard: nothing this workflow writes may fail to read back."""
    problem = id_problem(value)
    if problem:
        raise HybridIRError(f"{path}: not written: {problem}")


def line_breaking_problem(text: str) -> tuple[int, str] | None:
    """(offset of the line in ``text``, problem) for the first line holding a character that no
    id may hold and that does not separate fields (a control character, U+2028), or None."""
    found = _IN_LINE_BREAKING.search(text)
    if not found:
        return None
    start = text.rfind("\n", 0, found.start()) + 1
    end = text.find("\n", found.start())
    line = text[start : end if end >= 0 else len(text)]
    problem = f"U+{ord(found.group()):04X} in {quoted(line.strip(ASCII_WHITESPACE))}: {ID_RULE}"
    return text.count("\n", 0, start), problem


def is_comment(line: str) -> bool:
    """Whether a run or qrels line is a comment, which trec_eval 10.0 skips: its first non-blank
    character is ``#``."""
    return line.lstrip(ASCII_WHITESPACE).startswith("#")


def split_fields(line: str) -> list[str]:
    """Whitespace-separated fields, separated by ASCII whitespace only: a non-breaking space
    belongs to an id, as trec_eval reads it."""
    stripped = line.strip(ASCII_WHITESPACE)
    return _ASCII_FIELDS.split(stripped) if stripped else []


class CheckedText:
    """A UTF-8 text stream (``.gz`` decompressed, a leading BOM dropped) whose undecodable,
    binary or truncated content raises :class:`InputFormatError` naming the file and line
    instead of a traceback from deep inside a reader."""

    def __init__(self, path: Path):
        self.path = path
        self.line_number = 0
        with open(path, "rb") as probe:
            magic = probe.read(len(GZIP_MAGIC))
        compressed = path.suffix == ".gz"
        if magic == GZIP_MAGIC and not compressed:
            raise InputFormatError(
                path, None, "gzip-compressed data in a file whose name does not end in .gz"
            )
        raw = gzip.open(path, "rb") if compressed else open(path, "rb")
        self._handle = io.TextIOWrapper(raw, encoding="utf-8-sig")

    def __enter__(self) -> CheckedText:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(EOFError, OSError, zlib.error, UnicodeDecodeError):
            self._handle.close()

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def readline(self, size: int = -1) -> str:
        """The next line, read no further than the line limit (:func:`line_limit`, its line
        break aside) past which it is an error naming the line."""
        limit = _line_limit.get()
        line = self._guarded(lambda: self._handle.readline(limit + 1 if size < 0 else size))
        if not line.endswith("\n"):
            check_line_length(self.path, self.line_number + 1, len(line))
        return line

    def read(self, size: int = -1) -> str:
        return self._guarded(lambda: self._handle.read(size))

    def _guarded(self, read: Callable[[], str]) -> str:
        try:
            text = read()
        except UnicodeDecodeError:
            line, problem = _first_undecodable_line(self.path)
            raise InputFormatError(self.path, line, problem) from None
        except (EOFError, gzip.BadGzipFile, zlib.error) as error:
            raise InputFormatError(
                self.path, self.line_number + 1, f"truncated or corrupt gzip data ({error})"
            ) from None
        if "\x00" in text:
            where = self.line_number + 1 + text[: text.index("\x00")].count("\n")
            raise InputFormatError(self.path, where, "binary data (a NUL byte): not a text file")
        self.line_number += text.count("\n")
        return text


def _first_undecodable_line(path: Path) -> tuple[int | None, str]:
    """Where a file stops being UTF-8; read again line by line, as the error is rare."""
    opener = gzip.open if path.suffix == ".gz" else open
    line_number = 0
    try:
        with opener(path, "rb") as raw:
            for line_number, line in enumerate(raw, start=1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as error:
                    byte = line[error.start : error.start + 1]
                    return line_number, (
                        f"not UTF-8 text (byte 0x{byte.hex()} at column {error.start + 1}); "
                        "convert it to UTF-8 first (e.g. iconv -f latin1 -t utf-8)"
                    )
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        return line_number + 1, f"truncated or corrupt gzip data ({error})"
    return None, "not UTF-8 text"


@contextlib.contextmanager
def archive_errors(path: str | Path) -> Iterator[None]:
    """Within the block, a corrupt or truncated zip, tar or gzip archive, or a member that is
    not UTF-8, is an :class:`InputFormatError` naming ``path``, not a traceback."""
    try:
        yield
    except UnicodeDecodeError as error:
        problem = f"not UTF-8 text (byte 0x{error.object[error.start : error.start + 1].hex()})"
        raise InputFormatError(path, None, problem) from None
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as error:
        problem = f"corrupt or truncated archive ({type(error).__name__}: {quoted(str(error))})"
        raise InputFormatError(path, None, problem) from None


def open_text(path: str | Path) -> CheckedText:
    """Open a UTF-8 text file for reading, transparently decompressing ``.gz``."""
    return CheckedText(Path(path))


class MemberText:
    """The UTF-8 text of an archive member (a leading BOM dropped), its lines read no further
    than the line limit as :class:`CheckedText` reads a file's: a member of gigabytes without a
    line break is an error naming ``name`` (archive and member), not memory exhausted. A member
    that is not UTF-8 is left to :func:`archive_errors`."""

    def __init__(self, raw: IO[bytes], name: str, newline: str | None = None):
        self.name = name
        self.line_number = 0
        self._handle = io.TextIOWrapper(raw, encoding="utf-8-sig", newline=newline)

    def __enter__(self) -> MemberText:
        return self

    def __exit__(self, *_: object) -> None:
        self._handle.close()

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = self._handle.readline(_line_limit.get() + 1)
        if not line:
            raise StopIteration
        self.line_number += 1
        if not line.endswith("\n"):
            check_line_length(self.name, self.line_number, len(line))
        return line


def read_whole(handle: IO[bytes], name: str) -> bytes:
    """The rest of ``handle``, a page a reader parses whole, refused (naming ``name``) once it
    is larger than the line limit, the most any reader holds at once."""
    limit = _line_limit.get()
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputFormatError(
            name,
            None,
            f"larger than {limit:,} bytes (config max_line_chars), the most a page read whole "
            "may hold: not a page of this collection",
        )
    return data


def write_records(path: str | Path, records: Iterable[dict]) -> int:
    """Write corpus or topic records as JSON Lines; return how many were written."""
    count = 0
    with atomic_output(path) as out:
        for record in records:
            missing = [key for key in REQUIRED_KEYS if key not in record]
            if missing:
                raise ValueError(f"record {record.get('id')!r} lacks {', '.join(missing)}")
            check_written_id(record["id"], path)
            out.write(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n")
            count += 1
    return count


class _RepeatedKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return value


# json.loads keeps the last of a key given twice; whichever value was meant, the record is
# ambiguous. A decoder built once: json.loads with a hook would build one per line.
_STRICT_JSON = json.JSONDecoder(object_pairs_hook=_unique_keys)


def _repeated_key(key: str) -> str:
    return f"key {quoted(key)} given twice in one object: which value is meant is unclear"


def json_lines(handle: Iterable[str], name: str | Path) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` of a JSON Lines stream; a bad line (not JSON, a key given
    twice) names ``name`` and line."""
    for line_number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            value = _STRICT_JSON.decode(line)
        except json.JSONDecodeError as error:
            raise InputFormatError(name, line_number, f"invalid JSON: {error.msg}") from None
        except _RepeatedKey as error:
            raise InputFormatError(name, line_number, _repeated_key(error.key)) from None
        except (ValueError, RecursionError) as error:  # a 5,000-digit number, deep nesting
            problem = f"invalid JSON: {quoted(str(error) or type(error).__name__)}"
            raise InputFormatError(name, line_number, problem) from None
        if not isinstance(value, dict):
            raise InputFormatError(name, line_number, "expected a JSON object")
        yield line_number, value


def read_records(path: str | Path) -> Iterator[dict]:
    """Read canonical corpus or topic JSON Lines, checking the required keys line by line; a
    file without any record is an error, not an empty collection."""
    ids = UniqueIds()
    with open_text(path) as handle:
        for line_number, record in json_lines(handle, path):
            missing = [key for key in REQUIRED_KEYS if key not in record]
            if missing:
                raise InputFormatError(path, line_number, f"missing key(s) {', '.join(missing)}")
            check_read_ids(path, line_number, record["id"])
            ids.add(record["id"], path, line_number)
            yield record
    if not ids:
        raise InputFormatError(path, None, "no records")


class UniqueIds:
    """A reader's guard: an id met a second time is an error naming the file and line of both,
    before a file holding it is written (a corpus with one id twice gives two documents one
    name, and which one a run means is unknown)."""

    def __init__(self) -> None:
        self._first: dict[str, tuple[str, int | None]] = {}

    def __len__(self) -> int:
        return len(self._first)

    def add(self, value: str, where: str | Path, line: int | None) -> None:
        first = self._first.setdefault(value, (str(where), line))
        if first == (str(where), line):
            return
        earlier = f"line {first[1]}" if first[0] == str(where) else ":".join(map(str, first))
        raise InputFormatError(
            where, line, f"id {quoted(value)} repeats {earlier}: ids must be unique"
        )


def max_line_chars() -> int:
    """The line limit in force (:func:`line_limit`)."""
    return _line_limit.get()


def check_line_length(path: str | Path, line_number: int, length: int) -> None:
    """A line of ``length`` characters (its line break aside), whole or read that far without
    its end yet, past the line limit is an error naming ``path`` and ``line_number``."""
    limit = max_line_chars()
    if length > limit:
        raise InputFormatError(
            path,
            line_number,
            f"a line longer than {limit:,} characters (config max_line_chars): not a file of "
            "this format, or a record too large to read",
        )


@contextlib.contextmanager
def _set_within(variable: contextvars.ContextVar[int], value: int) -> Iterator[None]:
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)


def line_limit(limit: int) -> contextlib.AbstractContextManager[None]:
    """Within the block, readers refuse lines longer than ``limit`` characters."""
    return _set_within(_line_limit, limit)


def relevance_limit(limit: int) -> contextlib.AbstractContextManager[None]:
    """Within the block, readers accept relevance values with ``|rel| <= limit``."""
    return _set_within(_relevance_limit, limit)


def max_relevance() -> int:
    """The relevance limit in force (:func:`relevance_limit`), which
    :func:`hybrid_ir.data.qrels.parse_relevance` applies."""
    return _relevance_limit.get()


@dataclass(frozen=True)
class RunEntry:
    """One line of a TREC run."""

    query_id: str
    doc_id: str
    rank: int
    score: float
    tag: str


def write_table(path: str | Path, rows: list[dict]) -> int:
    """Write rows sharing their keys as a tab-separated table with a header line."""
    columns = list(rows[0]) if rows else []
    with atomic_output(path) as out:
        out.write("\t".join(columns) + "\n")
        for row in rows:
            out.write("\t".join(_cell(row[column]) for column in columns) + "\n")
    return len(rows)


def read_table(path: str | Path) -> list[dict[str, str]]:
    """Read a table written by :func:`write_table`: one dict per line, keyed by the header.

    A line whose field count differs from the header's is an error naming the file and line.
    """
    with open_text(path) as handle:
        lines = iter(handle)
        header = next(lines, "").rstrip("\n").split("\t")
        rows = []
        for number, line in enumerate(lines, start=2):
            values = line.rstrip("\n").split("\t")
            if values == [""]:
                continue
            if len(values) != len(header):
                raise InputFormatError(
                    path, number, f"{len(values)} fields where the header has {len(header)}"
                )
            rows.append(dict(zip(header, values, strict=True)))
    return rows


def _cell(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else str(value)
    return text.replace("\t", " ").replace("\n", " ")
