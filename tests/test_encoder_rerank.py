"""Re-ranking by the fine-tuned encoders (paper 000, §3.4): a base run's candidates scored as
the encoder's own search scores them, from the vectors its index holds, with tiny DPR and
ColBERT models trained in seconds."""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path

import pytest
import yaml
from test_colbert import WORDS, _tiny_bert

from hybrid_ir.config.run_origins import systems
from hybrid_ir.config.settings import math_model_runs
from hybrid_ir.config.validation import validate_config
from hybrid_ir.errors import ConfigError, HybridIRError, ParameterError
from hybrid_ir.neural.candidates import top_candidates
from hybrid_ir.neural.encoders import ENCODERS, Job, encoder

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
# colbert's Checkpoint asks for CUDA mixed precision, which torch turns off on CPU, with a warning.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.cuda.amp:FutureWarning", "ignore:.*CUDA is not available:UserWarning"
)

DPR = {"steps": 4, "batch_size": 2, "lr": 1e-3, "seed": 3, "weight_decay": 0.01}
DPR |= {"query_max_length": 16, "passage_max_length": 32, "encode_batch_size": 2}
COLBERT = {"steps": 2, "batch_size": 4, "lr": 1e-4, "weight_decay": 0.01, "dim": 64}
COLBERT |= {"query_maxlen": 16, "doc_maxlen": 64, "nbits": 8, "seed": 5}
# Re-ranking reads the vectors search reads: what is left is the rounding of a product computed
# by another kernel (faiss against numpy; colbert's MaxSim over another number of documents).
SEARCH_TOLERANCE = 1e-6
# 8 bits of residual per dimension: what the index's decompressed token vectors change in a
# score against the encoder's own (about 1% on a document of the collection below, 0.1% on most).
COMPRESSION = 2e-2
QUERIES = {"q1": "integral of sine", "q2": "prime number x", "q3": "matrix group ring"}


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


@pytest.fixture(scope="module")
def backbone(tmp_path_factory) -> Path:
    """test_colbert.py's tiny BERT (with ColBERT's marker tokens), its weights drawn wider
    (std 0.5, not 0.02) so that [CLS] vectors, and DPR scores, differ between texts."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    path = _tiny_bert(tmp_path_factory.mktemp("bert"))
    config = BertConfig.from_pretrained(path)
    config.initializer_range = 0.5
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def documents() -> dict[str, str]:
    """Enough tokens for ColBERT's k-means; lengths differ so that batches need padding."""
    rng = random.Random(11)
    return {f"doc{i:02d}": _text(rng, 6 + i % 7) for i in range(20)}


@pytest.fixture(scope="module")
def triplets(tmp_path_factory, documents) -> Path:
    rng = random.Random(3)
    lines = []
    for i in range(8):
        positive, negative = f"doc{i:02d}", f"doc{i + 10:02d}"
        record = {"query_id": f"t{i}", "query": _text(rng, 4), "positive_id": positive,
                  "positive": documents[positive], "negative_id": negative,
                  "negative": documents[negative]}  # fmt: skip
        lines.append(json.dumps(record) + "\n")
    path = tmp_path_factory.mktemp("triplets") / "triplets.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _trained(kind, entry, backbone, triplets, documents, root, job):
    """Train, index and search every document for each query; return model, index and run."""
    model, index = root / kind, root / f"{kind}-index"
    encoder(kind).train(str(backbone), triplets, model, entry, job)
    encoder(kind).index(model, documents, index, entry, job)
    return model, index, encoder(kind).search(model, index, QUERIES, 50, entry, job)


@pytest.fixture(scope="module")
def dpr(tmp_path_factory, backbone, triplets, documents):
    return _trained("dpr", DPR, backbone, triplets, documents, tmp_path_factory.mktemp("d"), Job())


@pytest.fixture(scope="module")
def colbert(tmp_path_factory, backbone, triplets, documents, extensions_dir):
    root = tmp_path_factory.mktemp("c")
    job = Job(extensions_dir=extensions_dir)
    return _trained("colbert", COLBERT, backbone, triplets, documents, root, job)


def _candidates(run, documents):
    """Per topic a different slice of the collection, in an order that is not the search's:
    search's ranks 3..9 listed bottom-up (so doc ids repeat across topics)."""
    return {topic: list(docs)[3:10][::-1] for topic, docs in run.items()}


@pytest.mark.parametrize(("kind", "entry"), [("dpr", DPR), ("colbert", COLBERT)])
def test_rerank_scores_equal_the_search_scores_of_the_candidates(
    request, kind, entry, documents, extensions_dir
):
    model, index, searched = request.getfixturevalue(kind)
    assert all(len(docs) == len(documents) for docs in searched.values())
    for docs in searched.values():  # scores that tell documents apart
        assert max(docs.values()) - min(docs.values()) > 0.1 * max(docs.values())
    assert len({tuple(docs) for docs in searched.values()}) > 1  # and queries
    candidates = _candidates(searched, documents)
    job = Job(extensions_dir=extensions_dir)
    run = encoder(kind).rerank(model, index, candidates, QUERIES, entry, job)
    assert list(run) == list(candidates)
    for topic, docs in run.items():
        assert set(docs) == set(candidates[topic])  # every candidate, nothing else
        for doc, score in docs.items():
            assert isinstance(score, float)
            assert score == pytest.approx(searched[topic][doc], rel=SEARCH_TOLERANCE), (topic, doc)
        ranked = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
        assert list(docs.items()) == ranked  # canonical run order


def test_colbert_rerank_scores_the_compressed_vectors_not_the_encoders(colbert, documents):
    """The MaxSim of the checkpoint's own token vectors (floored at 0, as colbert's CPU kernel
    does) is close to the re-ranker's, which scores the index's 8-bit residuals: close, and
    not equal."""
    from colbert.infra import ColBERTConfig
    from colbert.modeling.checkpoint import Checkpoint

    model, index, searched = colbert
    candidates = _candidates(searched, documents)
    run = encoder("colbert").rerank(model, index, candidates, QUERIES, COLBERT, Job())
    config = ColBERTConfig.load_from_checkpoint(str(model))
    checkpoint = Checkpoint(str(model), colbert_config=config, verbose=0)
    differences = []
    for topic, docs in run.items():
        [query] = checkpoint.queryFromText([QUERIES[topic]])
        for doc, score in docs.items():
            [vectors] = checkpoint.docFromText([documents[doc]], keep_dims=False)
            exact = (vectors @ query.T).max(0).values.clamp(min=0).sum().item()
            assert score == pytest.approx(exact, rel=COMPRESSION), (topic, doc)
            differences.append(abs(score - exact))
    assert max(differences) > 1e-3


@pytest.mark.parametrize(("kind", "entry"), [("dpr", DPR), ("colbert", COLBERT)])
def test_a_topic_without_candidates_gets_none(request, kind, entry, documents, extensions_dir):
    model, index, searched = request.getfixturevalue(kind)
    job = Job(extensions_dir=extensions_dir)
    run = encoder(kind).rerank(model, index, {"q3": [], "q1": ["doc02"]}, QUERIES, entry, job)
    assert list(run) == ["q3", "q1"] and run["q3"] == {} and list(run["q1"]) == ["doc02"]
    nothing = encoder(kind).rerank(model, index, {"q2": []}, QUERIES, entry, job)
    assert nothing == {"q2": {}}


def test_colbert_search_encodes_queries_with_the_entrys_query_maxlen(
    colbert, documents, extensions_dir
):
    """As re-ranking does: an entry's query_maxlen other than the checkpoint's (16) changes
    search's scores (more [MASK] augmentation vectors), and the two still agree."""
    model, index, searched = colbert
    longer = COLBERT | {"query_maxlen": 24}
    job = Job(extensions_dir=extensions_dir)
    run = encoder("colbert").search(model, index, QUERIES, 50, longer, job)
    assert all(run[topic] != searched[topic] for topic in QUERIES)
    candidates = _candidates(run, documents)
    reranked = encoder("colbert").rerank(model, index, candidates, QUERIES, longer, job)
    for topic, docs in reranked.items():
        for doc, score in docs.items():
            assert score == pytest.approx(run[topic][doc], rel=SEARCH_TOLERANCE)


@pytest.mark.parametrize(("kind", "entry"), [("dpr", DPR), ("colbert", COLBERT)])
def test_rerank_is_deterministic_and_independent_of_candidate_order(
    request, kind, entry, documents, extensions_dir
):
    model, index, searched = request.getfixturevalue(kind)
    candidates = _candidates(searched, documents)
    job = Job(extensions_dir=extensions_dir)
    first = encoder(kind).rerank(model, index, candidates, QUERIES, entry, job)
    again = encoder(kind).rerank(model, index, candidates, QUERIES, entry, job)
    assert [list(docs.items()) for docs in again.values()] == [
        list(docs.items()) for docs in first.values()
    ]
    shuffled = {topic: sorted(docs) for topic, docs in reversed(candidates.items())}
    other = encoder(kind).rerank(model, index, shuffled, QUERIES, entry, job)
    assert other == {topic: first[topic] for topic in shuffled}


@pytest.mark.parametrize(("kind", "entry"), [("dpr", DPR), ("colbert", COLBERT)])
def test_a_candidate_missing_from_the_index_is_an_error_naming_it(
    request, kind, entry, extensions_dir
):
    model, index, _ = request.getfixturevalue(kind)
    job = Job(extensions_dir=extensions_dir)
    candidates = {"q1": ["doc01"], "q2": ["doc02", "gone"]}
    with pytest.raises(
        HybridIRError, match=r"document 'gone' \(a candidate of topic 'q2'\) is not in the index"
    ) as raised:
        encoder(kind).rerank(model, index, candidates, QUERIES, entry, job)
    assert str(index) in str(raised.value)
    with pytest.raises(HybridIRError, match="topic 'q9' has no query text"):
        encoder(kind).rerank(Path("unused"), Path("unused"), {"q9": ["doc01"]}, QUERIES, entry, job)


def test_candidates_are_the_base_runs_top_documents_of_the_listed_topics():
    base = {"q1": {"a": 1.0, "b": 3.0, "c": 2.0, "d": 2.0}, "q2": {"x": 1.0}, "q9": {"y": 5.0}}
    assert top_candidates(base, ["q2", "q1", "q3"], 3) == {"q2": ["x"], "q1": ["b", "d", "c"]}
    with pytest.raises(ParameterError, match="depth must be >= 1"):
        top_candidates(base, ["q1"], 0)


@pytest.fixture()
def config() -> dict:
    """The default configuration with a ColBERT re-ranker of the TF-IDF run, depth omitted."""
    loaded = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    reranker = {"encoder": "colbert", "backbone": "minilm-math", "base": "tfidf-qa"}
    loaded["math_models"]["rerankers"]["tfidf-qa-colbert"] = reranker
    return loaded


def test_an_encoder_reranker_is_a_run_of_kind_encoder_rerank(config):
    validate_config(config, SCHEMA, "config.yaml")
    math = config["math_models"]
    entry = math["rerankers"]["tfidf-qa-colbert"]
    assert entry == {"encoder": "colbert", "backbone": "minilm-math", "base": "tfidf-qa",
                     "depth": config["run_depth"]}  # fmt: skip
    runs = math_model_runs(math)
    assert runs["tfidf-qa-colbert"]["kind"] == "encoder_rerank"
    assert runs["tfidf-qa-mlm"]["kind"] == "rerank"
    assert math["rerankers"]["tfidf-qa-mlm"]["batch_size"] == 16  # the MLM re-ranker's default
    assert systems(config, "arqmath", "arqmath1")["tfidf-qa-colbert"] == "math_models"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.update(encoder="splade"), "tfidf-qa-colbert.encoder: 'splade' is not one of"),
        (lambda r: r.update(max_length=128), "tfidf-qa-colbert: Additional properties"),
        (lambda r: r.update(depth=0), "tfidf-qa-colbert.depth: 0 is less than the minimum"),
        (lambda r: r.update(base="nope"), "config: math_models.rerankers.tfidf-qa-colbert.base: "
                                          "no run 'nope'"),
    ],
)  # fmt: skip
def test_encoder_reranker_entries_are_checked(config, edit, message):
    broken = copy.deepcopy(config)
    edit(broken["math_models"]["rerankers"]["tfidf-qa-colbert"])
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate_config(broken, SCHEMA, "config.yaml")


def test_an_encoder_reranker_needs_the_encoders_settings(config):
    del config["math_models"]["colbert"]
    with pytest.raises(ConfigError, match=r"\.encoder: no math_models\.colbert settings"):
        validate_config(config, SCHEMA, "config.yaml")


def test_an_mlm_reranker_still_needs_its_depth(config):
    del config["math_models"]["rerankers"]["tfidf-qa-mlm"]["depth"]
    with pytest.raises(ConfigError, match="tfidf-qa-mlm: 'depth' is a required property"):
        validate_config(config, SCHEMA, "config.yaml")


def test_the_schemas_encoder_names_are_the_registrys():
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    math = schema["properties"]["math_models"]["properties"]
    entry = math["rerankers"]["additionalProperties"]["properties"]
    assert entry["encoder"]["enum"] == list(ENCODERS)
