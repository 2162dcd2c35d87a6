"""Bad and hostile inputs: each gets one clear error naming the file (and line), or, where the
input is legitimate but unusual (a BOM, a non-breaking space), the right parse.

One test per case of the "bad input, faults and untrusted files" list, asserting the exact
outcome, through the package and through the ``hybrid-ir`` command where it has one.
"""

from __future__ import annotations

import errno
import gzip
import json
import logging
import os
import zipfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_ir.cli.main import main
from hybrid_ir.config.checks import config_warnings
from hybrid_ir.config.validation import validate_config
from hybrid_ir.data.collections import convert
from hybrid_ir.data.collections.arqmath import read_labels_csv
from hybrid_ir.data.formats import atomic_directory, read_records, relevance_limit
from hybrid_ir.data.qrels import read_judgments, read_qrels
from hybrid_ir.data.runs import read_run
from hybrid_ir.errors import (
    ConfigError,
    EvaluationError,
    HybridIRError,
    InputFormatError,
    ParameterError,
    quoted,
)
from hybrid_ir.evaluation.measures import evaluate, evaluate_files
from hybrid_ir.fusion.crossval import crossvalidate_linear

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def qrels(tmp_path) -> Path:
    return write(tmp_path / "qrels.txt", "q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n")


# 1. silent wrong numbers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "score"), [("max", "0.5000"), ("first", "0.0000"), ("error", None)]
)
def test_a_document_listed_twice_follows_duplicates_in_the_cli(
    tmp_path, qrels, capsys, policy, score
):
    """q1 lists b (judged 0) first, then a (judged 1) twice: below b, then above it. P@1 is
    averaged over the qrels' two topics, q2 scoring 0."""
    run = write(tmp_path / "run.trec", "q1 Q0 b 1 2.0 t\nq1 Q0 a 2 1.0 t\nq1 Q0 a 3 3.0 t\n")
    argv = ["evaluate", "--qrels", str(qrels), "--run", str(run), "--measures", "P@1"]
    code, out, err = cli(capsys, *argv, "--duplicates", policy)
    if score is None:
        assert (code, out) == (1, "")
        assert err == (
            f"hybrid-ir error: {run}:3: document 'a' listed again for topic 'q1' "
            "(lines 2, 3; duplicates: error)\n"
        )
    else:
        assert code == 0, err
        assert f"| {score} |" in out


def test_trec_line_missing_a_column_is_an_error_not_an_arqmath_line(tmp_path, qrels, capsys):
    run = write(tmp_path / "run.trec", "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0\n")
    with pytest.raises(InputFormatError) as error:
        read_run(run)
    assert (error.value.path, error.value.line) == (str(run), 2)
    assert "TREC run line" in error.value.problem and "got 5 field(s)" in error.value.problem
    code, out, err = cli(capsys, "evaluate", "--qrels", str(qrels), "--run", str(run))
    assert (code, out) == (1, "")
    assert err.startswith(f"hybrid-ir error: {run}:2: expected a TREC run line")


def test_first_line_of_neither_layout_names_both(tmp_path):
    run = write(tmp_path / "run.trec", "q1 Q0 a 1 2.0\n")  # 5 fields, but not tab-separated
    with pytest.raises(InputFormatError, match=r"run.trec:1: neither a TREC run line .* nor an"):
        read_run(run)


def test_explicit_format_is_enforced_from_the_first_line(tmp_path):
    run = write(tmp_path / "run.tsv", "q1\tQ0\ta\t1\t2.0\tt\n")
    assert read_run(run) == {"q1": {"a": 2.0}}
    with pytest.raises(InputFormatError, match=r"run.tsv:1: expected an ARQMath run line"):
        read_run(run, run_format="arqmath")


@pytest.mark.parametrize("score", ["nan", "NaN", "inf", "-inf", "1e999"])
def test_non_finite_scores_are_rejected_with_file_and_line(tmp_path, score):
    run = write(tmp_path / "run.trec", f"q1 Q0 a 1 2.0 t\nq1 Q0 b 2 {score} t\n")
    with pytest.raises(InputFormatError) as error:
        read_run(run)
    assert error.value.line == 2 and "not a finite number" in error.value.problem


def test_a_non_finite_score_is_never_written_to_a_run(tmp_path):
    from hybrid_ir.data.runs import write_run

    with pytest.raises(HybridIRError, match=r"out.trec: topic q1, document b: score nan"):
        write_run({"q1": {"a": 1.0, "b": float("nan")}}, tmp_path / "out.trec", tag="t")
    assert list(tmp_path.iterdir()) == []


def test_non_integer_rank_is_rejected(tmp_path):
    run = write(tmp_path / "run.trec", "q1 Q0 a first 2.0 t\n")
    with pytest.raises(InputFormatError, match=r":1: rank 'first' is not an integer"):
        read_run(run)


def test_empty_qrels_is_an_error(tmp_path, capsys):
    empty = write(tmp_path / "empty.qrels", "\n\n")
    run = write(tmp_path / "run.trec", "q1 Q0 a 1 2.0 t\n")
    with pytest.raises(InputFormatError, match=r"empty.qrels: no judgments"):
        read_qrels(empty)
    with pytest.raises(InputFormatError, match=r"empty.qrels: no judgments"):
        read_judgments(empty)
    code, _, err = cli(capsys, "evaluate", "--qrels", str(empty), "--run", str(run))
    assert code == 1 and "no judgments" in err


def test_run_sharing_no_topic_with_the_qrels_is_an_error_naming_both(tmp_path, qrels, capsys):
    run = write(tmp_path / "other.trec", "x9 Q0 a 1 2.0 t\n")
    with pytest.raises(EvaluationError) as error:
        evaluate_files(qrels, run, ["P@1"])
    assert f"{run} and {qrels} have no topic in common" in str(error.value)
    code, out, err = cli(capsys, "evaluate", "--qrels", str(qrels), "--run", str(run))
    assert (code, out) == (1, "") and "have no topic in common" in err


def test_allow_disjoint_turns_the_error_into_a_loud_warning(tmp_path, qrels, capsys, caplog):
    run = write(tmp_path / "other.trec", "x9 Q0 a 1 2.0 t\n")
    with caplog.at_level(logging.WARNING):
        argv = ["evaluate", "--qrels", str(qrels), "--run", str(run), "--measures", "P@1"]
        code, out, _ = cli(capsys, *argv, "--allow-disjoint")
    assert code == 0 and "0.0000" in out
    assert f"{run} and {qrels} have no topic in common" in caplog.text


def test_huge_relevance_is_rejected_and_the_limit_is_configurable(tmp_path, capsys):
    huge = write(tmp_path / "huge.qrels", "q1 0 a 1\nq1 0 b 1000000000\n")
    with pytest.raises(InputFormatError) as error:
        read_qrels(huge)
    assert error.value.line == 2 and "beyond ±1000" in error.value.problem
    run = write(tmp_path / "run.trec", "q1 Q0 b 1 2.0 t\n")
    code, _, err = cli(capsys, "evaluate", "--qrels", str(huge), "--run", str(run))
    assert code == 1 and f"{huge}:2: relevance '1000000000' is beyond ±1000" in err
    # trec_eval's cost grows with the relevance values, so the raised limit is tried on 5000.
    large = write(tmp_path / "large.qrels", "q1 0 a 1\nq1 0 b 5000\n")
    with relevance_limit(5000):
        assert read_qrels(large)["q1"]["b"] == 5000
    argv = ["evaluate", "--qrels", str(large), "--run", str(run), "--measures", "P@1"]
    code, out, _ = cli(capsys, *argv, "--max-relevance", "5000")
    assert code == 0 and "1.0000" in out


def test_a_leading_bom_is_dropped_from_qrels_runs_and_records(tmp_path):
    bom = "\ufeff"
    assert read_qrels(write(tmp_path / "q.qrels", bom + "q1 0 a 1\n")) == {"q1": {"a": 1}}
    assert read_run(write(tmp_path / "r.trec", bom + "q1 Q0 a 1 2.0 t\n")) == {"q1": {"a": 2.0}}
    record = json.dumps({"id": "t1", "title": "", "text": "x"})
    assert [r["id"] for r in read_records(write(tmp_path / "t.jsonl", bom + record))] == ["t1"]
    gz = tmp_path / "q.qrels.gz"
    gz.write_bytes(gzip.compress((bom + "q1 0 a 1\n").encode()))
    assert read_qrels(gz) == {"q1": {"a": 1}}


def test_a_non_breaking_space_is_part_of_an_id_not_a_separator(tmp_path):
    qrels = write(tmp_path / "q.qrels", "q\xa01 0 a 1\n")
    assert read_qrels(qrels) == {"q\xa01": {"a": 1}}
    run = write(tmp_path / "r.trec", "q\xa01 Q0 a 1 2.0 t\n")
    assert read_run(run) == {"q\xa01": {"a": 2.0}}


# 2. one line instead of a traceback -----------------------------------------------------------


def test_binary_input_is_one_error_naming_file_and_line(tmp_path, capsys):
    binary = write(tmp_path / "run.trec", b"q1 Q0 a 1 2.0 t\n\x00\x01\x02\n")
    with pytest.raises(InputFormatError) as error:
        read_run(binary)
    assert error.value.line == 2 and "binary data" in error.value.problem
    code, _, err = cli(capsys, "fuse", "--method", "rrf", str(binary), str(binary))
    assert code == 1 and err.startswith(f"hybrid-ir error: {binary}:2: binary data")


def test_latin1_input_names_line_and_byte(tmp_path):
    latin = write(tmp_path / "q.qrels", "q1 0 a 1\nq1 0 caf\xe9 1\n".encode("latin-1"))
    with pytest.raises(InputFormatError) as error:
        read_qrels(latin)
    assert error.value.line == 2
    assert "not UTF-8 text (byte 0xe9 at column 9)" in error.value.problem


def test_gzip_without_gz_suffix_and_truncated_gzip(tmp_path):
    data = gzip.compress(b"q1 0 a 1\n" * 2000)
    disguised = write(tmp_path / "q.qrels", data)
    with pytest.raises(InputFormatError, match=r"q.qrels: gzip-compressed data in a file whose"):
        read_qrels(disguised)
    truncated = write(tmp_path / "t.qrels.gz", data[: len(data) // 2])
    with pytest.raises(InputFormatError, match=r"t.qrels.gz:\d+: truncated or corrupt gzip"):
        read_qrels(truncated)
    not_gzip = write(tmp_path / "n.qrels.gz", b"q1 0 a 1\n")
    with pytest.raises(InputFormatError, match=r"n.qrels.gz:1: truncated or corrupt gzip"):
        read_qrels(not_gzip)


def test_corrupt_zip_dataset_is_one_error_naming_the_archive(tmp_path):
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("toy/corpus.jsonl", '{"_id": "d", "title": "", "text": "x"}\n' * 500)
        archive.writestr("toy/queries.jsonl", '{"_id": "q", "text": "x"}\n')
        archive.writestr("toy/qrels/test.tsv", "query-id\tcorpus-id\tscore\nq\td\t1\n")
    data = bytearray(good.read_bytes())
    data[60:90] = b"\xff" * 30  # inside the first member's compressed bytes
    corrupt = write(tmp_path / "corrupt.zip", bytes(data))
    outputs = {"corpus": tmp_path / "out/corpus.jsonl", "topics_test": tmp_path / "out/t.jsonl"}
    outputs["qrels_test"] = tmp_path / "out/test.qrels"
    with pytest.raises(InputFormatError, match=r"corrupt.zip.*corrupt or truncated archive"):
        convert("beir", {"dataset": corrupt}, outputs)
    assert not (tmp_path / "out" / "corpus.jsonl").exists()


@pytest.mark.parametrize("depth", ["0", "-3"])
def test_crossval_depth_below_one_is_one_line_exit_1(tmp_path, qrels, capsys, depth):
    run = write(tmp_path / "run.trec", "q1 Q0 a 1 2.0 t\nq2 Q0 c 1 1.0 t\n")
    argv = ["crossval", "--qrels", str(qrels), str(run), str(run), "--folds", "2"]
    code, out, err = cli(capsys, *argv, "--depth", depth)
    assert (code, out) == (1, "")
    assert err == f"hybrid-ir error: --depth must be at least 1, got {depth}\n"


def test_more_folds_than_topics_is_a_parameter_error(tmp_path):
    run = {"q1": {"a": 1.0}, "q2": {"c": 1.0}}
    qrels = {"q1": {"a": 1}, "q2": {"c": 1}}
    with pytest.raises(ParameterError, match="cannot split 2 topic"):
        crossvalidate_linear(run, run, qrels, ["P@1"], k_folds=5, seed=1)
    with pytest.raises(ParameterError, match="depth"):
        crossvalidate_linear(run, run, qrels, ["P@1"], k_folds=2, seed=1, k=-1)


# 3. untrusted values in messages --------------------------------------------------------------


def test_error_messages_quote_at_most_200_characters_of_a_value(tmp_path):
    score = "9" * 5000 + "x"
    run = write(tmp_path / "run.trec", f"q1 Q0 a 1 {score} t\n")
    with pytest.raises(InputFormatError) as error:
        read_run(run)
    assert len(str(error.value)) < 400 and "more characters" in str(error.value)
    assert quoted("abc") == "'abc'"


# 4. nothing half-written ------------------------------------------------------------------------


def test_crossval_output_is_written_atomically(tmp_path, qrels, capsys, monkeypatch):
    run = write(tmp_path / "run.trec", "q1 Q0 a 1 2.0 t\nq2 Q0 c 1 1.0 t\n")
    report = tmp_path / "out" / "report.json"
    argv = ["crossval", "--qrels", str(qrels), str(run), str(run), "--folds", "2", "-o"]
    code, _, _ = cli(capsys, *argv, str(report), "--measures", "P@1")
    assert code == 0 and json.loads(report.read_text())["columns"]["P@1"]
    report.unlink()

    def fail_midway(summary, out, **options):
        out.write('{"partial": ')
        raise OSError("disk full")

    monkeypatch.setattr(json, "dump", fail_midway)
    code, _, err = cli(capsys, *argv, str(report), "--measures", "P@1")
    assert code == 1 and "disk full" in err
    assert list(report.parent.iterdir()) == []


def test_a_full_disk_names_the_file_being_written(tmp_path, qrels, capsys, monkeypatch):
    """ENOSPC from a write names no file ("[Errno 28] No space left on device" alone before)."""
    run = write(tmp_path / "run.trec", "q1 Q0 a 1 2.0 t\nq2 Q0 c 1 1.0 t\n")
    report = tmp_path / "out" / "report.json"

    def disk_full(summary, out, **options):
        out.write('{"partial": ')
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(json, "dump", disk_full)
    argv = ["crossval", "--qrels", str(qrels), str(run), str(run), "--folds", "2", "-o"]
    code, _, err = cli(capsys, *argv, str(report), "--measures", "P@1")
    assert code == 1 and err.count("\n") == 1
    assert f"No space left on device: '{report}'" in err
    assert list(report.parent.iterdir()) == []


def test_a_killed_build_leaves_no_staging_directory_behind(tmp_path):
    final = tmp_path / "index"
    leftover = tmp_path / ".index.tmp"
    leftover.mkdir()
    (leftover / "half-written").write_text("x")
    with atomic_directory(final) as staging:
        assert not staging.exists()  # the earlier, killed build's leftovers are gone
        staging.mkdir()
        (staging / "data").write_text("complete")
    assert (final / "data").read_text() == "complete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
    with pytest.raises(RuntimeError), atomic_directory(final) as staging:
        staging.mkdir()
        raise RuntimeError("killed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
    assert (final / "data").read_text() == "complete"


# 5. configuration mistakes found when the DAG is built ----------------------------------------


def arqmath_config() -> dict:
    sources = {
        "threads": "t.tar.gz",
        "topics_arqmath1": "t1.xml",
        "qrels_arqmath1": "q1.txt",
        "labels_arqmath1": "l1.json",
    }
    collection = {
        "reader": "arqmath_html",
        "sources": sources,
        "topics": ["arqmath1"],
        "qrels": ["arqmath1"],
        "tables": ["topic_labels"],
    }
    return {
        "mirror": None,
        "manifest": "m.tsv",
        "collections": {"arqmath": collection},
        "bm25": {"k1": 0.9, "b": 0.4, "experiments": {}},
        "expected": [],
    }


def test_a_source_key_no_set_uses_is_an_error_naming_it():
    config = arqmath_config()
    config["collections"]["arqmath"]["sources"]["topic_arqmath3"] = "t3.xml"
    with pytest.raises(ConfigError) as error:
        validate_config(config, SCHEMA)
    assert "collections.arqmath.sources.topic_arqmath3: no listed set uses this source" in str(
        error.value
    )


def test_a_listed_topic_set_without_its_source_is_an_error_naming_the_set():
    config = arqmath_config()
    config["collections"]["arqmath"]["topics"].append("arqmath3")
    with pytest.raises(ConfigError) as error:
        validate_config(config, SCHEMA)
    assert "collections.arqmath: topic set 'arqmath3' has no source 'topics_arqmath3'" in str(
        error.value
    )


def test_a_topic_set_without_labels_beside_labelled_sets_is_a_warning():
    config = arqmath_config()
    config["collections"]["arqmath"]["topics"].append("arqmath3")
    config["collections"]["arqmath"]["qrels"].append("arqmath3")
    config["collections"]["arqmath"]["sources"] |= {
        "topics_arqmath3": "t3.xml",
        "qrels_arqmath3": "q3.txt",
    }
    validate_config(config, SCHEMA)
    assert config_warnings(config) == [
        "collections.arqmath: topic set 'arqmath3' has no 'labels_arqmath3' source, so its "
        "topics have no category, difficulty or dependency labels"
    ]


def test_a_bm25_experiment_without_a_qrels_entry_names_the_set():
    config = arqmath_config()
    config["collections"]["arqmath"]["topics"].append("arqmath2")
    config["collections"]["arqmath"]["qrels"].append("arqmath2")
    config["collections"]["arqmath"]["sources"] |= {
        "topics_arqmath2": "t2.xml",
        "qrels_arqmath2": "q2.txt",
        "labels_arqmath2": "l2.csv",
    }
    config["bm25"]["experiments"]["arqmath"] = {
        "layouts": ["flat"],
        "topics": ["arqmath1", "arqmath2"],
        "remove_query": False,
        "query_fields": ["title"],
        "qrels": {"arqmath1": ["arqmath"]},
    }
    with pytest.raises(ConfigError, match=r"bm25.experiments.arqmath.qrels: no entry for .*2'"):
        validate_config(config, SCHEMA)


def test_label_columns_the_reader_drops_are_logged(tmp_path, caplog):
    labels = write(
        tmp_path / "labels.csv",
        "Topic,Multi-Part,Dependency,Difficulty,Category\nA.301,Yes,Text,Low,Proof\n",
    )
    with caplog.at_level(logging.INFO):
        rows = read_labels_csv(labels, "arqmath3")
    assert rows == [
        {
            "topic_id": "A.301",
            "set": "arqmath3",
            "category": "Proof",
            "difficulty": "Low",
            "dependency": "Text",
        }
    ]
    assert "column(s) not read: Multi-Part" in caplog.text


def test_counts_are_integers_in_evaluations_and_the_cli(tmp_path, qrels, capsys):
    run = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}}
    evaluation = evaluate(read_qrels(qrels), run, ["arqmath"])
    assert evaluation.aggregate["Rel_Ret"] == 1 and isinstance(evaluation.aggregate["Rel_Ret"], int)
    path = write(tmp_path / "run.trec", "q1 Q0 a 1 2.0 t\nq2 Q0 c 1 1.0 t\n")
    argv = ["evaluate", "--qrels", str(qrels), "--run", str(path), "--measures", "arqmath"]
    code, out, _ = cli(capsys, *argv, "--format", "csv")
    assert code == 0 and out.splitlines()[1].endswith(",1")  # Rel_Ret, the last column


@pytest.mark.parametrize("reader", ["records", "qrels", "run", "run in blocks"])
def test_a_line_over_the_cap_is_an_error_before_it_is_held_whole(tmp_path, monkeypatch, reader):
    """Line 2 is 5,000 characters with a cap of 1,000; a line of exactly 1,000 (its line
    break aside) passes."""
    from hybrid_ir.data import runs
    from hybrid_ir.data.formats import line_limit, read_records
    from hybrid_ir.data.qrels import read_judgments

    first = {
        "records": '{"id": "a", "title": "", "text": "%s"}\n',
        "qrels": "q1 0 %s 1\n",
        "run": "q1 Q0 %s 1 1.0 t\n",
    }[reader.split()[0]]
    at_cap = first % ("x" * (1001 - len(first % "")))
    assert len(at_cap) == 1001 and at_cap.endswith("\n")
    path = write(tmp_path / "file.txt", at_cap + "b" * 5000 + "\n")
    read = {
        "records": lambda: list(read_records(path)),
        "qrels": lambda: read_judgments(path),
        "run": lambda: runs.read_run(path),
    }[reader.split()[0]]
    if reader == "run in blocks":
        monkeypatch.setattr(runs, "_BLOCK_CHARS", 700)
    with line_limit(1000), pytest.raises(InputFormatError) as error:
        read()
    assert (error.value.path, error.value.line) == (str(path), 2)
    assert "a line longer than 1,000 characters (config max_line_chars)" in error.value.problem
    write(path, at_cap)
    with line_limit(1000):
        read()


# 6. round four: hostile documents, outputs and counts -----------------------------------------


def nested(depth: int, kinds: str = "[") -> str:
    """A YAML (flow: JSON too) value nested ``depth`` deep: ``[`` lists, ``{`` mappings."""
    opening = "".join('{"k": ' if kinds[i % len(kinds)] == "{" else "[" for i in range(depth))
    closing = "".join("}" if kinds[i % len(kinds)] == "{" else "]" for i in reversed(range(depth)))
    return opening + "1" + closing


@pytest.mark.parametrize("depth", [900, 50_000])
def test_a_deeply_nested_configuration_is_one_line_not_a_crash(tmp_path, capsys, depth):
    """50,000 levels crashed libyaml's composer (exit 139); 900 ended in a 3,001-line
    RecursionError."""
    overlay = write(tmp_path / "deep.yaml", f"run_depth: 10\nfusions: {nested(depth)}\n")
    code, out, err = cli(capsys, "config", "--base", str(REPO / "config.yaml"), "--configfile",
                         str(overlay))  # fmt: skip
    assert (code, out) == (1, "")
    assert err == (
        f"hybrid-ir error: configuration file '{overlay}', line 2: lists and mappings nested "
        "deeper than 100 levels\n"
    )


def test_deep_json_expected_scores_and_claims_are_refused_before_parsing(tmp_path):
    from hybrid_ir.config.layers import read_config_file
    from hybrid_ir.evaluation.checks import load_expected
    from hybrid_ir.reports.claims.file import load_claims

    expected = write(tmp_path / "expected.yaml", f"collection: cf\nruns:\n  r: {nested(100_000)}\n")
    with pytest.raises(InputFormatError, match=r"expected.yaml:3: lists and mappings nested"):
        load_expected([expected])
    claims = write(tmp_path / "claims.yaml", f"paper: '001'\nclaims: {nested(5000, '{[')}\n")
    with pytest.raises(InputFormatError, match=r"claims.yaml:2: lists and mappings nested"):
        load_claims(claims)
    json_file = write(tmp_path / "config.json", '{"a":\n' + nested(100_000, "{") + "}")
    with pytest.raises(ConfigError, match=r"'.*config.json', line 2: lists and mappings nested"):
        read_config_file(json_file)


def test_aliases_count_as_deep_as_their_anchors(tmp_path):
    """Ten anchors of 60 levels, each inside the next: 600 levels once constructed."""
    from hybrid_ir.data.formats import parse_yaml

    lines = [f"a0: &a0 {nested(60)}"]
    lines += [f"a{i}: &a{i} {nested(60).replace('1', f'*a{i - 1}')}" for i in range(1, 10)]
    with pytest.raises(InputFormatError, match=r"doc:2: .* 100 levels with its aliases expanded"):
        parse_yaml("\n".join(lines), "doc")
    # The top-level mapping, 49 lists, then the 50 of the anchor: 100 levels.
    assert parse_yaml(f"a: &a {nested(50)}\nb: {nested(49).replace('1', '*a')}\n", "doc")


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(
    depth=st.integers(min_value=1, max_value=160),
    kinds=st.text(alphabet="[{", min_size=1, max_size=4),
    block=st.booleans(),
)
def test_nesting_up_to_the_limit_reads_and_beyond_it_is_refused(depth, kinds, block):
    """Lists and mappings in any order, YAML in flow or block style and JSON: the document
    as yaml.safe_load and json.loads read it up to 100 levels, one line naming it beyond."""
    from hybrid_ir.data.formats import MAX_NESTING, parse_json, parse_yaml

    value: object = 1
    for i in range(depth):
        value = {"k": value} if kinds[i % len(kinds)] == "{" else [value]
    text = json.dumps(value)
    as_yaml = yaml.safe_dump(value, default_flow_style=not block)
    if depth <= MAX_NESTING:
        assert parse_yaml(as_yaml, "doc") == value == parse_json(text, "doc")
        return
    for parse, document in ((parse_yaml, as_yaml), (parse_yaml, text), (parse_json, text)):
        with pytest.raises(InputFormatError, match=r"^doc:\d+: lists and mappings nested deeper"):
            parse(document, "doc")


def test_a_yte_templated_configuration_is_read_as_snakemake_reads_it(tmp_path, capsys):
    overlay = write(
        tmp_path / "templated.yaml",
        "__use_yte__: true\nseed:\n  ?if 1 + 1 == 2:\n    7\n  ?else:\n    8\n",
    )
    from hybrid_ir.config.layers import read_config_file

    assert read_config_file(overlay) == {"seed": 7}
    code, out, err = cli(capsys, "config", "--base", str(REPO / "config.yaml"), "--configfile",
                         str(overlay))  # fmt: skip
    assert code == 0, err
    assert yaml.safe_load(out)["training"]


def test_an_endless_configuration_file_is_refused_at_the_size_bound(tmp_path, capsys):
    code, out, err = cli(capsys, "config", "--base", str(REPO / "config.yaml"), "--configfile",
                         "/dev/zero")  # fmt: skip
    assert (code, out) == (1, "")
    assert err == (
        "hybrid-ir error: configuration file '/dev/zero': larger than 16,777,216 bytes: not a "
        "YAML or JSON document\n"
    )


FUSED = "q1 Q0 a 1 0.03278688524590164 rrf\nq1 Q0 b 2 0.03225806451612903 rrf\n"


@pytest.fixture
def fusable(tmp_path) -> Path:
    return write(tmp_path / "run.trec", "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n")


def test_output_onto_a_symlink_replaces_its_target_not_the_link(tmp_path, capsys, fusable):
    """The link was replaced by a file before, its target left as it was."""
    (tmp_path / "sub").mkdir()
    target = write(tmp_path / "sub" / "target.trec", "old\n")
    link = tmp_path / "link.trec"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.trec"
    dangling.symlink_to(tmp_path / "sub" / "new.trec")
    for output in (link, dangling):
        code, _, err = cli(capsys, "fuse", "--method", "rrf", str(fusable), str(fusable), "-o",
                           str(output))  # fmt: skip
        assert code == 0, err
        assert output.is_symlink() and output.read_text() == FUSED
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["new.trec", "target.trec"]


def test_output_to_a_pipe_or_a_device_is_written_through(tmp_path, capsys, fusable):
    """``-o /dev/stdout`` (and ``/dev/null`` as root) was replaced by a regular file; a link
    to /dev/null stands in for it here, so that a regression replaces the link, not the
    device."""
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    code, _, err = cli(capsys, "fuse", "--method", "rrf", str(fusable), str(fusable), "-o",
                       str(fifo))  # fmt: skip
    reader.join(timeout=30)
    assert code == 0, err
    assert received == [FUSED] and fifo.is_fifo()
    null = tmp_path / "null"
    null.symlink_to("/dev/null")
    code, _, err = cli(capsys, "fuse", "--method", "rrf", str(fusable), str(fusable), "-o",
                       str(null))  # fmt: skip
    assert code == 0, err
    assert null.is_symlink() and null.is_char_device()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "null", "run.trec"]


@pytest.mark.parametrize("kind", ["directory", "socket"])
def test_output_onto_a_directory_or_socket_is_refused(tmp_path, capsys, fusable, kind):
    """A socket was replaced by the run (exit 0); a directory named the temporary file."""
    import socket

    special = tmp_path / kind
    if kind == "directory":
        special.mkdir()
    else:
        bound = socket.socket(socket.AF_UNIX)
        bound.bind(str(special))
        bound.close()
    link = tmp_path / "link"
    link.symlink_to(special)
    for output in (special, link):
        code, out, err = cli(capsys, "fuse", "--method", "rrf", str(fusable), str(fusable), "-o",
                             str(output))  # fmt: skip
        assert (code, out) == (1, "")
        assert err == (
            f"hybrid-ir error: {output}: not written: it is a {kind}, not a regular file, a "
            "device or a pipe\n"
        )
    assert special.is_dir() if kind == "directory" else special.is_socket()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["link", "run.trec", kind])


def tarball(path: Path, members: dict[str, bytes]) -> Path:
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_archive_members_are_read_within_the_line_limit(tmp_path):
    """A 2 MB BEIR zip of 2 GiB of spaces was read whole (4 GB of memory) and converted to an
    empty corpus with exit 0; a StackMathQA shard of one endless line was read whole
    (MemoryError). Here the limit is 1,000 characters and the line 5,000."""
    from hybrid_ir.data.collections import get_reader
    from hybrid_ir.data.formats import line_limit

    beir = tmp_path / "beir.zip"
    with zipfile.ZipFile(beir, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("toy/corpus.jsonl", " " * 5000)
        archive.writestr("toy/queries.jsonl", '{"_id": "q", "text": "x"}\n')
        archive.writestr("toy/qrels/test.tsv", "query-id\tcorpus-id\tscore\nq\td\t1\n")
    outputs = {"corpus": tmp_path / "out/corpus.jsonl", "topics_test": tmp_path / "out/t.jsonl"}
    outputs["qrels_test"] = tmp_path / "out/test.qrels"
    with line_limit(1000), pytest.raises(InputFormatError) as error:
        convert("beir", {"dataset": beir}, outputs)
    assert (error.value.path, error.value.line) == (f"{beir}/toy/corpus.jsonl", 1)
    assert "a line longer than 1,000 characters (config max_line_chars)" in error.value.problem
    assert list((tmp_path / "out").iterdir()) == []  # the folder, made first, stays empty
    pair = {"Q": "q", "A": "a", "meta": {"url": "https://x.org/questions/1", "answer_id": 0}}
    shard = (json.dumps(pair) + "\n" + "x" * 5000 + "\n").encode()
    shards = tarball(tmp_path / "shards.tar.gz", {"d/1.jsonl": shard})
    with line_limit(1000), pytest.raises(InputFormatError) as error:
        list(get_reader("stackmathqa")({"shards": shards}).docs)
    assert (error.value.path, error.value.line) == (f"{shards}:d/1.jsonl", 2)


@pytest.mark.parametrize("reader", ["arqmath_html", "ntcir_articles"])
def test_a_page_read_whole_is_bounded_in_size(tmp_path, reader):
    """A 3 GiB (sparse) page in a tar.gz of ARQMath threads was read whole: MemoryError."""
    from hybrid_ir.data.collections.arqmath_html import read_threads
    from hybrid_ir.data.collections.ntcir import read_articles
    from hybrid_ir.data.formats import line_limit

    name = "threads/1.html" if reader == "arqmath_html" else "wiki/a.html"
    archive = tarball(tmp_path / "pages.tar.gz", {name: b"<p>" + b" " * 5000})
    read = read_threads if reader == "arqmath_html" else lambda path: list(read_articles(path))
    with line_limit(1000), pytest.raises(InputFormatError) as error:
        read(archive)
    where = f"{archive}:{name}" if reader == "arqmath_html" else f"{archive}[{name}]"
    assert str(error.value) == (
        f"{where}: larger than 1,000 bytes (config max_line_chars), the most a page read whole "
        "may hold: not a page of this collection"
    )


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(
    lengths=st.lists(st.integers(min_value=0, max_value=1200), min_size=1, max_size=6),
    last_break=st.booleans(),
    kind=st.sampled_from(["zip", "tar.gz"]),
)
def test_archive_member_lines_are_exact_up_to_the_limit(tmp_path_factory, lengths, last_break,
                                                        kind):  # fmt: skip
    """Any member: its lines exactly as written while none is over 1,000 characters, else an
    error naming archive, member and the first line over."""
    import tarfile

    from hybrid_ir.data.formats import MemberText, line_limit

    lines = [("é" * length)[:length] for length in lengths]
    text = "\n".join(lines) + ("\n" if last_break else "")
    directory = tmp_path_factory.mktemp("member")
    if kind == "zip":
        path = directory / "a.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("m.txt", text.encode())
        opened = zipfile.ZipFile(path)
        raw = opened.open("m.txt")
    else:
        path = tarball(directory / "a.tar.gz", {"m.txt": text.encode()})
        opened = tarfile.open(path)
        raw = opened.extractfile("m.txt")
    over = next((number for number, line in enumerate(lines, 1) if len(line) > 1000), None)
    with opened, line_limit(1000), MemberText(raw, f"{path}:m.txt") as member:
        if over is None:
            assert list(member) == text.splitlines(keepends=True)
            return
        with pytest.raises(InputFormatError) as error:
            list(member)
    assert (error.value.path, error.value.line) == (f"{path}:m.txt", over)


def provenance_record(output: str, inputs: list, **fields: object) -> Path:
    """A record as write_records writes it, for ``output`` (made too when under results/)."""
    record = {"output": output, "sha256": None, "rule": "r", "wildcards": {}, "inputs": inputs,
              "raw_inputs": {}, "seeds": {}, "git": {"commit": "c" * 40, "dirty": False},
              "config_sha256": "e" * 64, "packages": {}, "device": "cpu", "threads": 1,
              "wall_time_s": 1.0, **fields}  # fmt: skip
    path = Path("results/provenance") / f"{output.lstrip('/')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record), encoding="utf-8")
    if output.startswith("results/") and not os.path.lexists(output):
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text("x\n")
    return path


def test_provenance_reads_records_only_under_results_and_names_what_is_outside(
    tmp_path, monkeypatch, capsys
):
    """Records for /dev/zero and /etc/shadow were followed: /dev/zero hashed forever,
    /etc/shadow hashed; an absolute or missing path was "a file of the workflow's
    repository"."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "config.yaml", "a: 1\n")
    inputs = ["/dev/zero", "/etc/shadow", "../elsewhere.txt", "gone.yaml",
              str(tmp_path / "config.yaml")]  # fmt: skip
    provenance_record("results/table.md", inputs)
    provenance_record("/dev/zero", [], sha256="ab" * 32)
    provenance_record("/etc/shadow", [], sha256="ab" * 32)
    code, out, err = cli(capsys, "provenance", "results/table.md")
    assert code == 0, err
    assert out.splitlines()[-5:] == [
        "  /dev/zero (outside the workflow's repository: not read)",
        "  /etc/shadow (outside the workflow's repository: not read)",
        "  ../elsewhere.txt (outside the workflow's repository: not read)",
        "  gone.yaml (no longer on disk)",
        "  config.yaml (a file of the workflow's repository)",
    ]


@pytest.mark.parametrize("result", ["/dev/zero", "config.yaml", "results/zero", "results/fifo"])
def test_provenance_of_anything_but_a_result_is_refused(tmp_path, monkeypatch, capsys, result):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "config.yaml", "a: 1\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "zero").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "results" / "fifo")
    for output in (result, "results/zero", "results/fifo"):
        provenance_record(output, [], sha256="ab" * 32)
    code, out, err = cli(capsys, "provenance", result)
    assert (code, out) == (1, "")
    assert err == (
        f"hybrid-ir error: {result}: not a workflow result (a file or folder under results/)\n"
    )


@pytest.mark.parametrize(
    ("field", "value", "output"),
    [
        ("inputs", [1, 2], "text"),
        ("environment", "x", "text"),
        ("wildcards", {"a": ["b"]}, "text"),
        ("seeds", {"params.seed": "7"}, "text"),
        ("git", {"commit": "c", "dirty": "no"}, "text"),
        ("raw_inputs", ["a"], "json"),
        ("wall_time_s", float("nan"), "json"),
        ("wall_time_s", -1, "text"),
    ],
)
def test_a_provenance_record_of_wrong_types_is_one_line(tmp_path, monkeypatch, capsys, field,
                                                        value, output):  # fmt: skip
    """A list of numbers as inputs (TypeError), a string environment (TypeError), a NaN wall
    time with --format json (ValueError) were tracebacks."""
    monkeypatch.chdir(tmp_path)
    provenance_record("results/corpus.jsonl", [])
    path = provenance_record("results/run.trec", ["results/corpus.jsonl"])
    record = json.loads(path.read_text())
    record[field] = value
    path.write_text(json.dumps(record))
    code, out, err = cli(capsys, "provenance", "results/run.trec", "--format", output)
    assert (code, out) == (1, "")
    assert err == (
        f"hybrid-ir error: {path}: provenance record without a valid {field!r} (corrupt or "
        "edited?)\n"
    )


def test_a_long_or_deep_provenance_record_is_one_line(tmp_path, monkeypatch, capsys):
    """3,000 records in a chain and a record nested 100,000 deep were RecursionErrors."""
    monkeypatch.chdir(tmp_path)
    for i in range(3000):
        provenance_record(f"results/{i}", [f"results/{i + 1}"] if i < 2999 else [])
    code, out, err = cli(capsys, "provenance", "results/0")
    assert (code, out) == (1, "")
    assert err == (
        "hybrid-ir error: results/provenance/results/100.json: provenance records chained more "
        "than 100 deep: not a chain the workflow writes (edited records?)\n"
    )
    provenance_record("results/99", [])
    code, out, _ = cli(capsys, "provenance", "results/0", "--format", "json")
    assert code == 0 and json.loads(out)["file"] == "results/0"
    deep = provenance_record("results/deep", [])
    deep.write_text('{"inputs":\n' + nested(100_000) + "}")
    code, out, err = cli(capsys, "provenance", "results/deep")
    assert (code, out) == (1, "")
    assert err == (
        f"hybrid-ir error: {deep}:2: not a provenance record: lists and mappings nested deeper "
        "than 100 levels\n"
    )


def test_control_characters_in_a_provenance_record_are_shown_escaped(tmp_path, monkeypatch,
                                                                     capsys):  # fmt: skip
    monkeypatch.chdir(tmp_path)
    provenance_record("results/run.trec", ["results/\x1b[31mred"], rule="\x1b[2Jevil",
                      wildcards={"x": "\x1b]0;title\x07"})  # fmt: skip
    code, out, err = cli(capsys, "provenance", "results/run.trec")
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "  rule \\x1b[2Jevil x=\\x1b]0;title\\x07" in out.splitlines()
    assert "  results/\\x1b[31mred (no longer on disk, and no provenance record)" in out


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(
    edges=st.lists(
        st.lists(st.integers(min_value=0, max_value=14), max_size=4), min_size=1, max_size=12
    ),
)
def test_any_graph_of_records_is_followed_once_per_record(tmp_path_factory, edges):
    """Records whose inputs form any graph (cycles, a record its own input, inputs with no
    record, outside the repository or gone): each reachable record is expanded once, later
    meetings are "listed above", and nothing outside results/ is read."""
    from hybrid_ir.jobs.provenance import PROVENANCE_STATES, provenance_tree

    names = [f"results/n{i}" for i in range(len(edges))] + ["config.yaml", "/etc/passwd"]
    names += ["results/unrecorded", "gone.yaml"]
    directory = tmp_path_factory.mktemp("records")
    previous = os.getcwd()
    os.chdir(directory)
    try:
        write(directory / "config.yaml", "a: 1\n")
        for i, targets in enumerate(edges):
            provenance_record(names[i], [names[t % len(names)] for t in targets])
        tree = provenance_tree("results/n0")
    finally:
        os.chdir(previous)
    expanded, stack = [], [tree]
    while stack:
        node = stack.pop()
        assert node["state"] in PROVENANCE_STATES
        if "rule" in node:
            expanded.append(node["file"])
            stack.extend(node["inputs"])
        elif node["file"].startswith("results/n"):
            assert node["state"] == "listed_above"
    reachable, pending = set(), [0]
    while pending:
        i = pending.pop()
        if i not in reachable:
            reachable.add(i)
            pending += [t % len(names) for t in edges[i] if t % len(names) < len(edges)]
    assert sorted(expanded) == sorted(names[i] for i in reachable)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["search", "idx", "t.jsonl", "-o", "r.trec", "--depth", "3000000000"],
         "--depth must be at most 2,147,483,647 (a Java int, the most Lucene takes), got "
         "3000000000"),
        (["index", "c.jsonl", "idx", "--threads", "3000000000"],
         "--threads must be at most 2,147,483,647 (a Java int, the most Lucene takes), got "
         "3000000000"),
        (["search", "idx", "t.jsonl", "-o", "r.trec", "--k1", "nan"],
         "--k1 must be a finite number of at least 0, got nan"),
        (["search", "idx", "t.jsonl", "-o", "r.trec", "--k1", "-0.5"],
         "--k1 must be a finite number of at least 0, got -0.5"),
        (["search", "idx", "t.jsonl", "-o", "r.trec", "--b", "-5"],
         "--b must be from 0 to 1, got -5.0"),
        (["search", "idx", "t.jsonl", "-o", "r.trec", "--b", "nan"],
         "--b must be from 0 to 1, got nan"),
        (["compare", "r.trec", "--baseline", "b.trec", "--qrels", "q", "--permutations",
          "10000000000"],
         "--permutations must be at most 1,000,000 (the most sign flips a test draws), got "
         "10000000000"),
    ],
    ids=["depth", "threads", "k1 nan", "k1 negative", "b negative", "b nan", "permutations"],
)  # fmt: skip
def test_counts_and_bm25_parameters_the_engine_cannot_take_are_one_line(capsys, argv, message):
    """Lucene threw a JavaException (depth, threads, k1, b); 10^10 permutations ran for
    hours."""
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (1, "")
    assert err == f"hybrid-ir error: {message}\n"


def test_the_permutations_maximum_is_in_help_and_in_the_test_itself(capsys):
    from hybrid_ir.evaluation.significance import randomization_test

    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert "at most 1,000,000" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(ParameterError, match=r"from 1 to 1,000,000, got 1000001"):
        randomization_test({"q1": 1.0, "q2": 0.0}, {"q1": 0.0, "q2": 0.0}, 1_000_001)


def test_a_measure_cut_off_beyond_what_trec_eval_reads_names_the_measure(tmp_path, qrels, capsys):
    """trec_eval read it as P_9223372036854775807, which ir_measures looked up: KeyError."""
    run = write(tmp_path / "run.trec", "q1 Q0 a 1 2.0 t\n")
    argv = ["evaluate", "--qrels", str(qrels), "--run", str(run), "--measures"]
    code, out, err = cli(capsys, *argv, "P@99999999999999999999")
    assert (code, out) == (1, "")
    assert err == (
        "hybrid-ir error: measure 'P@99999999999999999999': the cut-off is beyond "
        "9,223,372,036,854,775,807, the largest trec_eval reads\n"
    )
    code, out, err = cli(capsys, *argv, "P@9223372036854775807")
    assert code == 0, err


def test_a_run_depth_beyond_a_java_int_names_the_key(tmp_path, capsys):
    overlay = write(tmp_path / "depth.yaml", "run_depth: 3000000000\n")
    code, out, err = cli(capsys, "config", "--base", str(REPO / "config.yaml"), "--configfile",
                         str(overlay))  # fmt: skip
    assert (code, out) == (1, "")
    assert err == (
        f"hybrid-ir error: {overlay}: run_depth: 3000000000 is greater than the maximum of "
        "2147483647\n"
    )


def test_every_count_an_engine_takes_has_the_java_int_maximum():
    """Depths, top-k, threads, batch and shard sizes reach Lucene, Approach0, faiss or
    ColBERT's extension as a 32-bit int: the schema stops a larger one at the key."""
    from hybrid_ir.retrieval.bm25 import JAVA_INT_MAX

    counts = {"run_depth", "depth", "k", "threads", "shards", "batch_size", "shard_size",
              "encode_window", "encode_batch_size", "micro_batch_size", "ncells", "ndocs",
              "max_k", "cutoff", "max_rank", "cpu_processes"}  # fmt: skip
    found = []
    stack = [yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for name, rule in (node.get("properties") or {}).items():
                kinds = rule.get("type") if isinstance(rule, dict) else None
                if name in counts and kinds in ("integer", ["integer", "null"]):
                    found.append((name, rule.get("maximum")))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    assert len(found) >= 30
    assert [name for name, maximum in found if maximum != JAVA_INT_MAX] == []


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"paper": "001", "verdicts": [', ":1: invalid JSON: Expecting value"),
        (b"[1, 2]", ": not a claims verdicts file: a JSON list, not an object"),
        (b'{"paper": "001", "title": "t"}',
         ": not a claims verdicts file: 'verdicts' missing or not a list"),
        ('{"paper": "café"}'.encode("latin-1"), ":1: not UTF-8 text (byte 0xe9)"),
        (b'{"paper": "001", "title": "t", "verdicts": [{"id": "c1", "verdict": "holds"}]}',
         ": not a claims verdicts file: verdicts[0]: 'topics' missing or not an integer"),
        (b'{"paper": "001", "title": "t", "verdicts": [{"id": "c1", "verdict": "x", '
         b'"effect": "big", "topics": 3}]}',
         ": not a claims verdicts file: verdicts[0]: 'effect' missing or not a number or null"),
    ],
    ids=["bad JSON", "a list", "no verdicts", "not UTF-8", "no topics", "effect a string"],
)  # fmt: skip
def test_a_bad_claims_verdicts_file_is_one_line(tmp_path, capsys, content, problem):
    """Each was a traceback (JSONDecodeError, TypeError, KeyError, UnicodeDecodeError)."""
    verdicts = tmp_path / "claims" / "paper001.json"
    verdicts.parent.mkdir()
    verdicts.write_bytes(content)
    for output in ("text", "json"):
        code, out, err = cli(capsys, "claims", "--results", str(tmp_path), "--format", output)
        assert (code, out) == (1, "")
        assert err == f"hybrid-ir error: {verdicts}{problem}\n"


def test_control_characters_in_a_claims_title_are_shown_escaped(tmp_path, capsys):
    verdicts = tmp_path / "claims" / "paper001.json"
    verdicts.parent.mkdir()
    document = {"paper": "001", "title": "\x1b[2J\x1b[31mred", "verdicts": []}
    verdicts.write_text(json.dumps(document))
    code, out, err = cli(capsys, "claims", "--results", str(tmp_path))
    assert code == 0, err
    assert out.splitlines()[0] == "Paper 001: \\x1b[2J\\x1b[31mred"
    code, out, err = cli(capsys, "claims", "--results", str(tmp_path), "--format", "json")
    assert code == 0 and "\x1b" not in out and json.loads(out)[0]["title"] == document["title"]


def test_a_latin1_checks_summary_names_line_and_byte(tmp_path, capsys):
    """A UnicodeDecodeError traceback before."""
    header = "collection\trun\tmetric\texpected\tactual\ttolerance\tstatus\n"
    summary = write(tmp_path / "summary.tsv",
                    (header + "café\tr\tm\t0.5\t0.5\t0.01\tPASS\n").encode("latin-1"))  # fmt: skip
    code, out, err = cli(capsys, "check", str(summary))
    assert (code, out) == (1, "")
    assert err == (
        f"hybrid-ir error: {summary}:2: not UTF-8 text (byte 0xe9 at column 4); convert it to "
        "UTF-8 first (e.g. iconv -f latin1 -t utf-8)\n"
    )


def beir_folder(root: Path, corpus: str, qrels: str = "q\td1\t1\n") -> Path:
    (root / "toy" / "qrels").mkdir(parents=True)
    write(root / "toy" / "corpus.jsonl", corpus)
    write(root / "toy" / "queries.jsonl", '{"_id": "q", "text": "x"}\n')
    write(root / "toy" / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\n" + qrels)
    return root / "toy"


DOC = '{"_id": "%s", "title": "", "text": "x"}\n'


@pytest.mark.parametrize(
    ("corpus", "qrels", "where", "problem"),
    [
        (DOC % "d1" + DOC % "d2" + DOC % "d1", "q\td1\t1\n", "corpus.jsonl:3",
         "id 'd1' repeats line 1: ids must be unique"),
        ('{"_id": "d1", "_id": "d2", "title": "", "text": "x"}\n', "q\td1\t1\n",
         "corpus.jsonl:1", "key '_id' given twice in one object: which value is meant is unclear"),
        ("\n", "q\td1\t1\n", "corpus.jsonl", "no documents: an empty corpus"),
        (DOC % "d1", "", "qrels/test.tsv", "no judgments: every score against it would be 0"),
    ],
    ids=["duplicate id", "duplicate key", "empty corpus", "empty qrels"],
)  # fmt: skip
def test_beir_records_the_workflow_would_refuse_later_are_refused_by_the_reader(
    tmp_path, capsys, corpus, qrels, where, problem
):
    """Each was converted with exit 0 (the key's last value kept) and failed a later step."""
    dataset = beir_folder(tmp_path / "raw", corpus, qrels)
    out = tmp_path / "out"
    code, _, err = cli(capsys, "convert", "beir", "--source", f"dataset={dataset}", "--topics",
                       "test", "--qrels", "test", "-o", str(out))  # fmt: skip
    assert code == 1
    assert err.splitlines()[-1] == f"hybrid-ir error: {dataset}/{where}: {problem}"
    assert not (out / "corpus.jsonl").exists()


def test_a_stackmathqa_pair_given_twice_names_both_places(tmp_path):
    from hybrid_ir.data.collections import get_reader

    def pair(answer_id: int) -> bytes:
        meta = {"url": "https://math.stackexchange.com/questions/7", "answer_id": answer_id}
        return (json.dumps({"Q": "q", "A": "a", "meta": meta}) + "\n").encode()

    shards = tarball(tmp_path / "s.tar.gz", {"d/1.jsonl": pair(1) + pair(2),
                                              "d/2.jsonl": pair(3) + pair(1)})  # fmt: skip
    with pytest.raises(InputFormatError) as error:
        list(get_reader("stackmathqa")({"shards": shards}).docs)
    assert str(error.value) == (
        f"{shards}:d/2.jsonl:2: id 'math.stackexchange.com-7-1' repeats {shards}:d/1.jsonl:1: "
        "ids must be unique"
    )
    empty = tarball(tmp_path / "e.tar.gz", {"d/README": b"no shards\n"})
    with pytest.raises(InputFormatError, match=r"e.tar.gz: no question/answer pairs"):
        list(get_reader("stackmathqa")({"shards": empty}).docs)


def test_an_arqmath_topic_number_given_twice_names_both_lines(tmp_path):
    from hybrid_ir.data.collections.arqmath import read_topics

    topic = '<Topic number="%s">\n  <Title>t</Title><Question>q</Question>\n</Topic>\n'
    topics = topic % "A.1" + topic % "A.2" + topic % "A.1"
    xml = write(tmp_path / "topics.xml", f"<Topics>\n{topics}</Topics>\n")
    with pytest.raises(InputFormatError) as error:
        read_topics(xml)
    assert str(error.value) == (
        f"{xml}:8: topic 'A.1' repeats the one on line 2: topic numbers must be unique"
    )


def test_a_fused_run_that_includes_itself_names_the_key(tmp_path, capsys):
    """Snakemake's CyclicGraphException on rule fuse_runs named no key."""
    overlay = write(tmp_path / "cycle.yaml", "fusions:\n  cf:\n"
                    "    fa: {topics: all, method: rrf, runs: [vsr, fb]}\n"
                    "    fb: {topics: all, method: rrf, runs: [dense-minilm, fc]}\n"
                    "    fc: {topics: all, method: rrf, runs: [vsr, fa]}\n")  # fmt: skip
    code, out, err = cli(capsys, "config", "--base", str(REPO / "config.yaml"), "--configfile",
                         str(overlay))  # fmt: skip
    assert (code, out) == (1, "")
    assert err == (
        f"hybrid-ir error: {overlay}: fusions.cf.fc.runs: fa includes fb includes fc includes "
        "fa: a fused run cannot include itself\n"
    )


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(edges=st.lists(st.lists(st.integers(min_value=0, max_value=9), max_size=3), max_size=8))
def test_fused_runs_are_refused_exactly_when_they_form_a_cycle(edges):
    """Any graph of fused runs (and plain runs, numbers past the fused ones): refused iff
    graphlib finds a cycle, the cycle named being one."""
    import graphlib

    from hybrid_ir.config.checks import _check_fusion_cycle

    fused = {f"f{i}": {"runs": [f"f{t}" for t in targets]} for i, targets in enumerate(edges)}
    graph = {name: [r for r in entry["runs"] if r in fused] for name, entry in fused.items()}
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
        cyclic = False
    except graphlib.CycleError:
        cyclic = True
    if not cyclic:
        _check_fusion_cycle(fused, "fusions.c")
        return
    with pytest.raises(ConfigError) as error:
        _check_fusion_cycle(fused, "fusions.c")
    cycle = str(error.value).split(": ")[1].split(" includes ")
    assert cycle[0] == cycle[-1]
    assert all(b in graph[a] for a, b in zip(cycle, cycle[1:], strict=False))
    assert str(error.value).startswith(f"fusions.c.{cycle[-2]}.runs: ")


@pytest.mark.parametrize("path", ["cf/original/{x}", "cf/original/cf\n74"])
def test_a_source_path_no_rule_can_hold_names_the_key(path):
    """A WildcardError in rule convert_cf named no key."""
    from hybrid_ir.planning.plan import Plan

    plan = Plan.__new__(Plan)
    with pytest.raises(ConfigError) as error:
        plan.raw_file(path, "collections.cf.sources.cf74")
    character = "{" if "{" in path else "\n"
    assert str(error.value) == (
        f"config: collections.cf.sources.cf74: {path!r} holds {character!r}, which no path of a "
        "workflow rule may hold (braces are Snakemake's wildcards)"
    )


def test_combsum_weights_that_are_all_zero_are_refused(tmp_path, capsys):
    """Every fused score was 0 and the run written, exit 0."""
    from hybrid_ir.fusion.methods import fuse

    runs = [{"q1": {"a": 2.0, "b": 1.0}}, {"q1": {"b": 2.0, "a": 1.0}}]
    with pytest.raises(ConfigError, match=r"weights must not all be zero, got \[0, 0.0\]"):
        fuse("combsum", runs, weights=[0, 0.0])
    assert fuse("combsum", runs, weights=[0, 1.0])["q1"] == {"b": 1.0, "a": 0.0}
    overlay = write(tmp_path / "zero.yaml", "fusions:\n  cf:\n    zero: {topics: all, method: "
                    "combsum, runs: [vsr, dense-minilm], params: {weights: [0, 0]}}\n")  # fmt: skip
    code, _, err = cli(capsys, "config", "--base", str(REPO / "config.yaml"), "--configfile",
                       str(overlay))  # fmt: skip
    assert code == 1
    assert err.startswith(f"hybrid-ir error: {overlay}: fusions.cf.zero: fusion parameter "
                          "weights must not all be zero")  # fmt: skip


def test_compare_latex_escapes_every_special_character(tmp_path, capsys):
    """A run named we^ird~{x}\\y was set as LaTeX: superscript, a space, a group, a command."""
    qrels = write(tmp_path / "q.qrels", "q1 0 d1 1\nq2 0 d2 1\n")
    run = write(tmp_path / "we^ird~{x}\\y&_%#$.trec", "q1 Q0 d1 1 2.0 t\nq2 Q0 d1 1 2.0 t\n")
    base = write(tmp_path / "base.trec", "q1 Q0 d2 1 2.0 t\nq2 Q0 d2 1 2.0 t\n")
    code, out, err = cli(capsys, "compare", str(run), "--baseline", str(base), "--qrels",
                         str(qrels), "--measures", "P@1", "--format", "latex")  # fmt: skip
    assert code == 0, err
    escaped = r"we\textasciicircum{}ird\textasciitilde{}\{x\}\textbackslash{}y\&\_\%\#\$"
    assert f"P@1 & {escaped} & " in out
    assert "exact over all $2^n$ flips" in " ".join(out.split())


def test_control_characters_in_run_file_names_are_shown_escaped(tmp_path, qrels, capsys):
    run = write(tmp_path / "r\x1b[31m\r.trec", "q1 Q0 a 1 2.0 t\n")
    code, out, err = cli(capsys, "evaluate", "--qrels", str(qrels), "--run", str(run),
                         "--measures", "P@1")  # fmt: skip
    assert code == 0, err
    assert "\x1b" not in out and "\r" not in out
    assert "/r\\x1b[31m\\r.trec | all | 0.5000 |" in out
