"""Paper 001's MLM re-ranker: cosine of mean-pooled embeddings of Q+A posts, head truncation, any
masked-LM backbone AutoModel loads (a tiny RoBERTa and a tiny BERT pretraining checkpoint)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml
from conftest import TINY_WORDS

from hybrid_ir.config.validation import validate_config
from hybrid_ir.data.runs import read_run, write_run
from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.neural import rerank
from hybrid_ir.neural.dense import topic_texts
from hybrid_ir.neural.rerank import rerank_by_embeddings

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
MAX_LENGTH = 24
LONG = "prime number " * 40  # far past MAX_LENGTH pieces
DOCUMENTS = {
    "d1": "prove that the sum of x and y is a prime",
    "d2": "the integral of the function is a number",
    "d3": "let p be prime and q a root of the matrix",
    "d4": LONG + "the norm inequality",
    "d5": "find the value of k",
}
QUERIES = {"A.1": "is the sum of two primes a prime", "A.2": "integral of a function"}
BASE = {
    "A.1": {"d1": 5.0, "d2": 4.0, "d3": 3.0, "d4": 2.0, "d5": 1.0},
    "A.2": {"d2": 3.0, "d4": 2.5, "d5": 2.0, "d1": 0.5},
}


def make_tiny_roberta(path: Path, seed: int = 0) -> Path:
    """A randomly initialised 2-layer RoBERTa masked LM with a byte-level BPE tokenizer trained
    here; its tokenizer config asks for left truncation, which the re-ranker must override."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([" ".join(TINY_WORDS)] * 3, vocab_size=400, special_tokens=specials)
    bpe.save_model(str(path))
    tokenizer = RobertaTokenizerFast(
        vocab=str(path / "vocab.json"), merges=str(path / "merges.txt"), truncation_side="left"
    )
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=MAX_LENGTH + 2 + 40,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    RobertaForMaskedLM(config).save_pretrained(path)
    return path


def make_bert_pretraining_checkpoint(path: Path, seed: int = 0) -> Path:
    """A tiny randomly initialised BERT saved as ``BertForPreTraining``, as this workflow's
    further pretraining saves its models (encoder weights under ``bert.``, MLM and NSP heads
    beside), with a WordPiece tokenizer over a small vocabulary."""
    import torch
    from transformers import BertConfig, BertForPreTraining, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    pieces = [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    vocab = dict.fromkeys(specials + list("abcdefghijklmnopqrstuvwxyz") + pieces + TINY_WORDS)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab=str(path / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=MAX_LENGTH + 40,
    )
    BertForPreTraining(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module", params=["roberta", "bert-pretraining"])
def backbone(request, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp(request.param)
    if request.param == "roberta":
        return make_tiny_roberta(root / "model")
    return make_bert_pretraining_checkpoint(root / "model")


def _direct_embedding(path: Path, text: str):
    """Mean of the last layer's vectors of ``text``'s first MAX_LENGTH - 2 pieces plus the two
    special tokens, computed one text at a time (no padding), unit length."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    pieces = tokenizer(text, add_special_tokens=False)["input_ids"][: MAX_LENGTH - 2]
    ids = [tokenizer.cls_token_id, *pieces, tokenizer.sep_token_id]  # <s> ... </s> in RoBERTa
    with torch.inference_mode():
        hidden = model(input_ids=torch.tensor([ids])).last_hidden_state[0]
    return torch.nn.functional.normalize(hidden.mean(0), dim=0).numpy()


def _rerank(path: Path, depth: int = 4, documents=DOCUMENTS, base=BASE, **extra):
    return rerank_by_embeddings(
        path, base, documents, QUERIES, depth=depth, max_length=MAX_LENGTH, batch_size=2, **extra
    )


def test_scores_are_the_cosine_of_mean_pooled_embeddings(backbone):
    run = _rerank(backbone)
    assert {topic: set(docs) for topic, docs in run.items()} == {
        "A.1": {"d1", "d2", "d3", "d4"},
        "A.2": {"d2", "d4", "d5", "d1"},
    }
    assert len({score for docs in run.values() for score in docs.values()}) >= 6  # not flat
    for topic, docs in run.items():
        query = _direct_embedding(backbone, QUERIES[topic])
        for doc, score in docs.items():
            expected = float(_direct_embedding(backbone, DOCUMENTS[doc]) @ query)
            # batch_size 2 pads the shorter text of each batch: masked, so only float rounding
            # and the six decimals written to the run separate the two.
            assert score == pytest.approx(expected, abs=2e-6), (topic, doc)
            assert score == round(score, 6)


def test_truncation_keeps_exactly_the_head(backbone):
    """Everything past the first MAX_LENGTH - 2 pieces is ignored, whatever the tokenizer's own
    truncation side; a change inside the head changes the score."""
    from transformers import AutoTokenizer

    if "roberta" in str(backbone):
        assert AutoTokenizer.from_pretrained(backbone).truncation_side == "left"
    other_tail = dict(DOCUMENTS, d4=LONG + "a matrix group and a ring " * 5)
    other_head = dict(DOCUMENTS, d4="matrix norm inequality root " * 3 + LONG)
    first, tail, head = (
        _rerank(backbone, documents=docs) for docs in (DOCUMENTS, other_tail, other_head)
    )
    assert tail == first
    assert head["A.1"]["d4"] != first["A.1"]["d4"]
    assert head["A.1"]["d1"] == first["A.1"]["d1"]


def test_each_candidate_is_encoded_once_and_only_the_top_depth(backbone, monkeypatch):
    encoded: list[str] = []
    original = rerank.Encoder.encode

    def counting(self, texts, progress=False):
        encoded.extend(texts)
        return original(self, texts, progress)

    monkeypatch.setattr(rerank.Encoder, "encode", counting)
    run = _rerank(backbone, depth=2)
    assert {topic: set(docs) for topic, docs in run.items()} == {
        "A.1": {"d1", "d2"},
        "A.2": {"d2", "d4"},
    }
    # d2 is a candidate of both topics: one encoding; d3 and d5 are below depth 2: none.
    documents = [DOCUMENTS[doc] for doc in ("d1", "d2", "d4")]
    assert sorted(encoded) == sorted(documents + list(QUERIES.values()))


def test_ties_are_broken_by_doc_id_and_the_output_is_stable(backbone, tmp_path):
    twins = dict(DOCUMENTS, d5=DOCUMENTS["d1"])
    base = {"A.1": {"d1": 2.0, "d5": 1.0, "d2": 0.5}}
    run = rerank_by_embeddings(backbone, base, twins, {"A.1": QUERIES["A.1"]}, depth=3)
    assert run["A.1"]["d1"] == run["A.1"]["d5"]
    write_run(run, tmp_path / "first.trec", tag="t")
    again = rerank_by_embeddings(backbone, base, twins, {"A.1": QUERIES["A.1"]}, depth=3)
    write_run(again, tmp_path / "second.trec", tag="t")
    text = (tmp_path / "first.trec").read_text()
    assert text == (tmp_path / "second.trec").read_text()
    docs = [line.split()[2] for line in text.splitlines()]
    assert docs.index("d5") == docs.index("d1") - 1  # equal scores: doc id descending
    assert read_run(tmp_path / "first.trec") == run


def test_a_candidate_missing_from_the_corpus_is_named(backbone):
    with pytest.raises(HybridIRError, match="document 'd9' .* is not in the corpus"):
        rerank_by_embeddings(backbone, {"A.1": {"d9": 1.0}}, DOCUMENTS, QUERIES, depth=5)


def test_qa_posts_join_question_and_answer_fields():
    record = {"id": "7", "title": "Prime sums", "question": "Is 2 + 3 prime?", "text": "Yes."}
    fields = ["title", "question", "text"]
    assert topic_texts([record], fields, "\n") == {"7": "Prime sums\nIs 2 + 3 prime?\nYes."}
    with pytest.raises(ConfigError, match="record '7' has no field 'body'"):
        topic_texts([record], ["title", "body"], "\n")


@pytest.fixture()
def config() -> dict:
    return yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))


def test_the_mlm_reranker_defaults_to_qa_posts_and_head_truncation(config):
    entry = config["math_models"]["rerankers"]["tfidf-qa-mlm"]
    assert entry.pop("max_length") == 256  # the default configuration's cheaper cap
    validate_config(config, SCHEMA, "config.yaml")
    assert entry["doc_fields"] == ["title", "question", "text"]
    assert entry["query_fields"] == ["title", "text"]
    assert entry["max_length"] == 512  # the paper's 510 pieces with [CLS] and [SEP]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.update(doc_fields=[]), "tfidf-qa-mlm.doc_fields: [] should be non-empty"),
        (lambda r: r.update(pooling="cls"), "tfidf-qa-mlm: Additional properties"),
        (lambda r: r.update(max_length=1024), "tfidf-qa-mlm.max_length: 1024 is greater than"),
    ],
)
def test_mlm_reranker_entries_are_checked(config, edit, message):
    broken = copy.deepcopy(config)
    edit(broken["math_models"]["rerankers"]["tfidf-qa-mlm"])
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate_config(broken, SCHEMA, "config.yaml")
