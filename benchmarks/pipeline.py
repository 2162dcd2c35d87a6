"""Where one workflow run's time went: wall time, stages, critical path, core use, longest jobs.

Reads a Snakemake log (``.snakemake/log/*.snakemake.log``: each job's rule, input, output,
benchmark file, start and end, to the second) and the benchmark TSVs it names
(``results/benchmarks/<stage>/...tsv``: the job's wall seconds ``s`` and ``cpu_time``). Prints:

* the run's wall time, first job start to last job end (goal: <= 20 min on 2 cores for the
  default configuration);
* per stage, the jobs' summed seconds and the stage's span. A stage is the first directory
  below ``results/benchmarks/``, ``runs`` split into ``runs/rerank`` (rules named ``*rerank*``)
  and ``runs/search``; jobs without a benchmark file are grouped by rule, as ``[rule]``;
* the critical path: the longest chain of jobs in which each reads a file (or a file under a
  directory) that the one before wrote, as the log lists inputs and outputs, weighted by the
  jobs' logged durations. Inputs made by earlier runs link to nothing;
* core use: the jobs' summed ``cpu_time`` over wall time x cores (goal: >= 80 %). Only jobs
  whose benchmark file was written during their logged span count: a file another run rewrote
  since is left out (``--any-mtime`` keeps it), and so are jobs without one, so on a run with
  such jobs the figure is a lower bound. It is one in any case: Snakemake samples a job's CPU
  time every 0.5 s for 15 s, then every 30 s, so the CPU time of a longer job's last interval
  (up to 30 s x its threads) is never recorded (a tf.BERT re-ranking job's file says 1.2 of
  its 2 cores; the same model's forward passes, timed alone with 2 threads, use 1.96);
* the 10 longest jobs by their benchmark's ``s``.

Failed jobs count until their error; jobs the log never finishes are left out. Exit status 1
when a goal is missed.

Usage: python benchmarks/pipeline.py [--results results] [--log PATH] [--cores N] [--any-mtime]
(--log defaults to the newest log that records a job, --cores to the log's "Provided cores".)
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

import harness

WALL_GOAL_S = 1200.0
CORE_USE_GOAL = 0.80
TOP_JOBS = 10

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
JOB_START = re.compile(r"^(?:local)?(?:rule|checkpoint) (\S+):$")
JOB_ERROR = re.compile(r"^Error in rule (\S+):$")
# "Finished jobid: 7 (Rule: x)" (Snakemake 8 on) or "Finished job 7." (before)
FINISHED = re.compile(r"^Finished job(?:id:)? (\d+)\b")
FIELD = re.compile(r"^\s+(\w+): (.*)$")


@dataclass
class Job:
    jobid: int
    rule: str
    start: float
    end: float | None = None
    failed: bool = False
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    benchmark: str | None = None
    bench_s: float | None = None
    cpu_s: float | None = None
    stage: str = ""

    @property
    def seconds(self) -> float:
        assert self.end is not None
        return self.end - self.start

    @property
    def label(self) -> str:
        return f"{self.rule} {self.outputs[0] if self.outputs else f'job {self.jobid}'}"


def parse_log(log_text: str) -> tuple[list[Job], dict[str, int]]:
    """The log's jobs in start order, and its header's cores and planned job count."""
    jobs: dict[int, Job] = {}
    header: dict[str, int] = {}
    stamp: float | None = None
    block: Job | str | None = None  # the job being listed, or "error" inside an error report
    for line in log_text.splitlines():
        if match := FIELD.match(line):
            key, value = match.groups()
            if key == "jobid" and block == "error" and int(value) in jobs and stamp is not None:
                jobs[int(value)].end, jobs[int(value)].failed = stamp, True
            elif isinstance(block, Job):
                if key == "jobid":
                    block.jobid = int(value)
                    jobs[block.jobid] = block
                elif key in ("input", "output"):
                    paths = [path.strip() for path in value.split(", ") if path.strip()]
                    setattr(block, key + "s", paths)
                elif key == "benchmark":
                    block.benchmark = value.strip()
            continue
        block = None
        if match := STAMP.match(line):
            stamp = datetime.strptime(match.group(1), "%a %b %d %H:%M:%S %Y").timestamp()
        elif (match := JOB_START.match(line)) and stamp is not None:
            block = Job(jobid=-1, rule=match.group(1), start=stamp)
        elif JOB_ERROR.match(line):
            block = "error"
        elif (match := FINISHED.match(line)) and int(match.group(1)) in jobs:
            job = jobs[int(match.group(1))]
            if job.end is None:
                job.end = stamp
        elif match := re.match(r"^Provided cores: (\d+)", line):
            header.setdefault("cores", int(match.group(1)))
        elif match := re.match(r"^total\s+(\d+)$", line):
            header.setdefault("planned", int(match.group(1)))
    return sorted(jobs.values(), key=lambda job: (job.start, job.end or job.start)), header


def attach_benchmarks(jobs: list[Job], benchmarks_dir: Path, any_mtime: bool) -> int:
    """Fill each job's benchmark figures and stage; return how many files another run wrote."""
    stale = 0
    for job in jobs:
        relative = None
        if job.benchmark:
            parts = PurePosixPath(job.benchmark).parts
            if "benchmarks" in parts:
                relative = PurePosixPath(*parts[parts.index("benchmarks") + 1 :])
        if relative is None:
            job.stage = f"[{job.rule}]"
            continue
        job.stage = relative.parts[0]
        if job.stage == "runs":
            job.stage = "runs/rerank" if "rerank" in job.rule else "runs/search"
        path = benchmarks_dir / relative
        if job.end is None or not path.is_file():
            continue
        written = path.stat().st_mtime
        if any_mtime or job.start - 1 <= written <= job.end + 5:
            job.bench_s, job.cpu_s = harness.read_benchmark(path)
        else:
            stale += 1
    return stale


def critical_path(jobs: list[Job]) -> list[Job]:
    """The longest chain, by logged seconds, of jobs each reading what the one before wrote."""
    producers = {output: job for job in jobs for output in job.outputs}
    best: dict[int, tuple[float, Job | None]] = {}
    for job in jobs:  # in start order, so a job's producers come first
        before = []
        for path in job.inputs:
            for candidate in (path, *map(str, PurePosixPath(path).parents)):
                producer = producers.get(candidate)
                if producer is not None and producer.jobid in best and producer is not job:
                    before.append(producer)
        previous = max(before, key=lambda p: best[p.jobid][0], default=None)
        length = job.seconds + (best[previous.jobid][0] if previous else 0.0)
        best[job.jobid] = (length, previous)
    chain: list[Job] = []
    last = max(jobs, key=lambda job: best[job.jobid][0], default=None)
    while last is not None:
        chain.append(last)
        last = best[last.jobid][1]
    return chain[::-1]


def verdict(ok: bool, complete: bool = True) -> str:
    return "PASS" if ok and complete else "MISS" if not ok else "PARTIAL"


def summarize(
    log_text: str, benchmarks_dir: Path, cores: int | None = None, any_mtime: bool = False
) -> dict:
    """The figures of one run: see the module's docstring."""
    all_jobs, header = parse_log(log_text)
    jobs = [job for job in all_jobs if job.end is not None]
    if not jobs:
        raise ValueError("the log records no finished job")
    stale = attach_benchmarks(jobs, benchmarks_dir, any_mtime)
    cores = cores or header.get("cores", 2)
    wall = max(job.end for job in jobs if job.end is not None) - min(job.start for job in jobs)
    stages: dict[str, dict] = {}
    for job in jobs:
        stage = stages.setdefault(job.stage, {"jobs": 0, "seconds": 0.0, "cpu_s": 0.0})
        stage["jobs"] += 1
        stage["seconds"] += job.seconds
        stage["cpu_s"] += job.cpu_s or 0.0
        stage["first"] = min(stage.get("first", job.start), job.start)
        stage["last"] = max(stage.get("last", job.start), job.end)
    for stage in stages.values():
        stage["span"] = stage.pop("last") - stage.pop("first")
    measured = [job for job in jobs if job.cpu_s is not None]
    timed = [job for job in jobs if job.bench_s is not None]
    cpu = sum(job.cpu_s or 0.0 for job in measured)
    core_use = cpu / (wall * cores) if wall > 0 else 0.0
    chain = critical_path(jobs)
    failed = sum(job.failed for job in jobs)
    planned = header.get("planned")
    complete = not failed and (planned is None or len(jobs) >= planned)
    return {
        "jobs": len(jobs),
        "failed": failed,
        "unfinished": len(all_jobs) - len(jobs),
        "planned": planned,
        "cores": cores,
        "wall_s": wall,
        "stages": dict(sorted(stages.items(), key=lambda item: -item[1]["seconds"])),
        "cpu_s": cpu,
        "cpu_jobs": len(measured),
        "stale_benchmarks": stale,
        "core_use": core_use,
        "critical_path_s": sum(job.seconds for job in chain),
        "critical_path": [(job.label, job.seconds) for job in chain],
        "top": [
            (job.bench_s, job.cpu_s, job.label)
            for job in sorted(timed, key=lambda job: -(job.bench_s or 0.0))[:TOP_JOBS]
        ],
        "goals": {
            "wall": verdict(wall <= WALL_GOAL_S, complete),
            "core_use": verdict(core_use >= CORE_USE_GOAL),
        },
    }


def newest_log(directory: Path) -> Path:
    """The newest log that records a job (Snakemake also writes logs for --lint, dry runs)."""
    for path in sorted(directory.glob("*.snakemake.log"), reverse=True):
        if any(JOB_START.match(line) for line in path.read_text().splitlines()):
            return path
    raise SystemExit(f"no Snakemake log with a job in {directory}")


def report(summary: dict) -> str:
    s = summary
    planned = f" of {s['planned']} planned" if s["planned"] else ""
    lines = [
        f"jobs: {s['jobs']} finished ({s['failed']} of them failed), "
        f"{s['unfinished']} never finished{planned}; cores: {s['cores']}",
        "",
        f"{'figure':<22}{'value':>12}  {'goal':<12}verdict",
        f"{'wall time':<22}{s['wall_s']:>10.0f} s  {'<= 1200 s':<12}{s['goals']['wall']}",
        f"{'core use':<22}{100 * s['core_use']:>10.1f} %  {'>= 80 %':<12}{s['goals']['core_use']}",
        f"{'critical path':<22}{s['critical_path_s']:>10.0f} s",
        f"(core use: the cpu_time of the {s['cpu_jobs']} jobs whose benchmark file this run wrote, "
        f"{s['cpu_s']:.0f} s,",
        f" over wall x {s['cores']} cores; {s['stale_benchmarks']} files another run rewrote are "
        "left out;",
        " a lower bound: Snakemake samples CPU time every 30 s after a job's first 15 s)",
        "",
        f"{'stage':<28}{'jobs':>5}{'job-s':>9}{'span-s':>9}{'cpu-s':>9}",
    ]
    for name, stage in s["stages"].items():
        lines.append(
            f"{name:<28}{stage['jobs']:>5}{stage['seconds']:>9.0f}"
            f"{stage['span']:>9.0f}{stage['cpu_s']:>9.0f}"
        )
    lines += [
        "(job-s: the jobs' logged seconds summed; span-s: first start to last end; [rule]: jobs",
        " without a benchmark file)",
        "",
        "critical path (longest chain of jobs each reading a file the one before wrote, as the",
        "log lists inputs and outputs, by logged seconds):",
    ]
    lines += [f"{seconds:>9.0f} s  {label}" for label, seconds in s["critical_path"]]
    lines += ["", f"top {TOP_JOBS} jobs by benchmark wall seconds:", f"{'s':>9}{'cpu-s':>9}  job"]
    lines += [f"{wall:>9.1f}{cpu or 0.0:>9.1f}  {label}" for wall, cpu, label in s["top"]]
    return "\n".join(lines)


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--results", type=Path, default=harness.RESULTS)
    parser.add_argument("--log", type=Path, help="default: the newest log that records a job")
    parser.add_argument("--cores", type=int, help="default: the log's 'Provided cores', else 2")
    parser.add_argument(
        "--any-mtime", action="store_true", help="use benchmark files another run rewrote"
    )
    args = parser.parse_args()
    log = args.log or newest_log(Path(".snakemake/log"))
    try:
        summary = summarize(
            log.read_text(), args.results / "benchmarks", args.cores, args.any_mtime
        )
    except ValueError as error:  # a log of --lint or a dry run
        raise SystemExit(f"{log}: {error}") from None
    print(f"log: {log}")
    print(report(summary))
    return 1 if "MISS" in summary["goals"].values() else 0


if __name__ == "__main__":
    sys.exit(main())
