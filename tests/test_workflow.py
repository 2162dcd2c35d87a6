"""The Snakemake workflow end to end on the tiny BEIR-format collection of tests/toy_workflow.py.

The toy collection is built so that BM25's answer is known by hand: each query shares its one
rare word with exactly one document, the relevant one, so every query has it at rank 1 and
nDCG@10 = R@100 = 1.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from toy_workflow import (
    DATASET,
    DOCS,
    EXTERNAL_RUN,
    OTHER_RUN,
    REPO,
    beir_zip,
    make_toy,
    snakemake,
    write_manifest,
)

__all__ = ["REPO", "snakemake", "write_manifest"]  # tests/test_ntcir12_table2.py imports them

HYBRID_IR = Path(sys.executable).with_name("hybrid-ir")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return make_toy(tmp_path_factory.mktemp("tiny"))


def copy_of(workdir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(workdir, copy, ignore=shutil.ignore_patterns("results", ".snakemake"))
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["manifest"] = str(copy / "manifest.tsv")
    config["mirror"] = str(copy / "mirror")
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    return copy


def finished_copy(workdir: Path, tmp_path: Path) -> Path:
    """:func:`copy_of` with the finished run's results and records, so that only what a test
    changes runs again."""
    assert snakemake(workdir).returncode == 0  # finished (a no-op after the first test)
    copy = copy_of(workdir, tmp_path)
    for done in ("results", ".snakemake"):
        shutil.copytree(workdir / done, copy / done, symlinks=True)
    return copy


@pytest.mark.lucene
def test_tiny_workflow_runs_checks_and_reruns_as_no_op(workdir):
    first = snakemake(workdir)
    assert first.returncode == 0, first.stderr[-4000:]
    results = workdir / "results"
    corpus = [json.loads(line) for line in (results / "collections/toy/corpus.jsonl").open()]
    assert [doc["id"] for doc in corpus] == [doc[0] for doc in DOCS]
    run = (results / "runs/toy/test/bm25-flat.trec").read_text().splitlines()
    top = {line.split()[0]: line.split()[2] for line in run if line.split()[3] == "1"}
    assert top == {"q1": "d1", "q2": "d2"}
    evaluation = json.loads((results / "eval/toy/test/bm25-flat.test.json").read_text())
    assert evaluation["aggregate"] == {"nDCG@10": 1.0, "R@100": 1.0, "P@1": 1.0}
    summary = (results / "checks/summary.tsv").read_text().splitlines()
    assert len(summary) == 4 and all(line.endswith("PASS") for line in summary[1:])
    assert (results / "checks/passed").exists()
    table = (results / "tables/bm25.md").read_text()
    assert "| bm25-flat | 1.0000 | 1.0000 |" in table

    with open(results / "tables/toy-table.csv", newline="") as handle:
        cells = {(row["run"], row["column"]): row for row in csv.DictReader(handle)}
    other = cells["other", "P@1"]
    assert (other["value"], other["published"], other["difference"]) == ("0.5", "0.5", "0.0")
    # q1 loses 1 against BM25, q2 ties: a paired t-test over two topics gives p = 0.5.
    assert float(other["p_value"]) == pytest.approx(0.5)
    assert cells["BM25", "P@1"]["value"] == "1.0" and cells["BM25", "P@1"]["p_value"] == ""
    assert (results / "tables/toy-table.tex").read_text().count(r"\toprule") == 1
    folds = (results / "crossval/toy-linear.folds.tsv").read_text().splitlines()
    assert folds[0] == "topic\tfold" and len(folds) == 3
    fused = (results / "runs/toy/test/rrf.trec").read_text().splitlines()
    assert fused[0].split()[:3] == ["q1", "Q0", "d1"]
    tfidf = (results / "runs/toy/test/tfidf.trec").read_text().splitlines()
    assert {line.split()[0]: line.split()[2] for line in tfidf if line.split()[3] == "1"} == {
        "q1": "d1",
        "q2": "d2",
    }
    # lam = 1 keeps TF-IDF's scores alone (P@1 = 1); lam = 0 the other run's (P@1 = 0.5).
    sweep = json.loads((results / "sweeps/toy/test/toy-linear-sweep.json").read_text())
    assert sweep["best"] == 1.0 and [s["P@1"] for s in sweep["scores"]] == [0.5, 1.0]
    assert (results / "runs/toy/test/toy-linear-sweep-best.trec").exists()
    assert "TF-IDF" in (results / "figures/toy-pr.svg").read_text()
    assert (results / "figures/toy-pr.png").stat().st_size > 0

    again = snakemake(workdir)
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr

    # Every written run: ranks 1, 2, ... per topic down non-increasing scores, which read back
    # exactly, so trec_eval re-sorting the lines ranks as the writer did.
    written = sorted((results / "runs").rglob("*.trec"))
    assert len(written) >= 5
    for path in written:
        lines = [line.split() for line in path.read_text().splitlines()]
        for topic in {fields[0] for fields in lines}:
            ranked_lines = [fields for fields in lines if fields[0] == topic]
            assert [int(f[3]) for f in ranked_lines] == list(range(1, len(ranked_lines) + 1))
            scores = [float(f[4]) for f in ranked_lines]
            assert scores == sorted(scores, reverse=True), path
            assert [repr(score) for score in scores] == [f[4] for f in ranked_lines], path


@pytest.mark.lucene
def test_score_outside_its_band_fails_the_run_and_keeps_the_summary(workdir, tmp_path):
    copy = finished_copy(workdir, tmp_path)
    expected = yaml.safe_load((copy / "expected/toy.yaml").read_text())
    expected["runs"]["bm25-flat"]["test"]["nDCG@10"]["value"] = 0.5
    (copy / "expected/toy.yaml").write_text(yaml.safe_dump(expected))
    result = snakemake(copy)
    assert result.returncode != 0
    assert "1 of 3 checks failed" in result.stderr
    summary = (copy / "results/checks/summary.tsv").read_text()
    assert "nDCG@10\t0.5\t1.000000\t0.0\tFAIL" in summary
    assert not (copy / "results/checks/passed").exists()


def test_wrong_manifest_hash_stops_with_one_line(workdir, tmp_path):
    copy = copy_of(workdir, tmp_path)
    write_manifest(copy / "manifest.tsv", {DATASET: b"something else", EXTERNAL_RUN: OTHER_RUN})
    result = snakemake(copy)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("hybrid-ir error:")]
    assert len(lines) == 1
    assert f"checksum mismatch for {DATASET}" in lines[0]
    assert hashlib.sha256(b"something else").hexdigest() in lines[0]
    assert not (copy / "results/raw" / DATASET).exists()


def test_a_mirror_file_replaced_with_its_manifest_row_is_fetched_again(workdir, tmp_path):
    """The manifest row is a recorded parameter of its fetch job: a new sha256 re-fetches the
    file instead of keeping the old copy, and leaves the other raw files alone."""
    copy = finished_copy(workdir, tmp_path)
    replaced = OTHER_RUN + b"q2\td3\t2\t6.0\tother\n"
    (copy / "mirror" / EXTERNAL_RUN).write_bytes(replaced)
    write_manifest(copy / "manifest.tsv", {DATASET: beir_zip(), EXTERNAL_RUN: replaced})
    planned = snakemake(copy, "--dry-run").stdout
    fetches = [block for block in planned.split("rule ")[1:] if block.startswith("fetch_raw:")]
    assert len(fetches) == 1 and f"results/raw/{EXTERNAL_RUN}" in fetches[0], planned[-3000:]
    assert "Params have changed since last execution" in fetches[0]


def test_a_moved_mirror_re_runs_nothing(workdir, tmp_path):
    """Where the mirror lies is not a parameter of the fetch jobs: the same verified files from
    another folder (CI's absolute HYBRID_IR_MIRROR against config.yaml's relative path) leave
    the finished workflow a no-op."""
    copy = finished_copy(workdir, tmp_path)  # its configuration names the copied mirror
    moved = tmp_path / "elsewhere"
    (copy / "mirror").rename(moved)
    planned = snakemake(copy, "--dry-run", env={"HYBRID_IR_MIRROR": str(moved)})
    assert planned.returncode == 0 and "Nothing to be done" in planned.stdout, planned.stdout


def test_a_raw_file_edited_after_a_run_fails_the_next_run_naming_it(workdir, tmp_path):
    """Snakemake re-runs the import of an edited raw run (newer than its output); the job
    checks the file against the manifest and stops, where it once re-imported it silently."""
    copy = finished_copy(workdir, tmp_path)
    raw = copy / "results/raw" / EXTERNAL_RUN
    edited = raw.read_bytes().replace(b"\t1\t", b"\t9\t", 1)
    assert edited != raw.read_bytes()
    raw.write_bytes(edited)
    result = snakemake(copy)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("hybrid-ir error:")]
    assert len(lines) == 1, result.stderr[-3000:]
    assert f"results/raw/{EXTERNAL_RUN} changed since it was fetched" in lines[0]
    assert hashlib.sha256(OTHER_RUN).hexdigest() in lines[0]
    assert hashlib.sha256(edited).hexdigest() in lines[0]
    provenance = subprocess.run(
        [str(HYBRID_IR), "provenance", "--format", "json", "results/tables/toy-table.md"],
        capture_output=True, text=True, cwd=copy, check=True,
    )  # fmt: skip
    problems = json.loads(provenance.stdout)["raw_input_problems"]
    assert list(problems) == [EXTERNAL_RUN]
    assert problems[EXTERNAL_RUN].startswith("its bytes are not the manifest's: expected sha256 ")


def test_missing_mirror_file_stops_with_one_line(workdir, tmp_path):
    copy = copy_of(workdir, tmp_path)
    (copy / "mirror" / DATASET).unlink()
    result = snakemake(copy)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("hybrid-ir error:")]
    assert len(lines) == 1
    assert f"cannot fetch {DATASET}: not in the mirror {copy / 'mirror'}" in lines[0]


def test_schema_violation_stops_before_any_job(workdir, tmp_path):
    copy = copy_of(workdir, tmp_path)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["run_depth"] = 0
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(copy)
    assert result.returncode != 0
    # The file that sets the key is named (the workflow's configuration, or an overlay).
    said = f"hybrid-ir: {copy / 'config.yaml'}: run_depth: 0 is less than the minimum of 1"
    assert said in result.stderr
    assert not (copy / "results").exists()


def test_source_key_typo_stops_before_any_job(workdir, tmp_path):
    copy = copy_of(workdir, tmp_path)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["collections"]["toy"]["sources"]["qrels_tset"] = DATASET
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(copy, "-n")
    assert result.returncode != 0
    message = f"hybrid-ir: {copy / 'config.yaml'}: collections.toy.sources.qrels_tset: no listed"
    assert message in result.stdout + result.stderr
    assert not (copy / "results").exists()


def test_broken_imported_run_fails_its_job_with_file_and_line(workdir, tmp_path):
    copy = copy_of(workdir, tmp_path)
    broken = OTHER_RUN.replace(b"q1\td1\t2\t8.0\tother\n", b"q1\td1\t2\tnan\tother\n")
    (copy / "mirror" / EXTERNAL_RUN).write_bytes(broken)
    write_manifest(copy / "manifest.tsv", {DATASET: beir_zip(), EXTERNAL_RUN: broken})
    result = snakemake(copy, "results/runs/toy/test/other.trec")
    assert result.returncode != 0
    raw = f"results/raw/{EXTERNAL_RUN}"  # Snakemake runs jobs in the workflow directory
    expected = f"hybrid-ir error: {raw}:2: score 'nan' is not a finite number"
    assert expected in result.stdout + result.stderr
    log = copy / "results/logs/runs/toy/test/other.import.log"
    assert f"{raw}:2: score 'nan' is not a finite number" in log.read_text()
    assert not (copy / "results/runs/toy/test/other.trec").exists()


@pytest.mark.lucene
def test_more_folds_than_topics_fails_the_crossval_job_naming_its_file_and_entry(workdir, tmp_path):
    copy = finished_copy(workdir, tmp_path)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["crossval"]["toy-linear"]["folds"] = 3  # the toy qrels have 2 topics
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(copy, "results/crossval/toy-linear.json")
    assert result.returncode != 0
    # Found by the job long after validation, and still named by the file that sets the key.
    line = f"{copy / 'config.yaml'}: crossval.toy-linear: cannot split 2 topic(s) into 3 folds"
    assert f"hybrid-ir error: {line}" in result.stdout + result.stderr
    assert line in (copy / "results/logs/crossval/toy-linear.log").read_text()
    assert not (copy / "results/crossval/toy-linear.json").exists()
