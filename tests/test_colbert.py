"""ColBERT through colbert-ai on CPU: a tiny random BERT trains, indexes and searches offline,
the same seed gives the same run file byte for byte, and bad triplets name file and line."""

from __future__ import annotations

import contextlib
import functools
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

from hybrid_ir.data.runs import write_run
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.neural.colbert import (
    DOC_IDS_FILE,
    MARKERS,
    index_colbert,
    rerank_colbert,
    search_colbert,
    train_colbert,
)
from hybrid_ir.neural.colbert_compat import build_cpu_kernels
from hybrid_ir.neural.models import directory_size

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
LENGTHS = dict(query_maxlen=16, doc_maxlen=64)


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
    run = search_colbert(checkpoint, index, queries, k=50, **LENGTHS, extensions_dir=extensions_dir)
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
        "hybrid_ir.neural.colbert.encode_each_passage_list_once", contextlib.nullcontext
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
        root / "colbert", root / "index", queries, k=5, **LENGTHS, extensions_dir=extensions_dir
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


def _tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def test_a_vocabulary_without_markers_gets_them_in_a_copy_of_the_backbone(
    tmp_path, triplets, extensions_dir
):
    """The markers become added special tokens, with embedding rows, in the checkpoint; the
    backbone directory is left as it was and the copy is removed."""
    backbone = _tiny_bert(tmp_path / "bert", [t for t in SPECIALS if not t.startswith("[unused")])
    before = _tree(backbone)
    train_colbert(backbone, triplets, tmp_path / "out", steps=1, batch_size=2, lr=1e-6, dim=DIM,
                  doc_maxlen=64, extensions_dir=extensions_dir)  # fmt: skip
    assert _tree(backbone) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bert", "out"]
    loaded = Checkpoint(
        str(tmp_path / "out"), ColBERTConfig.load_from_checkpoint(str(tmp_path / "out"))
    )
    vocabulary = len(BertTokenizerFast.from_pretrained(backbone))
    markers = loaded.raw_tokenizer.convert_tokens_to_ids(list(MARKERS))
    assert markers == [vocabulary, vocabulary + 1]
    assert loaded.bert.get_input_embeddings().weight.shape[0] == vocabulary + 2
    ids, _ = loaded.query_tokenizer.tensorize(["sine"])
    assert ids[0, 1].item() == markers[0]


def test_a_tokenizer_that_cannot_hold_the_markers_is_a_config_error(
    tmp_path, triplets, extensions_dir, monkeypatch
):
    backbone = _tiny_bert(tmp_path / "bert", [t for t in SPECIALS if not t.startswith("[unused")])
    monkeypatch.setattr(BertTokenizerFast, "add_tokens", lambda self, *args, **kwargs: 0)
    with pytest.raises(ConfigError, match=r"lacks ColBERT's marker tokens \[unused0\] and "
                                          r"\[unused1\] and cannot add them"):  # fmt: skip
        train_colbert(
            backbone,
            triplets,
            tmp_path / "out",
            steps=1,
            batch_size=1,
            lr=1e-6,
            extensions_dir=extensions_dir,
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bert"]


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


def _weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(checkpoint / "model.safetensors")


def _without_dropout(path: Path) -> Path:
    """The tiny BERT with dropout off: pieces of a batch draw other dropout masks than the
    whole batch, which would hide the comparison of their gradients."""
    backbone = _tiny_bert(path)
    config = json.loads((backbone / "config.json").read_text())
    config |= {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    (backbone / "config.json").write_text(json.dumps(config))
    return backbone


def test_micro_batches_accumulate_to_one_step_of_the_whole_batch(
    tmp_path, triplets, extensions_dir
):
    """Batches of 4 triplets as 2 x 2 and 4 x 1 pieces: the same losses and weights after two
    steps as one forward pass of 4, up to float rounding (the pieces sum in another order)."""
    backbone = _without_dropout(tmp_path / "bert")
    settings = TRAINING | {"steps": 2}
    whole = train_colbert(backbone, triplets, tmp_path / "whole", **settings,
                          extensions_dir=extensions_dir)  # fmt: skip
    expected = _weights(tmp_path / "whole")
    for micro in (2, 1):
        output = tmp_path / f"micro-{micro}"
        facts = train_colbert(backbone, triplets, output, **settings, micro_batch_size=micro,
                              extensions_dir=extensions_dir)  # fmt: skip
        assert facts["micro_batch_size"] == micro
        assert facts["losses"] == pytest.approx(whole["losses"], rel=1e-6)
        weights = _weights(output)
        assert weights.keys() == expected.keys()
        for name, tensor in weights.items():
            torch.testing.assert_close(tensor, expected[name], rtol=1e-5, atol=1e-7, msg=name)
        assert not all(torch.equal(weights[name], expected[name]) for name in weights)


def test_micro_batch_size_must_divide_the_batch(tmp_path, triplets):
    message = r"^config: math_models\.colbert\.micro_batch_size: 3 does not divide the 4 exam"
    with pytest.raises(ConfigError, match=message):
        train_colbert(tmp_path, triplets, tmp_path / "out", steps=1, batch_size=4, lr=1e-6,
                      micro_batch_size=3)  # fmt: skip


class _Killed(Exception):
    pass


def _kill_at(monkeypatch, step: int) -> None:
    """Stop training as a kill would, once the steps before ``step`` are done."""
    import hybrid_ir.neural.colbert as module

    batch = module._batch

    def batch_or_die(examples, at, size):
        if at == step:
            raise _Killed(at)
        return batch(examples, at, size)

    monkeypatch.setattr(module, "_batch", batch_or_die)


def test_a_killed_run_resumes_to_the_same_weights(
    tmp_path, backbone, triplets, extensions_dir, monkeypatch, caplog
):
    """Dropout on: only restored random generators give the same masks after a restart. A
    checkpoint after every step; training killed during step 5 resumes from step 4 and ends
    with the weights (the safetensors bytes) of a run without checkpoints, keeping the newest
    two checkpoints."""
    plain = train_colbert(backbone, triplets, tmp_path / "plain", **TRAINING,
                          extensions_dir=extensions_dir)  # fmt: skip
    workdir = tmp_path / "work"
    resumable = dict(TRAINING, checkpoint_every=1, workdir=workdir, extensions_dir=extensions_dir)
    with monkeypatch.context() as patched:
        _kill_at(patched, 4)
        with pytest.raises(_Killed):
            train_colbert(backbone, triplets, tmp_path / "resumed", **resumable)
    assert sorted(path.name for path in workdir.iterdir()) == ["step-0000003", "step-0000004"]
    assert not (tmp_path / "resumed").exists()
    with caplog.at_level("INFO", logger="hybrid_ir.neural.colbert"):
        resumed = train_colbert(backbone, triplets, tmp_path / "resumed", **resumable)
    assert f"resumes from {workdir / 'step-0000004'} (step 4)" in caplog.text
    assert resumed["resumed_from_step"] == 4 and plain["resumed_from_step"] == 0
    assert resumed["losses"] == plain["losses"]
    plain_bytes = (tmp_path / "plain" / "model.safetensors").read_bytes()
    assert (tmp_path / "resumed" / "model.safetensors").read_bytes() == plain_bytes
    # The final step writes the model, not a checkpoint.
    assert sorted(path.name for path in workdir.iterdir()) == ["step-0000004", "step-0000005"]


def test_a_checkpoint_made_otherwise_is_ignored_naming_what_differs(
    tmp_path, backbone, triplets, extensions_dir, monkeypatch, caplog
):
    workdir = tmp_path / "work"
    resumable = dict(TRAINING, checkpoint_every=2, workdir=workdir, extensions_dir=extensions_dir)
    with monkeypatch.context() as patched:
        _kill_at(patched, 3)
        with pytest.raises(_Killed):
            train_colbert(backbone, triplets, tmp_path / "out", **resumable)
    other = resumable | {"lr": 1e-3, "micro_batch_size": 2}
    with caplog.at_level("INFO", logger="hybrid_ir.neural.colbert"):
        facts = train_colbert(backbone, triplets, tmp_path / "out", **other)
    assert facts["resumed_from_step"] == 0
    ignored = [record.message for record in caplog.records if "ignoring" in record.message]
    assert ignored == [f"ignoring {workdir / 'step-0000002'}: made with other micro_batch_size, lr"]
    changed = tmp_path / "changed.jsonl"
    changed.write_text(triplets.read_text() + triplets.read_text().splitlines(keepends=True)[0])
    caplog.clear()
    with caplog.at_level("INFO", logger="hybrid_ir.neural.colbert"):
        train_colbert(backbone, changed, tmp_path / "out", **other)
    assert "ignoring" in caplog.text and "made with other triplets" in caplog.text


def test_the_encoder_entry_passes_accumulation_and_checkpoints(
    tmp_path, backbone, triplets, extensions_dir
):
    from hybrid_ir.neural.encoders import Job, encoder

    entry = {"steps": 3, "batch_size": 4, "lr": 1e-4, "weight_decay": 0.01, "dim": DIM, "seed": 3}
    entry |= LENGTHS | {
        "micro_batch_size": 2,
        "checkpoint_every": 1,
        "workdir": str(tmp_path / "w"),
    }
    facts = encoder("colbert").train(str(backbone), triplets, tmp_path / "out", entry,
                                     Job(extensions_dir=extensions_dir))  # fmt: skip
    assert facts["micro_batch_size"] == 2 and facts["steps"] == 3
    assert sorted(path.name for path in (tmp_path / "w").iterdir()) == [
        "step-0000001",
        "step-0000002",
    ]


def _colbert_modules() -> list:
    import sys

    return [
        module
        for name, module in sys.modules.items()
        if name.split(".")[0] == "colbert"
        and isinstance(getattr(module, "DEVICE", None), torch.device)
    ]


def test_the_cpu_is_forced_where_colbert_would_take_the_gpu(
    first, documents, queries, extensions_dir, monkeypatch
):
    """colbert imported on a CUDA machine: its DEVICE is cuda and it counts a GPU. A CPU job
    still searches and re-ranks on the CPU, with the scores of a machine without CUDA."""
    from colbert.infra.config.settings import RunSettings

    root = first["root"]
    candidates = {query: list(docs)[:6] for query, docs in first["run"].items()}
    expected = rerank_colbert(root / "colbert", root / "index", candidates, queries, **LENGTHS,
                              extensions_dir=extensions_dir)  # fmt: skip
    cuda = torch.device("cuda")
    for module in _colbert_modules():
        monkeypatch.setattr(module, "DEVICE", cuda)
    monkeypatch.setattr(RunSettings, "total_visible_gpus", 1)
    run = search_colbert(root / "colbert", root / "index", queries, k=50, **LENGTHS,
                         extensions_dir=extensions_dir, device="cpu")  # fmt: skip
    assert run == first["run"]
    reranked = rerank_colbert(root / "colbert", root / "index", candidates, queries, **LENGTHS,
                              extensions_dir=extensions_dir, device="cpu")  # fmt: skip
    assert reranked == expected
    assert all(module.DEVICE == cuda for module in _colbert_modules())
    assert RunSettings.total_visible_gpus == 1


def test_a_cuda_call_points_colbert_at_the_gpu_for_its_duration(monkeypatch):
    """What can be checked without a GPU: colbert's device globals, its GPU count, the
    inference autocast and faiss's k-means are the job's inside the call, and put back."""
    import faiss
    from colbert.indexing import collection_indexer
    from colbert.infra.config.settings import RunSettings
    from colbert.modeling import checkpoint as colbert_checkpoint

    import hybrid_ir.neural.colbert_compat as module

    entered = []
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(
        torch.cuda, "device", lambda device: entered.append(device) or contextlib.nullcontext()
    )
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 0)
    before = {id(m): m.DEVICE for m in _colbert_modules()}
    manager, kmeans = (
        colbert_checkpoint.MixedPrecisionManager,
        collection_indexer.compute_faiss_kmeans,
    )
    gpus = RunSettings.total_visible_gpus
    with module.on_device("cuda:1", "bf16"):
        assert {m.DEVICE for m in _colbert_modules()} == {torch.device("cuda:1")}
        assert ColBERTConfig().total_visible_gpus == 2
        amp = colbert_checkpoint.MixedPrecisionManager(True).context()
        assert (amp.device, amp.fast_dtype) == ("cuda", torch.bfloat16)
        assert collection_indexer.compute_faiss_kmeans is not kmeans
    assert entered == [torch.device("cuda:1")]
    assert {id(m): m.DEVICE for m in _colbert_modules()} == before
    assert colbert_checkpoint.MixedPrecisionManager is manager
    assert collection_indexer.compute_faiss_kmeans is kmeans
    assert RunSettings.total_visible_gpus == gpus


def _fake_nvcc(root: Path, release: str) -> Path:
    nvcc = root / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.1'\n")
    nvcc.chmod(0o755)
    return root


def test_cuda_indexing_and_search_need_an_nvcc_matching_torch(tmp_path, documents, monkeypatch):
    """Checked before any work: colbert's residual codec compiles CUDA kernels on a GPU."""
    from torch.utils import cpp_extension

    import hybrid_ir.neural.colbert_compat as module

    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", None)
    fix = (
        r"install the CUDA toolkit 12\.4, set CUDA_HOME to it, or run ColBERT indexing and "
        r"search with device: cpu"
    )
    with pytest.raises(
        ConfigError,
        match=r"^config: math_models\.device: .*found no CUDA_HOME and no nvcc on PATH; " + fix,
    ):
        search_colbert(tmp_path / "none", tmp_path / "none", {"q": "x"}, **LENGTHS, device="cuda")
    with pytest.raises(ConfigError, match=fix):
        index_colbert(tmp_path / "none", documents, tmp_path / "index", device="cuda:0")
    assert not (tmp_path / "index").exists()
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(_fake_nvcc(tmp_path / "cuda", "11.8")))
    with pytest.raises(ConfigError, match=r"found nvcc 11\.8 under CUDA_HOME .*; " + fix):
        module.check_cuda_toolkit()
    monkeypatch.setattr(torch.version, "cuda", "11.8")
    module.check_cuda_toolkit()


def test_precision_autocasts_the_encoders(first, documents, queries, extensions_dir):
    """bf16 re-ranks within bf16's precision of fp32; fp16 needs CUDA."""
    checkpoint, index = first["root"] / "colbert", first["root"] / "index"
    candidates = {query: list(docs)[:6] for query, docs in first["run"].items()}
    fp32 = rerank_colbert(checkpoint, index, candidates, queries, **LENGTHS,
                          extensions_dir=extensions_dir)  # fmt: skip
    bf16 = rerank_colbert(checkpoint, index, candidates, queries, **LENGTHS,
                          extensions_dir=extensions_dir, precision="bf16")  # fmt: skip
    pairs = [(bf16[q][d], fp32[q][d]) for q in fp32 for d in fp32[q]]
    assert all(ours == pytest.approx(theirs, rel=0.05) for ours, theirs in pairs)
    assert any(ours != theirs for ours, theirs in pairs)
    with pytest.raises(ConfigError, match="fp16 needs CUDA"):
        rerank_colbert(checkpoint, index, candidates, queries, **LENGTHS, precision="fp16")


def test_search_candidates_are_bounded(first, queries, extensions_dir):
    """One cell per query token and 8 documents past the centroid scores: at most 2 scored in
    full, with the scores the unbounded search gives them; more cells than the index holds
    is every cell."""
    root = first["root"]
    search = functools.partial(search_colbert, root / "colbert", root / "index", queries, k=50,
                               **LENGTHS, extensions_dir=extensions_dir)  # fmt: skip
    bounded = search(ncells=1, centroid_score_threshold=0.2, ndocs=8)
    assert list(bounded) == list(queries)
    for query, docs in bounded.items():
        assert 1 <= len(docs) <= 2
        for doc, score in docs.items():
            assert score == pytest.approx(first["run"][query][doc], rel=1e-5)
    assert search(ncells=10**6) == first["run"]


def test_search_bounds_must_be_positive(tmp_path):
    from hybrid_ir.neural.colbert import check_colbert_search_bounds

    check_colbert_search_bounds(None, None)
    check_colbert_search_bounds(1, 4)
    with pytest.raises(ConfigError, match=r"^config: math_models\.colbert\.ncells: must be >= 1"):
        check_colbert_search_bounds(0, None)
    key = "math_models.released.x"
    with pytest.raises(ConfigError, match=r"^config: math_models\.released\.x\.ndocs: .* got -4"):
        check_colbert_search_bounds(None, -4, key)
    with pytest.raises(ConfigError, match=r"math_models\.colbert\.ndocs"):
        search_colbert(tmp_path, tmp_path, {"q": "x"}, **LENGTHS, ndocs=0)


def test_a_roberta_backbone_trains_indexes_searches_and_reranks(
    tmp_path, triplets, documents, queries, extensions_dir
):
    """RoBERTa's byte-level BPE has no [unused*]: the markers are added, and every step loads
    them from the checkpoint; re-ranking gives the candidates their search scores."""
    from test_mlm_rerank import make_tiny_roberta

    backbone = make_tiny_roberta(tmp_path / "roberta")
    before = _tree(backbone)
    checkpoint, index = tmp_path / "colbert", tmp_path / "index"
    facts = train_colbert(backbone, triplets, checkpoint, **(TRAINING | {"steps": 2, "dim": 64}),
                          extensions_dir=extensions_dir)  # fmt: skip
    assert all(math.isfinite(loss) for loss in facts["losses"])
    assert _tree(backbone) == before
    loaded = Checkpoint(str(checkpoint), ColBERTConfig.load_from_checkpoint(str(checkpoint)))
    assert type(loaded.bert).__name__ == "RobertaModel"
    markers = loaded.raw_tokenizer.convert_tokens_to_ids(list(MARKERS))
    assert loaded.raw_tokenizer.unk_token_id not in markers
    ids, _ = loaded.query_tokenizer.tensorize(["integral of sine"])
    tokens = loaded.raw_tokenizer.convert_ids_to_tokens(ids[0].tolist())
    assert tokens[:2] == ["<s>", "[unused0]"] and tokens[-1] == "<mask>"
    index_colbert(checkpoint, documents, index, nbits=8, doc_maxlen=64,
                  extensions_dir=extensions_dir)  # fmt: skip
    run = search_colbert(checkpoint, index, queries, k=50, **LENGTHS,
                         extensions_dir=extensions_dir)  # fmt: skip
    assert all(len(docs) == len(documents) for docs in run.values())
    candidates = {query: list(docs)[:5] for query, docs in run.items()}
    reranked = rerank_colbert(checkpoint, index, candidates, queries, **LENGTHS,
                              extensions_dir=extensions_dir)  # fmt: skip
    for query, docs in reranked.items():
        assert set(docs) == set(candidates[query])
        for doc, score in docs.items():
            assert score == pytest.approx(run[query][doc], rel=1e-6), (query, doc)


def test_setup_builds_every_cpu_kernel_a_job_loads(extensions_dir):
    """`make setup` compiles them, so that no workflow job waits on another's compile lock."""
    build_cpu_kernels(extensions_dir)
    built = {path.name for path in extensions_dir.iterdir() if any(path.glob("*.so"))}
    kernels = ("segmented_maxsim", "segmented_lookup", "filter_pids", "decompress_residuals")
    assert {f"{kernel}_cpp" for kernel in kernels} <= built
