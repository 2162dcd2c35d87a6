"""``hybrid-ir status``: where the current or last run of a workflow directory stands.

Read from what every run leaves, whatever console it had and wherever its jobs ran (here, or
as SLURM jobs writing to the shared file system):

- Snakemake's log of the run (``.snakemake/log/``, :mod:`hybrid_ir.monitor.snakemake_log`): the jobs
  planned, started (with their log, benchmark, ``runtime`` and SLURM job), finished and failed;
- whether it still runs: a Snakemake process working in the directory (``/proc``, on this
  machine), else the directory's lock (``.snakemake/locks/``) left by a controller that was
  killed or runs elsewhere;
- each running job's log: when the job itself started (its header,
  :func:`hybrid_ir.joblog.configure.header`; a SLURM job may wait in the queue first) and its latest
  progress line (:mod:`hybrid_ir.joblog.progress`); a failed job's last lines;
- earlier runs' timings for the time left (:mod:`hybrid_ir.monitor.estimates`).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

from hybrid_ir.errors import HybridIRError
from hybrid_ir.joblog.configure import log_tail
from hybrid_ir.joblog.progress import clock, latest_progress
from hybrid_ir.monitor.estimates import earlier_durations, remaining, time_left
from hybrid_ir.monitor.snakemake_log import LOG_DIR, LoggedJob, RunLog, read_run_log, run_logs

LOCKS = Path(".snakemake") / "locks"
_HEADER_START = re.compile(r" started (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) on ")


def snakemake_processes(workdir: Path) -> list[int]:
    """The Snakemake controllers on this machine whose working directory is ``workdir``: a
    controller changes into the workflow directory it runs (``--directory``); the Snakemake a
    cluster job runs (with ``--target-jobs``) does too, and is not one."""
    found = []
    target = workdir.resolve()
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            if not any(b"snakemake" in part for part in command[:3]):
                continue
            if any(b"--target-jobs" in part for part in command):  # a job's own Snakemake
                continue
            if Path(os.readlink(entry / "cwd")) == target:
                found.append(int(entry.name))
        except OSError:
            continue
    return sorted(found)


def last_run(workdir: Path) -> RunLog:
    """The newest log of a run that planned jobs or found none to do (``--unlock``, ``--list``
    and the like write a log of their own, of nothing), or the newest log at all while a
    Snakemake works in the directory (a run still building its DAG)."""
    logs = run_logs(workdir)
    if not logs:
        raise HybridIRError(
            f"{workdir / LOG_DIR}: no run recorded here (Snakemake writes a log per run into "
            "this folder; run hybrid-ir status in the workflow's directory)"
        )
    for path in reversed(logs):
        run = read_run_log(path)
        if run.planned or run.jobs or run.nothing_to_do:
            return run
        if path == logs[-1] and snakemake_processes(workdir):
            return run
    return read_run_log(logs[-1])


def job_started(job: LoggedJob, workdir: Path) -> datetime | None:
    """When the job itself started, from its log's header, if the log is this run's."""
    if not job.logs:
        return None
    try:
        with open(workdir / job.logs[0], encoding="utf-8", errors="replace") as log:
            first = log.readline()
    except OSError:
        return None
    match = _HEADER_START.search(first)
    if match is None:
        return None
    started = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S")
    return started if job.started is None or started >= job.started else None


def status_lines(
    workdir: str | Path = ".",
    log: str | Path | None = None,
    lines: int = 10,
    now: datetime | None = None,
) -> list[str]:
    """The report ``hybrid-ir status`` prints."""
    workdir = Path(workdir)
    if lines < 0:
        raise HybridIRError(f"--lines must be at least 0, got {lines}")
    if log is None:
        run = last_run(workdir)
    else:
        given = Path(log)
        # A log named as `status --log` lists them: relative to the workflow directory.
        if not given.is_absolute() and not given.exists():
            given = workdir / given
        run = read_run_log(given)
    log = run.path
    now = now or datetime.now()
    processes = [] if run.closed else snakemake_processes(workdir)
    live = bool(processes)
    started = list(run.jobs.values())
    finished = [job for job in started if job.finished]
    failed = [job for job in started if job.failed and not job.finished]
    unfinished = [job for job in started if not job.finished and not job.failed]
    waiting = Counter(run.planned)
    waiting.subtract(Counter(job.rule for job in started))
    waiting = +waiting

    said = [f"Run started {_when(run.started)} (log: {_relative(Path(log), workdir)})"]
    said.append(f"State: {_state(run, processes, workdir, failed)}")
    counts = [f"{len(finished)} of {run.total or len(started)} finished"]
    if live or unfinished:
        counts.append(f"{len(unfinished)} {'running' if live else 'cut off'}")
    counts.append(f"{len(failed)} failed")
    if live or waiting:
        counts.append(f"{sum(waiting.values())} {'waiting' if live else 'not run'}")
    said.append("Jobs: " + ", ".join(counts))
    if live:
        durations = earlier_durations(workdir, skip=[Path(log)])
        running = [
            remaining(
                durations.expected(job.rule, job.benchmark),
                _seconds(job, workdir, now),
                latest_progress(workdir / job.logs[0]) if job.logs else None,
            )
            for job in unfinished
        ]
        left = time_left(durations, waiting, running, _slots(run))
        if left:
            said.append(f"Estimate: {left.describe()}")
    if unfinished:
        title = "Running" if live else "Cut off (started, never finished: --rerun-incomplete)"
        said.append(f"{title}:")
        for job in unfinished:
            said += _running(job, workdir, now, live)
    if failed:
        said.append("Failed:")
        for job in failed:
            said += _failed(job, workdir, lines)
    if waiting:
        title = "Waiting" if live else "Not run"
        said.append(f"{title}: " + ", ".join(f"{rule} {n}" for rule, n in waiting.items()))
    if finished:
        last = max(finished, key=lambda job: job.finished or datetime.min)
        said.append(f"Finished: {len(finished)}, the last {last.label} at {_when(last.finished)}")
    return said


def _state(run: RunLog, processes: list[int], workdir: Path, failed: list[LoggedJob]) -> str:
    if run.closed:
        if run.nothing_to_do:
            return "ended: nothing to be done (every target was up to date)"
        if failed:
            return "ended: failed"
        if run.stopped_on_request:
            return "ended: stopped on request"
        if run.steps and run.steps[0] == run.steps[1]:
            return "ended: finished"
        return "ended before finishing (Snakemake's log says why)"
    if processes:
        return f"running (Snakemake process {', '.join(map(str, processes))})"
    if any((workdir / LOCKS).glob("*.lock")):
        return (
            "stopped without finishing, or running on another machine: no Snakemake process "
            "works in this folder here, and its lock remains (once no run goes on, "
            "`snakemake --unlock` frees it)"
        )
    return "stopped without finishing (Snakemake was killed or its machine lost)"


def _running(job: LoggedJob, workdir: Path, now: datetime, live: bool) -> list[str]:
    said = [f"  {job.label} (jobid {job.jobid})"]
    slurm = f"SLURM job {job.external_id}: " if job.external_id else ""
    if live and job.external_id and job_started(job, workdir) is None:
        waited = f" {clock((now - job.started).total_seconds())} ago" if job.started else ""
        said.append(f"    {slurm}submitted{waited}, not started yet")
    elif live:
        seconds = _seconds(job, workdir, now)
        limit = job.runtime_min * 60 if job.runtime_min else None
        runtime = f" of its {clock(limit)} runtime" if limit else ""
        over = " (past it: a cluster would stop the job)" if limit and seconds > limit else ""
        said.append(f"    {slurm}running {clock(seconds)}{runtime}{over}")
    if job.logs:
        said.append(f"    log: {job.logs[0]}")
        progress = latest_progress(workdir / job.logs[0])
        if progress is not None:
            at = f" (at {progress.stamp:%H:%M:%S})" if progress.stamp else ""
            said.append(f"    progress: {progress.describe()}{at}")
    if job.external_log:
        said.append(f"    SLURM log: {job.external_log}")
    return said


def _failed(job: LoggedJob, workdir: Path, lines: int) -> list[str]:
    said = [f"  {job.label} (jobid {job.jobid}) at {_when(job.failed)}"]
    if job.external_id:
        slurm_log = f", its log: {job.external_log}" if job.external_log else ""
        said.append(f"    SLURM job {job.external_id}{slurm_log}")
    for log in job.logs:
        tail, length = log_tail(workdir / log, lines)
        if not length:
            said.append(f"    log: {log} (empty or missing)")
            continue
        said.append(f"    log: {log}, its last {len(tail)} of {length} lines:")
        said += [f"    | {line}" for line in tail]
    return said


def _seconds(job: LoggedJob, workdir: Path, now: datetime) -> float:
    since = job_started(job, workdir) or job.started
    return max((now - since).total_seconds(), 0.0) if since else 0.0


def _slots(run: RunLog) -> int:
    if run.cores:
        return run.cores
    if run.nodes and run.nodes.isdigit():
        return int(run.nodes)
    return 1 if run.nodes is None else max(run.total, 1)


def _when(moment: datetime | None) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S}" if moment else "at an unknown time"


def _relative(path: Path, workdir: Path) -> str:
    try:
        return str(path.resolve().relative_to(workdir.resolve()))
    except ValueError:
        return str(path)
