"""The workflow's runs inside PyTerrier (hybrid_ir.interfaces.pyterrier): a run served by a
transformer is the run, a fusion of two transformers is ``api.fuse``'s, and ``pt.Experiment``
scores them as ``api.evaluate`` does; all without Java (nothing here starts the JVM or fetches
Terrier's jars) and without the network.

Tiny data, scored by hand in tests/test_api.py: three topics, two runs (q3 answered by bm25
alone, so the dense run leaves a topic unanswered)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pandas
import pytest

from hybrid_ir import paths
from hybrid_ir.data.runs import canonicalize
from hybrid_ir.errors import ConfigError
from hybrid_ir.interfaces import api
from hybrid_ir.interfaces.frames import COLUMNS

pt = pytest.importorskip("pyterrier", reason="PyTerrier (the [pyterrier] extra) is not installed")

from hybrid_ir.interfaces.pyterrier import FusionTransformer, RunTransformer  # noqa: E402

QRELS = {"q1": {"d1": 1, "d3": 1}, "q2": {"d2": 1}, "q3": {"d4": 2}}
BM25 = {"q1": {"d1": 2.0, "d2": 1.0, "d3": 0.5}, "q2": {"d2": 1.0, "d1": 0.3},
        "q3": {"d5": 0.9, "d4": 0.4}}  # fmt: skip
DENSE = {"q1": {"d3": 3.0, "d1": 1.0}, "q2": {"d1": 2.0, "d2": 1.0}}
TOPICS = pandas.DataFrame({"qid": ["q1", "q2", "q3"], "query": ["zebra", "giraffe", "okapi"]})
QRELS_FRAME = pandas.DataFrame(
    [(qid, docno, label) for qid, docs in QRELS.items() for docno, label in docs.items()],
    columns=["qid", "docno", "label"],
)
MEASURES = {"nDCG@10": pt.measures.nDCG @ 10, "AP": pt.measures.AP, "P@1": pt.measures.P @ 1}
"""This package's measure names and the same measures as PyTerrier's (ir_measures) objects."""
FUSIONS = [("rrf", {"rrf_k": 60}), ("linear", {"alpha": 0.3}), ("combsum", {})]


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"a test connected to the network: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_the_module_imports_pyterrier_only_when_a_transformer_is_asked_for():
    probe = (
        "import sys\nimport hybrid_ir.interfaces.pyterrier as module\n"
        "print('pyterrier' in sys.modules)\nmodule.RunTransformer\n"
        "print('pyterrier' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.split() == ["False", "True"], done.stderr


def test_a_run_transformer_returns_the_run_for_the_topics_asked():
    frame = RunTransformer(BM25).transform(TOPICS)
    assert list(frame.columns) == [*COLUMNS, "query"]
    assert api.run_from_frame(frame) == BM25
    pandas.testing.assert_frame_equal(frame[list(COLUMNS)], api.run_to_frame(BM25))
    assert list(frame[frame.qid == "q2"]["query"]) == ["giraffe", "giraffe"]
    some = RunTransformer(DENSE).transform(TOPICS[TOPICS.qid != "q1"])
    assert api.run_from_frame(some) == {"q2": DENSE["q2"]}  # q3: unanswered, no row
    cut = RunTransformer(BM25, k=1).transform(TOPICS[["qid"]])
    assert list(cut.columns) == list(COLUMNS) and api.run_from_frame(cut) == canonicalize(BM25, 1)


def test_a_run_transformer_reads_a_file_or_a_name_of_the_results_folder(tmp_path):
    api.write_run(BM25, tmp_path / paths.run("toy", "test", "bm25"), tag="bm25")
    results = tmp_path / paths.RESULTS
    by_name = RunTransformer("toy/test/bm25", results=results)
    by_file = RunTransformer(tmp_path / paths.run("toy", "test", "bm25"))
    bare = RunTransformer("bm25", topics="toy/test", results=results)
    for transformer in (by_name, by_file, bare):
        assert api.run_from_frame(transformer.transform(TOPICS)) == BM25
    assert repr(by_name) == "RunTransformer('toy/test/bm25')"


@pytest.mark.parametrize(("method", "params"), FUSIONS)
def test_a_fusion_of_two_transformers_is_api_fuse(method, params):
    fused = FusionTransformer([RunTransformer(DENSE), RunTransformer(BM25)], method, **params)
    frame = fused.transform(TOPICS)
    expected = api.fuse([DENSE, BM25], method, **params)
    assert api.run_from_frame(frame) == expected
    pandas.testing.assert_frame_equal(frame[list(COLUMNS)], api.run_to_frame(expected))


def test_a_fusion_checks_its_parameters_as_the_workflow_does():
    with pytest.raises(ConfigError, match="alpha"):
        FusionTransformer([RunTransformer(DENSE), RunTransformer(BM25)], "linear")


def test_pt_experiment_scores_the_transformers_as_api_evaluate_does():
    bm25, dense = RunTransformer(BM25), RunTransformer(DENSE)
    systems = {
        "bm25": (bm25, BM25),
        "dense": (dense, DENSE),  # leaves q3 unanswered: 0 there in both
        "rrf": (FusionTransformer([dense, bm25], "rrf"), api.fuse([DENSE, BM25], "rrf")),
        "bm25 % 1": (bm25 % 1, canonicalize(BM25, 1)),  # PyTerrier's own rank cutoff
    }
    table = pt.Experiment(
        [transformer for transformer, _ in systems.values()], TOPICS, QRELS_FRAME,
        eval_metrics=list(MEASURES.values()), names=list(systems),
    )  # fmt: skip
    for name, (_, run) in systems.items():
        ours = api.evaluate(QRELS, run, list(MEASURES))
        row = table[table["name"] == name].iloc[0]
        for measure, theirs in MEASURES.items():
            assert row[str(theirs)] == pytest.approx(ours[measure], abs=1e-12), (name, measure)


def test_a_pipeline_and_its_experiment_run_without_java():
    """In a process of its own: pyserini's tests start a JVM (through jnius) in the workers
    this test may share."""
    probe = (
        "import sys, pandas, pyterrier as pt\n"
        "from hybrid_ir.interfaces.pyterrier import FusionTransformer, RunTransformer\n"
        "run = {'q1': {'d1': 2.0, 'd2': 1.0}}\n"
        "topics = pandas.DataFrame({'qid': ['q1'], 'query': ['zebra']})\n"
        "qrels = pandas.DataFrame({'qid': ['q1'], 'docno': ['d1'], 'label': [1]})\n"
        "pipeline = FusionTransformer([RunTransformer(run), RunTransformer(run)], 'rrf') % 1\n"
        "table = pt.Experiment([pipeline], topics, qrels, eval_metrics=[pt.measures.P @ 1])\n"
        "java = pt.java.started() or any(m.startswith('jnius') for m in sys.modules)\n"
        "print(table['P@1'].iloc[0], java)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1.0", "False"]
