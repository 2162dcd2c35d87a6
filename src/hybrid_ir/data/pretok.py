"""LaTeX pre-tokenization with PyA0 (paper 000, Fig. 1): every formula becomes math tokens.

Text keeps its words and case; each formula (``$...$``, ``$$...$$``, ``\\(...\\)``,
``\\[...\\]`` and the ``align``/``equation``/``gather`` environments) is replaced by the tokens
of PyA0's LaTeX lexer, space separated. One form is used everywhere: ``<sym>`` as in the
paper's figure, e.g. ``<Vert> <A> <Vert> <subscript> <2>`` (pya0's own
``preprocess_for_transformer`` writes ``$Vert$``; angle brackets keep a token apart from a
literal dollar and read like the figure). Symbols are mapped as pya0's number tokenizer v3
does: a variable keeps its letter (``normal`A'`` -> ``A``), a number is split into digits
(``123`` -> ``1 2 3``), anything else keeps PyA0's name (``le``, ``root``, ``{``).

A formula PyA0 cannot tokenize (its lexer raises, or it yields no token from non-blank LaTeX)
is kept as its raw LaTeX, split at whitespace, and counted in :class:`PretokStats`, which the
workflow logs per file.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hybrid_ir.data.formats import atomic_output, read_records, write_records
from hybrid_ir.errors import InputFormatError
from hybrid_ir.joblog.native_output import Note, counted_stderr

PYA0_NOTES = {
    "too long to cast into float number": Note(
        re.compile(r" is too long to cast into float number \(len=\d+\)\.$"),
        "harmless: pya0's lexer also reads each number as a double for its own use, and its "
        "tokens here are the number's digits either way",
    )
}
"""What pya0's tokenizer prints on standard error, and why it does not matter here."""

MATH_PATTERN = re.compile(
    r"(?<!\\)\$\$(?P<display>.+?)(?<!\\)\$\$"
    r"|(?<!\\)\$(?P<inline>.+?)(?<!\\)\$"
    r"|\\\[(?P<bracket>.+?)\\\]"
    r"|\\\((?P<paren>.+?)\\\)"
    r"|\\begin\{(?P<env>align|alignat|equation|gather)\*?\}(?P<body>.+?)\\end\{(?P=env)\*?\}",
    re.DOTALL,
)
_NUMERIC = frozenset({"NUM", "FLOAT", "ONE", "ZERO"})
_END_OF_INPUT = "\n"


@dataclass
class PretokStats:
    """What pre-tokenization did to a file: formulas seen, kept raw, and math tokens emitted."""

    formulas: int = 0
    unparsed: int = 0
    unparsed_examples: list[str] = field(default_factory=list)
    math_tokens: Counter = field(default_factory=Counter)

    EXAMPLES = 5

    def record_failure(self, latex: str) -> None:
        self.unparsed += 1
        if len(self.unparsed_examples) < self.EXAMPLES:
            self.unparsed_examples.append(latex)

    def summary(self) -> dict:
        return {
            "formulas": self.formulas,
            "unparsed": self.unparsed,
            "unparsed_examples": self.unparsed_examples,
            "math_token_types": len(self.math_tokens),
            "math_tokens": sum(self.math_tokens.values()),
        }


def _symbols(latex: str, kind: str | None, symbol: str, span: tuple[int, int]) -> list[str]:
    if kind == "VAR":
        return [symbol.split("`")[-1].strip("'") if "`" in symbol else symbol.strip("\\")]
    if kind in _NUMERIC:
        return list(latex[span[0] : span[1]])
    return [symbol]


def formula_tokens(latex: str) -> list[str] | None:
    """PyA0's tokens of one formula in ``<sym>`` form, or ``None`` when PyA0 cannot read it."""
    import pya0  # noqa: F401  (loads the compiled _pya0 extension onto the path)
    from _pya0 import tokenize

    try:
        lexed = tokenize(latex, include_spans=True, include_syntatic_literal=True)
    except Exception:  # noqa: BLE001 - the extension raises bare RuntimeErrors on bad input
        return None
    tokens: list[str] = []
    for _, kind, symbol, span in lexed:
        if symbol == _END_OF_INPUT:
            break
        # A symbol never carries whitespace into a token: tokens are space separated.
        pieces = ("".join(piece.split()) for piece in _symbols(latex, kind, symbol, span))
        tokens.extend(f"<{piece}>" for piece in pieces if piece)
    if not tokens and latex.strip():
        return None
    return tokens


def _replace_formula(latex: str, stats: PretokStats) -> str:
    stats.formulas += 1
    tokens = formula_tokens(latex)
    if tokens is None:
        stats.record_failure(latex)
        return " ".join(latex.split())
    stats.math_tokens.update(tokens)
    return " ".join(tokens)


def pretokenize(text: str, stats: PretokStats | None = None) -> str:
    """``text`` with every formula replaced by its PyA0 tokens (raw LaTeX where PyA0 fails)."""
    stats = stats if stats is not None else PretokStats()

    def replace(match: re.Match) -> str:
        return _replace_formula(formula_tex(match), stats)

    return MATH_PATTERN.sub(replace, text)


def formula_tex(match: re.Match) -> str:
    """The LaTeX inside one :data:`MATH_PATTERN` match, without its delimiters."""
    return next(
        group
        for name in ("display", "inline", "bracket", "paren", "body")
        if (group := match.group(name)) is not None
    )


def pretokenize_record(
    record: dict, fields: Iterable[str], formula_fields: Iterable[str], stats: PretokStats
) -> dict:
    """A canonical record with ``fields`` pre-tokenized and each of ``formula_fields`` (a
    field that is one formula without delimiters, such as NTCIR-12 topic TeX) replaced by its
    tokens; other fields are copied, except the now redundant ``formulas`` list."""
    out = dict(record)
    for name in fields:
        if isinstance(out.get(name), str):
            out[name] = pretokenize(out[name], stats)
    for name in formula_fields:
        if isinstance(out.get(name), str) and out[name].strip():
            out[name] = _replace_formula(out[name], stats)
    out.pop("formulas", None)
    return out


def math_vocabulary(counts: Counter, min_count: int = 1) -> list[str]:
    """The math tokens seen at least ``min_count`` times, most frequent first (ties by name)."""
    return [
        token
        for token, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        if count >= min_count
    ]


def pretokenize_file(
    source: str | Path, target: str | Path, fields: Iterable[str], formula_fields: Iterable[str]
) -> PretokStats:
    """Pre-tokenize a canonical JSON Lines file (corpus or topics) into ``target``."""

    stats = PretokStats()
    fields, formula_fields = list(fields), list(formula_fields)
    records = (
        pretokenize_record(record, fields, formula_fields, stats) for record in read_records(source)
    )
    with counted_stderr("pya0", PYA0_NOTES):
        write_records(target, records)
    return stats


def write_token_counts(counts: Counter, path: str | Path, min_count: int = 1) -> int:
    """``token<TAB>count`` lines, most frequent first, for tokens seen ``min_count`` times."""

    tokens = math_vocabulary(counts, min_count)
    with atomic_output(path) as out:
        out.write("token\tcount\n")
        out.writelines(f"{token}\t{counts[token]}\n" for token in tokens)
    return len(tokens)


def read_token_counts(path: str | Path) -> Counter:
    """The counts of a :func:`write_token_counts` file."""

    counts: Counter = Counter()
    with open(path, encoding="utf-8") as handle:
        if handle.readline().rstrip("\n") != "token\tcount":
            raise InputFormatError(path, 1, "expected header 'token<TAB>count'")
        for number, line in enumerate(handle, start=2):
            token, _, count = line.rstrip("\n").partition("\t")
            if not token or not count.isdigit():
                raise InputFormatError(path, number, "expected 'token<TAB>count'")
            counts[token] = int(count)
    return counts
