"""ColBERT through colbert-ai on CPU: a tiny random BERT trains, indexes and searches offline,
the same seed gives the same run file byte for byte, and bad triplets name file and line."""

from __future__ import annotations

import contextlib
import json
import math
import random
import shutil
import string
import subprocess
from pathlib import Path

import pytest
import torch
from colbert.indexing.collection_encoder import CollectionEncoder
from colbert.infra import ColBERTConfig
from colbert.modeling.checkpoint import Checkpoint
from colbert.modeling.tokenization import DocTokenizer, QueryTokenizer
from tokenizers import AddedToken
from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.neural.colbert import DOC_IDS_FILE, index_colbert, search_colbert, train_colbert
from hybrid_ir.neural.models import directory_size
from hybrid_ir.runs import write_run

WORDS = (
    "what is the integral derivative of sine cosine function limit series sum prime number "
    "matrix group ring field proof theorem converge diverge value equal zero one two x y n"
).split()
MATH_TOKENS = ("<Vert>", "<infty>")
SPECIALS = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# colbert's Checkpoint asks for CUDA mixed precision, which torch turns off on CPU, with a warning.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.cuda.amp:FutureWarning", "ignore:.*CUDA is not available:UserWarning"
)

STEPS = 6
BATCH = 4
DIM = 16
TRAINING = dict(steps=STEPS, batch_size=BATCH, lr=1e-4, dim=DIM, query_maxlen=16, doc_maxlen=64)


def _tiny_bert(path: Path, specials: list[str] = SPECIALS) -> Path:
    """A random 2-layer BERT with its MLM head (extra weights colbert must skip) and two math
    tokens added after the WordPiece vocabulary, embeddings resized to match."""
    vocab = [*specials, *string.punctuation, *WORDS]
    tokenizer = BertTokenizerFast(vocab={token: i for i, token in enumerate(vocab)})
    tokenizer.add_tokens([AddedToken(token, normalized=False) for token in MATH_TOKENS])
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
    )
    model = BertForMaskedLM(config)
    model.resize_token_embeddings(len(tokenizer))
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


@pytest.fixture(scope="session")
def backbone(tmp_path_factory) -> Path:
    return _tiny_bert(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="session")
def documents() -> dict[str, str]:
    """Enough tokens that k-means has at least as many sampled vectors as centroids."""
    rng = random.Random(7)
    return {
        f"doc{i:02d}": _text(rng, 12) + (" <Vert> x <infty>" if i % 3 == 0 else "")
        for i in range(20)
    }


@pytest.fixture(scope="session")
def queries() -> dict[str, str]:
    return {"q1": "integral of sine", "q2": "prime <Vert> x <infty>", "q3": "matrix group ring"}


@pytest.fixture(scope="session")
def triplets(tmp_path_factory, documents) -> Path:
    rng = random.Random(3)
    path = tmp_path_factory.mktemp("triplets") / "triplets.jsonl"
    lines = []
    for i in range(8):
        positive, negative = f"doc{i:02d}", f"doc{i + 10:02d}"
        record = {
            "query_id": f"t{i}",
            "query": _text(rng, 5),
            "positive_id": positive,
            "positive": documents[positive],
            "negative_id": negative,
            "negative": documents[negative],
        }
        lines.append(json.dumps(record) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _pipeline(root: Path, backbone, triplets, documents, queries, extensions_dir):
    """Train, index and search from scratch under ``root``."""
    checkpoint, index = root / "colbert", root / "index"
    training = train_colbert(
        backbone,
        triplets,
        checkpoint,
        **TRAINING,
        extensions_dir=extensions_dir,
        log_every=2,
    )
    indexing = index_colbert(
        checkpoint, documents, index, doc_maxlen=64, extensions_dir=extensions_dir
    )
    run = search_colbert(checkpoint, index, queries, k=50, extensions_dir=extensions_dir)
    return {"training": training, "indexing": indexing, "run": run, "root": root}


@pytest.fixture(scope="session")
def first(tmp_path_factory, backbone, triplets, documents, queries, extensions_dir):
    return _pipeline(
        tmp_path_factory.mktemp("first"), backbone, triplets, documents, queries, extensions_dir
    )


def test_query_tokenizer_adds_q_marker_and_mask_augmentation(backbone):
    config = ColBERTConfig(checkpoint=str(backbone), query_maxlen=12, doc_maxlen=32)
    queries = QueryTokenizer(config, verbose=0)
    tok = queries.tok
    ids, mask = queries.tensorize(["integral of <Vert> x"])
    tokens = tok.convert_ids_to_tokens(ids[0].tolist())
    assert tokens[:7] == ["[CLS]", "[unused0]", "integral", "of", "<Vert>", "x", "[SEP]"]
    assert tokens[7:] == ["[MASK]"] * 5 and len(tokens) == 12
    assert mask[0].tolist() == [1] * 7 + [0] * 5  # augmentation tokens are encoded, not attended
    doc_ids, _ = DocTokenizer(config).tensorize(["sine <infty>"])
    assert tok.convert_ids_to_tokens(doc_ids[0].tolist()) == [
        "[CLS]",
        "[unused1]",
        "sine",
        "<infty>",
        "[SEP]",
    ]


def test_training_writes_a_loadable_colbert_checkpoint(first, documents):
    facts, checkpoint = first["training"], first["root"] / "colbert"
    assert facts["steps"] == STEPS and facts["batch_size"] == BATCH
    assert len(facts["losses"]) == STEPS and all(math.isfinite(x) for x in facts["losses"])
    assert facts["final_loss"] == facts["losses"][-1]
    assert facts["seconds"] > 0 and facts["steps_per_second"] > 0
    assert not checkpoint.with_suffix(".tmp").exists()
    assert (checkpoint / "artifact.metadata").is_file()
    loaded = Checkpoint(str(checkpoint), ColBERTConfig.load_from_checkpoint(str(checkpoint)))
    assert loaded.colbert_config.dim == DIM and loaded.linear.weight.shape == (DIM, 32)
    assert loaded.raw_tokenizer.tokenize("x <Vert> y") == ["x", "<Vert>", "y"]
    vectors, lengths = loaded.docFromText(
        list(documents.values())[:2], bsize=2, keep_dims="flatten"
    )
    assert vectors.shape == (sum(lengths), DIM)
    torch.testing.assert_close(vectors.norm(dim=1), torch.ones(len(vectors)))


def test_index_stores_doc_ids_and_reports_its_size(first, documents):
    facts, index = first["indexing"], first["root"] / "index"
    assert facts["documents"] == len(documents) and facts["embeddings"] > len(documents)
    assert facts["size_bytes"] == directory_size(index) and facts["seconds"] > 0
    assert json.loads((index / DOC_IDS_FILE).read_text()) == list(documents)
    assert not index.with_suffix(".tmp").exists()


def test_small_collection_is_encoded_once_into_the_same_index(
    first, tmp_path, documents, extensions_dir, monkeypatch
):
    """The whole collection is both k-means sample and only chunk: one encoding serves both,
    and the index's tensors are those of colbert's two encodings."""
    calls = []
    encode_passages = CollectionEncoder.encode_passages

    def counted(self, passages):
        calls.append(len(passages))
        return encode_passages(self, passages)

    monkeypatch.setattr(CollectionEncoder, "encode_passages", counted)
    once = tmp_path / "once"
    index_colbert(first["root"] / "colbert", documents, once, doc_maxlen=64,
                  extensions_dir=extensions_dir)  # fmt: skip
    assert calls == [len(documents)]
    monkeypatch.setattr(
        "hybrid_ir.neural.colbert._encode_each_passage_list_once", contextlib.nullcontext
    )
    twice = tmp_path / "twice"
    index_colbert(first["root"] / "colbert", documents, twice, doc_maxlen=64,
                  extensions_dir=extensions_dir)  # fmt: skip
    assert calls == [len(documents)] * 3
    tensors = sorted(path.name for path in once.glob("*.pt"))
    assert tensors == sorted(path.name for path in twice.glob("*.pt")) and len(tensors) > 3
    for name in tensors:
        ours, colberts = torch.load(once / name), torch.load(twice / name)
        if isinstance(ours, torch.Tensor):
            assert torch.equal(ours, colberts), name
        else:
            assert all(torch.equal(a, b) for a, b in zip(ours, colberts, strict=True)), name


def test_search_ranks_our_doc_ids_by_descending_score(first, documents, queries, extensions_dir):
    run = first["run"]
    assert list(run) == list(queries)
    for docs in run.values():
        assert len(docs) == len(documents)  # k = 50 exceeds the collection: every document
        assert set(docs) <= set(documents)
        scores = list(docs.values())
        assert all(isinstance(score, float) for score in scores)
        assert scores == sorted(scores, reverse=True)
    root = first["root"]
    top = search_colbert(
        root / "colbert", root / "index", queries, k=5, extensions_dir=extensions_dir
    )
    assert {query: list(docs)[:5] for query, docs in run.items()} == {
        query: list(docs) for query, docs in top.items()
    }


def test_same_seed_gives_identical_run_files(
    first, tmp_path, backbone, triplets, documents, queries, extensions_dir
):
    second = _pipeline(tmp_path, backbone, triplets, documents, queries, extensions_dir)
    assert second["training"]["losses"] == first["training"]["losses"]
    assert second["run"] == first["run"]
    write_run(first["run"], tmp_path / "first.run", "colbert")
    write_run(second["run"], tmp_path / "second.run", "colbert")
    assert (tmp_path / "first.run").read_bytes() == (tmp_path / "second.run").read_bytes()


def test_another_seed_trains_differently(first, tmp_path, backbone, triplets, extensions_dir):
    facts = train_colbert(
        backbone,
        triplets,
        tmp_path / "colbert",
        **TRAINING,
        seed=7,
        extensions_dir=extensions_dir,
    )
    assert facts["losses"] != first["training"]["losses"]


def test_checkpoint_saves_from_a_detached_head_checkout(
    tmp_path, monkeypatch, backbone, triplets, extensions_dir
):
    """colbert records the git branch of the working directory in the checkpoint."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repository = tmp_path / "checkout"
    repository.mkdir()
    for command in (
        ["init", "-q"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "t"],
        ["checkout", "-q", "--detach"],
    ):
        subprocess.run(["git", *command], cwd=repository, check=True)
    monkeypatch.chdir(repository)
    train_colbert(
        backbone,
        triplets,
        tmp_path / "colbert",
        steps=1,
        batch_size=2,
        lr=1e-6,
        dim=DIM,
        doc_maxlen=64,
        extensions_dir=extensions_dir,
    )
    metadata = json.loads((tmp_path / "colbert" / "artifact.metadata").read_text())["meta"]
    assert "hostname" in metadata and "git_branch" not in metadata


@pytest.mark.parametrize(
    ("bad_line", "problem"),
    [('{"query_id": "t9", "query": ', "invalid JSON"), ('{"query_id": "t9"}', "lacks")],
)
def test_malformed_triplet_line_names_file_and_line(tmp_path, triplets, bad_line, problem):
    path = tmp_path / "bad.jsonl"
    good = triplets.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(good[:2]) + bad_line + "\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=problem) as caught:
        train_colbert(tmp_path, path, tmp_path / "out", steps=1, batch_size=1, lr=1e-6)
    assert str(caught.value).startswith(f"{path}:3: ")


def test_backbone_without_marker_tokens_is_a_config_error(tmp_path, triplets, extensions_dir):
    backbone = _tiny_bert(tmp_path / "bert", [t for t in SPECIALS if not t.startswith("[unused")])
    with pytest.raises(ConfigError, match=r"lacks ColBERT's marker tokens \[unused0\]"):
        train_colbert(
            backbone,
            triplets,
            tmp_path / "out",
            steps=1,
            batch_size=1,
            lr=1e-6,
            extensions_dir=extensions_dir,
        )
    assert not (tmp_path / "out").exists()


def test_bf16_autocast_trains_on_the_cpu(tmp_path, backbone, triplets, extensions_dir):
    """bf16 autocast of the forward passes: the same steps, losses within bf16's precision of
    fp32's (8 bits of mantissa: about 1%) on the first step, all finite."""
    settings = TRAINING | {"steps": 2}
    fp32 = train_colbert(backbone, triplets, tmp_path / "fp32", **settings,
                         extensions_dir=extensions_dir)  # fmt: skip
    bf16 = train_colbert(backbone, triplets, tmp_path / "bf16", **settings,
                         extensions_dir=extensions_dir, precision="bf16")  # fmt: skip
    assert all(math.isfinite(loss) for loss in bf16["losses"])
    assert bf16["losses"][0] == pytest.approx(fp32["losses"][0], rel=0.05)
    assert (tmp_path / "bf16" / "model.safetensors").exists()
