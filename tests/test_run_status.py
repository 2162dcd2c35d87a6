"""``hybrid-ir status`` (hybrid_ir.monitor.status): where a run stands, read from .snakemake/ and
the jobs' logs, for the toy workflow finished, failed, running and cut off by a kill; and for a
run whose jobs went to SLURM, from the log such a run writes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from toy_workflow import REPO, make_toy, snakemake, snakemake_command, snakemake_environment

from hybrid_ir.errors import HybridIRError
from hybrid_ir.monitor import status as run_status
from hybrid_ir.monitor.snakemake_log import read_run_log, run_logs
from hybrid_ir.monitor.status import status_lines

HYBRID_IR = Path(sys.executable).with_name("hybrid-ir")
TABLE_LOG = "results/logs/tables/toy-table.log"
SEARCH = "bm25_search results/runs/toy/test/bm25-flat.trec"
SEARCH_LOG = "results/logs/runs/toy/test/bm25-flat.log"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    root = make_toy(tmp_path_factory.mktemp("status"))
    done = snakemake(root)
    assert done.returncode == 0, done.stderr[-4000:]
    return root


def copy_of(root: Path, tmp_path: Path) -> Path:
    """The finished toy, results and records included, in a folder of its own."""
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["manifest"], config["mirror"] = str(copy / "manifest.tsv"), str(copy / "mirror")
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    return copy


def faults(root: Path, setting: str, **more: str) -> dict[str, str]:
    return {"HYBRID_IR_FAULT": setting, "HYBRID_IR_FAULT_DIR": str(root / "faults"), **more}


def test_a_finished_run(finished):
    said = subprocess.run(
        [str(HYBRID_IR), "status", "--directory", str(finished)],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert said[0].startswith("Run started ") and "(log: .snakemake/log/" in said[0]
    planned = read_run_log(run_logs(finished)[-1]).total
    assert said[1:3] == [
        "State: ended: finished",
        f"Jobs: {planned} of {planned} finished, 0 failed",
    ]
    assert said[3].startswith(f"Finished: {planned}, the last ")
    assert len(said) == 4


def test_a_failed_run_names_the_job_its_log_and_its_last_lines(finished, tmp_path):
    copy = copy_of(finished, tmp_path)
    failed = snakemake(copy, "--forcerun", "paper_table", env=faults(copy, "fail:paper_table"))
    assert failed.returncode != 0
    reason = "HYBRID_IR_FAULT: first attempt of rule paper_table fails on purpose"
    assert "FAILED paper_table results/tables/toy-table.md (+5) after " in failed.stderr
    assert f"    log: {TABLE_LOG} (all 2 lines):" in failed.stderr  # the console too
    said = status_lines(copy, lines=1)
    planned = read_run_log(run_logs(copy)[-1]).total
    assert said[1:3] == [
        "State: ended: failed",
        f"Jobs: 0 of {planned} finished, 1 failed, {planned - 1} not run",
    ]
    at = said.index("Failed:")
    assert said[at + 1].startswith("  paper_table results/tables/toy-table.md (+5) (jobid ")
    assert said[at + 2] == f"    log: {TABLE_LOG}, its last 1 of 2 lines:"
    assert said[at + 3].startswith("    | 2") and said[at + 3].endswith(f"ERROR {reason}")
    assert any(line.startswith("Not run: ") and "all 1" in line for line in said)


def test_a_running_run_and_the_same_run_cut_off_by_a_kill(finished, tmp_path):
    copy = copy_of(finished, tmp_path)
    slowed = faults(copy, "slow:bm25_search", HYBRID_IR_FAULT_SLOW_S="300")
    every = ("--logger-hybrid-ir-progress-every", "1")
    run = subprocess.Popen(
        snakemake_command(copy, "--forcerun", "bm25_search", *every),
        cwd=REPO, env=snakemake_environment(slowed), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        log = copy / SEARCH_LOG
        while not (log.exists() and "progress [HYBRID_IR_FAULT slow start] 2/" in log.read_text()):
            assert run.poll() is None, "the run ended before its slow job got going"
            assert time.monotonic() < deadline, "the slow job never showed its progress"
            time.sleep(0.2)
        said = status_lines(copy)
        assert said[1] == f"State: running (Snakemake process {run.pid})"
        planned = read_run_log(run_logs(copy)[-1]).total
        assert (
            said[2] == f"Jobs: 0 of {planned} finished, 1 running, 0 failed, {planned - 1} waiting"
        )
        at = said.index("Running:")
        assert said[at + 1].startswith(f"  {SEARCH} (jobid ")
        assert said[at + 2].startswith("    running 0:0") and said[at + 2].endswith(
            " of its 0:30:00 runtime"
        )
        assert said[at + 3] == f"    log: {SEARCH_LOG}"
        assert said[at + 4].startswith("    progress: HYBRID_IR_FAULT slow start ")
        assert "/300 second (" in said[at + 4] and said[at + 4].endswith(")")
        assert any(line.startswith("Waiting: ") and "paper_table 1" in line for line in said)
    finally:
        os.killpg(run.pid, signal.SIGKILL)  # the controller and its job, as a lost node would
        run.wait()
    said = status_lines(copy)
    assert said[1].startswith("State: stopped without finishing, or running on another machine")
    assert "`snakemake --unlock` frees it" in said[1]
    assert said[2] == f"Jobs: 0 of {planned} finished, 1 cut off, 0 failed, {planned - 1} not run"
    at = said.index("Cut off (started, never finished: --rerun-incomplete):")
    assert said[at + 1].startswith(f"  {SEARCH} (jobid ")
    assert said[at + 2] == f"    log: {SEARCH_LOG}"
    assert any(line.startswith("Not run: ") for line in said)


SLURM_LOG = """\
Building DAG of jobs...
Provided remote nodes: 50
Job stats:
job            count
-----------  -------
bm25_index         1
bm25_search        2
all                1
total              4

[Sat Nov 28 10:00:00 2026]
rule bm25_index:
    input: results/collections/cf/corpus.jsonl
    output: results/indexes/cf/bm25-flat, results/indexes/cf/bm25-flat.stats.json
    log: results/logs/index/cf/bm25-flat.log
    jobid: 3
    benchmark: results/benchmarks/index/cf/bm25-flat.tsv
    wildcards: collection=cf, layout=flat
    resources: mem_mb=4000, runtime=120, slurm_partition=compute
{submitted_3}
[Sat Nov 28 10:00:01 2026]
rule bm25_search:
    output: results/runs/cf/all/bm25-flat.trec
    log: results/logs/runs/cf/all/bm25-flat.log
    jobid: 2
    resources: mem_mb=4000, runtime=60
{submitted_2}
""".format(
    submitted_3="Job 3 has been submitted with SLURM jobid 5001 "
    "(log: .snakemake/slurm_logs/rule_bm25_index/5001.log).",
    submitted_2="Job 2 has been submitted with SLURM jobid 5002 "
    "(log: .snakemake/slurm_logs/rule_bm25_search/5002.log).",
)


def test_a_slurm_run_shows_each_jobs_slurm_id_its_progress_and_a_queued_job(tmp_path, monkeypatch):
    (tmp_path / ".snakemake/log").mkdir(parents=True)
    (tmp_path / ".snakemake/log/2026-11-28T100000.000000.snakemake.log").write_text(SLURM_LOG)
    log = tmp_path / "results/logs/index/cf/bm25-flat.log"
    log.parent.mkdir(parents=True)
    log.write_text(
        "2026-11-28 10:03:00,000 INFO job bm25_index (collection=cf, layout=flat): 1 thread(s), "
        "device cpu, started 2026-11-28 10:03:00 on node7, process 91: a fresh interpreter\n"
        "2026-11-28 10:20:00,000 INFO progress [documents] 300/1000 doc (30%), 0:17:00 elapsed, "
        "0.294 doc/s, 0:39:40 left\n"
    )
    monkeypatch.setattr(run_status, "snakemake_processes", lambda _workdir: [4242])
    said = status_lines(tmp_path, now=datetime(2026, 11, 28, 10, 23))
    assert said[1:3] == [
        "State: running (Snakemake process 4242)",
        "Jobs: 0 of 4 finished, 2 running, 0 failed, 2 waiting",
    ]
    at = said.index("Running:")
    assert said[at + 1 : at + 9] == [
        "  bm25_index results/indexes/cf/bm25-flat (+1) (jobid 3)",
        "    SLURM job 5001: running 0:20:00 of its 2:00:00 runtime",  # since the job began
        "    log: results/logs/index/cf/bm25-flat.log",
        "    progress: documents 300/1000 doc (30%), 0:17:00 elapsed, 0.294 doc/s, 0:39:40 left"
        " (at 10:20:00)",
        "    SLURM log: .snakemake/slurm_logs/rule_bm25_index/5001.log",
        "  bm25_search results/runs/cf/all/bm25-flat.trec (jobid 2)",
        "    SLURM job 5002: submitted 0:22:59 ago, not started yet",
        "    log: results/logs/runs/cf/all/bm25-flat.log",
    ]
    assert "Waiting: bm25_search 1, all 1" in said


def test_a_later_unlock_is_not_taken_for_the_last_run(tmp_path):
    logs = tmp_path / ".snakemake/log"
    logs.mkdir(parents=True)
    (logs / "2026-11-28T100000.000000.snakemake.log").write_text(SLURM_LOG)
    (logs / "2026-11-28T110000.000000.snakemake.log").write_text("Unlocked working directory.\n")
    said = status_lines(tmp_path)
    log = ".snakemake/log/2026-11-28T100000.000000.snakemake.log"
    assert said[0] == f"Run started 2026-11-28 10:00:00 (log: {log})"
    assert said[1] == "State: stopped without finishing (Snakemake was killed or its machine lost)"
    assert said[2] == "Jobs: 0 of 4 finished, 2 cut off, 0 failed, 2 not run"


def test_a_directory_without_runs_is_one_clear_error(tmp_path):
    with pytest.raises(HybridIRError, match=r"\.snakemake/log: no run recorded here"):
        status_lines(tmp_path)
    with pytest.raises(HybridIRError, match="--lines must be at least 0, got -1"):
        status_lines(tmp_path, lines=-1)


def test_only_a_runs_controller_counts_as_its_running_snakemake(tmp_path):
    """A cluster job's own Snakemake (``--target-jobs``) works in the same folder, and so may
    a shell wrapping it; neither is the run's controller."""
    sleep = "import time; time.sleep(60)  # snakemake"
    started = [
        subprocess.Popen([sys.executable, "-c", sleep, "--cores", "2"], cwd=tmp_path),
        subprocess.Popen([sys.executable, "-c", sleep, "--target-jobs", "all:"], cwd=tmp_path),
        subprocess.Popen(["bash", "-c", "sleep 60; : snakemake --target-jobs all:"], cwd=tmp_path),
        subprocess.Popen([sys.executable, "-c", sleep], cwd=tmp_path.parent),
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not all(Path(f"/proc/{p.pid}/cmdline").read_bytes() for p in started):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert run_status.snakemake_processes(tmp_path) == [started[0].pid]
    finally:
        for process in started:
            process.kill()
            process.wait()
