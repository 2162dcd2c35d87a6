"""What one Snakemake run did, read back from the log Snakemake writes for it under
``.snakemake/log/`` (whatever the console showed: Snakemake formats this file itself).

The file lists each job as it starts (a ``[time]`` line, then ``rule NAME:`` or ``localrule
NAME:`` and indented fields: output, log, jobid, benchmark, wildcards, threads, resources),
``Finished jobid: N (Rule: NAME)`` when it ends, ``Error in rule NAME:`` with the jobid when it
fails, the planned jobs per rule under ``Job stats:``, an executor's submission line
(``Job N has been submitted with SLURM jobid X (log: PATH).``), and, when the run ends in any
way but a kill, ``Complete log(s): ...``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

LOG_DIR = Path(".snakemake") / "log"
_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_JOB = re.compile(r"^(?P<local>local)?(?:rule|checkpoint) (?P<rule>\S+):$")
_FIELD = re.compile(r"^\s+(\w+): (.*)$")
_FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\S+)\)")
_ERROR = re.compile(r"^Error in rule (\S+):$")
_STEPS = re.compile(r"^(\d+) of (\d+) steps \(\S+\) done$")
_SUBMITTED = (
    re.compile(r"^Job (\d+) has been submitted with SLURM jobid (\S+) \(log: (.*)\)\.$"),
    re.compile(r"^Submitted (?:group )?job (\d+) with external jobid '([^']*)'\.$"),
)
_RUNTIME = re.compile(r"(?:^|, )runtime=(\d+(?:\.\d+)?)(?:,|$)")


def job_label(rule: str, outputs: list[str], wildcards: str) -> str:
    """A job as the console and the status name it: its rule and the output that names it (the
    first, and how many more), or its wildcards (``key=value, ...``) when it has no output."""
    if outputs:
        more = f" (+{len(outputs) - 1})" if len(outputs) > 1 else ""
        return f"{rule} {outputs[0]}{more}"
    return f"{rule} {wildcards}".rstrip()


@dataclass
class LoggedJob:
    """One job as the log lists it."""

    jobid: int
    rule: str
    started: datetime | None
    local: bool = False
    outputs: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    benchmark: str | None = None
    wildcards: str = ""
    threads: int = 1
    runtime_min: float | None = None
    finished: datetime | None = None
    failed: datetime | None = None
    external_id: str | None = None
    external_log: str | None = None

    @property
    def label(self) -> str:
        return job_label(self.rule, self.outputs, self.wildcards)


@dataclass
class RunLog:
    """One run: its jobs by jobid, the planned count per rule, and how it ended."""

    path: Path
    started: datetime | None = None
    jobs: dict[int, LoggedJob] = field(default_factory=dict)
    planned: dict[str, int] = field(default_factory=dict)
    cores: int | None = None
    nodes: str | None = None
    steps: tuple[int, int] | None = None
    last_stamp: datetime | None = None
    closed: bool = False
    """Snakemake wrote its closing lines (``Complete log(s)``): it ended, not killed."""
    nothing_to_do: bool = False
    stopped_on_request: bool = False
    executor_error: bool = False

    @property
    def total(self) -> int:
        return sum(self.planned.values())


def run_logs(workdir: str | Path = ".") -> list[Path]:
    """The run logs of a workflow directory, oldest first (their names are their start)."""
    return sorted((Path(workdir) / LOG_DIR).glob("*.snakemake.log"))


def log_start(path: Path) -> datetime | None:
    """When a run started, from its log's name (``2026-11-28T154151.724770.snakemake.log``)."""
    try:
        return datetime.strptime(path.name.split(".snakemake.log")[0], "%Y-%m-%dT%H%M%S.%f")
    except ValueError:
        return None


def read_run_log(path: str | Path) -> RunLog:
    """Parse one run's log (a log cut off mid-line, by a kill, reads as far as it goes)."""
    path = Path(path)
    run = RunLog(path=path, started=log_start(path))
    stamp: datetime | None = None
    block: LoggedJob | None = None
    in_error = False
    in_stats = False
    text = path.read_text(encoding="utf-8", errors="replace")
    for line in text.splitlines():
        field_match = _FIELD.match(line)
        if field_match and (block is not None or in_error):
            key, value = field_match.groups()
            if in_error and key == "jobid" and value.isdigit() and int(value) in run.jobs:
                run.jobs[int(value)].failed = stamp
            elif block is not None:
                _set_field(run, block, key, value.strip())
            continue
        block, in_error = None, False
        if in_stats:
            in_stats = _stats_row(run, line)
            continue
        if match := _STAMP.match(line):
            stamp = datetime.strptime(match.group(1), "%a %b %d %H:%M:%S %Y")
            run.last_stamp = stamp
        elif match := _JOB.match(line):
            block = LoggedJob(
                jobid=-1, rule=match["rule"], started=stamp, local=bool(match["local"])
            )
        elif match := _ERROR.match(line):
            in_error = True
        elif match := _FINISHED.match(line):
            job = run.jobs.get(int(match.group(1)))
            if job is not None and job.finished is None:
                job.finished = stamp
        elif match := _STEPS.match(line):
            run.steps = (int(match.group(1)), int(match.group(2)))
        elif line.startswith("Job stats:"):
            in_stats, run.planned = True, {}
        elif line.startswith("Provided cores: "):
            run.cores = int(line.split()[2])
        elif line.startswith("Provided remote nodes: "):
            run.nodes = line.split(": ", 1)[1].strip()
        elif line.startswith("Complete log(s): "):
            run.closed = True
        elif line.startswith("Nothing to be done"):
            run.nothing_to_do = True
        elif line.startswith(("Terminating processes on user request", "Will exit after")):
            run.stopped_on_request = True
        else:
            _submission(run, line)
    return run


def _set_field(run: RunLog, job: LoggedJob, key: str, value: str) -> None:
    if key == "jobid" and value.isdigit():
        job.jobid = int(value)
        run.jobs[job.jobid] = job
    elif key in ("output", "log"):
        paths = [path.strip() for path in value.split(", ") if path.strip()]
        setattr(job, "outputs" if key == "output" else "logs", paths)
    elif key == "benchmark":
        job.benchmark = value
    elif key == "wildcards":
        job.wildcards = value
    elif key == "threads" and value.isdigit():
        job.threads = int(value)
    elif key == "resources" and (match := _RUNTIME.search(value)):
        job.runtime_min = float(match.group(1))


def _stats_row(run: RunLog, line: str) -> bool:
    """Read one row of the ``Job stats:`` table; False once the table is over."""
    cells = line.split()
    if len(cells) != 2 or not cells[1].isdigit():
        return bool(cells) and set(line.strip()) <= {"-", " "} or cells == ["job", "count"]
    if cells[0] == "total":
        return False
    run.planned[cells[0]] = int(cells[1])
    return True


def _submission(run: RunLog, line: str) -> None:
    for pattern in _SUBMITTED:
        if match := pattern.match(line):
            job = run.jobs.get(int(match.group(1)))
            if job is not None:
                job.external_id = match.group(2)
                job.external_log = match.group(3) if pattern.groups > 2 else None
            return
