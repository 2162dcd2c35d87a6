"""How long a run's remaining jobs will take, from how long they took before.

Two sources, both from earlier runs of the same workflow directory:

- a job's benchmark file (``results/benchmarks/...tsv``, Snakemake's ``benchmark:``), which an
  earlier run of that very job wrote: its wall seconds (``s``);
- for jobs not started yet, whose files the console cannot know, the median duration of the
  rule's jobs in earlier runs' logs (``.snakemake/log/``; a job's benchmark figure where its
  file was written during that job, else its logged start and end, to the second).

The time left is the remaining expected work spread over the slots jobs run in (the cores of a
local run, the job limit of a cluster run), and never less than the longest remaining part of a
running job: the critical path is not known, so it is an estimate, and says for how many of the
remaining jobs a duration was known.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hybrid_ir.joblog.progress import ProgressLine
from hybrid_ir.monitor.snakemake_log import LoggedJob, read_run_log, run_logs

MAX_LOGS = 20
"""Earlier run logs read, newest first: enough for every rule of a run that was repeated."""
_BENCHMARK_SLACK_S = 5


def benchmark_seconds(path: str | Path) -> float | None:
    """Wall seconds in a Snakemake benchmark file (summed over repeats), or None."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if len(lines) < 2:
        return None
    columns = lines[0].split("\t")
    if "s" not in columns:
        return None
    position = columns.index("s")
    try:
        return sum(float(row.split("\t")[position]) for row in lines[1:] if row.strip())
    except (ValueError, IndexError):
        return None


@dataclass
class Durations:
    """Rule -> the median seconds of its jobs in earlier runs."""

    by_rule: dict[str, float] = field(default_factory=dict)
    workdir: Path = Path(".")

    def expected(self, rule: str, benchmark: str | None = None) -> float | None:
        """A job's expected seconds: its own benchmark from an earlier run, else its rule's."""
        if benchmark:
            seconds = benchmark_seconds(self.workdir / benchmark)
            if seconds is not None:
                return seconds
        return self.by_rule.get(rule)


def earlier_durations(
    workdir: str | Path = ".", skip: Iterable[Path] = (), max_logs: int = MAX_LOGS
) -> Durations:
    """Per-rule medians from the newest ``max_logs`` run logs under ``workdir`` but ``skip``."""
    workdir = Path(workdir)
    skipped = {Path(path).resolve() for path in skip}
    samples: dict[str, list[float]] = {}
    logs = [log for log in reversed(run_logs(workdir)) if log.resolve() not in skipped]
    for log in logs[:max_logs]:
        try:
            run = read_run_log(log)
        except OSError:
            continue
        for job in run.jobs.values():
            seconds = _job_seconds(job, workdir)
            if seconds is not None:
                samples.setdefault(job.rule, []).append(seconds)
    return Durations({rule: statistics.median(s) for rule, s in samples.items()}, workdir)


def _job_seconds(job: LoggedJob, workdir: Path) -> float | None:
    if job.started is None or job.finished is None:
        return None
    logged = (job.finished - job.started).total_seconds()
    if job.benchmark:
        path = workdir / job.benchmark
        try:
            written = path.stat().st_mtime
        except OSError:
            return logged
        start, end = job.started.timestamp(), job.finished.timestamp()
        if start - 1 <= written <= end + _BENCHMARK_SLACK_S:
            return benchmark_seconds(path) or logged
    return logged


@dataclass(frozen=True)
class TimeLeft:
    seconds: float
    known: int
    """Remaining jobs (waiting and running) whose duration was known."""
    jobs: int
    """Remaining jobs in all."""

    def describe(self) -> str:
        said = f"about {about(self.seconds)} left"
        if self.known < self.jobs:
            said += f" (timings of {self.known} of {self.jobs} remaining jobs known)"
        return said


def remaining(
    expected: float | None, elapsed: float, progress: ProgressLine | None
) -> float | None:
    """A running job's time left: its progress bar's own estimate where it shows one (a job
    slower than before says so there), else its expected time less what it ran, else None."""
    left = progress.seconds_left if progress is not None else None
    if left is not None:
        return left
    return max(expected - elapsed, 0.0) if expected is not None else None


def time_left(
    durations: Durations, waiting: Mapping[str, int], running: Iterable[float | None], slots: int
) -> TimeLeft | None:
    """The time left, or None when no remaining job's duration is known. ``waiting``: rule ->
    jobs not started; ``running``: each running job's time left (:func:`remaining`) or None."""
    work = 0.0
    longest = 0.0
    known = jobs = 0
    for left in running:
        jobs += 1
        if left is not None:
            known += 1
            work += left
            longest = max(longest, left)
    for rule, count in waiting.items():
        jobs += count
        seconds = durations.by_rule.get(rule)
        if seconds is not None and count > 0:
            known += count
            work += seconds * count
    if not known:
        return None
    parallel = max(1, min(slots, jobs))
    return TimeLeft(max(work / parallel, longest), known, jobs)


def about(seconds: float) -> str:
    """A duration as a person reads an estimate: ``40 s``, ``12 min``, ``3 h 20 min``."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h" + (f" {minutes} min" if minutes else "")
