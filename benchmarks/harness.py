"""What the benchmark scripts share: the common parts of their command lines, timing and
percentiles, peak memory of a process or of a child, running a stage in a child process, the
formatting of bytes, durations, Markdown tables and key-value lines, JSON output, the machine's
load and file systems, the workflow's benchmark files, and the BM25 and Approach0 stages that
scale.py and structure.py both run.

Every script in benchmarks/ imports it (``import harness``): Python puts a script's directory
first on ``sys.path``, and the tests that load a script by its path put benchmarks/ there. The
package is imported inside the functions that use it, so importing the harness costs a script
nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path("results")
MIB = 2**20
GIB = 2**30
# The full collections that projections scale to.
ARQMATH_ANSWERS = 1_400_000
ARQMATH_FORMULAS = 28_000_000
NTCIR12_FORMULAS = 591_000


# The command line ------------------------------------------------------------------------------


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A script's parser, described by the first paragraph of its docstring."""
    return argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])


def stage_arguments(parser: argparse.ArgumentParser, stages: Iterable[str]) -> None:
    """The hidden options a script gives itself to run one stage in a child (:func:`run_stage`)."""
    parser.add_argument("--stage", choices=list(stages), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)


# Time ------------------------------------------------------------------------------------------


class Stopwatch:
    """Seconds since :func:`stopwatch` started it, frozen when its block ends."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.stopped: float | None = None

    @property
    def seconds(self) -> float:
        end = time.perf_counter() if self.stopped is None else self.stopped
        return end - self.started


@contextlib.contextmanager
def stopwatch() -> Iterator[Stopwatch]:
    watch = Stopwatch()
    try:
        yield watch
    finally:
        watch.stopped = time.perf_counter()


def seconds(function: Callable[[], object]) -> float:
    """Wall seconds of one call."""
    with stopwatch() as watch:
        function()
    return watch.seconds


def best_of(repeats: int, function: Callable[[], object], warm_up: bool = False) -> float:
    """The least wall seconds of ``repeats`` calls (the one least disturbed by other load), after
    one untimed call with ``warm_up`` (compilation, caches, first allocations)."""
    if warm_up:
        function()
    return min(seconds(function) for _ in range(repeats))


def p95(values: Sequence[float]) -> float:
    """The nearest-rank 95th percentile, as :mod:`hybrid_ir.retrieval.approach0` computes it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * 0.95) - 1)]


# Memory and child processes --------------------------------------------------------------------


def peak_rss(who: int = resource.RUSAGE_SELF) -> int:
    """Peak resident set in bytes of this process, or with ``RUSAGE_CHILDREN`` of its largest
    child waited for (``ru_maxrss``, KiB on Linux)."""
    return resource.getrusage(who).ru_maxrss * 1024


RESIDENT = {"anon": "RssAnon", "file": "RssFile"}


def resident() -> dict[str, int]:
    """This process's resident memory now, in bytes: ``anon`` (its heaps, the JVM's included)
    and ``file`` (pages of shared libraries and mapped files: shared with every process that
    maps them, and reclaimable)."""
    status = Path("/proc/self/status").read_text().splitlines()
    fields = dict(line.split(":", 1) for line in status)
    return {key: int(fields[name].split()[0]) * 1024 for key, name in RESIDENT.items()}


def run_stage(
    script: str | Path,
    name: str,
    workdir: Path,
    arguments: Sequence[str] = (),
    environment: Mapping[str, str] | None = None,
    label: str | None = None,
) -> dict:
    """Run stage ``name`` of ``script`` in a child process (``script --stage NAME --workdir
    WORKDIR ARGUMENTS``, its output to ``WORKDIR/NAME.log``, shown if it fails); what it wrote
    with :func:`write_stage`, with its ``peak_rss`` in bytes (``os.wait4``'s ``ru_maxrss``: its
    own, a JVM it starts included) and its ``cpu_s`` (user + system)."""
    environment = os.environ | {"TQDM_DISABLE": "1"} | dict(environment or {})
    command = [sys.executable, str(script), "--stage", name, "--workdir", str(workdir)]
    log = workdir / f"{name}.log"
    with open(log, "wb") as output:
        child = subprocess.Popen(
            [*command, *arguments], env=environment, stdout=output, stderr=output
        )
        _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"{label or f'stage {name}'} failed (exit {child.returncode}):\n{tail}")
    result = json.loads((workdir / f"{name}.json").read_text(encoding="utf-8"))
    return result | {"peak_rss": usage.ru_maxrss * 1024, "cpu_s": usage.ru_utime + usage.ru_stime}


def write_stage(workdir: Path, name: str, result: dict) -> None:
    """In the child :func:`run_stage` started: what stage ``name`` measured."""
    (workdir / f"{name}.json").write_text(json.dumps(result), encoding="utf-8")


def child_json(
    script: str | Path,
    arguments: Sequence[str],
    environment: Mapping[str, str] | None = None,
    label: str = "child",
    prefix: str = "",
) -> Any:
    """Run ``script ARGUMENTS`` in a fresh interpreter, its output captured (so that nothing
    else lives in its heap); the JSON of the last line of its standard output that starts with
    ``prefix``. Exits with the end of its standard error if it fails."""
    done = subprocess.run(
        [sys.executable, str(script), *arguments],
        capture_output=True,
        text=True,
        env=os.environ | dict(environment or {}),
        check=False,
    )
    if done.returncode:
        sys.exit(f"{label} failed:\n{done.stderr[-3000:]}")
    lines = [line for line in done.stdout.strip().splitlines() if line.startswith(prefix)]
    return json.loads(lines[-1].removeprefix(prefix))


# Output ----------------------------------------------------------------------------------------


def duration(seconds: float, digits: int = 1) -> str:
    """Seconds below 2 minutes, minutes below 2 hours, else hours (one decimal)."""
    if seconds < 120:
        return f"{seconds:,.{digits}f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:,.{digits}f} min"
    return f"{seconds / 3600:,.1f} h"


def mib(count: float, digits: int = 0) -> str:
    """Bytes in MiB, the unit left to the caller."""
    return f"{count / MIB:,.{digits}f}"


def key_values(facts: Mapping[str, float]) -> str:
    """``key value, key value``: floats with one decimal, thousands separated."""
    return ", ".join(
        f"{key} {value:,.1f}" if isinstance(value, float) else f"{key} {value:,}"
        for key, value in facts.items()
    )


def markdown_row(cells: Iterable[object]) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def markdown_header(columns: Sequence[str], right: Iterable[str] = ()) -> str:
    """A Markdown table's header row and rule, the ``right`` columns right-aligned."""
    aligned = set(right)
    rule = "|".join("---:" if column in aligned else "---" for column in columns)
    return f"{markdown_row(columns)}\n|{rule}|"


def write_json(path: Path, document: object) -> None:
    """``document`` as strict JSON (indent 1): infinite and NaN floats as null, objects JSON
    does not know (paths) as strings."""
    text = json.dumps(_finite(document), indent=1, default=str, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


# The machine and the workflow's figures --------------------------------------------------------


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def file_system(path: Path) -> str:
    """The file system type holding ``path`` (from /proc/mounts: the longest mount point);
    Approach0's many small files index several times faster on tmpfs than on disk."""
    best, kind = "", "unknown"
    resolved = str(path.resolve())
    with open("/proc/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            _, point, fs_type, *_ = line.split()
            inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
            if inside and len(point) > len(best):
                best, kind = point, fs_type
    return f"{kind} at {best}"


def directory_bytes(path: Path) -> tuple[int, int]:
    """Bytes and files under ``path``."""
    files = [item for item in path.rglob("*") if item.is_file()]
    return sum(item.stat().st_size for item in files), len(files)


def read_benchmark(path: Path) -> tuple[float, float | None]:
    """A Snakemake benchmark file's wall seconds ``s`` and CPU seconds ``cpu_time``, each summed
    over its rows (one unless the rule repeats); the CPU seconds None where a row has none."""
    with open(path, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    wall = sum(float(row["s"]) for row in rows)
    try:
        return wall, sum(float(row.get("cpu_time") or "NA") for row in rows)
    except ValueError:
        return wall, None


def benchmark_seconds(patterns: Iterable[str], results: Path = RESULTS) -> float:
    """Wall seconds summed over the benchmark files of ``results/benchmarks/PATTERN``."""
    folder = results / "benchmarks"
    return sum((read_benchmark(path)[0] for p in patterns for path in folder.glob(p)), 0.0)


# Stages of scale.py and structure.py: the workflow's code on WORKDIR/corpus.jsonl --------------

# The workflow's settings (config.yaml): BM25 over question + answer, Approach0's approach0-pya0.
BM25_K1, BM25_B = 0.9, 0.4
BM25_TEXT_FIELDS = ("question", "text")
DEPTH = 1000
DOCUMENT = "{title}\n\n{question}\n\n__ANSWER__\n\n{text}"
STEMMER = "porter"
MAX_UNPARSED_RATE = 0.1


def bm25_index(workdir: Path) -> dict:
    """:func:`hybrid_ir.retrieval.lucene.index.build_bm25_index` in WORKDIR/bm25 (the
    workflow's ``bm25_index``: flat layout, one thread): its statistics, ``wall_s`` and the
    JVM's start, apart (``jvm_s``)."""
    from hybrid_ir.retrieval.lucene.index import build_bm25_index
    from hybrid_ir.retrieval.lucene.jvm import pyserini_modules

    with stopwatch() as jvm:
        pyserini_modules()
    with stopwatch() as wall:
        stats = build_bm25_index(
            workdir / "corpus.jsonl", workdir / "bm25", "flat", 1, text_fields=BM25_TEXT_FIELDS
        )
    return stats | {"wall_s": wall.seconds, "jvm_s": jvm.seconds}


def bm25_search(index: Path, queries: Sequence[str]) -> dict:
    """Each query searched alone at depth :data:`DEPTH` after one untimed query (the JVM's class
    loading and JIT would otherwise land on the first): their ``seconds``, ``hits`` in all and
    the loop's ``wall_s``."""
    from hybrid_ir.retrieval.lucene.jvm import pyserini_modules

    searcher = pyserini_modules().LuceneSearcher(str(index))
    searcher.set_bm25(BM25_K1, BM25_B)
    searcher.search(queries[0], k=DEPTH)
    times, hits = [], 0
    with stopwatch() as wall:
        for query in queries:
            began = time.perf_counter()
            hits += len(searcher.search(query, k=DEPTH))
            times.append(time.perf_counter() - began)
    return {"queries": len(queries), "hits": hits, "seconds": times, "wall_s": wall.seconds}


def approach0_index(
    corpus: Path, index: Path, scratch: str | Path, shard: int = 0, shards: int = 1
) -> dict:
    """:func:`hybrid_ir.retrieval.approach0.index_corpus`, as the workflow's ``approach0-pya0``
    system renders its documents (Porter stemming), built under ``scratch`` and moved to
    ``index`` (shard ``shard`` of ``shards``): its statistics and ``wall_s`` (the stemmer's
    import before it not counted)."""
    from hybrid_ir.retrieval.approach0 import index_corpus
    from hybrid_ir.retrieval.structure import DocumentTemplate, Terms

    template, terms = DocumentTemplate(DOCUMENT), Terms(STEMMER)
    with stopwatch() as wall:
        stats = index_corpus(
            corpus, template, terms, index, MAX_UNPARSED_RATE, scratch, shard, shards
        )
    return stats | {"wall_s": wall.seconds}
