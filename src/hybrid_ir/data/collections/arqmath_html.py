"""ARQMath's HTML: a post body rendered to text with its formulas as LaTeX (``$...$`` in the
text, each formula listed with its id), and the MathDowsers thread pages (one question, its
answers) parsed into answer documents. :mod:`hybrid_ir.data.collections.arqmath` reads the official
files with these."""

from __future__ import annotations

import contextlib
import re
import tarfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from hybrid_ir.data.formats import archive_errors, read_whole
from hybrid_ir.errors import InputFormatError, quoted

_MATH_CLASS = "math-container"


_BLOCK_TAGS = frozenset(
    "address blockquote br dd div dl dt h1 h2 h3 h4 h5 h6 hr li ol p pre table td th tr ul".split()
)


# MathJax-style math that is not wrapped in a span (raw dumps); ``\$`` is a literal dollar.
_LOOSE_MATH = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<!\\)\$(.+?)(?<!\\)\$", re.DOTALL)


_WHITESPACE = re.compile(r"\s+")


# A MathML element with its children; only the opening tag (with ``alttext``) is kept.
_MATHML = re.compile(r"""(<math\b(?:[^>"']|"[^"]*"|'[^']*')*>).*?</math>""", re.DOTALL)


@dataclass(frozen=True)
class Rendered:
    """An HTML fragment as plain text plus the formulas it contains, in reading order."""

    text: str
    formulas: list[dict]


@dataclass
class _OpenFormula:
    """A ``math-container`` span being read; nested spans and MathML are tracked by depth."""

    formula_id: str | None
    span_depth: int = 1
    math_depth: int = 0
    alttext: str | None = None
    chars: list[str] = field(default_factory=list)


def _is_math_container(attributes: Mapping[str, str | None]) -> bool:
    return _MATH_CLASS in (attributes.get("class") or "").split()


def _strip_delimiters(latex: str) -> str:
    """LaTeX without its ``$$...$$`` or ``$...$`` delimiters (Posts.xml keeps them in spans)."""
    latex = latex.strip()
    for delimiter in ("$$", "$"):
        size = len(delimiter)
        if len(latex) > 2 * size and latex.startswith(delimiter) and latex.endswith(delimiter):
            return latex[size:-size].strip()
    return latex


class _MathTextBuilder:
    """Collects the HTML events of one fragment and renders them as text with ``$latex$``.

    A formula is a ``math-container`` span: its LaTeX is the ``alttext`` of the MathML inside
    (HTML threads) or else the span's own text (Posts.xml, and spans LaTeXML could not convert).
    The MathML's presentation glyphs are dropped. Text outside spans may still hold ``$...$``
    math (raw dumps); that is recognised when rendering.
    """

    def __init__(self) -> None:
        self._parts: list[str | dict | None] = []  # text, a formula, or None for a block break
        self._open: _OpenFormula | None = None

    def start(self, tag: str, attributes: Mapping[str, str | None]) -> None:
        formula = self._open
        if formula is None:
            if tag == "span" and _is_math_container(attributes):
                self._open = _OpenFormula(attributes.get("id"))
            elif tag in _BLOCK_TAGS:
                self._parts.append(None)
        elif tag == "span":
            formula.span_depth += 1
            if formula.formula_id is None and _is_math_container(attributes):
                formula.formula_id = attributes.get("id")
        elif tag == "math":
            formula.math_depth += 1
            if formula.alttext is None:
                formula.alttext = attributes.get("alttext")

    def end(self, tag: str) -> None:
        formula = self._open
        if formula is None:
            if tag in _BLOCK_TAGS:
                self._parts.append(None)
        elif tag == "math":
            formula.math_depth = max(formula.math_depth - 1, 0)
        elif tag == "span":
            formula.span_depth -= 1
            if formula.span_depth == 0:
                self._close_formula()

    def data(self, text: str) -> None:
        if self._open is None:
            self._parts.append(text)
        elif self._open.math_depth == 0:
            self._open.chars.append(text)

    def _close_formula(self) -> None:
        formula, self._open = self._open, None
        assert formula is not None
        source = formula.alttext if formula.alttext is not None else "".join(formula.chars)
        latex = _strip_delimiters(source)
        # An empty span still separates the words around it.
        self._parts.append({"id": formula.formula_id, "latex": latex} if latex else " ")

    def result(self) -> Rendered:
        if self._open is not None:  # a span left open at the end of the fragment
            self._close_formula()
        lines: list[str] = []
        formulas: list[dict] = []
        line: list[str] = []
        pending: list[str] = []
        for part in [*self._parts, None]:
            if isinstance(part, str):
                pending.append(part)
                continue
            line.extend(_render_text("".join(pending), formulas))
            pending.clear()
            if part is None:
                lines.append("".join(line).strip())
                line.clear()
            else:
                formulas.append(part)
                line.append(f"${part['latex']}$")
        return Rendered("\n".join(text for text in lines if text), formulas)


def _render_text(text: str, formulas: list[dict]) -> list[str]:
    """Collapse whitespace in text outside spans; normalise and collect its ``$...$`` math."""
    pieces: list[str] = []
    position = 0
    for match in _LOOSE_MATH.finditer(text):
        latex = (match.group(1) or match.group(2)).strip()
        pieces.append(_WHITESPACE.sub(" ", text[position : match.start()]))
        pieces.append(f"${latex}$")
        formulas.append({"id": None, "latex": latex})
        position = match.end()
    pieces.append(_WHITESPACE.sub(" ", text[position:]))
    return pieces


class _FragmentParser(HTMLParser):
    """Feeds HTML parser events to a builder (none: the events are ignored)."""

    def __init__(self, builder: _MathTextBuilder | None) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = builder

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.builder is not None:
            self.builder.start(tag, dict(attrs))

    def handle_endtag(self, tag: str) -> None:
        if self.builder is not None:
            self.builder.end(tag)

    def handle_data(self, data: str) -> None:
        if self.builder is not None:
            self.builder.data(data)


def render_html(fragment: str, where: str | Path, label: str) -> Rendered:
    """Render an HTML fragment (a post body or title) as text with ``$latex$`` formulas;
    markup the standard parser gives up on is an error naming ``where`` and ``label``."""
    builder = _MathTextBuilder()
    parser = _FragmentParser(builder)
    with _html_errors(where, label):
        parser.feed(fragment)
        parser.close()
    return builder.result()


@contextlib.contextmanager
def _html_errors(where: str | Path, label: str) -> Iterator[None]:
    try:
        yield
    except (AssertionError, ValueError) as error:  # html.parser asserts on malformed sections
        problem = f"{label}: malformed HTML ({quoted(str(error))})"
        raise InputFormatError(where, None, problem) from None


def answer_doc(
    answer_id: str,
    answer: Rendered,
    question_id: str,
    title: Rendered,
    question: Rendered,
    tags: list[str],
) -> dict:
    """The canonical document of one answer, shared by both collection formats."""
    return {
        "id": answer_id,
        "title": title.text,
        "text": answer.text,
        "question_id": question_id,
        "question": question.text,
        "tags": tags,
        "formulas": title.formulas + question.formulas + answer.formulas,
    }


_EMPTY = Rendered("", [])


# The ``<div id=...>`` regions of a thread page that are read; comments (``question-comments``,
# ``answer-comments``) and related posts are left out, as in the Task-1 collection.
_REQUIRED_REGIONS = ("question-title", "question", "answer")


_REGIONS = frozenset((*_REQUIRED_REGIONS, "tags"))


class _ThreadParser(_FragmentParser):
    """Routes the title, question, tags and answer ``<div>`` regions to their own builders."""

    def __init__(self) -> None:
        super().__init__(None)
        self.regions: dict[str, _MathTextBuilder] = {}
        self.ids: dict[str, str] = {}
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "div" and self.builder is None:
            self._enter(dict(attrs))
        elif tag == "div":
            self._depth += 1
        super().handle_starttag(tag, attrs)

    def _enter(self, attributes: Mapping[str, str | None]) -> None:
        region = attributes.get("id")
        if region is None or region not in _REGIONS:
            return
        self.builder = self.regions.setdefault(region, _MathTextBuilder())
        self._depth = 0
        for key in ("question_id", "answer_id"):
            if attributes.get(key):
                self.ids[key] = str(attributes[key])

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self.builder is not None:
            if self._depth == 0:
                self.builder = None
                return
            self._depth -= 1
        super().handle_endtag(tag)


def parse_thread(page: str, where: str) -> dict:
    """The answer document of one HTML thread page; ``where`` names it in errors.

    The MathML inside each formula is cut out before parsing: only its ``alttext`` is used, and
    the MathML is most of a page (it triples the parsing time). Line numbers are unaffected
    because the newlines inside the MathML are kept.
    """
    parser = _ThreadParser()
    with _html_errors(where, "thread page"):
        parser.feed(_MATHML.sub(_keep_math_tag, page))
        parser.close()
    end_line = parser.getpos()[0]
    for region in _REQUIRED_REGIONS:
        if region not in parser.regions:
            problem = f"no <div id={region!r}> block before the end of the page"
            raise InputFormatError(where, end_line, problem)
    for key in ("question_id", "answer_id"):
        if key not in parser.ids:
            raise InputFormatError(where, end_line, f"no {key} attribute on its <div> block")
    rendered = {name: builder.result() for name, builder in parser.regions.items()}
    tags = rendered.get("tags", _EMPTY).text.split()
    return answer_doc(
        parser.ids["answer_id"],
        rendered["answer"],
        parser.ids["question_id"],
        rendered["question-title"],
        rendered["question"],
        tags,
    )


def _keep_math_tag(match: re.Match[str]) -> str:
    return match.group(1) + "\n" * match.string.count("\n", match.end(1), match.end()) + "</math>"


def _thread_pages(path: Path) -> Iterator[tuple[str, bytes]]:
    """``(where, bytes)`` of each ``.html`` page in a tar archive or under a directory."""
    if path.is_dir():
        for page in sorted(path.rglob("*.html")):
            with open(page, "rb") as file:
                yield str(page), read_whole(file, str(page))
        return
    with archive_errors(path), tarfile.open(path, "r:*") as archive:
        for member in archive:
            if member.isfile() and member.name.endswith(".html"):
                handle = archive.extractfile(member)
                assert handle is not None  # regular members always have content
                where = f"{path}:{member.name}"
                yield where, read_whole(handle, where)


def read_threads(path: Path) -> list[dict]:
    """All answer documents of an HTML thread collection, sorted by answer id numerically."""
    docs: dict[str, dict] = {}
    origin: dict[str, str] = {}
    for where, content in _thread_pages(path):
        try:
            page = content.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputFormatError(where, None, f"not UTF-8: {error.reason}") from None
        doc = parse_thread(page, where)
        if doc["id"] in docs:
            raise InputFormatError(where, None, f"answer {doc['id']} also in {origin[doc['id']]}")
        docs[doc["id"]] = doc
        origin[doc["id"]] = where
    return [docs[answer_id] for answer_id in sorted(docs, key=numeric_id)]


def numeric_id(post_id: str) -> tuple[int, str]:
    return (int(post_id), post_id) if post_id.isdigit() else (-1, post_id)
