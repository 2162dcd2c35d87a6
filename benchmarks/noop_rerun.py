"""Time re-runs of the finished workflow, which must do nothing, and print the figures.

Usage: python benchmarks/noop_rerun.py [--repeats N] [snakemake target ...]
Run it after the workflow has completed (``make reproduce``). The goal is judged on the median
of the repeats (default 5): one start of Snakemake varies by a few tenths of a second with what
else the machine did a moment before.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

import harness

LIMIT_SECONDS = 10.0
"""Exit status 1 above this (CI runs the script): a re-run that plans work, or a hang."""
GOAL_SECONDS = 3.0
"""The goal printed beside the median."""


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("targets", nargs="*")
    arguments = parser.parse_args()
    snakemake = Path(sys.executable).with_name("snakemake")
    command = [str(snakemake), "--cores", "2", *arguments.targets]
    times = []
    for _ in range(arguments.repeats):
        with harness.stopwatch() as watch:
            finished = subprocess.run(command, capture_output=True, text=True)
        times.append(watch.seconds)
        output = finished.stdout + finished.stderr
        if finished.returncode != 0 or "Nothing to be done" not in output:
            print("the re-run was not a no-op:\n" + output[-3000:])
            return 1
    median = statistics.median(times)
    verdict = "met" if median < GOAL_SECONDS else "NOT met"
    each = ", ".join(f"{seconds:.2f}" for seconds in times)
    print(
        f"no-op re-run: median {median:.2f} s of {len(times)} ({each} s); goal < "
        f"{GOAL_SECONDS:.0f} s: {verdict}; exit status 1 above {LIMIT_SECONDS:.0f} s"
    )
    return 0 if median < LIMIT_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
