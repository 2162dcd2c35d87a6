"""Time a re-run of the finished workflow, which must do nothing, and print the figure.

Usage: python benchmarks/noop_rerun.py [snakemake target ...]
Run it after the workflow has completed (``make reproduce``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

LIMIT_SECONDS = 10.0
"""Exit status 1 above this (CI runs the script): a re-run that plans work, or a hang."""
GOAL_SECONDS = 3.0
"""The goal printed beside the figure."""


def main() -> int:
    snakemake = Path(sys.executable).with_name("snakemake")
    command = [str(snakemake), "--cores", "2", *sys.argv[1:]]
    start = time.perf_counter()
    finished = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    output = finished.stdout + finished.stderr
    nothing_to_do = "Nothing to be done" in output
    verdict = "met" if elapsed < GOAL_SECONDS else "NOT met"
    limit = f"goal < {GOAL_SECONDS:.0f} s: {verdict}; exit status 1 above {LIMIT_SECONDS:.0f} s"
    print(f"no-op re-run: {elapsed:.2f} s ({limit}), exit status {finished.returncode}")
    if finished.returncode != 0 or not nothing_to_do:
        print("the re-run was not a no-op:\n" + output[-3000:])
        return 1
    return 0 if elapsed < LIMIT_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
