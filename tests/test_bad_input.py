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

from hybrid_ir.cli import main
from hybrid_ir.collections import convert
from hybrid_ir.collections.arqmath import read_labels_csv
from hybrid_ir.config import validate_config
from hybrid_ir.config_checks import config_warnings
from hybrid_ir.crossval import crossvalidate_linear
from hybrid_ir.errors import (
    ConfigError,
    EvaluationError,
    HybridIRError,
    InputFormatError,
    ParameterError,
    quoted,
)
from hybrid_ir.evaluate import evaluate, evaluate_files, load_qrels
from hybrid_ir.formats import atomic_directory, read_qrels, read_records, relevance_limit
from hybrid_ir.runs import read_run

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
    from hybrid_ir.runs import write_run

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
        load_qrels(empty)
    with pytest.raises(InputFormatError, match=r"empty.qrels: no judgments"):
        read_qrels(empty)
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
        load_qrels(huge)
    assert error.value.line == 2 and "beyond ±1000" in error.value.problem
    run = write(tmp_path / "run.trec", "q1 Q0 b 1 2.0 t\n")
    code, _, err = cli(capsys, "evaluate", "--qrels", str(huge), "--run", str(run))
    assert code == 1 and f"{huge}:2: relevance '1000000000' is beyond ±1000" in err
    # trec_eval's cost grows with the relevance values, so the raised limit is tried on 5000.
    large = write(tmp_path / "large.qrels", "q1 0 a 1\nq1 0 b 5000\n")
    with relevance_limit(5000):
        assert load_qrels(large)["q1"]["b"] == 5000
    argv = ["evaluate", "--qrels", str(large), "--run", str(run), "--measures", "P@1"]
    code, out, _ = cli(capsys, *argv, "--max-relevance", "5000")
    assert code == 0 and "1.0000" in out


def test_a_leading_bom_is_dropped_from_qrels_runs_and_records(tmp_path):
    bom = "\ufeff"
    assert load_qrels(write(tmp_path / "q.qrels", bom + "q1 0 a 1\n")) == {"q1": {"a": 1}}
    assert read_run(write(tmp_path / "r.trec", bom + "q1 Q0 a 1 2.0 t\n")) == {"q1": {"a": 2.0}}
    record = json.dumps({"id": "t1", "title": "", "text": "x"})
    assert [r["id"] for r in read_records(write(tmp_path / "t.jsonl", bom + record))] == ["t1"]
    gz = tmp_path / "q.qrels.gz"
    gz.write_bytes(gzip.compress((bom + "q1 0 a 1\n").encode()))
    assert load_qrels(gz) == {"q1": {"a": 1}}


def test_a_non_breaking_space_is_part_of_an_id_not_a_separator(tmp_path):
    qrels = write(tmp_path / "q.qrels", "q\xa01 0 a 1\n")
    assert load_qrels(qrels) == {"q\xa01": {"a": 1}}
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
        load_qrels(latin)
    assert error.value.line == 2
    assert "not UTF-8 text (byte 0xe9 at column 9)" in error.value.problem


def test_gzip_without_gz_suffix_and_truncated_gzip(tmp_path):
    data = gzip.compress(b"q1 0 a 1\n" * 2000)
    disguised = write(tmp_path / "q.qrels", data)
    with pytest.raises(InputFormatError, match=r"q.qrels: gzip-compressed data in a file whose"):
        load_qrels(disguised)
    truncated = write(tmp_path / "t.qrels.gz", data[: len(data) // 2])
    with pytest.raises(InputFormatError, match=r"t.qrels.gz:\d+: truncated or corrupt gzip"):
        load_qrels(truncated)
    not_gzip = write(tmp_path / "n.qrels.gz", b"q1 0 a 1\n")
    with pytest.raises(InputFormatError, match=r"n.qrels.gz:1: truncated or corrupt gzip"):
        load_qrels(not_gzip)


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
    evaluation = evaluate(load_qrels(qrels), run, ["arqmath"])
    assert evaluation.aggregate["Rel_Ret"] == 1 and isinstance(evaluation.aggregate["Rel_Ret"], int)
    path = write(tmp_path / "run.trec", "q1 Q0 a 1 2.0 t\nq2 Q0 c 1 1.0 t\n")
    argv = ["evaluate", "--qrels", str(qrels), "--run", str(path), "--measures", "arqmath"]
    code, out, _ = cli(capsys, *argv, "--format", "csv")
    assert code == 0 and out.splitlines()[1].endswith(",1")  # Rel_Ret, the last column


@pytest.mark.parametrize("reader", ["records", "qrels", "run", "run in blocks"])
def test_a_line_over_the_cap_is_an_error_before_it_is_held_whole(tmp_path, monkeypatch, reader):
    """Line 2 is 5,000 characters with a cap of 1,000; a line of exactly 1,000 (its line
    break aside) passes."""
    from hybrid_ir import runs
    from hybrid_ir.formats import line_limit, read_qrels, read_records

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
        "qrels": lambda: read_qrels(path),
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
