"""Property tests of every input reader against bad, hostile and valid files.

Readers under test: qrels (``qrels.read_judgments``, ``qrels.read_qrels``), runs
(``runs.read_run``), canonical corpus/topics JSON Lines (``formats.read_records``), ARQMath and
NTCIR-12 topics XML (``collections.arqmath.read_topics``, ``collections.ntcir.read_topics``) and
the fetch manifest (``fetch.load_manifest``).

Why: these files come from mirrors, upstream repositories and users, so they can be truncated,
re-encoded, compressed under the wrong name or simply garbage. The contract (issue "Bad input,
faults and untrusted files") is that a reader either returns a correct, non-empty parse or raises
:class:`~hybrid_ir.errors.InputFormatError` naming the file read (and a line of it, where the
problem is on one): never another exception, which surfaces as a traceback from deep inside the
workflow, and never a silent empty or wrong result, which silently scores 0 or mis-scores.

Two kinds of properties per reader:

* arbitrary bytes (pure ``st.binary()``, valid-looking lines mixed with noise such as a BOM, NUL
  bytes, ``\\xa0``, ``\\r\\n``, huge numbers, nan/inf, and mutations of valid files), stored
  plainly, gzip-compressed under a ``.gz`` name, gzip-compressed under a plain name, truncated
  gzip under a ``.gz`` name, or plain bytes under a ``.gz`` name, give only allowed outcomes. For
  the line formats (qrels, runs) a successful parse must also equal what a strict reference
  parser (ASCII decimal numbers, as trec_eval reads them) gives for the same text;
* generated valid files (ids from a safe alphabet, random whitespace layout, optional BOM,
  optional gzip) read back exactly what was written.

Everything is derandomized (no example database) so CI runs the same examples every time.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import re
import string
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hybrid_ir.data.collections import arqmath, ntcir
from hybrid_ir.data.fetch import ManifestEntry, load_manifest
from hybrid_ir.data.formats import read_records
from hybrid_ir.data.qrels import Judgment, read_judgments, read_qrels
from hybrid_ir.data.runs import read_run, write_run
from hybrid_ir.errors import InputFormatError

ARBITRARY = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
VALID = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ASCII_WHITESPACE = " \t\n\r\x0b\x0c"
BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"
# A gzip stream cut inside its first deflate block, whose first decompressed byte (0x80) is
# not UTF-8.
TRUNCATED_GZIP = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03k\x00"
MAX_RELEVANCE = 1000
MATHML_NAMESPACE = "http://www.w3.org/1998/Math/MathML"
MANIFEST_COLUMNS = (
    "path",
    "sha256",
    "size",
    "repository",
    "commit",
    "upstream_path",
    "url",
    "upstream_sha256",
)

# --------------------------------------------------------------------------- files and outcomes


@contextlib.contextmanager
def stored(name: str, data: bytes) -> Iterator[Path]:
    """``data`` written to a fresh file called ``name`` (hypothesis and ``tmp_path`` don't mix:
    one function-scoped folder would be shared by every example)."""
    with tempfile.TemporaryDirectory(prefix="reader-properties-") as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        yield path


def _gunzip_prefix(raw: bytes) -> bytes:
    """As much of a (possibly truncated or corrupt) gzip stream as decompresses."""
    out = []
    while raw:
        member = zlib.decompressobj(wbits=31)
        try:
            out.append(member.decompress(raw))
        except zlib.error:
            break
        if not member.eof:
            break
        raw = member.unused_data
    return b"".join(out)


def _line_count(data: bytes) -> int:
    """Lines of ``data`` under any of the conventions a reader may count by (``\\n`` only, or
    universal newlines ``\\n``, ``\\r\\n``, ``\\r``); an unterminated last line counts."""
    breaks = max(data.count(b"\n"), len(re.findall(rb"\r\n|\r|\n", data)))
    return breaks + (0 if data.endswith((b"\n", b"\r")) or not data else 1)


def lines_in(path: Path) -> int:
    raw = path.read_bytes()
    count = _line_count(raw)
    if path.suffix == ".gz":
        count = max(count, _line_count(_gunzip_prefix(raw)))
    return count


def check_error(error: InputFormatError, path: Path) -> None:
    """The error names the file read and, where it gives one, a line that the file has (or the
    one just past its end, for a problem found at end of file)."""
    assert error.path == str(path), f"error names {error.path!r}, not the file read {path}"
    if error.line is None:
        assert str(error) == f"{path}: {error.problem}"
    else:
        assert isinstance(error.line, int)
        assert 1 <= error.line <= lines_in(path) + 1, (
            f"line {error.line} of a file with {lines_in(path)} line(s): {error}"
        )
        assert str(error) == f"{path}:{error.line}: {error.problem}"
    assert error.problem


def outcome(read: Callable[[Path], object], path: Path) -> object:
    """What ``read`` returns, or the checked InputFormatError it raises; any other exception
    propagates and fails the test with its own traceback."""
    try:
        return read(path)
    except InputFormatError as error:
        check_error(error, path)
        return error


def shown(value: object, limit: int = 300) -> str:
    """``repr`` of an input cut to ``limit`` characters, for assertion messages."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def with_examples(examples: tuple[tuple, ...], **fixed: object) -> Callable:
    """Explicit regression inputs, run before the generated ones on every test run."""

    def decorate(test: Callable) -> Callable:
        for file in reversed(examples):
            test = example(file=file, **fixed)(test)
        return test

    return decorate


def decoded_text(path: Path) -> str | None:
    """The text a reader should see, or None where every reader must refuse the file (gzip bytes
    under a plain name, a corrupt or truncated gzip, bytes that are not UTF-8, a NUL byte)."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error):
            return None
    elif raw.startswith(GZIP_MAGIC):
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.removeprefix("\ufeff")
    return None if "\x00" in text else text


def text_lines(text: str) -> list[str]:
    """Lines as a text-mode reader sees them: universal newlines, terminators removed."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def ascii_fields(line: str) -> list[str]:
    stripped = line.strip(ASCII_WHITESPACE)
    return re.split(f"[{re.escape(ASCII_WHITESPACE)}]+", stripped) if stripped else []


# --------------------------------------------------------------------------- strict numbers

_ASCII_INT = re.compile(r"[+-]?[0-9]+")
_ASCII_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def strict_relevance(value: str) -> int | None:
    """A relevance as trec_eval's C parser reads a clean field: ASCII digits (an integral float
    such as ``3.0`` allowed), within the default limit; None for anything else."""
    if _ASCII_INT.fullmatch(value):
        digits = value.lstrip("+-").lstrip("0")
        if len(digits) > 10:
            return None
        number = int(value)
    elif _ASCII_FLOAT.fullmatch(value):
        real = float(value)
        if not real.is_integer():
            return None
        number = int(real)
    else:
        return None
    return number if abs(number) <= MAX_RELEVANCE else None


def strict_score(value: str) -> float | None:
    if not _ASCII_FLOAT.fullmatch(value):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def expected_judgments(text: str) -> list[Judgment] | None:
    judgments = []
    for line in text_lines(text):
        fields = ascii_fields(line)
        if not fields or fields[0].startswith("#"):  # a comment, as trec_eval 10.0 reads one
            continue
        if len(fields) != 4:
            return None
        relevance = strict_relevance(fields[3])
        if relevance is None:
            return None
        judgments.append(Judgment(fields[0], fields[2], relevance))
    return judgments or None


def as_qrels(judgments: list[Judgment]) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for judgment in judgments:
        docs = qrels.setdefault(judgment.query_id, {})
        docs[judgment.doc_id] = max(judgment.relevance, docs.get(judgment.doc_id, -math.inf))
    return qrels


def _run_fields(line: str, run_format: str) -> list[str]:
    if run_format == "arqmath":
        return [field.strip(ASCII_WHITESPACE) for field in line.split("\t")]
    return ascii_fields(line)[:6]  # trec_eval ignores a TREC line's fields after the sixth


def expected_run(text: str, run_format: str | None) -> dict[str, dict[str, float]] | None:
    run: dict[str, dict[str, float]] = {}
    for line in text_lines(text):
        if not line.strip(ASCII_WHITESPACE) or line.lstrip(ASCII_WHITESPACE).startswith("#"):
            continue
        if run_format is None:
            tab_fields = _run_fields(line, "arqmath")
            if len(tab_fields) == 5 and all(tab_fields):
                run_format = "arqmath"
            elif len(ascii_fields(line)) >= 6:
                run_format = "trec"
            elif len(tab_fields) == 5:
                run_format = "arqmath"
            else:
                return None
        fields = _run_fields(line, run_format)
        if len(fields) != (6 if run_format == "trec" else 5) or not all(fields[:-1]):
            return None
        if run_format == "trec":
            topic, _, doc, rank, score, _ = fields
        else:
            topic, doc, rank, score, _ = fields
        value = strict_score(score)
        if not _ASCII_INT.fullmatch(rank) or value is None:
            return None
        docs = run.setdefault(topic, {})
        if doc not in docs or value > docs[doc]:
            docs[doc] = value
    return run or None


# --------------------------------------------------------------------------- strategies

SAFE_ID = st.text(
    alphabet=string.ascii_letters + string.digits + "._:-/é−\xa0", min_size=1, max_size=10
)
ASCII_ID = st.text(alphabet=string.ascii_letters + string.digits + "._-", min_size=1, max_size=10)
SEPARATOR = st.text(alphabet=" \t\x0b\x0c", min_size=1, max_size=3)
PADDING = st.text(alphabet=" \t", max_size=2)
SPACES = st.text(alphabet=" ", max_size=2)
LINE_END = st.sampled_from(["\n", "\r\n"])

NOISE = (
    BOM,
    b"\x00",
    b"\xc2\xa0",
    b"\r\n",
    b"\r",
    b"\n",
    b"\t",
    b" ",
    b"\x0b",
    b"\x0c",
    b"#",
    b"\xc2\x85",
    b"\xe2\x80\xa8",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    GZIP_MAGIC + b"\x08",
    b"nan",
    b"-Infinity",
    b"inf",
    b"1e400",
    b"-1e-400",
    b"9" * 40,
    b"1_0",
    "\u0661".encode(),
    b"0x1p3",
    b"3.0",
    b"0.5",
    b"-1",
    b"+2",
    b"1e3",
    b'"',
    b"#",
)
NUMBER_TOKENS = (
    "0",
    "1",
    "-1",
    "+2",
    "3.0",
    "2.",
    ".5",
    "1e3",
    "1e-400",
    "1e400",
    "nan",
    "NaN",
    "inf",
    "-Infinity",
    "9" * 30,
    "1001",
    "-1001",
    "1_0",
    "1__0",
    "\u0661",
    "\u0663.5",
    "\xa01",
    "1\xa0",
    "0x10",
    "0x1p3",
    "1,5",
    "",
)
NUMBER = st.one_of(
    st.integers(-1100, 1100).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(NUMBER_TOKENS),
)
LOOSE_FIELD = st.one_of(SAFE_ID, NUMBER, st.sampled_from(["Q0", "0", "\xa0", "é", "\u2028"]))


def _bytes(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    return strategy.map(lambda text: text.encode("utf-8", "surrogatepass"))


@st.composite
def loose_line(draw: st.DrawFn, fields: int, separators: st.SearchStrategy[str]) -> bytes:
    """A valid-looking line: about ``fields`` fields, some of them odd numbers or noise."""
    count = draw(st.sampled_from([fields, fields, fields, fields - 1, fields + 1]))
    values = [draw(LOOSE_FIELD) for _ in range(max(count, 0))]
    line = draw(PADDING)
    for value in values:
        line += value + draw(separators)
    return (line + draw(LINE_END)).encode("utf-8", "surrogatepass")


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[bytes], tokens: tuple[bytes, ...]) -> bytes:
    """A valid file with one to three edits: a token or random bytes inserted, a slice deleted
    or replaced."""
    data = draw(valid)
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, len(data)))
        end = draw(st.integers(start, min(len(data), start + 8)))
        piece = draw(st.one_of(st.sampled_from(tokens), st.binary(max_size=6)))
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        if kind == "insert":
            data = data[:start] + piece + data[start:]
        elif kind == "delete":
            data = data[:start] + data[end:]
        else:
            data = data[:start] + piece + data[end:]
    return data


def contents(
    valid: st.SearchStrategy[bytes],
    lines: st.SearchStrategy[bytes],
    tokens: tuple[bytes, ...] = (),
) -> st.SearchStrategy[bytes]:
    """Arbitrary file contents: pure random bytes, valid-looking lines mixed with noise, or a
    mutated valid file."""
    everything = NOISE + tokens
    piece = st.one_of(lines, st.sampled_from(everything), st.binary(max_size=12))
    return st.one_of(
        st.binary(max_size=300),
        st.lists(piece, max_size=10).map(b"".join),
        mutated(valid, everything),
    )


@st.composite
def arbitrary_file(
    draw: st.DrawFn, content: st.SearchStrategy[bytes], name: str, gz_names: bool = True
) -> tuple[str, bytes]:
    """``(file name, bytes)``: the content stored plainly, gzip-compressed under a ``.gz`` name,
    gzip-compressed under the plain name, truncated gzip under ``.gz``, or plain under ``.gz``."""
    data = draw(content)
    kinds = ["plain", "plain", "gzip-misnamed"]
    if gz_names:
        kinds += ["gzip", "truncated-gzip", "plain-as-gz"]
    kind = draw(st.sampled_from(kinds))
    if kind == "plain":
        return name, data
    if kind == "gzip-misnamed":
        return name, gzip.compress(data, mtime=0)
    if kind == "gzip":
        return f"{name}.gz", gzip.compress(data, mtime=0)
    if kind == "truncated-gzip":
        packed = gzip.compress(data, mtime=0)
        return f"{name}.gz", packed[: draw(st.integers(0, len(packed) - 1))]
    return f"{name}.gz", data


@st.composite
def packaging(draw: st.DrawFn, text: str, name: str, gz: bool = True) -> tuple[str, bytes]:
    """A valid text file's bytes: optional BOM, then optionally gzip under a ``.gz`` name."""
    data = (BOM if draw(st.booleans()) else b"") + text.encode("utf-8")
    if gz and draw(st.booleans()):
        return f"{name}.gz", gzip.compress(data, mtime=draw(st.sampled_from([0, 1234567890])))
    return name, data


@st.composite
def layout(draw: st.DrawFn, lines: list[str]) -> str:
    """Lines joined with random line ends, blank lines between, last end optional."""
    end = draw(LINE_END)
    out = []
    for line in lines:
        out.extend(draw(PADDING) + end for _ in range(draw(st.integers(0, 1))))
        out.append(line + end)
    text = "".join(out)
    if text and draw(st.booleans()):
        text = text[: -len(end)]
    return text


# --------------------------------------------------------------------------- qrels


@st.composite
def valid_qrels(draw: st.DrawFn) -> tuple[str, list[Judgment]]:
    judgments = draw(
        st.lists(
            st.builds(Judgment, SAFE_ID, SAFE_ID, st.integers(-MAX_RELEVANCE, MAX_RELEVANCE)),
            min_size=1,
            max_size=8,
        )
    )
    if draw(st.booleans()):  # repeat a pair with another relevance
        first = judgments[0]
        judgments.append(Judgment(first.query_id, first.doc_id, draw(st.integers(-5, 5))))
    lines = []
    for judgment in judgments:
        iteration = draw(st.sampled_from(["0", "Q0", "xxx", "1"]))
        relevance = draw(st.sampled_from(["{}", "{}.0", "{}.", "{}e0"])).format(judgment.relevance)
        fields = [judgment.query_id, iteration, judgment.doc_id, relevance]
        line = draw(PADDING) + fields[0]
        for field in fields[1:]:
            line += draw(SEPARATOR) + field
        lines.append(line + draw(PADDING))
    return draw(layout(lines)), judgments


QRELS_CONTENT = contents(
    valid_qrels().map(lambda pair: pair[0].encode("utf-8")),
    loose_line(4, SEPARATOR),
)
QRELS_READERS = {"read_judgments": read_judgments, "read_qrels": read_qrels}


def check_qrels_outcome(reader: str, path: Path) -> None:
    result = outcome(QRELS_READERS[reader], path)
    if isinstance(result, InputFormatError):
        return
    assert result, f"{reader} returned an empty result for {shown(path.read_bytes())}"
    text = decoded_text(path)
    expected = expected_judgments(text) if text is not None else None
    assert expected is not None, (
        f"{reader} accepted a file a strict parser rejects: {shown(path.read_bytes())} "
        f"-> {shown(result)}"
    )
    assert result == (expected if reader == "read_judgments" else as_qrels(expected))


QRELS_EXAMPLES = (
    ("qrels.txt", b""),
    ("qrels.txt", BOM + b" \r\n\t\n"),
    ("qrels.txt.gz", b""),
    ("qrels.txt.gz", TRUNCATED_GZIP),
    ("qrels.txt", b"q 0 d 1_0\n"),
    ("qrels.txt", "q 0 d \u0661\n".encode()),
    ("qrels.txt", b"q 0 d \xc2\xa01\n"),
    ("qrels.txt", b"q 0 d " + b"9" * 5000 + b"\n"),
)


@ARBITRARY
@with_examples(QRELS_EXAMPLES)
@given(arbitrary_file(QRELS_CONTENT, "qrels.txt"))
def test_read_judgments_on_arbitrary_bytes(file: tuple[str, bytes]) -> None:
    with stored(*file) as path:
        check_qrels_outcome("read_judgments", path)


@ARBITRARY
@with_examples(QRELS_EXAMPLES)
@given(arbitrary_file(QRELS_CONTENT, "qrels.txt"))
def test_read_qrels_on_arbitrary_bytes(file: tuple[str, bytes]) -> None:
    with stored(*file) as path:
        check_qrels_outcome("read_qrels", path)


@VALID
@given(st.data())
def test_valid_qrels_round_trip(data: st.DataObject) -> None:
    text, judgments = data.draw(valid_qrels())
    with stored(*data.draw(packaging(text, "qrels.txt"))) as path:
        assert read_judgments(path) == judgments
        assert read_qrels(path) == as_qrels(judgments)


# --------------------------------------------------------------------------- runs

SCORE_STYLES = ("{!r}", "{:.6f}", "{:e}", "{:.3g}")


@st.composite
def valid_run(draw: st.DrawFn) -> tuple[str, str, dict[str, dict[str, float]]]:
    run_format = draw(st.sampled_from(["trec", "arqmath"]))
    rows = draw(
        st.lists(
            st.tuples(
                SAFE_ID,
                SAFE_ID,
                st.integers(-(10**6), 10**6),
                st.floats(allow_nan=False, allow_infinity=False),
            ),
            min_size=1,
            max_size=8,
        )
    )
    tag = draw(ASCII_ID)
    expected: dict[str, dict[str, float]] = {}
    lines = []
    for topic, doc, rank, score in rows:
        written = draw(st.sampled_from(SCORE_STYLES)).format(score)
        if not math.isfinite(float(written)):  # 1.8e+308 from "{:.3g}" of the largest float
            written = repr(score)
        value = float(written)
        docs = expected.setdefault(topic, {})
        docs[doc] = max(value, docs.get(doc, -math.inf))
        if run_format == "trec":
            fields = [topic, draw(st.sampled_from(["Q0", "0"])), doc, str(rank), written, tag]
            line = draw(PADDING) + fields[0]
            for field in fields[1:]:
                line += draw(SEPARATOR) + field
            line += draw(PADDING)
            tab_fields = [field.strip(" \t\x0b\x0c") for field in line.split("\t")]
            if len(tab_fields) == 5 and all(tab_fields):  # ARQMath's layout: see detect_format
                line = " ".join(fields)
            lines.append(line)
        else:
            fields = [topic, doc, str(rank), written, tag]
            lines.append("\t".join(draw(SPACES) + field + draw(SPACES) for field in fields))
    return draw(layout(lines)), run_format, expected


RUN_CONTENT = contents(
    valid_run().map(lambda triple: triple[0].encode("utf-8")),
    st.one_of(loose_line(6, SEPARATOR), loose_line(5, st.just("\t"))),
)


@ARBITRARY
@example(file=("run.txt", b""), run_format=None)
@example(file=("run.txt", b""), run_format="trec")
@example(file=("run.txt", b" \n\t\n"), run_format="arqmath")
@example(file=("run.txt.gz", TRUNCATED_GZIP), run_format=None)
@example(file=("run.txt", b"q Q0 d 1 1_5 t\n"), run_format=None)
@example(file=("run.txt", "q Q0 d \u0661 \u0662.5 t\n".encode()), run_format=None)
@example(file=("run.txt", b"q\td\t1\t\xc2\xa01.5\tt\n"), run_format=None)
@example(file=("run.txt", b"q Q0 d 1 1e400 t\n"), run_format=None)
@given(arbitrary_file(RUN_CONTENT, "run.txt"), st.sampled_from([None, "trec", "arqmath"]))
def test_read_run_on_arbitrary_bytes(file: tuple[str, bytes], run_format: str | None) -> None:
    with stored(*file) as path:
        result = outcome(lambda where: read_run(where, run_format=run_format), path)
        if isinstance(result, InputFormatError):
            return
        assert result, f"read_run returned an empty run for {shown(file)}"
        text = decoded_text(path)
        expected = expected_run(text, run_format) if text is not None else None
        assert expected is not None, (
            f"read_run accepted a file a strict parser rejects: {shown(file)} -> {shown(result)}"
        )
        assert result == expected


@VALID
@given(st.data())
def test_valid_run_round_trip(data: st.DataObject) -> None:
    text, run_format, expected = data.draw(valid_run())
    with stored(*data.draw(packaging(text, "run.txt"))) as path:
        assert read_run(path) == expected
        assert read_run(path, run_format=run_format) == expected


# --------------------------------------------------------------------------- corpus and topics

JSON_VALUES = (
    b'"a"',
    b'""',
    b"1",
    b"-0.0",
    b"null",
    b"true",
    b"[]",
    b"{}",
    b"NaN",
    b"-Infinity",
    b"1e400",
    b"9" * 5000,
    b"[" * 100_000 + b"]" * 100_000,
    b'"\\ud800"',
    b'"\\u0000"',
    b'"\xc2\xa0"',
    b'"a\\nb"',
)
JSON_VALUE = st.one_of(
    st.sampled_from(JSON_VALUES),
    _bytes(st.text(max_size=8).map(json.dumps)),
    _bytes(st.integers().map(str)),
)


@st.composite
def loose_record_line(draw: st.DrawFn) -> bytes:
    keys = draw(st.lists(st.sampled_from(["id", "title", "text", "extra", "id"]), max_size=5))
    members = [json.dumps(key).encode() + b": " + draw(JSON_VALUE) for key in keys]
    return b"{" + b", ".join(members) + b"}" + draw(LINE_END).encode()


EXTRA_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@st.composite
def valid_records(draw: st.DrawFn) -> tuple[str, list[dict]]:
    records = []
    for record_id in draw(st.lists(SAFE_ID, min_size=1, max_size=6, unique=True)):
        record = {"id": record_id, "title": draw(st.text()), "text": draw(st.text())}
        extras = draw(
            st.dictionaries(
                st.text(max_size=6).filter(lambda key: key not in ("id", "title", "text")),
                EXTRA_VALUE,
                max_size=3,
            )
        )
        records.append({**record, **extras})
    ascii_only = draw(st.booleans())
    lines = [json.dumps(record, ensure_ascii=ascii_only) for record in records]
    return draw(layout(lines)), records


RECORD_CONTENT = contents(
    valid_records().map(lambda pair: pair[0].encode("utf-8")), loose_record_line(), JSON_VALUES
)


@ARBITRARY
@with_examples(
    (
        ("corpus.jsonl", b""),
        ("corpus.jsonl", BOM + b"\n \r\n"),
        ("corpus.jsonl.gz", TRUNCATED_GZIP),
        ("corpus.jsonl", b'{"id": "a", "title": "", "text": ' + b"9" * 5000 + b"}\n"),
        (
            "corpus.jsonl",
            b'{"id": "a", "title": "", "text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        ),
        ("corpus.jsonl", b'{"id": "a", "title": NaN, "text": "\\ud800"}\r\n'),
        ("corpus.jsonl", b'{"id": "a", "title": "", "text": ""}\n\x00'),
    )
)
@given(arbitrary_file(RECORD_CONTENT, "corpus.jsonl"))
def test_read_records_on_arbitrary_bytes(file: tuple[str, bytes]) -> None:
    with stored(*file) as path:
        result = outcome(lambda where: list(read_records(where)), path)
        if isinstance(result, InputFormatError):
            return
        assert result, f"read_records returned no record for {shown(file)}"
        for record in result:
            assert isinstance(record, dict)
            assert {"id", "title", "text"} <= record.keys()
            assert isinstance(record["id"], str) and record["id"]
        text = decoded_text(path)
        assert text is not None, (
            f"read_records accepted a file that is not UTF-8 text: {shown(file)}"
        )
        lines = [json.loads(line) for line in text_lines(text) if line.strip()]
        assert json.dumps(result) == json.dumps(lines)


@VALID
@given(st.data())
def test_valid_records_round_trip(data: st.DataObject) -> None:
    text, records = data.draw(valid_records())
    with stored(*data.draw(packaging(text, "corpus.jsonl"))) as path:
        assert list(read_records(path)) == records


# --------------------------------------------------------------------------- ARQMath topics XML

WORD = st.text(alphabet=string.ascii_letters + string.digits + "?.,'é", min_size=1, max_size=8)
XML_SPACE = st.text(alphabet=" \t\n", max_size=3)
ARQMATH_TOKENS = (
    b"<Topics>",
    b"</Topics>",
    b"<Topics></Topics>",
    b'<Topic number="A.1">',
    b'<Topic number="">',
    b"<Topic>",
    b"</Topic>",
    b"<Title>",
    b"</Title>",
    b"<Question>",
    b"</Question>",
    b"<Tags>",
    b"</Tags>",
    b"&lt;p&gt;",
    b"&lt;/p&gt;",
    b'&lt;span class="math-container" id="q_1"&gt;',
    b"&lt;/span&gt;",
    b"&lt;![x[",
    b"&lt;![ ",
    b"&lt;!--",
    b"$x^2$",
    b"$$",
    b"&amp;",
    b"&#0;",
    b"&#1114112;",
    b"&e;",
    b"<![CDATA[<p>a</p>]]>",
    b"<?xml version='1.0' encoding='latin-1'?>",
    b"<?xml version='1.0' encoding='utf-16'?>",
    b"<?xml version='1.0' encoding='bogus'?>",
    b"<!DOCTYPE Topics [<!ENTITY e 'x'>]>",
    b"<!-- comment -->",
    b"<a/>",
)


@st.composite
def valid_arqmath_topics(draw: st.DrawFn) -> tuple[str, list[dict]]:
    topics, parts = [], []
    if draw(st.booleans()):
        parts.append('<?xml version="1.0" encoding="UTF-8"?>\n')
    parts.append("<Topics>")
    ids = draw(st.lists(ASCII_ID.map("A.{}".format), min_size=1, max_size=4, unique=True))
    for topic_id in ids:
        title = draw(st.lists(WORD, min_size=1, max_size=4))
        paragraphs = draw(st.lists(st.lists(WORD, min_size=1, max_size=4), max_size=3))
        tags = draw(st.lists(ASCII_ID, max_size=3))
        question = "".join(f"&lt;p&gt;{' '.join(words)}&lt;/p&gt;" for words in paragraphs)
        space = draw(XML_SPACE)
        parts.append(
            f'{space}<Topic number="{topic_id}">{space}'
            f"<Title>{draw(XML_SPACE)}{' '.join(title)}{draw(XML_SPACE)}</Title>{space}"
            f"<Question>{question}</Question>{space}"
            f"<Tags>{','.join(tags)}</Tags>{space}</Topic>"
        )
        topics.append(
            {
                "id": topic_id,
                "title": " ".join(title),
                "text": "\n".join(" ".join(words) for words in paragraphs),
                "tags": tags,
                "formulas": [],
            }
        )
    parts.append(draw(XML_SPACE) + "</Topics>" + draw(XML_SPACE))
    return "".join(parts), topics


ARQMATH_CONTENT = contents(
    valid_arqmath_topics().map(lambda pair: pair[0].encode("utf-8")),
    st.sampled_from(ARQMATH_TOKENS),
    ARQMATH_TOKENS,
)


@ARBITRARY
@with_examples(
    (
        ("topics.xml", b""),
        ("topics.xml", b"<Topics></Topics>"),
        ("topics.xml", b'<?xml version="1.0" encoding="bogus"?><Topics/>'),
        ("topics.xml.gz", TRUNCATED_GZIP),
        ("topics.xml", b'<Topics><Topic number="A.1"><Title>&lt;![x[</Title></Topic></Topics>'),
        ("topics.xml", b'<Topics><Topic number="A.1"><Title>&lt;![ </Title></Topic></Topics>'),
    )
)
@given(arbitrary_file(ARQMATH_CONTENT, "topics.xml"))
def test_arqmath_read_topics_on_arbitrary_bytes(file: tuple[str, bytes]) -> None:
    with stored(*file) as path:
        result = outcome(arqmath.read_topics, path)
        if isinstance(result, InputFormatError):
            return
        assert result, f"arqmath.read_topics returned no topic for {shown(file)}"
        for topic in result:
            assert set(topic) == {"id", "title", "text", "tags", "formulas"}
            assert isinstance(topic["id"], str) and topic["id"]


@VALID
@given(st.data())
def test_valid_arqmath_topics_round_trip(data: st.DataObject) -> None:
    text, topics = data.draw(valid_arqmath_topics())
    with stored(*data.draw(packaging(text, "topics.xml"))) as path:
        assert arqmath.read_topics(path) == topics


# --------------------------------------------------------------------------- NTCIR-12 topics XML

TEX = st.text(
    alphabet=string.ascii_letters + string.digits + "^_{}+-=\\()[] ", min_size=1, max_size=16
)
NTCIR_TOKENS = (
    b"<topics>",
    b"</topics>",
    b'<topics xmlns="http://www.w3.org/1998/Math/MathML">',
    b"<topics></topics>",
    b"<topic>",
    b"</topic>",
    b"<num>NTCIR12-MathWiki-1</num>",
    b"<num></num>",
    b"<query>",
    b"</query>",
    b'<formula id="f.0">',
    b"</formula>",
    b'<math xmlns="http://www.w3.org/1998/Math/MathML">',
    b"<math>",
    b"</math>",
    b"<semantics>",
    b"</semantics>",
    b'<annotation encoding="application/x-tex">',
    b"</annotation>",
    b"<qvar>*1*</qvar>",
    b"x^{2}%\n",
    b"&amp;",
    b"&e;",
    b"<?xml version='1.0' encoding='latin-1'?>",
    b"<?xml version='1.0' encoding='bogus'?>",
    b"<a/>",
)


@st.composite
def valid_ntcir_topics(draw: st.DrawFn) -> tuple[str, list[dict]]:
    namespaced_root = draw(st.booleans())
    root = f'<topics xmlns="{MATHML_NAMESPACE}">' if namespaced_root else "<topics>"
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n', root]
    topics = []
    numbers = draw(st.lists(st.integers(1, 99), min_size=1, max_size=4, unique=True))
    for number in numbers:
        tex = draw(TEX)
        wildcard = draw(st.booleans())
        body = "<mi>x</mi>" + ("<qvar>*1*</qvar>" if wildcard else "")
        inner = (
            f"<semantics><mrow>{body}</mrow>"
            f'<annotation encoding="application/x-tex">{tex}</annotation></semantics>'
        )
        written = "<math>" if namespaced_root else f'<math xmlns="{MATHML_NAMESPACE}">'
        topic_id = f"NTCIR12-MathWiki-{number}"
        space = draw(XML_SPACE)
        parts.append(
            f"{space}<topic>{space}<num>{draw(XML_SPACE)}{topic_id}{draw(XML_SPACE)}</num>{space}"
            f'<query><formula id="f.0">{space}{written}{inner}</math>{space}</formula></query>'
            f"{space}</topic>"
        )
        topics.append(
            {
                "id": topic_id,
                "title": "",
                "text": " ".join(tex.split()),
                "mathml": f'<math xmlns="{MATHML_NAMESPACE}">{inner}</math>',
                "wildcard": wildcard,
            }
        )
    parts.append(draw(XML_SPACE) + "</topics>\n")
    return "".join(parts), topics


NTCIR_CONTENT = contents(
    valid_ntcir_topics().map(lambda pair: pair[0].encode("utf-8")),
    st.sampled_from(NTCIR_TOKENS),
    NTCIR_TOKENS,
)


@ARBITRARY
@with_examples(
    (
        ("queries.xml", b""),
        ("queries.xml", b"<topics/>"),
        ("queries.xml", b'<?xml version="1.0" encoding="bogus"?><topics/>'),
        ("queries.xml.gz", TRUNCATED_GZIP),
        ("queries.xml", b"<topics><topic><num>1</num></topic></topics>"),
    )
)
@given(arbitrary_file(NTCIR_CONTENT, "queries.xml"))
def test_ntcir_read_topics_on_arbitrary_bytes(file: tuple[str, bytes]) -> None:
    with stored(*file) as path:
        result = outcome(ntcir.read_topics, path)
        if isinstance(result, InputFormatError):
            return
        assert result, f"ntcir.read_topics returned no topic for {shown(file)}"
        for topic in result:
            assert set(topic) == {"id", "title", "text", "mathml", "wildcard"}
            assert isinstance(topic["id"], str) and topic["id"]


@VALID
@given(st.data())
def test_valid_ntcir_topics_round_trip(data: st.DataObject) -> None:
    text, topics = data.draw(valid_ntcir_topics())
    with stored(*data.draw(packaging(text, "queries.xml"))) as path:
        assert ntcir.read_topics(path) == topics


# --------------------------------------------------------------------------- manifest

HEX = "0123456789abcdef"
SEGMENT = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,5}", fullmatch=True)
MANIFEST_PATH = (
    st.lists(SEGMENT, min_size=1, max_size=3).map("/".join).map(lambda path: path + ".tsv")
)
MANIFEST_HEADER = "\t".join(MANIFEST_COLUMNS)
MANIFEST_TOKENS = (
    MANIFEST_HEADER.encode() + b"\n",
    MANIFEST_HEADER.encode() + b"\r\n",
    b"0" * 64,
    b"f" * 64,
    b"1234",
    b"-1",
    b"../x",
    b"/etc/passwd",
    b"a//b",
    b"./a",
    b"owner/name",
    b"https://raw.githubusercontent.com/o/n/c/p",
    b"a" * 140_000,
    b'"a\tb"',
    b'"',
)


@st.composite
def valid_manifest(draw: st.DrawFn) -> tuple[str, dict[str, ManifestEntry]]:
    paths = draw(st.lists(MANIFEST_PATH, min_size=1, max_size=5, unique=True))
    entries = {}
    for path in paths:
        repository = f"{draw(ASCII_ID)}/{draw(ASCII_ID)}"
        commit = draw(st.text(alphabet=HEX, min_size=40, max_size=40))
        upstream_path = draw(MANIFEST_PATH)
        url = draw(
            st.sampled_from(
                ["", f"https://raw.githubusercontent.com/{repository}/{commit}/{upstream_path}"]
            )
        )
        entries[path] = ManifestEntry(
            path=path,
            sha256=draw(st.text(alphabet=HEX, min_size=64, max_size=64)),
            size=draw(st.integers(0, 10**12)),
            repository=repository,
            commit=commit,
            upstream_path=upstream_path,
            url=url,
            upstream_sha256=draw(
                st.one_of(st.just(""), st.text(alphabet=HEX, min_size=64, max_size=64))
            ),
        )
    end = draw(LINE_END)
    rows = [MANIFEST_HEADER]
    for entry in entries.values():
        rows.append("\t".join(str(getattr(entry, column)) for column in MANIFEST_COLUMNS))
    text = end.join(rows) + (end if draw(st.booleans()) else "")
    return text, entries


@st.composite
def loose_manifest_line(draw: st.DrawFn) -> bytes:
    count = draw(st.sampled_from([8, 8, 8, 7, 9]))
    cells = [
        draw(st.one_of(_bytes(SAFE_ID), st.sampled_from(MANIFEST_TOKENS))) for _ in range(count)
    ]
    return b"\t".join(cells) + draw(LINE_END).encode()


MANIFEST_CONTENT = contents(
    valid_manifest().map(lambda pair: pair[0].encode("utf-8")),
    loose_manifest_line(),
    MANIFEST_TOKENS,
)


@ARBITRARY
@with_examples(
    (
        ("manifest.tsv", b""),
        ("manifest.tsv", MANIFEST_HEADER.encode() + b"\n"),
        ("manifest.tsv", BOM + MANIFEST_HEADER.encode() + b"\n"),
        ("manifest.tsv", MANIFEST_HEADER.encode() + b"\n\xff\n"),
        ("manifest.tsv", MANIFEST_HEADER.encode() + b"\n" + b"a" * 140_000 + b"\n"),
        ("manifest.tsv", gzip.compress(MANIFEST_HEADER.encode(), mtime=0)),
    )
)
@given(arbitrary_file(MANIFEST_CONTENT, "manifest.tsv", gz_names=False))
def test_load_manifest_on_arbitrary_bytes(file: tuple[str, bytes]) -> None:
    with stored(*file) as path:
        result = outcome(load_manifest, path)
        if isinstance(result, InputFormatError):
            return
        assert result, f"load_manifest returned no entry for {shown(file)}"
        for name, entry in result.items():
            assert isinstance(entry, ManifestEntry)
            assert entry.path == name
            assert re.fullmatch("[0-9a-f]{64}", entry.sha256)
            assert isinstance(entry.size, int) and entry.size >= 0


@VALID
@given(valid_manifest())
def test_valid_manifest_round_trip(manifest: tuple[str, dict[str, ManifestEntry]]) -> None:
    text, entries = manifest
    with stored("manifest.tsv", text.encode("utf-8")) as path:
        assert load_manifest(path) == entries


# --------------------------------------------------------------------------- written scores


@VALID
@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=8),
    st.sampled_from([0.0, 1e-12, 1e-7, 5e-7]),
)
def test_written_scores_read_back_exactly_and_ranks_follow_them(
    scores: list[float], step: float
) -> None:
    """Scores closer than six decimals stay apart in the file; the rank column counts 1, 2, ...
    down the written scores (descending), as trec_eval re-sorts them."""
    docs = {f"d{i}": score + i * step for i, score in enumerate(scores)}
    with tempfile.TemporaryDirectory(prefix="scores-") as folder:
        path = Path(folder) / "run.trec"
        write_run({"q": docs}, path, tag="t")
        lines = [line.split() for line in path.read_text(encoding="utf-8").splitlines()]
        assert read_run(path) == {"q": docs}
    assert [int(fields[3]) for fields in lines] == list(range(1, len(docs) + 1))
    written = [float(fields[4]) for fields in lines]
    assert written == sorted(written, reverse=True)
