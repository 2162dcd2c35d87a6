"""A job's progress bars as plain lines in its log (hybrid_ir.joblog.progress): tqdm bars of any
origin write timestamped progress lines and one summary line, which are read back; the bars
are patched in a subprocess, as in a job, so that this test process keeps its own tqdm."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime

import pytest

from hybrid_ir.errors import HybridIRError
from hybrid_ir.joblog.progress import (
    PROGRESS_EVERY_ENV,
    clock,
    latest_progress,
    parse_progress_line,
    progress_every,
    rate_text,
)

BARS = """
import logging, sys, time
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format="%(asctime)s %(levelname)s %(message)s")
from hybrid_ir.joblog.progress import report_bars_as_lines
report_bars_as_lines(0.05)
from tqdm import tqdm
from tqdm.auto import trange
for _ in tqdm(range(6), desc="encoding", unit="doc"):
    time.sleep(0.03)
for _ in tqdm(range(3)):  # no description: labelled by the module that made it
    pass
for _ in trange(2, desc="Batches"):  # tqdm.auto, as transformers and sentence-transformers use
    pass
short = tqdm(total=10, desc="search", unit="topic")
short.update(4)
short.close()
for _ in tqdm(range(3), disable=True):
    pass
print("end")
"""


@pytest.fixture(scope="module")
def bar_lines() -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", BARS], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.splitlines()


def test_a_bar_writes_progress_lines_and_one_summary_without_drawing(bar_lines):
    text = "\n".join(bar_lines)
    assert "\r" not in text and "\x1b" not in text and "|" not in text  # no bar drawn
    progress = [parse_progress_line(line) for line in bar_lines]
    encoding = [line for line in progress if line and line.label == "encoding"]
    assert len(encoding) >= 2 and encoding[-1].kind == "finished"
    assert all(line.kind == "progress" for line in encoding[:-1])
    assert all("/6 doc (" in line.text and " elapsed, " in line.text for line in encoding[:-1])
    assert encoding[-1].text.startswith("6 doc in 0:00:00, ")
    assert isinstance(encoding[-1].stamp, datetime)


def test_every_bar_is_labelled_and_a_short_one_says_where_it_stopped(bar_lines):
    summaries = [parse_progress_line(line) for line in bar_lines]
    said = {(line.kind, line.label) for line in summaries if line and line.kind != "progress"}
    assert said == {
        ("finished", "encoding"),
        ("finished", "__main__"),
        ("finished", "Batches"),
        ("stopped", "search"),
    }
    stopped = next(line for line in summaries if line and line.kind == "stopped")
    assert stopped.text.startswith("at 4/10 topic after 0:00:00, ")
    assert bar_lines[-1] == "end"


def test_the_latest_progress_line_is_read_from_the_end_of_a_log(tmp_path):
    log = tmp_path / "job.log"
    assert latest_progress(log) is None  # not written yet
    log.write_text(
        "2026-11-28 13:49:22,891 INFO job pretrain: 1 thread(s)\n"
        "2026-11-28 13:49:23,000 INFO progress [pretraining] 4/50 it (8%), 0:00:06 elapsed, "
        "1.71 s/it, 0:01:18 left\n"
        "2026-11-28 13:49:29,000 INFO step 4: loss 8.8\n"
    )
    latest = latest_progress(log)
    assert latest is not None and latest.stamp == datetime(2026, 11, 28, 13, 49, 23)
    assert latest.describe() == "pretraining 4/50 it (8%), 0:00:06 elapsed, 1.71 s/it, 0:01:18 left"
    with log.open("a") as handle:
        handle.write(
            "2026-11-28 13:50:58,625 INFO finished [pretraining] 50 it in 0:01:32, 1.84 s/it\n"
        )
    assert latest_progress(log).describe() == "finished pretraining 50 it in 0:01:32, 1.84 s/it"


def test_the_interval_comes_from_the_environment_and_a_bad_one_is_named():
    assert progress_every({}) == 30.0
    assert progress_every({PROGRESS_EVERY_ENV: "0.5"}) == 0.5
    for bad in ("often", "-1", "nan"):
        with pytest.raises(HybridIRError, match=f"{PROGRESS_EVERY_ENV}: '{bad}' is not a number"):
            progress_every({PROGRESS_EVERY_ENV: bad})


def test_times_and_rates_read_as_a_person_reads_them():
    assert clock(0) == "0:00:00" and clock(92.6) == "0:01:33" and clock(49 * 3600) == "49:00:00"
    assert rate_text(6, 2, "doc") == "3 doc/s"
    assert rate_text(1, 4, "it") == "4 s/it"
    assert rate_text(123456, 2, "doc") == "61,728 doc/s"
    assert rate_text(0, 2, "doc") == "0 doc/s"
