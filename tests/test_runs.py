"""Runs: canonical order, duplicate documents, both file formats, malformed lines."""

from __future__ import annotations

import pytest

from hybrid_ir.data.runs import canonicalize, read_run, topic_sort_key, write_run
from hybrid_ir.errors import ConfigError, InputFormatError


def test_canonical_order_is_score_then_doc_id_descending_and_cut_at_k():
    run = {"q": {"a": 1.0, "c": 2.0, "b": 2.0, "d": 0.5}}
    assert list(canonicalize(run, k=3)["q"]) == ["c", "b", "a"]


DUPLICATED = "q Q0 a 1 1.0 t\nq Q0 b 2 2.0 t\nr Q0 a 1 5.0 t\nq Q0 a 3 3.0 t\n"
"""Document a twice for topic q (lines 1 and 4, the later line scoring higher), once for r."""


@pytest.mark.parametrize(
    ("policy", "kept"), [("max", {"a": 3.0, "b": 2.0}), ("first", {"a": 1.0, "b": 2.0})]
)
def test_a_repeated_document_is_kept_by_the_policy_with_a_warning(tmp_path, caplog, policy, kept):
    path = tmp_path / "dup.trec"
    path.write_text(DUPLICATED)
    assert read_run(path, duplicates=policy) == {"q": kept, "r": {"a": 5.0}}
    (warning,) = [record.getMessage() for record in caplog.records]
    assert f"{path}: 1 line(s) list a document already listed" in warning
    assert f"duplicates: {policy}" in warning


def test_a_repeated_document_under_the_error_policy_names_both_lines(tmp_path, caplog):
    path = tmp_path / "dup.trec"
    path.write_text(DUPLICATED)
    with pytest.raises(InputFormatError, match=r"dup\.trec:4: document 'a' listed again for "
                       r"topic 'q' \(lines 1, 4; duplicates: error\)"):  # fmt: skip
        read_run(path, duplicates="error")
    unique = tmp_path / "unique.trec"
    unique.write_text("q Q0 a 1 1.0 t\nr Q0 a 1 5.0 t\n")
    assert read_run(unique, duplicates="error") == {"q": {"a": 1.0}, "r": {"a": 5.0}}
    assert not caplog.records


def test_an_unknown_duplicates_policy_is_a_config_error(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q Q0 a 1 1.0 t\n")
    with pytest.raises(ConfigError, match="unknown duplicates policy 'last'"):
        read_run(path, duplicates="last")


def test_trec_and_arqmath_tsv_round_trip(tmp_path):
    run = {"A.10": {"7": 0.5, "9": 0.25}, "A.2": {"3": 1.0}}
    trec, tsv = tmp_path / "run.trec", tmp_path / "run.tsv"
    assert write_run(run, trec, tag="sys") == 3
    assert write_run(run, tsv, tag="sys", style="arqmath") == 3
    assert trec.read_text().splitlines() == [
        "A.2 Q0 3 1 1.0 sys",
        "A.10 Q0 7 1 0.5 sys",
        "A.10 Q0 9 2 0.25 sys",
    ]
    assert tsv.read_text().splitlines()[1] == "A.10\t7\t1\t0.5\tsys"
    assert read_run(trec) == read_run(tsv) == run


def test_topics_sort_naturally():
    assert sorted(["A.10", "A.2", "A.1"], key=topic_sort_key) == ["A.1", "A.2", "A.10"]


@pytest.mark.parametrize(
    ("line", "problem"),
    [("q Q0 a 1\n", "got 4"), ("q Q0 a 1 high t\n", "score 'high' is not a number")],
)
def test_malformed_lines_name_file_and_line(tmp_path, line, problem):
    path = tmp_path / "bad.trec"
    path.write_text("q Q0 b 1 2.0 t\n" + line)
    with pytest.raises(InputFormatError, match=rf"bad.trec:2: .*{problem}"):
        read_run(path)


def _lines(count: int) -> list[str]:
    return [f"q{n % 7} Q0 d{n} {n + 1} {1.0 / (n + 1):.6f} tag\n" for n in range(count)]


@pytest.mark.parametrize("block_chars", [64, 1000, 1 << 22])
def test_runs_read_in_blocks_equal_the_line_by_line_reading(tmp_path, monkeypatch, block_chars):
    """Whole lines are parsed a block at a time; wherever the blocks are cut, the run is the one
    the checked line-by-line parser builds, blank lines and an id with a non-breaking space (a
    block the fast pattern leaves to that parser) included."""
    import hybrid_ir.data.runs as runs

    lines = _lines(300)
    lines[5] = "\n"
    lines[100] = "q1 Q0 d\u00a0100 101 0.5 tag\r\n"
    path = tmp_path / "run.trec"
    path.write_text("".join(lines), encoding="utf-8")
    monkeypatch.setattr(runs, "_BLOCK_CHARS", block_chars)
    expected: dict[str, dict[str, float]] = {}
    for line in lines:
        fields = runs.split_fields(line)
        if fields:
            runs.add_entry(expected, fields[0], fields[2], float(fields[4]))
    assert read_run(path) == expected
    assert read_run(path, topics=["q1"]) == {"q1": expected["q1"]}


@pytest.mark.parametrize("block_chars", [64, 1 << 22])
@pytest.mark.parametrize(
    "bad, problem",
    [
        ("q1 Q0 d9 1 nan tag\n", "is not a finite number"),
        ("q1 Q0 d9 1 1e999 tag\n", "is not a finite number"),
        ("q1 Q0 d9 x 0.5 tag\n", "is not an integer"),
        ("q1 Q0 d9 1 0.5\n", "got 5 field(s)"),
    ],
)
def test_a_bad_line_in_any_block_is_named_by_its_line_number(
    tmp_path, monkeypatch, block_chars, bad, problem
):
    import hybrid_ir.data.runs as runs

    lines = _lines(40)
    lines[27] = bad
    path = tmp_path / "run.trec"
    path.write_text("".join(lines), encoding="utf-8")
    monkeypatch.setattr(runs, "_BLOCK_CHARS", block_chars)
    with pytest.raises(InputFormatError) as error:
        read_run(path)
    assert ":28:" in str(error.value) or "line 28" in str(error.value)
    assert problem in str(error.value)


@pytest.mark.parametrize("block_chars", [64, 1 << 22])
def test_comment_lines_and_fields_after_the_sixth_are_read_as_trec_eval_10_reads_them(
    tmp_path, monkeypatch, block_chars
):
    """trec_eval 10.0 skips a line whose first non-blank character is '#' and ignores a run
    line's fields after the sixth; the run read is the plain file's, in either parser."""
    import hybrid_ir.data.runs as runs

    lines = _lines(60)
    plain = tmp_path / "plain.trec"
    plain.write_text("".join(lines), encoding="utf-8")
    annotated = list(lines)
    annotated[0] = "# run: bm25, depth 1000\n" + annotated[0]
    annotated[30] = "   #q1 Q0 d999 1 99.0 tag (an indented comment, six fields and more)\n"
    for index in (3, 31, 59):
        annotated[index] = annotated[index].rstrip("\n") + " extra\t0.25 fields\n"
    commented = tmp_path / "commented.trec"
    commented.write_text("".join(annotated), encoding="utf-8")
    monkeypatch.setattr(runs, "_BLOCK_CHARS", block_chars)
    expected = read_run(plain)
    del expected["q2"]["d30"]  # line 31 is the comment now
    assert read_run(commented) == expected
    assert "d999" not in read_run(commented)["q1"]


@pytest.mark.parametrize(
    "content, problem",
    [
        ("# only a comment\n#another\n", ": no run lines: the file is empty"),
        ("# header\nq1 Q0 d1 1 2.0\n", ":2: neither a TREC run line"),
        ("# header\nq1 Q0 d1 1 2.0 t extra\nq1 Q0 d2 1 1.0\n", ":3: expected a TREC run line"),
        ("q1 Q0 d1 one 2.0 t extra\n", ":1: rank 'one' is not an integer"),
        ("q1 Q0 d1 1 high t extra\n", ":1: score 'high' is not a number"),
        ("q1 Q0 d1 1 2.0 t extra\nq1 Q0 d1 2 1.0 t\n", ":2: document 'd1' listed again"),
    ],
    ids=["comments only", "first entry short", "short after extra", "rank", "score", "repeat"],
)
def test_errors_stay_errors_around_comments_and_extra_fields(tmp_path, content, problem):
    path = tmp_path / "run.trec"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputFormatError) as error:
        read_run(path, duplicates="error")
    assert str(error.value).startswith(f"{path}{problem}")
