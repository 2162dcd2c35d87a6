"""The run-time summary of one workflow run (benchmarks/pipeline.py), computed from a made-up
Snakemake log and benchmark files: wall time, stage sums, critical path, core use, goals."""

from __future__ import annotations

import importlib.util
import os
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "pipeline.py"
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


@pytest.fixture(scope="module")
def pipeline():
    spec = importlib.util.spec_from_file_location("pipeline_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(SCRIPT.parent))  # where its `import harness` finds the harness
        spec.loader.exec_module(module)
    return module


def _at(seconds: int) -> datetime:
    """Local time, as Snakemake writes it and as file modification times are compared."""
    return datetime(2026, 11, 25, 10, 0, 0) + timedelta(seconds=seconds)


def _stamp(seconds: int) -> str:
    return _at(seconds).strftime("[%a %b %d %H:%M:%S %Y]")


def _start(seconds, rule, jobid, inputs=(), outputs=(), benchmark=None):
    lines = [_stamp(seconds), f"localrule {rule}:"]
    if inputs:
        lines.append("    input: " + ", ".join(inputs))
    lines.append("    output: " + ", ".join(outputs))
    lines.append(f"    jobid: {jobid}")
    if benchmark:
        lines.append(f"    benchmark: results/benchmarks/{benchmark}.tsv")
    lines += ["    resources: tmpdir=/tmp, runtime=30", "Select jobs to execute..."]
    return lines


def _finish(seconds, jobid, rule, old=False):
    finished = f"Finished job {jobid}." if old else f"Finished jobid: {jobid} (Rule: {rule})"
    return [_stamp(seconds), finished, "3 of 8 steps (38%) done"]


# Seconds after 10:00:00. The longest chain is convert (10 s) -> bm25_index (30 s) ->
# encoder_rerank (60 s, reading a file inside the index directory) -> evaluate_run (fails after
# 5 s): 105 s, the whole run. fetch_raw (2 s) -> bm25_search (50 s) -> evaluate_run (3 s) is
# shorter. Job 8 starts and never finishes.
CORPUS = "results/collections/x/corpus.jsonl"
INDEX = "results/indexes/x/bm25"
RAW = "results/raw/y.gz"
RERANKED = "results/runs/x/t/rerank.trec"
SEARCHED = "results/runs/x/t/bm25.trec"
LOG = [
    "Provided cores: 2",
    "Job stats:",
    "job      count",
    "total        8",
    *_start(0, "convert_x", 1, (), [CORPUS], "convert/x"),
    *_start(0, "fetch_raw", 2, (), [RAW]),
    *_finish(2, 2, "fetch_raw"),
    *_start(2, "bm25_search", 5, [RAW], [SEARCHED], "runs/x/t/bm25"),
    *_finish(10, 1, "convert_x"),
    *_start(10, "bm25_index", 3, [CORPUS], [INDEX], "index/x/bm25"),
    *_finish(40, 3, "bm25_index"),
    *_start(40, "encoder_rerank", 4, [f"{INDEX}/part0", RAW], [RERANKED], "runs/x/t/rerank"),
    *_finish(52, 5, "bm25_search", old=True),
    *_start(52, "evaluate_run", 6, [SEARCHED], ["results/eval/bm25.json"]),
    *_finish(55, 6, "evaluate_run"),
    *_finish(100, 4, "encoder_rerank"),
    *_start(100, "evaluate_run", 7, [RERANKED], ["results/eval/rerank.json"]),
    *_start(101, "figure", 8, ["results/eval/bm25.json"], ["results/figures/f.png"]),
    _stamp(105),
    "Error in rule evaluate_run:",
    "    message: None",
    "    jobid: 7",
    f"    input: {RERANKED}",
    "Shutting down, this might take some time.",
]
# name: (s, cpu_time, second the file was written)
BENCHMARKS = {
    "convert/x": (9.5, 9.0, 10),
    "index/x/bm25": (29.0, 40.0, 40),
    "runs/x/t/rerank": (59.0, 100.0, 100),
    "runs/x/t/bm25": (49.0, 30.0, 52),
}


@pytest.fixture
def run(tmp_path):
    benchmarks = tmp_path / "results" / "benchmarks"
    for name, (seconds, cpu, written) in BENCHMARKS.items():
        path = benchmarks / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HEADER + f"{seconds}\t0:00:00\t1\t1\t1\t1\t0\t0\t90\t{cpu}\n")
        os.utime(path, (_at(written).timestamp(),) * 2)
    log = tmp_path / "run.snakemake.log"
    log.write_text("\n".join(LOG) + "\n")
    return log, benchmarks


def test_wall_stages_critical_path_and_core_use(pipeline, run):
    log, benchmarks = run
    summary = pipeline.summarize(log.read_text(), benchmarks)
    assert (summary["jobs"], summary["failed"], summary["unfinished"]) == (7, 1, 1)
    assert summary["cores"] == 2  # from the log's "Provided cores"
    assert summary["wall_s"] == 105  # 10:00:00 to the error at 10:01:45
    stages = {name: (stage["jobs"], stage["seconds"]) for name, stage in summary["stages"].items()}
    assert stages == {
        "runs/rerank": (1, 60),
        "runs/search": (1, 50),
        "index": (1, 30),
        "convert": (1, 10),
        "[evaluate_run]": (2, 8),
        "[fetch_raw]": (1, 2),
    }
    assert summary["stages"]["index"]["cpu_s"] == 40.0
    assert [label.split()[0] for label, _ in summary["critical_path"]] == [
        "convert_x",
        "bm25_index",
        "encoder_rerank",
        "evaluate_run",
    ]
    assert summary["critical_path_s"] == 105
    assert summary["cpu_s"] == pytest.approx(179.0)
    assert summary["core_use"] == pytest.approx(179.0 / (105 * 2))
    assert [seconds for seconds, _, _ in summary["top"]] == [59.0, 49.0, 29.0, 9.5]
    # 105 s is within 20 minutes, but a job failed and one of the 8 planned never ran
    assert summary["goals"] == {"wall": "PARTIAL", "core_use": "PASS"}


def test_cores_and_benchmarks_another_run_rewrote(pipeline, run):
    log, benchmarks = run
    os.utime(benchmarks / "index/x/bm25.tsv", (_at(3600).timestamp(),) * 2)
    summary = pipeline.summarize(log.read_text(), benchmarks, cores=1)
    assert summary["stale_benchmarks"] == 1
    assert summary["cpu_s"] == pytest.approx(139.0)
    assert summary["core_use"] == pytest.approx(139.0 / 105)
    assert summary["stages"]["index"]["seconds"] == 30  # still timed from the log
    kept = pipeline.summarize(log.read_text(), benchmarks, cores=4, any_mtime=True)
    assert kept["cpu_s"] == pytest.approx(179.0)
    assert kept["goals"]["core_use"] == "MISS"  # 179 / (105 x 4) = 43 %


def test_main_prints_the_table(pipeline, run, monkeypatch, capsys):
    log, benchmarks = run
    argv = ["pipeline.py", "--log", str(log), "--results", str(benchmarks.parent)]
    monkeypatch.setattr(sys, "argv", argv)
    assert pipeline.main() == 0  # no goal missed
    out = capsys.readouterr().out
    assert "wall time                    105 s  <= 1200 s   PARTIAL" in out
    assert "core use                    85.2 %  >= 80 %     PASS" in out
    assert "runs/rerank                     1       60       60      100" in out
