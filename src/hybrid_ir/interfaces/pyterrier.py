"""The workflow's runs and fusions inside a PyTerrier pipeline, as PyTerrier transformers.

:class:`RunTransformer` serves a run, given as ``{qid: {docno: score}}``, a run file, or its name
in the workflow's results folder (``collection/topics/system``, :mod:`hybrid_ir.data.names`):
for a topics frame (``qid``, ``query``, ...) it returns the run's rows of those topics as
PyTerrier's results frame (``qid``, ``docno``, ``score``, ``rank`` from 0, in
:mod:`hybrid_ir.interfaces.frames`' canonical order, then the topics' other columns, such as
``query``). A topic the run does not answer gets no row, as a retriever that finds nothing.

:class:`FusionTransformer` fuses what two or more transformers return (these, or any other
PyTerrier transformer's results) with one of this package's fusion methods
(:data:`~hybrid_ir.fusion.methods.FUSION_METHODS`, by name and parameters), the function the
workflow, ``hybrid-ir fuse`` and ``api.fuse`` call, so its scores are theirs.

PyTerrier is imported when a transformer class is first asked for, not with this module, and
neither class starts Java: PyTerrier's own ``pt.Experiment`` evaluates them with ir_measures, in
Python (tests/test_pyterrier.py). ``pip install hybrid-ir[pyterrier]`` installs PyTerrier::

    import pyterrier as pt
    from hybrid_ir.interfaces.pyterrier import FusionTransformer, RunTransformer

    bm25 = RunTransformer("scifact/test/bm25-flat")
    dense = RunTransformer("scifact/test/dense-minilm")
    hybrid = FusionTransformer([bm25, dense], "rrf", rrf_k=60)
    pt.Experiment([bm25, dense, hybrid], topics, qrels, eval_metrics=["ndcg_cut_10"])
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hybrid_ir.data import names
from hybrid_ir.data.runs import Run, canonicalize
from hybrid_ir.errors import HybridIRError
from hybrid_ir.fusion.methods import check_fusion, fuse
from hybrid_ir.interfaces.frames import COLUMNS, run_from_frame, run_to_frame

if TYPE_CHECKING:
    import pandas


def results_frame(run: Run, topics: pandas.DataFrame) -> pandas.DataFrame:
    """The rows of ``run`` for the topics of ``topics`` (a frame with ``qid``) as PyTerrier's
    results frame: :data:`~hybrid_ir.interfaces.frames.COLUMNS`, then the topics' other
    columns (``query`` ...)."""
    if "qid" not in topics.columns:
        raise HybridIRError(f"a topics frame needs a qid column (has {list(topics.columns)})")
    qids = [str(qid) for qid in topics["qid"]]
    frame = run_to_frame({qid: run[qid] for qid in dict.fromkeys(qids) if qid in run})
    extra = [column for column in topics.columns if column not in COLUMNS]
    if not extra:
        return frame
    columns = topics[["qid", *extra]].astype({"qid": str}).drop_duplicates("qid")
    return frame.merge(columns, on="qid", how="left")


def __getattr__(name: str) -> Any:
    """The transformer classes, made on first use: they subclass ``pyterrier.Transformer``,
    and PyTerrier is imported then, not with this module."""
    if name in ("RunTransformer", "FusionTransformer"):
        return _classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _classes() -> dict[str, type]:
    try:
        import pyterrier as pt
    except ImportError as error:
        raise HybridIRError(
            f"PyTerrier is not installed ({error}): pip install 'hybrid-ir[pyterrier]'"
        ) from error

    class RunTransformer(pt.Transformer):
        """A run served as a retriever: ``run`` is ``{qid: {docno: score}}``, a run file or a
        run's name (``collection/topics/system``, or ``system`` with ``topics``, in
        ``results``: :func:`hybrid_ir.data.names.resolve`); ``k`` cuts each topic's ranking
        (None: all of it)."""

        def __init__(
            self,
            run: Run | str | Path,
            k: int | None = None,
            topics: str | Path | None = None,
            results: str | Path | None = None,
        ) -> None:
            if isinstance(run, str | Path):
                self.source = str(run)
                run = names.named_run(names.resolve("run", run, topics, results))
            else:
                self.source = f"{len(run)} topics"
            self.run = canonicalize(run, k)

        def transform(self, topics: pandas.DataFrame) -> pandas.DataFrame:
            return results_frame(self.run, topics)

        def __repr__(self) -> str:
            return f"RunTransformer({self.source!r})"

    class FusionTransformer(pt.Transformer):
        """The fusion of what ``transformers`` return for the same topics, by ``method`` (a
        name of :data:`~hybrid_ir.fusion.methods.FUSION_METHODS`) with its ``params``
        (``rrf_k``, ``alpha``, ``k`` ...), checked here as the workflow checks them."""

        def __init__(self, transformers: Sequence[Any], method: str = "rrf", **params) -> None:
            check_fusion(method, len(transformers), params)
            self.transformers = list(transformers)
            self.method = method
            self.params = params

        def transform(self, topics: pandas.DataFrame) -> pandas.DataFrame:
            runs = [
                run_from_frame(transformer.transform(topics), repr(transformer))
                for transformer in self.transformers
            ]
            return results_frame(fuse(self.method, runs, **self.params), topics)

        def __repr__(self) -> str:
            params = "".join(f", {name}={value!r}" for name, value in self.params.items())
            return f"FusionTransformer({self.transformers!r}, {self.method!r}{params})"

    return {"RunTransformer": RunTransformer, "FusionTransformer": FusionTransformer}
