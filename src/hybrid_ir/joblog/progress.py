"""A job's progress bars as plain, timestamped lines in its log, which the console and
``hybrid-ir status`` read back.

tqdm draws a bar by rewriting one line with carriage returns, several times a second: in a
log file that is one endless line, and a reader of a running job's log cannot tell what it
does without decoding it. In a job (:func:`hybrid_ir.jobs.run.run_step`) every tqdm bar, the
package's and third-party ones alike, writes instead

- a ``progress`` line at most every :data:`PROGRESS_EVERY_ENV` seconds while it runs
  (``progress [encoding] 1200/5000 doc (24%), 0:00:34 elapsed, 35.2 doc/s, 0:01:48 left``),
- and one ``finished`` line when it closes (``finished [encoding] 5000 doc in 0:02:22,
  35.2 doc/s``), or ``stopped`` when it closed short of its total.

A bar created without a description is labelled with the module that created it. The console
(:mod:`hybrid_ir.monitor.console`) and ``hybrid-ir status`` (:mod:`hybrid_ir.monitor.status`) show a
running job's latest such line (:func:`latest_progress`).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from hybrid_ir.errors import HybridIRError, quoted
from hybrid_ir.joblog.import_hooks import after_import

PROGRESS_EVERY_ENV = "HYBRID_IR_PROGRESS_EVERY_S"
"""Seconds between two progress lines of one bar (the console sets it for its jobs)."""
DEFAULT_EVERY_S = 30.0
LOGGER = logging.getLogger("hybrid_ir.progress")
KINDS = ("progress", "finished", "stopped")
_LINE = re.compile(
    r"^(?:(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\S* \w+ )?"
    r"(?P<kind>progress|finished|stopped) \[(?P<label>[^\]\n]*)\] (?P<text>.*)$"
)
_LEFT = re.compile(r"(\d+):(\d\d):(\d\d) left$")
_TAIL_BYTES = 65536
_LABEL_CHARS = 60


def progress_every(environ: Mapping[str, str] = os.environ) -> float:
    """Seconds between progress lines: :data:`PROGRESS_EVERY_ENV`, else the default."""
    value = environ.get(PROGRESS_EVERY_ENV)
    if not value:
        return DEFAULT_EVERY_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise HybridIRError(f"{PROGRESS_EVERY_ENV}: {quoted(value)} is not a number of seconds")
    return seconds


def clock(seconds: float) -> str:
    """``H:MM:SS`` (hours grow past 24: a cluster job's runtime is counted in hours)."""
    whole = max(0, int(round(seconds)))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def rate_text(count: float, seconds: float, unit: str) -> str:
    """Items per second, or seconds per item below one a second."""
    if count <= 0 or seconds <= 0:
        return f"0 {unit}/s"
    rate = count / seconds
    if rate < 1:
        return f"{1 / rate:.3g} s/{unit}"
    return f"{rate:.3g} {unit}/s" if rate < 1000 else f"{rate:,.0f} {unit}/s"


@dataclass(frozen=True)
class ProgressLine:
    """One progress or summary line of a job's log."""

    kind: str
    label: str
    text: str
    stamp: datetime | None = None

    @property
    def seconds_left(self) -> float | None:
        """The bar's own estimate of its time left (a running bar with a total), or None."""
        match = _LEFT.search(self.text) if self.kind == "progress" else None
        if match is None:
            return None
        hours, minutes, seconds = map(int, match.groups())
        return hours * 3600 + minutes * 60 + seconds

    def describe(self) -> str:
        """The line as the console and the status command show it."""
        return (
            f"{self.label} {self.text}"
            if self.kind == "progress"
            else f"{self.kind} {self.label} {self.text}"
        )


def parse_progress_line(line: str) -> ProgressLine | None:
    """The progress line ``line`` is (with or without the log's timestamp), or None."""
    match = _LINE.match(line.rstrip("\r\n"))
    if match is None:
        return None
    stamp = match.group("stamp")
    return ProgressLine(
        kind=match.group("kind"),
        label=match.group("label"),
        text=match.group("text"),
        stamp=datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S") if stamp else None,
    )


def latest_progress(log: str | Path) -> ProgressLine | None:
    """The last progress or summary line in the end of ``log`` (None: none, or no log yet)."""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - _TAIL_BYTES))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        found = parse_progress_line(line)
        if found is not None:
            return found
    return None


def report_bars_as_lines(every: float | None = None) -> None:
    """From now on in this process, tqdm bars write progress lines instead of drawing."""
    interval = progress_every() if every is None else every
    after_import("tqdm.std", lambda module: _patch(module, interval))


class _Discard:
    """Where a bar's own drawing goes: nowhere."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


_DISCARD = _Discard()


@dataclass
class _BarState:
    label: str
    every: float
    last_line: float
    summarised: bool = False


def _patch(module: ModuleType, every: float) -> None:
    bar_class: Any = module.tqdm
    if getattr(bar_class, "_hybrid_ir_lines", False):
        return
    original_init = bar_class.__init__
    original_close = bar_class.close

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        label = _caller_module()
        original_init(self, *args, **kwargs)
        if getattr(self, "disable", True):
            return
        described = _label(getattr(self, "desc", "") or "")
        self._hybrid_ir = _BarState(described or label, every, time.time())
        self.fp = _DISCARD
        self.sp = self.status_printer(_DISCARD)

    def display(self: Any, msg: str | None = None, pos: int | None = None) -> bool:
        state = getattr(self, "_hybrid_ir", None)
        if state is None or msg is not None:
            return True
        now = time.time()
        # A bar at its total is about to close, and its summary line says the rest.
        at_total = bool(self.total) and self.n >= self.total
        if now - state.last_line >= state.every and not at_total:
            state.last_line = now
            LOGGER.info("%s", _progress_text(self, state, now))
        return True

    def close(self: Any) -> None:
        state = getattr(self, "_hybrid_ir", None)
        running = not getattr(self, "disable", True)
        original_close(self)
        if state is not None and running and not state.summarised:
            state.summarised = True
            LOGGER.info("%s", _summary_text(self, state, time.time()))

    bar_class.__init__ = __init__
    bar_class.display = display
    bar_class.close = close
    bar_class._hybrid_ir_lines = True


def _caller_module() -> str:
    """The module that created the bar: the first frame outside tqdm and this module."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not (name == __name__ or name == "tqdm" or name.startswith("tqdm.")):
            return _label(name) or "progress"
        frame = frame.f_back  # type: ignore[assignment]
    return "progress"


def _label(text: str) -> str:
    label = " ".join(str(text).replace("]", ")").replace("[", "(").split()).rstrip(":")
    return label[:_LABEL_CHARS]


def _amount(bar: Any, count: float) -> str:
    if getattr(bar, "unit_scale", False):
        return bar.format_sizeof(count, divisor=getattr(bar, "unit_divisor", 1000))
    return f"{int(count)}" if float(count).is_integer() else f"{count:.4g}"


def _progress_text(bar: Any, state: _BarState, now: float) -> str:
    elapsed = now - bar.start_t
    done = bar.n - getattr(bar, "initial", 0)
    unit = bar.unit
    parts = []
    if bar.total:
        share = bar.n / bar.total
        parts.append(f"{_amount(bar, bar.n)}/{_amount(bar, bar.total)} {unit} ({share:.0%})")
    else:
        parts.append(f"{_amount(bar, bar.n)} {unit}")
    parts.append(f"{clock(elapsed)} elapsed")
    parts.append(rate_text(done, elapsed, unit))
    if bar.total and done > 0 and bar.n < bar.total:
        parts.append(f"{clock((bar.total - bar.n) * elapsed / done)} left")
    return f"progress [{state.label}] " + ", ".join(parts)


def _summary_text(bar: Any, state: _BarState, now: float) -> str:
    elapsed = now - bar.start_t
    rate = rate_text(bar.n - getattr(bar, "initial", 0), elapsed, bar.unit)
    if bar.total and bar.n < bar.total:
        return (
            f"stopped [{state.label}] at {_amount(bar, bar.n)}/{_amount(bar, bar.total)} "
            f"{bar.unit} after {clock(elapsed)}, {rate}"
        )
    return f"finished [{state.label}] {_amount(bar, bar.n)} {bar.unit} in {clock(elapsed)}, {rate}"
