"""pya0 0.3.7's Approach0 engine: build an index of rendered documents, search it safely.

``import pya0`` puts pya0's own folder first on ``sys.path`` (its ``preprocess``, ``eval``,
``timer`` ... modules can shadow others), so the engine is imported here only, by the index
job and by the search worker, a child process (``python -m hybrid_ir.retrieval.approach0``) that the
searching job starts: the engine can crash on some queries, which then fails that topic with a
logged error, and a new worker goes on with the next topic. pya0's prebuilt-index and NLTK
download paths are never reached: only the native ``index_*``/``writer_*``/``search``/``parse``
functions are called.

Each document is added with its id as ``url``, which hits report (0.3.7 leaves ``extern_id``
empty in hits). The engine's math weight and BM25 k1/b are compiled in: nothing here can set
them. Its scores have 3 decimals, so ties are common; they are broken as trec_eval does
(:func:`hybrid_ir.data.runs.canonicalize`). An index is a directory of many small files (one per
formula path), so it is built in a temporary directory (RAM or a node's local disk where
configured) and moved into place when complete; a marker file written last tells a complete
index from a half-written one, which is never searched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from hybrid_ir.data.formats import atomic_directory, read_records
from hybrid_ir.data.runs import Run, add_entry, canonicalize
from hybrid_ir.errors import ConfigError, HybridIRError, InputFormatError
from hybrid_ir.retrieval.structure import DocumentTemplate, Terms, formulas_in

MARKER = "index-complete.json"
_EXAMPLE_CHARS = 80
# Free bytes asked of a preferred scratch directory per corpus byte (index_scratch): the ARQMath
# sample's index took 72 per corpus byte on tmpfs (721 MB for a 10 MB corpus: a 4 KiB page for
# each of its 171,498 files).
SCRATCH_ROOM = 100
# pya0's term index (lemur) refuses file names over 128 bytes, and aborts the process: the
# longest it makes is the index's path + "/term/collection/storage".
ENGINE_PATH_LIMIT = 104


def _engine():
    import pya0

    return pya0


@contextlib.contextmanager
def _engine_output_discarded() -> Iterator[None]:
    """The C engine prints each parse error and index message on the process's stdout/stderr;
    they are counted and logged by document id instead, so its own lines are dropped."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for descriptor in (*saved, devnull):
            os.close(descriptor)


def index_is_complete(index_dir: str | Path) -> bool:
    return (Path(index_dir) / MARKER).is_file()


def index_scratch(
    preferred: str | Path | None, corpus: str | Path, fallback: str | Path | None
) -> str | Path | None:
    """Where :func:`build_index` builds the index of ``corpus``: ``preferred`` (the
    configuration's ``structure_scratch``, e.g. /dev/shm: RAM) where it is a writable directory
    with :data:`SCRATCH_ROOM` free bytes per corpus byte, else ``fallback`` (the job's tmpdir;
    None: the system's temporary directory). Small collections go to RAM, large ones (the full
    ARQMath corpus is 4.8 GB) and a container's small /dev/shm are left alone."""
    if preferred is None:
        return fallback
    preferred = Path(preferred)
    if not (preferred.is_dir() and os.access(preferred, os.W_OK | os.X_OK)):
        logging.info(
            "%s is not a writable directory: the index is built in %s", preferred, fallback
        )
        return fallback
    needed = SCRATCH_ROOM * Path(corpus).stat().st_size
    free = shutil.disk_usage(preferred).free
    if free < needed:
        logging.info(
            "%s has %.1f GiB free, less than the %.1f GiB asked for this corpus's index "
            "(%d bytes per corpus byte): the index is built in %s",
            preferred,
            free / 2**30,
            needed / 2**30,
            SCRATCH_ROOM,
            fallback,
        )
        return fallback
    return preferred


def index_corpus(
    corpus: str | Path,
    template: DocumentTemplate,
    terms: Terms,
    index_dir: str | Path,
    max_unparsed_rate: float,
    scratch: str | Path | None = None,
    shard: int = 0,
    shards: int = 1,
) -> dict:
    """:func:`build_index` of a canonical corpus's records as ``template`` renders them: every
    record, or with ``shards`` above 1 those of shard ``shard`` (:func:`in_shard`).

    The records are streamed, never held together: ARQMath's 1.4M answers are several GB of
    JSON Lines. A first pass counts the lines, for the progress bar's total.
    """
    if not 0 <= shard < shards:
        raise ConfigError(f"structure shard {shard} does not exist: there are {shards} shards")
    where = str(corpus)
    with open(corpus, "rb") as handle:
        total = sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))
    if shards > total:
        raise ConfigError(
            f"{where}: {shards} shards for {total} documents would leave shards empty; "
            f"shards must be at most {total}"
        )
    documents = (
        (str(record["id"]), template.render(record, terms, where))
        for position, record in enumerate(read_records(corpus))
        if in_shard(position, shard, shards)
    )
    stats = build_index(
        documents,
        index_dir,
        max_unparsed_rate,
        where=where if shards == 1 else f"{where} (shard {shard} of {shards})",
        total=len(range(shard, total, shards)),
        scratch=scratch,
    )
    return stats if shards == 1 else stats | {"shard": shard, "shards": shards}


def in_shard(position: int, shard: int, shards: int) -> bool:
    """Whether the corpus's record at ``position`` (0-based) belongs to ``shard`` of ``shards``:
    records are dealt out in turn, so shards differ in size by one record at most and each
    holds a slice of every part of the corpus (threads, years), whatever its order."""
    return position % shards == shard


def build_index(
    documents: Iterable[tuple[str, str]],
    index_dir: str | Path,
    max_unparsed_rate: float,
    where: str,
    total: int | None = None,
    scratch: str | Path | None = None,
) -> dict:
    """Index ``(doc id, rendered text)`` pairs into ``index_dir``; return its statistics.

    The engine writes one small file per formula path, which is slow on a disk (8 times its
    time on tmpfs for the ARQMath sample), so the index is built in a directory under
    ``scratch`` (None: the system's temporary directory, ``$TMPDIR``: in a workflow job
    Snakemake's tmpdir resource) and moved to ``index_dir`` when complete, after its marker,
    through :func:`~hybrid_ir.data.formats.atomic_directory`: renamed where ``scratch`` is on
    ``index_dir``'s file system, else copied into ``.NAME.tmp`` beside ``index_dir`` and that
    renamed. Where the path under ``scratch`` would be too long for the engine, the index is
    built in ``.NAME.tmp`` itself. The files are the same wherever the index is built. A
    directory already at ``index_dir`` (a stale index) is removed first; a failure leaves
    neither the directory under ``scratch`` nor a partial index.

    Formulas the engine cannot parse are counted and logged with their document's id; more
    than ``max_unparsed_rate`` of all formulas is an error naming ``where``. A document the
    engine rejects is logged by id and left out.
    """
    index_dir = Path(index_dir)
    legacy = index_dir.with_name(index_dir.name + ".partial")  # earlier versions' build name
    for stale in (index_dir, legacy):
        if stale.exists():
            logging.info("removing %s (an earlier index, complete or not)", stale)
            shutil.rmtree(stale)
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    building = _scratch_directory(index_dir, scratch)
    try:
        with atomic_directory(index_dir) as staging:
            built = staging if building is None else building / "index"
            logging.info("building the Approach0 index in %s", built)
            stats = _build(documents, built, max_unparsed_rate, where, total)
            if building is not None:
                same = building.stat().st_dev == index_dir.parent.stat().st_dev
                started = time.perf_counter()
                shutil.move(built, staging)  # os.rename on one file system, else copy, remove
                logging.info(
                    "index moved to %s in %.1f s (%s)",
                    index_dir,
                    time.perf_counter() - started,
                    "renamed" if same else "copied from another file system",
                )
    finally:
        if building is not None:
            shutil.rmtree(building, ignore_errors=True)
    return stats


def _scratch_directory(index_dir: Path, scratch: str | Path | None) -> Path | None:
    """A new empty directory under ``scratch`` (None: the system's temporary directory) for
    building ``index_dir``, or None where the engine could not build there (too long a path:
    the index is then built in its staging directory, beside ``index_dir``).

    Its name is fixed by ``index_dir``'s absolute path, and whatever is there is removed first,
    so that a build killed earlier (SIGKILL, a lost node) leaves no files behind in RAM or on
    the disk once the index is built again, as :func:`~hybrid_ir.data.formats.atomic_directory` does
    for its staging name."""
    key = hashlib.sha256(str(index_dir.resolve()).encode()).hexdigest()[:12]
    root = Path(scratch) if scratch is not None else Path(tempfile.gettempdir())
    building = root / f"approach0-{key}"
    if len(os.fsencode(building / "index")) > ENGINE_PATH_LIMIT:
        logging.warning(
            "%s is too long a path for pya0 (at most %d bytes): the index is built beside %s",
            building / "index",
            ENGINE_PATH_LIMIT,
            index_dir,
        )
        return None
    if building.exists():
        logging.info("removing %s (left by an index build that was killed)", building)
        shutil.rmtree(building)
    root.mkdir(parents=True, exist_ok=True)
    building.mkdir(mode=0o700)
    return building


def _build(
    documents: Iterable[tuple[str, str]],
    partial: Path,
    max_unparsed_rate: float,
    where: str,
    total: int | None,
) -> dict:
    """:func:`build_index`'s work, into ``partial`` (which must not exist yet); its marker is
    written last."""
    from tqdm import tqdm

    pya0 = _engine()
    started = time.perf_counter()
    counts = {"documents": 0, "formulas": 0, "unparsed_formulas": 0, "rejected_documents": 0}
    documents_with_unparsed = 0
    # Counted into two lines after the loop, not one line per document between the bar's.
    unparsed_in: list[str] = []
    example: tuple[str, str] | None = None
    with _engine_output_discarded():
        index = pya0.index_open(str(partial), option="w")
    if index is None:
        raise HybridIRError(f"pya0 could not create an index at {partial}")
    writer = pya0.index_writer(index)
    for doc_id, text in tqdm(documents, total=total, desc="approach0 index", unit="doc"):
        unparsed = []
        formulas = formulas_in(text)
        with _engine_output_discarded():
            for tex in formulas:
                status, _ = pya0.parse(tex)
                if status != "OK":
                    unparsed.append(tex)
        counts["formulas"] += len(formulas)
        counts["unparsed_formulas"] += len(unparsed)
        if unparsed:
            documents_with_unparsed += 1
            unparsed_in.append(doc_id)
            example = example or (doc_id, unparsed[0][:_EXAMPLE_CHARS])
        try:
            with _engine_output_discarded():
                pya0.writer_add_doc(writer, text, url=doc_id, extern_id=doc_id)
        except Exception as error:  # the engine's own refusal, reported per document
            counts["rejected_documents"] += 1
            logging.error("document %s rejected by pya0: %s", doc_id, error)
            continue
        counts["documents"] += 1
    with _engine_output_discarded():
        pya0.writer_flush(writer)
        pya0.writer_maintain(writer, force=True)
        pya0.writer_close(writer)
        pya0.index_close(index)
    if example is not None:
        logging.info(
            "%d of %d formulas in %d of %d documents not parsed by pya0 (skipped by the "
            "engine), e.g. in document %s: %r",
            counts["unparsed_formulas"],
            counts["formulas"],
            documents_with_unparsed,
            counts["documents"] + counts["rejected_documents"],
            *example,
        )
        logging.info("documents with formulas not parsed: %s", " ".join(unparsed_in))
    if counts["documents"] == 0:
        raise InputFormatError(where, None, "no document could be indexed")
    rate = counts["unparsed_formulas"] / counts["formulas"] if counts["formulas"] else 0.0
    if rate > max_unparsed_rate:
        raise InputFormatError(
            where,
            None,
            f"{counts['unparsed_formulas']} of {counts['formulas']} formulas "
            f"({rate:.1%}) could not be parsed by pya0, above the configured limit of "
            f"{max_unparsed_rate:.1%} (max_unparsed_rate); the log names each document",
        )
    files = [path for path in partial.rglob("*") if path.is_file()]
    stats = counts | {
        "documents_with_unparsed_formulas": documents_with_unparsed,
        "unparsed_rate": round(rate, 6),
        "index_files": len(files),
        "size_bytes": sum(path.stat().st_size for path in files),
        "seconds": round(time.perf_counter() - started, 3),
    }
    (partial / MARKER).write_text(json.dumps(stats, indent=1) + "\n", encoding="utf-8")
    return stats


def search(index_dir: str | Path, queries: list[dict], depth: int) -> tuple[Run, dict]:
    """Run ``queries`` (``{id, keywords}``) against a complete index, in a worker process.

    Returns the run (each topic's top ``depth`` in trec_eval order) and facts: topics with and
    without hits, failed topics with the reason, and per-query latency (p50/p95 seconds). A
    worker that dies fails the topic it was on and a new worker resumes after it.
    """
    index_dir = Path(index_dir)
    if not index_is_complete(index_dir):
        raise HybridIRError(
            f"{index_dir}: not a complete Approach0 index (no {MARKER}, written last): it is "
            f"half-written or from elsewhere; delete it and let the workflow rebuild it"
        )
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="approach0-") as scratch:
        query_file = Path(scratch, "queries.jsonl")
        result_file = Path(scratch, "results.jsonl")
        query_file.write_text(
            "".join(json.dumps(query) + "\n" for query in queries), encoding="utf-8"
        )
        result_file.touch()
        while len(results) < len(queries):
            start = len(results)
            worker = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "hybrid_ir.retrieval.approach0",
                    str(index_dir),
                    str(query_file),
                    str(result_file),
                    str(start),
                    str(depth),
                ],
                env=_worker_environment(),
                check=False,
            )
            results = _read_results(result_file)
            if len(results) < len(queries) and worker.returncode != 0:
                failed = queries[len(results)]["id"]
                reason = _exit_reason(worker.returncode)
                logging.error("topic %s: the Approach0 engine %s; no results", failed, reason)
                with open(result_file, "a", encoding="utf-8") as out:
                    out.write(json.dumps({"id": failed, "failed": f"engine {reason}"}) + "\n")
                results = _read_results(result_file)
            elif len(results) < len(queries):
                raise HybridIRError("the Approach0 search worker stopped early without an error")
    return _run_and_facts(results, depth)


_SUMMED_STATS = (
    "documents",
    "formulas",
    "unparsed_formulas",
    "rejected_documents",
    "documents_with_unparsed_formulas",
    "index_files",
    "size_bytes",
)


def merge_shard_stats(parts: Sequence[dict]) -> dict:
    """The statistics of a sharded index as one index's (counts and sizes summed, the unparsed
    rate over all formulas), with the shard count, each shard's build time and the slowest's:
    the shards are built in parallel jobs, so the slowest is the index's wall time."""
    stats = {key: sum(part[key] for part in parts) for key in _SUMMED_STATS}
    formulas = stats["formulas"]
    stats["unparsed_rate"] = round(stats["unparsed_formulas"] / formulas, 6) if formulas else 0.0
    seconds = [part["seconds"] for part in parts]
    return stats | {"shards": len(parts), "seconds": max(seconds), "shard_seconds": seconds}


def merge_shard_searches(parts: Sequence[tuple[Run, dict]], depth: int) -> tuple[Run, dict]:
    """One run and its facts from the searches of every shard of an index (``(run, facts)`` in
    shard order): each topic's canonical top ``depth`` of all shards' hits.

    The shards hold disjoint documents, so a topic's hits are the union of its shards' hits;
    each shard's top ``depth`` holds every document of the union's top ``depth`` it has. A
    topic that failed on any shard is failed (its run lacks that shard's documents), named with
    the shard; the shards' own facts are kept under ``shards``.
    """
    run: Run = {}
    failed: dict[str, str] = {}
    for number, (part, facts) in enumerate(parts):
        for topic, docs in part.items():
            for doc, score in docs.items():
                add_entry(run, topic, doc, score)
        for topic, reason in facts["failed"].items():
            failed.setdefault(topic, f"shard {number}: {reason}")
    topics = max((facts["topics"] for _, facts in parts), default=0)
    merged = canonicalize(run, depth)
    answered = {topic for topic, docs in merged.items() if docs}
    without_hits = sorted(
        {topic for _, facts in parts for topic in facts["without_hits"]} - answered - set(failed)
    )
    facts = {
        "topics": topics,
        "with_hits": len(answered - set(failed)),
        "without_hits": without_hits,
        "failed": failed,
        "shards": [facts for _, facts in parts],
    }
    return merged, facts


def _worker_environment() -> dict:
    package_root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH", "")
    return os.environ | {"PYTHONPATH": package_root + (os.pathsep + path if path else "")}


def _exit_reason(code: int) -> str:
    return f"crashed (signal {-code})" if code < 0 else f"exited with status {code}"


def _read_results(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.endswith("\n")]


def _run_and_facts(results: list[dict], depth: int) -> tuple[Run, dict]:
    run: Run = {}
    facts: dict = {"topics": len(results), "with_hits": 0, "without_hits": [], "failed": {}}
    for result in results:
        topic = result["id"]
        if "failed" in result:
            facts["failed"][topic] = result["failed"]
        elif result["hits"]:
            for doc, score in result["hits"]:
                add_entry(run, topic, doc, score)
            facts["with_hits"] += 1
        elif result["ret_code"] in (0, 2):  # 2: pya0's "no hit found"
            facts["without_hits"].append(topic)
            logging.warning("topic %s: no hit (%s)", topic, result["ret_str"])
        else:
            facts["failed"][topic] = f"ret_code {result['ret_code']}: {result['ret_str']}"
            logging.error("topic %s: search failed: %s", topic, facts["failed"][topic])
    latencies = sorted(r["seconds"] for r in results if "seconds" in r)
    if latencies:
        facts["latency_p50_s"] = round(statistics.median(latencies), 4)
        facts["latency_p95_s"] = round(latencies[max(0, -(-len(latencies) * 95 // 100) - 1)], 4)
    return canonicalize(run, depth), facts


def _worker(index_dir: str, query_file: str, result_file: str, start: int, depth: int) -> None:
    from tqdm import tqdm

    with open(query_file, encoding="utf-8") as handle:
        queries = [json.loads(line) for line in handle][start:]
    pya0 = _engine()
    with _engine_output_discarded():
        index = pya0.index_open(index_dir, option="r")
    if index is None:
        raise HybridIRError(f"pya0 could not open the index at {index_dir}")
    with open(result_file, "a", encoding="utf-8") as out:
        for query in tqdm(queries, desc="approach0 search", unit="topic", initial=start):
            began = time.perf_counter()
            reply = json.loads(
                pya0.search(index, query["keywords"], verbose=False, topk=depth, log=None)
            )
            hits = [[hit["field_url"], hit["score"]] for hit in reply.get("hits", [])]
            record = {
                "id": query["id"],
                "ret_code": reply["ret_code"],
                "ret_str": reply.get("ret_str", ""),
                "hits": hits,
                "seconds": round(time.perf_counter() - began, 6),
            }
            out.write(json.dumps(record) + "\n")
            out.flush()


if __name__ == "__main__":
    _index, _queries, _results, _start, _depth = sys.argv[1:6]
    _worker(_index, _queries, _results, int(_start), int(_depth))
