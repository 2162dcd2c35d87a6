"""The toy workflow through a real SLURM cluster with profiles/slurm, against the local run.

Needs the one-node cluster of tests/slurm/start.sh (``make test-slurm`` starts and stops it);
deselected from ``make test`` by the ``slurm`` marker. Every snakemake call has a timeout, so a
hang (a job whose end the executor never sees) fails the test instead of blocking CI.

Outputs are compared byte for byte, except three kinds of file that are not results:
``results/logs/`` (timestamps, and the executor's own lines), ``results/benchmarks/`` (times and
memory) and the Lucene index directories ``results/indexes/<collection>/bm25-<layout>/``, whose
segment files hold a random segment id and the indexing time, so that two local runs differ in
them too. What the index holds is checked through the BM25 runs searched from it and its
``.stats.json``, which are compared.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from toy_workflow import (
    DENSE_RUN,
    REPO,
    make_toy,
    snakemake,
    snakemake_command,
    snakemake_environment,
)

pytestmark = pytest.mark.slurm

PROFILE = str(REPO / "profiles" / "slurm")
ACCOUNT = "hybridir"
# Snakemake's default is 40 s before the first status check; the toy jobs take seconds.
FAST_STATUS = ("--slurm-init-seconds-before-status-checks", "1")
RUN_TIMEOUT_S = 480
JOB_TIMEOUT_S = 240


def excluded(relative: Path) -> bool:
    """Logs, benchmarks and provenance records (wall times; tests/test_determinism.py compares
    the records without them), and Lucene's segment files (random segment ids)."""
    parts = relative.parts
    if parts[0] in ("logs", "benchmarks", "provenance"):
        return True
    return parts[0] == "indexes" and len(parts) > 3 and parts[2].startswith("bm25-")


def outputs(root: Path) -> dict[str, str]:
    """sha256 of every compared file under ``root/results``, by path."""
    results = root / "results"
    return {
        str(path.relative_to(results)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(results.rglob("*"))
        if path.is_file() and not excluded(path.relative_to(results))
    }


def squeue(*arguments: str) -> list[str]:
    listed = subprocess.run(
        ["squeue", "--noheader", "--states=all", *arguments],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return listed.stdout.splitlines()


@pytest.fixture(scope="module")
def partition() -> str:
    """The cluster's default partition; fails (not skips) without a cluster."""
    try:
        listed = subprocess.run(
            ["sinfo", "--noheader", "--format=%P"], capture_output=True, text=True, timeout=30
        )
    except FileNotFoundError:
        pytest.fail("no SLURM client (sinfo): run `make test-slurm`, which starts a cluster")
    defaults = [name[:-1] for name in listed.stdout.split() if name.endswith("*")]
    if listed.returncode != 0 or not defaults:
        pytest.fail(
            f"no SLURM cluster answers sinfo ({listed.stderr.strip()}): run tests/slurm/start.sh"
        )
    return defaults[0]


def slurm_env(partition: str, **extra: str) -> dict[str, str]:
    return {
        "HYBRID_IR_SLURM_ACCOUNT": ACCOUNT,
        "HYBRID_IR_SLURM_PARTITION": partition,
        **extra,
    }


def toy_copy(source: Path, destination: Path) -> Path:
    """``source``'s toy inputs (the same raw bytes) in ``destination``, without results."""
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns("results", ".snakemake"))
    config = yaml.safe_load((destination / "config.yaml").read_text())
    config["mirror"] = str(destination / "mirror")
    config["manifest"] = str(destination / "manifest.tsv")
    (destination / "config.yaml").write_text(yaml.safe_dump(config))
    return destination


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory, partition) -> tuple[Path, Path, str]:
    """The toy run locally and, from a copy of the same inputs, through the cluster, at once:
    the executor spends most of its run waiting between status checks, which the local run
    fills (about a minute less on 2 cores than one after the other)."""
    local = make_toy(tmp_path_factory.mktemp("local"), dense=True)
    cluster = toy_copy(local, tmp_path_factory.mktemp("slurm") / "toy")
    command = snakemake_command(cluster, "--profile", PROFILE, *FAST_STATUS)
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=snakemake_environment(slurm_env(partition)),
        cwd=REPO,
    ) as on_cluster:
        try:
            result = snakemake(local, timeout=RUN_TIMEOUT_S)
            cluster_output, _ = on_cluster.communicate(timeout=RUN_TIMEOUT_S)
        finally:
            if on_cluster.poll() is None:
                on_cluster.kill()  # a hang or a failed local run: the assertions report it
                on_cluster.communicate()
    assert result.returncode == 0, result.stderr[-4000:]
    assert on_cluster.returncode == 0, cluster_output[-6000:]
    return local, cluster, cluster_output


@pytest.fixture(scope="module")
def local_run(both_runs) -> Path:
    return both_runs[0]


@pytest.fixture(scope="module")
def slurm_run(both_runs) -> tuple[Path, str]:
    return both_runs[1], both_runs[2]


def test_slurm_run_equals_the_local_run(local_run, slurm_run, partition):
    root, output = slurm_run
    expected = outputs(local_run)
    assert f"runs/toy/test/{DENSE_RUN}.trec" in expected  # a torch job ran on the cluster too
    assert outputs(root) == expected
    # The jobs really went through sbatch, with the profile's account and partition: finished
    # jobs stay in squeue for MinJobAge (300 s).
    submitted = output.count("has been submitted with SLURM jobid")
    assert submitted >= 10
    jobs = [line.split("|") for line in squeue("--format=%i|%a|%P|%T|%k")]
    ours = [job for job in jobs if job[4].startswith("rule_")]
    assert len(ours) >= submitted
    assert {(job[1], job[2], job[3]) for job in ours} == {(ACCOUNT, partition, "COMPLETED")}
    # Without an accounting database sacctmgr fails and sshare answers nothing: the plugin
    # then submits with the account unvalidated, which is what this cluster accepts.
    assert "Proceeding without account validation" in output
    # The console (hybrid_ir.monitor.console): a line per job submitted and one per job finished,
    # plain text in the controller's output.
    assert output.count(" start  ") == output.count(" done   ") >= submitted
    assert "\x1b" not in output and "    input: " not in output


def test_job_failing_its_first_attempt_is_retried(local_run, slurm_run, partition, tmp_path):
    root, _ = slurm_run
    target = "results/runs/toy/test/rrf.trec"
    (root / target).unlink()
    fault = {"HYBRID_IR_FAULT": "fail:fuse_runs", "HYBRID_IR_FAULT_DIR": str(tmp_path)}
    result = snakemake(
        root,
        target,
        "--profile",
        PROFILE,
        *FAST_STATUS,
        env=slurm_env(partition, **fault),
        timeout=JOB_TIMEOUT_S,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert (tmp_path / "fuse_runs.fail").exists()
    assert "first attempt of rule fuse_runs fails on purpose" in output  # show-failed-logs
    assert output.count("has been submitted with SLURM jobid") == 2
    assert outputs(root) == outputs(local_run)


def test_job_cancelled_mid_way_is_rerun(local_run, slurm_run, partition, tmp_path):
    root, _ = slurm_run
    target = f"results/runs/toy/test/{DENSE_RUN}.trec"
    (root / target).unlink()
    fault = {"HYBRID_IR_FAULT": "hang:retrieve", "HYBRID_IR_FAULT_DIR": str(tmp_path)}
    command = snakemake_command(root, target, "--profile", PROFILE, *FAST_STATUS)
    log = tmp_path / "snakemake.out"
    with log.open("w") as sink:
        run = subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=snakemake_environment(slurm_env(partition, **fault)),
            cwd=REPO,
        )
        try:
            # The marker appears when the first attempt is inside the step, hanging.
            deadline = time.monotonic() + JOB_TIMEOUT_S
            while not (tmp_path / "retrieve.hang").exists():
                assert run.poll() is None, log.read_text()[-6000:]
                assert time.monotonic() < deadline, "the retrieve job never started"
                time.sleep(1)
            running = [
                job[0]
                for job in (line.split("|") for line in squeue("--format=%i|%T|%k"))
                if job[1] == "RUNNING" and job[2] == f"rule_retrieve_wildcards_toy_test_{DENSE_RUN}"
            ]
            assert len(running) == 1, running
            # Where the run stands, from the controller's log and the job's own (its header).
            status = subprocess.run(
                [sys.executable, "-m", "hybrid_ir.cli.main", "status"],
                cwd=root, capture_output=True, text=True, check=True, timeout=60,
            ).stdout  # fmt: skip
            assert f"State: running (Snakemake process {run.pid})\n" in status, status
            assert f"\n    SLURM job {running[0]}: running 0:" in status, status
            subprocess.run(["scancel", running[0]], check=True, timeout=30)
            returncode = run.wait(JOB_TIMEOUT_S)
        finally:
            if run.poll() is None:
                run.kill()  # a hang: the assertion below reports it
                run.wait()
    output = log.read_text()
    assert returncode == 0, output[-6000:]
    assert f"SLURM-job '{running[0]}' failed, SLURM status is: 'CANCELLED'" in output
    assert output.count("has been submitted with SLURM jobid") == 2
    assert outputs(root) == outputs(local_run)


def test_unknown_partition_fails_with_the_slurm_error(local_run, tmp_path):
    root = toy_copy(local_run, tmp_path / "toy")
    result = snakemake(
        root,
        "--profile",
        PROFILE,
        *FAST_STATUS,
        env=slurm_env("no-such-partition"),
        timeout=JOB_TIMEOUT_S,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Batch job submission failed: Invalid partition name specified" in output
