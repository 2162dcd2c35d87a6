"""The package's Python API: what the workflow does to runs, for one's own, on the dict shapes
ranx and pytrec_eval take: a run is ``{query: {document: score}}``, qrels are
``{query: {document: relevance}}``. Every function here is the one the workflow and the
``hybrid-ir`` command call, so a number computed here is the number they print.

>>> from hybrid_ir.interfaces import api
>>> qrels = {"q1": {"d1": 1, "d3": 1}, "q2": {"d2": 1}, "q3": {"d4": 2}}
>>> bm25 = {"q1": {"d1": 2.0, "d2": 1.0, "d3": 0.5}, "q2": {"d2": 1.0, "d1": 0.3},
...         "q3": {"d5": 0.9, "d4": 0.4}}
>>> dense = {"q1": {"d3": 3.0, "d1": 1.0}, "q2": {"d1": 2.0, "d2": 1.0},
...          "q3": {"d4": 0.8, "d5": 0.2}}
>>> rounded = lambda scores: {name: round(value, 4) for name, value in scores.items()}
>>> rounded(api.evaluate(qrels, bm25, ["P@1", "nDCG@10"]))
{'P@1': 0.6667, 'nDCG@10': 0.8502}

Fusion by name (:data:`FUSION_METHODS`), with the method's parameters:

>>> fused = api.fuse([bm25, dense], "rrf", rrf_k=60)
>>> sorted(fused["q1"], key=fused["q1"].get, reverse=True)
['d1', 'd3', 'd2']
>>> rounded(api.evaluate(qrels, api.fuse([bm25, dense], "linear", alpha=0.5), ["nDCG@10"]))
{'nDCG@10': 0.877}

Files in TREC format (ARQMath's TSV too), and PyTerrier's DataFrame:

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> api.write_run(bm25, folder / "bm25.trec", tag="bm25")
7
>>> api.read_run(folder / "bm25.trec") == bm25
True
>>> api.write_qrels(qrels, folder / "test.qrels")
4
>>> api.read_qrels(folder / "test.qrels") == qrels
True
>>> frame = api.run_to_frame(bm25)
>>> frame.head(3).to_string(index=False)
'qid docno  score  rank\\n q1    d1    2.0     0\\n q1    d2    1.0     1\\n q1    d3    0.5     2'
>>> api.run_from_frame(frame) == bm25
True

Names instead of paths: a file the workflow wrote is read by its name in the results folder
(``collection/topics/system`` for a run, ``collection/qrels`` for qrels, ``collection/topics``
for topics; :mod:`hybrid_ir.data.names`), here a folder laid out as the workflow lays out
``results/``; a path that exists always wins, and where ir_datasets is installed its ids
(``beir/scifact/test``) name qrels and topics too:

>>> from hybrid_ir import paths
>>> api.write_run(dense, folder / paths.run("toy", "test", "dense"), tag="dense")
6
>>> results = folder / paths.RESULTS
>>> api.read_run("toy/test/dense", results=results) == dense
True
>>> api.read_run("dense", topics="toy/test", results=results) == dense
True
>>> api.read_run("toy/test/dens", results=results)
Traceback (most recent call last):
...
hybrid_ir.errors.UnknownName: run 'toy/test/dens': no such file, ...; nearest: toy/test/dense

The weight of ``alpha * dense + (1 - alpha) * base``, cross-validated over folds of the
topics, and a comparison with a baseline (paired t-test and randomization test):

>>> result = api.crossvalidate(dense, bm25, qrels, "nDCG@10", folds=3, seed=1234)
>>> sorted(result)
['alphas', 'mean_test_score', 'per_topic']
>>> len(result["alphas"]), sorted(result["per_topic"])
(3, ['q1', 'q2', 'q3'])
>>> report = api.compare(qrels, bm25, {"fused": fused}, ["nDCG@10"], permutations=100)
>>> (row,) = report["comparisons"]
>>> row["run"], round(row["difference"], 4), row["topics"], row["exact"]
('fused', 0.0268, 3, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from hybrid_ir.data import names
from hybrid_ir.data.qrels import Qrels
from hybrid_ir.data.qrels import write_qrels as write_qrels_file
from hybrid_ir.data.runs import DEFAULT_K, Run
from hybrid_ir.data.runs import write_run as write_run_file
from hybrid_ir.evaluation.measures import evaluate as evaluate_run
from hybrid_ir.evaluation.significance import PERMUTATIONS, RANDOMIZATION_SEED
from hybrid_ir.fusion.crossval import ALPHAS, PAPER_SEED, crossvalidate_linear
from hybrid_ir.fusion.methods import FUSION_METHODS
from hybrid_ir.fusion.methods import fuse as fuse_runs
from hybrid_ir.interfaces.frames import run_from_frame, run_to_frame
from hybrid_ir.reports.compare import compare_runs, comparison_document
from hybrid_ir.retrieval.bm25 import BM25Settings

__all__ = [
    "FUSION_METHODS", "BM25Settings", "Qrels", "Run", "bm25_search", "compare", "crossvalidate",
    "evaluate", "fuse", "read_qrels", "read_run", "read_topics", "run_from_frame",
    "run_to_frame", "write_qrels", "write_run",
]  # fmt: skip

Source = str | Path
"""A file, or a name of the workflow's results folder (:mod:`hybrid_ir.data.names`)."""


def read_run(
    path: Source,
    run_format: str | None = None,
    topics: Source | None = None,
    results: Source | None = None,
) -> Run:
    """A TREC run (``query Q0 doc rank score tag``) or an ARQMath TSV run, ``.gz`` too; the
    format is told from the first line unless ``run_format`` (``trec``, ``arqmath``) says.
    ``path`` may be a run's name instead, ``collection/topics/system``, or ``system`` with
    ``topics`` (a topic set's name), in ``results`` (default: ``results/`` here)."""
    return names.named_run(names.resolve("run", path, topics, results), run_format)


def write_run(run: Run, path: str | Path, tag: str = "hybrid-ir", k: int = DEFAULT_K) -> int:
    """Write ``run`` in TREC format, each query's documents by score (ties by document id) cut
    at ``k``; return the number of lines."""
    return write_run_file(run, path, tag=tag, k=k)


def read_qrels(path: Source, results: Source | None = None) -> Qrels:
    """TREC qrels (``query iteration doc relevance``, ``.gz`` too); a (query, doc) pair
    judged on several lines keeps its highest relevance. ``path`` may be a name instead:
    ``collection/qrels`` in ``results`` (default: ``results/`` here), or an ir_datasets id
    (``beir/scifact/test``, read from ir_datasets' own cache) where ir_datasets is
    installed."""
    return names.named_qrels(names.resolve("qrels", path, results=results))


def read_topics(path: Source, results: Source | None = None) -> list[dict]:
    """Topics as records (``id``, ``title``, ``text``, ...): a canonical topics file (JSON
    Lines), ``collection/topics`` in ``results`` (default: ``results/`` here), or an
    ir_datasets id whose queries they are (their default text as ``text``)."""
    return names.named_topics(names.resolve("topics", path, results=results))


def _qrels(qrels: Qrels | Source) -> Qrels:
    return read_qrels(qrels) if isinstance(qrels, str | Path) else qrels


def _run(run: Run | Source) -> Run:
    return read_run(run) if isinstance(run, str | Path) else run


def write_qrels(qrels: Qrels, path: str | Path) -> int:
    """Write ``qrels`` in TREC format, queries in natural order, each query's documents by id;
    return the number of lines."""
    return write_qrels_file(qrels, path)


def bm25_search(
    index: str | Path,
    topics: str | Path,
    output: str | Path,
    settings: BM25Settings | None = None,
    **changes: object,
) -> int:
    """Search a Lucene index (``hybrid-ir index``) with BM25 for every topic of a canonical
    topics file (JSON Lines) and write the run to ``output`` in TREC format; return the number
    of lines. ``settings`` (:class:`BM25Settings`: ``k1``, ``b``, ``depth``, ``layout``,
    ``query_fields``, ``remove_query``, ``tag``, ``threads``), or its defaults, with
    ``changes`` to its fields on top: ``api.bm25_search(index, topics, "bm25.trec", k1=1.2)``.
    The workflow's ``bm25_search`` rule and ``hybrid-ir search`` run this same search, with
    the same defaults. Lucene (pyserini's JVM) is imported on the first call, not with this
    module."""
    from hybrid_ir.retrieval.lucene.search import bm25_search as search

    return search(index, topics, output, settings, **changes)


def evaluate(
    qrels: Qrels | Source, run: Run | Source, measures: Sequence[str], per_query: bool = False
) -> dict[str, float] | dict[str, dict[str, float]]:
    """Each measure's mean over the qrels' queries (a query the run does not answer scores 0),
    as trec_eval computes it; measures are ir_measures names (``nDCG@10``, ``P@5``, ``AP``) or
    this package's sets (``arqmath``, ``beir``, ``cf``, ...). With ``per_query``, each
    measure's score per query instead. Qrels and run may be files or names, read as
    :func:`read_qrels` and :func:`read_run` read them."""
    evaluation = evaluate_run(_qrels(qrels), _run(run), measures)
    return evaluation.per_query if per_query else evaluation.aggregate


def fuse(runs: Sequence[Run | Source], method: str = "rrf", **params: object) -> Run:
    """Fuse ``runs`` (runs, files or names) with a method of :data:`FUSION_METHODS` and its
    parameters (``rrf_k`` of ``rrf``, ``alpha`` of ``linear``, ...), checked as the workflow
    checks them."""
    return fuse_runs(method, [_run(run) for run in runs], **params)


def crossvalidate(
    dense: Run | Source,
    base: Run | Source,
    qrels: Qrels | Source,
    measure: str,
    folds: int = 5,
    seed: int = PAPER_SEED,
    alphas: Sequence[float] = ALPHAS,
) -> dict:
    """Cross-validate ``alpha`` in ``alpha * dense + (1 - alpha) * base`` (min-max normalized)
    for ``measure``: ``alphas`` (the value chosen on the other folds, per fold),
    ``mean_test_score`` and ``per_topic`` (each topic scored with its fold's alpha). Runs
    and qrels may be files or names."""
    result = crossvalidate_linear(
        _run(dense), _run(base), _qrels(qrels), [measure], alphas, folds, seed=seed
    )
    (validation,) = result.values()
    return {
        "alphas": validation.params,
        "mean_test_score": validation.mean_test_score,
        "per_topic": validation.per_topic,
    }


def compare(
    qrels: Qrels | Source,
    baseline: Run | Source,
    runs: Mapping[str, Run | Source],
    measures: Sequence[str],
    permutations: int = PERMUTATIONS,
    seed: int = RANDOMIZATION_SEED,
    holm: bool = False,
) -> dict:
    """Each of ``runs`` (name -> run) against ``baseline`` on each measure, on the queries both
    answer: scores, difference, paired t-test and randomization test p-values (Holm-adjusted
    across the runs of each measure with ``holm``), in the keys of ``hybrid-ir compare --format
    json``. Runs and qrels may be files or names."""
    table = compare_runs(
        ("qrels", _qrels(qrels)), ("baseline", _run(baseline)),
        [(name, _run(run)) for name, run in runs.items()], measures, permutations, seed, holm,
    )  # fmt: skip
    return comparison_document(table)
