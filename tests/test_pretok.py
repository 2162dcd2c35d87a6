"""PyA0 pre-tokenization (paper 000, Fig. 1), math token counts and the vocabulary file."""

from collections import Counter

import pytest

from hybrid_ir.data.formats import read_records, write_records
from hybrid_ir.data.pretok import (
    PretokStats,
    formula_tokens,
    math_vocabulary,
    pretokenize,
    pretokenize_file,
    read_token_counts,
    write_token_counts,
)
from hybrid_ir.errors import InputFormatError

FIG1_INPUT = (
    r"Inequality between norm 1, norm 2 and norm $\infty$ of matrices: "
    r"$\|A\|_2 \le \sqrt{\|A\|_1 \|A\|_\infty}$"
)
FIG1_OUTPUT = (
    "Inequality between norm 1, norm 2 and norm <infty> of matrices: <Vert> <A> <Vert> "
    "<subscript> <2> <le> <root> <{> <Vert> <A> <Vert> <subscript> <1> <Vert> <A> <Vert> "
    "<subscript> <infty> <}>"
)


def test_figure_1_token_for_token():
    stats = PretokStats()
    assert pretokenize(FIG1_INPUT, stats) == FIG1_OUTPUT
    assert stats.formulas == 2 and stats.unparsed == 0
    assert stats.math_tokens["<Vert>"] == 6 and stats.math_tokens["<infty>"] == 2


def test_numbers_split_into_digits_and_variables_keep_case():
    assert formula_tokens("x_{12} + A") == ["<x>", "<subscript>", "<{>", "<1>", "<2>", "<}>",
                                             "<plus>", "<A>"]  # fmt: skip


def test_all_delimiters_are_recognised():
    text = r"a $$x$$ b \(y\) c \[z\] d \begin{align} w \end{align} e"
    assert pretokenize(text) == "a <x> b <y> c <z> d <w> e"


def test_unparseable_formula_is_kept_raw_and_counted():
    stats = PretokStats()
    out = pretokenize(r"before $\Box  \Box$ after", stats)
    assert out == r"before \Box \Box after"
    assert stats.unparsed == 1 and stats.unparsed_examples == [r"\Box  \Box"]
    assert stats.summary()["unparsed"] == 1


def test_escaped_dollar_is_text():
    assert pretokenize(r"costs \$5 and \$6") == r"costs \$5 and \$6"


def test_file_pretokenization_keeps_other_fields(tmp_path):
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_records(source, [
        {"id": "1", "title": "On $x^2$", "text": "Let $n$ be prime.", "tags": ["t"],
         "formulas": [{"id": "f", "latex": "x^2"}]},
        {"id": "2", "title": "", "text": "", "tex": r"\frac{a}{b}"},
    ])  # fmt: skip
    stats = pretokenize_file(source, target, ["title"], ["tex"])
    first, second = read_records(target)
    assert first["title"] == "On <x> <supscript> <2>" and first["text"] == "Let $n$ be prime."
    assert "formulas" not in first and first["tags"] == ["t"]
    assert second["tex"] == "<frac> <{> <a> <}> <{> <b> <}>"
    assert stats.formulas == 2


def test_token_counts_round_trip_and_vocabulary_order(tmp_path):
    counts = Counter({"<x>": 5, "<a>": 5, "<frac>": 1})
    assert math_vocabulary(counts) == ["<a>", "<x>", "<frac>"]
    assert write_token_counts(counts, tmp_path / "v.tsv", min_count=2) == 2
    assert read_token_counts(tmp_path / "v.tsv") == Counter({"<a>": 5, "<x>": 5})


def test_bad_token_file_names_line(tmp_path):
    path = tmp_path / "v.tsv"
    path.write_text("token\tcount\n<x>\t3\n<y>\n")
    with pytest.raises(InputFormatError, match=r"v.tsv:3"):
        read_token_counts(path)
