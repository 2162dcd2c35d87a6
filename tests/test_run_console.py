"""The console of a run (hybrid_ir.monitor.console, Snakemake's logger plugin ``hybrid-ir``, the
default of profiles/default): the toy workflow's console read as a CI log reads it (not a
terminal), and the handler fed Snakemake's records directly."""

from __future__ import annotations

import io
import logging
import re
import sys
from pathlib import Path

import pytest
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.tests import MockOutputSettings, TestLogHandlerBase
from toy_workflow import make_toy, snakemake

from hybrid_ir.joblog.progress import PROGRESS_EVERY_ENV
from hybrid_ir.monitor.console import ConsoleSettings, RunConsole

SLOW_S = 6
LINE_PREFIX = re.compile(r"^\d\d:\d\d:\d\d (start |done  |FAILED|\.\.\.   ) ")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[str, str, Path]:
    """The toy workflow's console with BM25 search slowed to a long job (a progress bar of
    6 one-second steps, progress shown every second), then a second run of that search, which
    has the first run's timings to estimate from."""
    root = make_toy(tmp_path_factory.mktemp("console"))
    faults = {
        "HYBRID_IR_FAULT": "slow:bm25_search",
        "HYBRID_IR_FAULT_DIR": str(root / "faults"),
        "HYBRID_IR_FAULT_SLOW_S": str(SLOW_S),
    }
    first = snakemake(root, "--logger-hybrid-ir-progress-every", "1", env=faults)
    assert first.returncode == 0, first.stderr[-4000:]
    again = snakemake(root, "--forcerun", "bm25_search")
    assert again.returncode == 0, again.stderr[-4000:]
    return first.stdout + first.stderr, again.stdout + again.stderr, root


def test_one_line_per_job_started_and_finished_and_no_input_dumps(runs):
    console, _, _ = runs
    planned = int(re.search(r"^total\s+(\d+)$", console, re.M).group(1))
    starts = re.findall(r"^\d\d:\d\d:\d\d start  (\S+)", console, re.M)
    finishes = re.findall(r"^\d\d:\d\d:\d\d done   (\S+) .* \[(\d+)/(\d+) done", console, re.M)
    assert len(starts) == len(finishes) == planned > 10
    assert sorted(starts) == sorted(rule for rule, _, _ in finishes)
    assert [int(done) for _, done, _ in finishes] == list(range(1, planned + 1))
    assert "start  bm25_search results/runs/toy/test/bm25-flat.trec\n" in console
    for dump in ("    input:", "    output:", "reason:", "localrule ", "Select jobs to execute"):
        assert dump not in console
    assert f"\n{planned} of {planned} steps (100%) done\n" in console
    assert len(console.splitlines()) < 4 * planned + 40  # Snakemake's own printed 300


def test_a_long_jobs_progress_shows_on_the_console(runs):
    console, _, _ = runs
    label = "bm25_search results/runs/toy/test/bm25-flat.trec"
    progress = re.findall(
        rf"^\d\d:\d\d:\d\d \.\.\.    {re.escape(label)}: HYBRID_IR_FAULT slow start "
        rf"(\d+)/{SLOW_S} second \(\d+%\), \S+ elapsed, .* \[running \S+ of its 0:30:00 runtime\]$",
        console,
        re.M,
    )
    assert len(progress) >= 2, console
    assert [int(step) for step in progress] == sorted(int(step) for step in progress)


def test_no_escape_codes_when_the_console_is_not_a_terminal(runs):
    console, again, _ = runs
    assert "\x1b" not in console + again and "\r" not in console + again


def test_finished_jobs_say_the_time_left_from_the_earlier_runs_timings(runs):
    _, again, _ = runs
    finished = re.findall(r"^\d\d:\d\d:\d\d done   .*\[(.*)\]$", again, re.M)
    assert finished and all("/" in state for state in finished)
    assert any(re.search(r"; about \d+ (s|min) left", state) for state in finished[:-1]), again


def test_a_dry_run_lists_jobs_as_snakemake_does(runs):
    _, _, root = runs
    planned = snakemake(root, "--dry-run", "--forcerun", "evaluate_run")
    assert planned.returncode == 0
    assert "rule evaluate_run:\n    input: " in planned.stdout
    assert "    reason: Forced execution" in planned.stdout


# -- the handler, fed records as Snakemake's logging hands them over --------------------


@pytest.fixture(autouse=True)
def progress_interval(monkeypatch):
    """The handler sets the jobs' interval in this process's environment: undone after."""
    monkeypatch.setenv(PROGRESS_EVERY_ENV, "30")


def record(event: LogEvent | None, msg: str | None = None, level=logging.INFO, **fields):
    made = logging.LogRecord("snakemake", level, "x.py", 1, msg, None, None)
    if event is not None:
        made.event = event
    for key, value in fields.items():
        setattr(made, key, value)
    return made


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def console_of(monkeypatch, stream: io.StringIO, **settings) -> RunConsole:
    monkeypatch.setattr(sys, "stderr", stream)
    common = MockOutputSettings()
    common.nocolor = common.show_failed_logs = False
    for key, value in settings.items():
        setattr(common, key, value)
    handler = RunConsole(common_settings=common, settings=ConsoleSettings(progress_every=3600))

    def fail(_record):
        raise  # noqa: PLE0704 - the handler's own error, re-raised for the test

    monkeypatch.setattr(handler, "handleError", fail)
    return handler


def job_info(jobid: int, rule: str, outputs: list[str]):
    return record(
        LogEvent.JOB_INFO,
        rule_name=rule,
        jobid=jobid,
        output=outputs,
        log=[f"logs/{rule}.log"],
        wildcards={},
        resources={"runtime": 30},
        benchmark=None,
        rule_msg=None,
    )


def test_a_run_of_two_jobs_one_failed_reads_line_by_line(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs/table.log").write_text("".join(f"line {n}\n" for n in range(30)))
    stream = io.StringIO()
    handler = console_of(monkeypatch, stream)
    stats = {"index": 1, "table": 1, "total": 2}
    try:
        for made in (
            record(None, "Select jobs to execute..."),
            record(LogEvent.RUN_INFO, "Job stats:\njob    count\n", stats=stats),
            job_info(1, "index", ["results/index", "results/index.stats.json"]),
            record(LogEvent.JOB_STARTED, "Execute 1 jobs...", jobs=[1]),
            record(LogEvent.JOB_FINISHED, job_id=1),
            record(LogEvent.PROGRESS, done=1, total=2),
            job_info(2, "table", ["results/table.md"]),
            record(
                LogEvent.JOB_ERROR,
                level=logging.ERROR,
                rule_name="table",
                jobid=2,
                log=["logs/table.log"],
                aux={},
                rule_msg=None,
                shellcmd=None,
                output=[],
            ),  # fmt: skip
            record(None, "Exiting because a job execution failed."),
        ):
            handler.emit(made)
    finally:
        handler.close()
    lines = stream.getvalue().splitlines()
    jobs = [line for line in lines if LINE_PREFIX.match(line)]
    assert [line[9:] for line in jobs] == [
        "start  index results/index (+1)",
        "done   index results/index (+1) in 0:00:00 [1/2 done]",
        "start  table results/table.md",
        "FAILED table results/table.md after 0:00:00 (jobid 2)",
    ]
    assert "    log: logs/table.log (last 20 of 30 lines):" in lines
    assert lines[-2:] == ["    | line 29", "Exiting because a job execution failed."]
    assert "    | line 9" not in lines and "Select jobs to execute..." not in lines
    assert "\x1b" not in stream.getvalue()


def test_on_a_terminal_a_finished_job_is_green_and_a_failed_one_red(monkeypatch):
    stream = _Terminal()
    handler = console_of(monkeypatch, stream)
    handler.emit(job_info(1, "index", ["results/index"]))
    handler.emit(record(LogEvent.JOB_FINISHED, job_id=1))
    handler.emit(job_info(2, "table", ["results/table.md"]))
    handler.emit(
        record(LogEvent.JOB_ERROR, level=logging.ERROR, rule_name="table", jobid=2, log=[])
    )
    text = stream.getvalue()
    assert "\x1b[32m" in text and "\x1b[31m" in text and text.count("\x1b[0m") == 2


def test_with_show_failed_logs_the_whole_log_is_printed(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "table.log").write_text("".join(f"line {n}\n" for n in range(30)))
    stream = io.StringIO()
    handler = console_of(monkeypatch, stream, show_failed_logs=True)
    handler.emit(
        record(LogEvent.JOB_ERROR, level=logging.ERROR, rule_name="t", jobid=2, log=["table.log"])
    )
    assert "    log: table.log (all 30 lines):\n    | line 0\n" in stream.getvalue()


class TestTheInterfacesEvents(TestLogHandlerBase):
    """Every kind of record the logger plugin interface defines is taken without an error."""

    __test__ = True

    @pytest.fixture(autouse=True)
    def strict(self, monkeypatch):
        def fail(_self, _record):
            raise  # noqa: PLE0704

        monkeypatch.setattr(RunConsole, "handleError", fail)
        monkeypatch.setattr(sys, "stderr", io.StringIO())

    def get_log_handler_cls(self):
        return RunConsole

    def get_log_handler_settings(self):
        return ConsoleSettings(progress_every=3600)
