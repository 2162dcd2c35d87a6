"""How long a torch job takes to start: a fresh interpreter against a job server's child.

A stand-in job imports what the encoder and ColBERT jobs import (``hybrid_ir.neural.encoders``,
``hybrid_ir.neural.colbert``: torch, transformers, colbert-ai, faiss) and exits. It runs
``--repeat`` times each way, alternating: ``python job.py`` (what Snakemake runs without job
servers) and ``python -m hybrid_ir.planning.jobserver run job.py`` against one server (started
before the first served run; its preloading is printed apart, as a run pays it once per job
environment). Prints the median wall time of each and the saving per job.

    .venv/bin/python benchmarks/job_start.py [--repeat 5]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

from hybrid_ir.planning import jobserver

JOB = """\
import hybrid_ir.neural.colbert
import hybrid_ir.neural.encoders
"""


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    return harness.seconds(lambda: subprocess.run(command, cwd=cwd, env=env, check=True))


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="job-start-") as folder:
        work = Path(folder)
        (work / "job.py").write_text(JOB)
        servers = work / "servers"
        servers.mkdir()
        # One thread per job, as the default configuration's jobs (Snakemake sets these).
        threads = {
            name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
        }
        fresh_env = os.environ | threads
        served_env = fresh_env | {
            jobserver.DIRECTORY_ENV: str(servers),
            jobserver.OWNER_ENV: str(os.getpid()),
        }
        served = [sys.executable, "-m", "hybrid_ir.planning.jobserver", "run", "job.py"]
        first = timed(served, work, served_env)  # starts the server: it preloads first
        fresh_times, served_times = [], []
        for _ in range(arguments.repeat):
            fresh_times.append(timed([sys.executable, "job.py"], work, fresh_env))
            served_times.append(timed(served, work, served_env))
        os.environ.update({k: v for k, v in served_env.items() if k.startswith("HYBRID_IR")})
        jobserver.close_job_servers()
    fresh, child = statistics.median(fresh_times), statistics.median(served_times)

    def listed(times: list[float]) -> str:
        return ", ".join(f"{t:.2f}" for t in times)

    print(
        f"job: imports hybrid_ir.neural.colbert and .encoders, one thread; {arguments.repeat} runs"
    )
    print(f"fresh interpreter   median {fresh:6.2f} s  ({listed(fresh_times)})")
    print(f"job server's child  median {child:6.2f} s  ({listed(served_times)})")
    print(f"first served job    {first:6.2f} s  (starts the server: once per run and environment)")
    print(f"saving per job      {fresh - child:6.2f} s")


if __name__ == "__main__":
    main()
