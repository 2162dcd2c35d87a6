"""Released checkpoints (math_models.released, a re-ranker's ``released`` or ``checkpoint``): a
DPR or ColBERT model written to disk as this workflow's fine-tuning writes it is indexed and
searched through the released route, by local path or by hub id (from a hub cache the test
fills, offline), into the same run as through the fine-tuned route; the DAG of a released run
has no training job; a missing local checkpoint is a configuration error naming its key."""

from __future__ import annotations

import copy
import json
import os
import random
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from test_colbert import WORDS, _tiny_bert

from hybrid_ir.config.run_origins import systems
from hybrid_ir.config.settings import math_model_runs
from hybrid_ir.config.validation import validate_config
from hybrid_ir.data.hub import local_checkpoint
from hybrid_ir.data.runs import write_run
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.neural.encoders import Job, encoder, model_texts

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.cuda.amp:FutureWarning", "ignore:.*CUDA is not available:UserWarning"
)

DPR = {"steps": 3, "batch_size": 2, "lr": 1e-3, "seed": 3, "weight_decay": 0.01}
DPR |= {"query_max_length": 16, "passage_max_length": 32, "encode_batch_size": 2}
COLBERT = {"steps": 2, "batch_size": 4, "lr": 1e-4, "weight_decay": 0.01, "dim": 16}
COLBERT |= {"query_maxlen": 16, "doc_maxlen": 64, "nbits": 2, "seed": 5}
# What a released entry may set: the index and search settings, not the training ones.
SEARCH_KEYS = {
    "dpr": ("query_max_length", "passage_max_length", "encode_batch_size"),
    "colbert": ("query_maxlen", "doc_maxlen", "nbits", "seed"),
}
QUERIES = {"q1": "integral of sine", "q2": "prime number x", "q3": "matrix group ring"}
HUB_ID = "paper-authors/tiny-{kind}"
SETTINGS = {"dpr": DPR, "colbert": COLBERT}


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


@pytest.fixture(scope="module")
def documents() -> dict[str, str]:
    """Enough tokens for ColBERT's k-means."""
    rng = random.Random(13)
    return {f"doc{i:02d}": _text(rng, 15 + i % 5) for i in range(20)}


@pytest.fixture(scope="module")
def triplets(tmp_path_factory, documents) -> Path:
    rng = random.Random(5)
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


@pytest.fixture(scope="module")
def fine_tuned(tmp_path_factory, triplets, extensions_dir) -> dict[str, Path]:
    """Each encoder fine-tuned here, written where the workflow writes it."""
    root = tmp_path_factory.mktemp("results") / "models"
    backbone = _tiny_bert(tmp_path_factory.mktemp("bert"))
    job = Job(extensions_dir=extensions_dir)
    models = {}
    for kind, entry in (("dpr", DPR), ("colbert", COLBERT)):
        models[kind] = root / kind / "tiny"
        encoder(kind).train(str(backbone), triplets, models[kind], entry, job)
    return models


@pytest.fixture(scope="module")
def trained_runs(fine_tuned, documents, tmp_path_factory, extensions_dir) -> dict[str, str]:
    """Each fine-tuned model's run file, indexed and searched through the fine-tuned route."""
    job = Job(extensions_dir=extensions_dir)
    return {
        kind: _run_file(kind, model, SETTINGS[kind], documents, tmp_path_factory.mktemp(kind), job)
        for kind, model in fine_tuned.items()
    }


def _math_config(released: dict, rerankers: dict | None = None) -> dict:
    """The default configuration with these released runs (and re-rankers), each hub id among
    their checkpoints pinned."""
    from hybrid_ir.data.hub import is_hub_id

    loaded = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    loaded["math_models"]["released"] = released
    loaded["math_models"]["rerankers"] |= rerankers or {}
    checkpoints = [e["checkpoint"] for e in [*released.values(), *(rerankers or {}).values()]
                   if "checkpoint" in e]  # fmt: skip
    commit = "86b5e0934494bd15c9632b12f734a8a67f723594"
    loaded["hub_models"] = {c: {"revision": commit} for c in checkpoints if is_hub_id(c)}
    return loaded


def _released_entry(kind: str, checkpoint: str) -> dict:
    return {"encoder": kind, "checkpoint": checkpoint} | {
        key: SETTINGS[kind][key] for key in SEARCH_KEYS[kind]
    }


def _run_file(kind, model, settings, documents, root: Path, job: Job) -> str:
    """Index and search as the encoder_index and encoder_search jobs do; the run file's text."""
    index = root / "index"
    encoder(kind).index(Path(model), documents, index, settings, job)
    run = encoder(kind).search(Path(model), index, QUERIES, 50, settings, job)
    write_run(run, root / "run.trec", tag="x", k=50)
    return (root / "run.trec").read_text()


@pytest.mark.parametrize("kind", ["dpr", "colbert"])
def test_a_released_local_checkpoint_gives_the_fine_tuned_models_run(
    kind, fine_tuned, trained_runs, documents, tmp_path, extensions_dir
):
    released = tmp_path / "downloads" / f"{kind}-released"
    shutil.copytree(fine_tuned[kind], released)
    config = _math_config({"authors": _released_entry(kind, str(released))})
    validate_config(config, SCHEMA, "config.yaml")
    math = config["math_models"]
    assert math_model_runs(math)["authors"] == {"kind": kind, "checkpoint": str(released)}
    assert systems(config, "arqmath", "arqmath2")["authors"] == "math_models"
    entry = math["released"]["authors"]
    job = Job(extensions_dir=extensions_dir)
    released_run = _run_file(kind, entry["checkpoint"], entry, documents, tmp_path, job)
    assert released_run == trained_runs[kind]
    lines = released_run.splitlines()
    assert len(lines) == len(QUERIES) * len(documents)  # every document for every query
    assert len({line.split()[2] for line in lines[:20]}) == 20


def _hub_cache(root: Path, repo_id: str, model: Path) -> Path:
    """A Hugging Face hub cache holding ``model`` as ``repo_id`` at revision main, laid out as
    huggingface_hub writes it (snapshots/<commit>, refs/main)."""
    commit = "0" * 40
    repo = root / f"models--{repo_id.replace('/', '--')}"
    shutil.copytree(model, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return root


HUB_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from hybrid_ir.neural.encoders import Job, encoder
    from hybrid_ir.data.runs import write_run

    kind, model, settings, documents, queries, out, extensions = json.loads(sys.argv[1])
    job = Job(extensions_dir=Path(extensions))
    encoder(kind).index(Path(model), documents, Path(out) / "index", settings, job)
    run = encoder(kind).search(Path(model), Path(out) / "index", queries, 50, settings, job)
    write_run(run, Path(out) / "run.trec", tag="x", k=50)
    """
)


@pytest.mark.parametrize("kind", ["dpr", "colbert"])
def test_a_released_hub_id_is_loaded_from_the_hub_cache(
    kind, fine_tuned, trained_runs, documents, tmp_path, extensions_dir
):
    """Offline, from a cache the test fills: the hub id reaches transformers (and colbert) as
    a hub id, not as a path under the working directory."""
    repo_id = HUB_ID.format(kind=kind)
    assert local_checkpoint(repo_id) is None
    cache = _hub_cache(tmp_path / "hub", repo_id, fine_tuned[kind])
    entry = _released_entry(kind, repo_id)
    config = _math_config({"authors": entry})
    validate_config(config, SCHEMA, "config.yaml")  # no local directory is asked for
    settings = config["math_models"]["released"]["authors"]
    env = os.environ | {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    env |= {"TRANSFORMERS_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    work = tmp_path / "work"  # a working directory without a paper-authors/ folder
    work.mkdir()
    arguments = [kind, repo_id, settings, documents, QUERIES, str(work), str(extensions_dir)]
    result = subprocess.run(
        [sys.executable, "-c", HUB_SCRIPT, json.dumps(arguments)],
        cwd=work, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert (work / "run.trec").read_text() == trained_runs[kind]


@pytest.mark.parametrize(
    ("checkpoint", "local"),
    [
        ("approach0/dpr-cocomae-220", False),
        ("bert-base-uncased", False),
        ("./models/dpr", True),
        ("/data/models/dpr", True),
        ("~/models/dpr", True),
        ("results/models/dpr/minilm", True),  # more than one slash: never a hub id
    ],
)
def test_a_checkpoint_is_local_unless_it_can_only_be_a_hub_id(checkpoint, local):
    assert (local_checkpoint(checkpoint) is not None) is local


def test_an_existing_directory_is_local_even_when_named_like_a_hub_id(tmp_path, monkeypatch):
    (tmp_path / "owner" / "model").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert local_checkpoint("owner/model") == Path("owner/model")


def test_released_entries_take_index_and_search_defaults_and_the_top_level_seed():
    config = _math_config(
        {
            "a0-dpr": {"encoder": "dpr", "checkpoint": "approach0/dpr-cocomae-220"},
            "a0-colbert": {"encoder": "colbert", "checkpoint": "approach0/colbert-cocomae-600"},
        }
    )
    validate_config(config, SCHEMA, "config.yaml")
    released = config["math_models"]["released"]
    assert released["a0-dpr"] == {"encoder": "dpr", "checkpoint": "approach0/dpr-cocomae-220",
                                  "query_max_length": 64, "passage_max_length": 512,
                                  "encode_batch_size": 32, "shard_size": 100000,
                                  "encode_window": 16384, "pooling": "cls",
                                  "math_tokens": "angle"}  # fmt: skip
    assert released["a0-colbert"] == {"encoder": "colbert",
                                      "checkpoint": "approach0/colbert-cocomae-600",
                                      "query_maxlen": 32, "doc_maxlen": 180, "nbits": 2,
                                      "seed": config["seed"], "math_tokens": "angle",
                                      "ncells": None, "centroid_score_threshold": None,
                                      "ndocs": None}  # fmt: skip


def test_rerankers_name_a_released_run_or_an_mlm_checkpoint():
    config = _math_config(
        {"a0-dpr": {"encoder": "dpr", "checkpoint": "approach0/dpr-cocomae-220"}},
        {
            "a0-rerank-released": {"released": "a0-dpr", "base": "approach0-pya0"},
            "tfidf-psu": {"checkpoint": "shauryr/arqmath-roberta-base-1.5M",
                          "base": "tfidf-qa", "depth": 1000},
        },
    )  # fmt: skip
    validate_config(config, SCHEMA, "config.yaml")
    runs = math_model_runs(config["math_models"])
    assert runs["a0-rerank-released"] == {"kind": "encoder_rerank", "encoder": "dpr",
                                          "released": "a0-dpr", "base": "approach0-pya0",
                                          "depth": config["run_depth"]}  # fmt: skip
    assert runs["tfidf-psu"]["kind"] == "rerank"
    assert runs["tfidf-psu"]["checkpoint"] == "shauryr/arqmath-roberta-base-1.5M"


@pytest.mark.parametrize(
    ("released", "rerankers", "message"),
    [
        ({"x": {"encoder": "dpr", "checkpoint": "./no/such/dir"}}, {},
         "config.yaml: math_models.released.x.checkpoint: no such local checkpoint './no/such"),
        ({"dpr-minilm": {"encoder": "dpr", "checkpoint": "a/b"}}, {},
         "math_models.released.dpr-minilm: run name already used"),
        ({"x": {"encoder": "splade", "checkpoint": "a/b"}}, {},
         "math_models.released.x.encoder: 'splade' is not one of"),
        ({"x": {"encoder": "dpr", "checkpoint": "a/b", "nbits": 2}}, {},
         "math_models.released.x: Additional properties are not allowed ('nbits'"),
        ({}, {"r": {"released": "nope", "base": "tfidf-qa"}},
         "math_models.rerankers.r.released: no math_models.released entry 'nope'"),
        ({"x": {"encoder": "dpr", "checkpoint": "a/b"}},
         {"r": {"released": "x", "encoder": "dpr", "base": "tfidf-qa"}},
         "math_models.rerankers.r: an encoder re-ranker names either encoder and backbone"),
        ({}, {"r": {"base": "tfidf-qa", "depth": 5}},
         "math_models.rerankers.r: an MLM re-ranker names either backbone or checkpoint"),
        ({}, {"r": {"checkpoint": "a/b", "backbone": "minilm", "base": "tfidf-qa", "depth": 5}},
         "math_models.rerankers.r: an MLM re-ranker names either backbone or checkpoint"),
        ({}, {"r": {"checkpoint": "/no/such/roberta", "base": "tfidf-qa", "depth": 5}},
         "math_models.rerankers.r.checkpoint: no such local checkpoint '/no/such/roberta'"),
    ],
)  # fmt: skip
def test_bad_released_entries_are_config_errors_naming_the_key(released, rerankers, message):
    config = _math_config(copy.deepcopy(released), copy.deepcopy(rerankers))
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate_config(config, SCHEMA, "config.yaml")


def _dry_run(
    tmp_path: Path, math: dict, *targets: str, pins: dict | None = None
) -> subprocess.CompletedProcess:
    """``snakemake -n`` of targets in the repository, with ``math`` (released runs, unless it
    names its sections) and hub ``pins`` layered over config.yaml (jobs already done there do
    not show; training would, were it needed)."""
    sections = math if {"released", "rerankers"} & set(math) else {"released": math}
    layer = tmp_path / "released.yaml"
    layer.write_text(yaml.safe_dump({"math_models": sections, "hub_models": pins or {}}))
    env = {key: value for key, value in os.environ.items() if key != "HYBRID_IR_MIRROR"}
    command = [str(SNAKEMAKE), "-n", "--nolock", "--cores", "1", "--directory", str(REPO)]
    command += ["--snakefile", str(REPO / "Snakefile"), *targets, "--configfile", str(layer)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def _jobs(output: str) -> dict[str, list[str]]:
    """Rule name -> the input lines of its jobs in a dry run's listing."""
    jobs: dict[str, list[str]] = {}
    for block in re.split(r"\n(?=rule |localrule )", output):
        header = re.match(r"(?:local)?rule (\w+):", block)
        if header:
            inputs = re.search(r"^\s+input: (.*)$", block, re.MULTILINE)
            jobs.setdefault(header[1], []).append(inputs[1] if inputs else "")
    return jobs


def test_a_released_run_has_no_training_job_and_its_local_checkpoint_is_an_input(tmp_path):
    checkpoint = tmp_path / "authors-dpr"
    checkpoint.mkdir()
    released = {"authors-dpr": {"encoder": "dpr", "checkpoint": str(checkpoint)}}
    target = "results/runs/arqmath/arqmath2/authors-dpr.trec"
    result = _dry_run(tmp_path, released, target)
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = _jobs(result.stdout + result.stderr)
    assert {"encoder_index", "encoder_search"} <= set(jobs)
    assert not {"finetune", "pretrain", "triplets", "math_vocabulary"} & set(jobs)
    assert str(checkpoint) in jobs["encoder_index"][0].split(", ")
    assert str(checkpoint) in jobs["encoder_search"][0].split(", ")


def test_a_released_hub_id_is_fetched_on_the_submit_host_and_read_from_the_cache(tmp_path):
    released = {"authors-colbert": {"encoder": "colbert", "checkpoint": "approach0/colbert-x"}}
    target = "results/indexes/arqmath/authors-colbert"
    unpinned = _dry_run(tmp_path, released, target)
    assert unpinned.returncode != 0
    assert (
        "math_models.released.authors-colbert.checkpoint: hub model 'approach0/colbert-x' has "
        "no pinned revision"
    ) in unpinned.stderr + unpinned.stdout
    commit = "4e7c0a3b5d8f9e1a2b3c4d5e6f708192a3b4c5d6"
    pins = {"approach0/colbert-x": {"revision": commit}}
    result = _dry_run(tmp_path, released, target, pins=pins)
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = _jobs(result.stdout + result.stderr)
    assert "finetune" not in jobs
    assert len(jobs["fetch_hub_model"]) == 1
    cache = f"results/models/hub/approach0/colbert-x/{commit}"
    assert cache in jobs["encoder_index"][0].split(", ")
    fetch = result.stdout[result.stdout.index("rule fetch_hub_model:") :]
    assert fetch.splitlines()[1].split() == ["output:", cache]


def test_rerankers_with_released_models_have_no_training_job(tmp_path):
    """An encoder re-ranker naming a released run, and paper 001's re-ranker with a local
    checkpoint (PSU's RoBERTa, downloaded by the user), take their model as a job input; the
    encoder re-ranker reads the released model's index, built from that model too."""
    dpr, roberta = tmp_path / "authors-dpr", tmp_path / "arqmath-roberta"
    dpr.mkdir()
    roberta.mkdir()
    layer = {
        "released": {"authors-dpr": {"encoder": "dpr", "checkpoint": str(dpr)}},
        "rerankers": {
            "a0-rerank-authors": {"released": "authors-dpr", "base": "approach0-pya0"},
            "tfidf-psu": {"checkpoint": str(roberta), "base": "tfidf-qa", "depth": 1000},
        },
    }
    targets = [f"results/runs/arqmath/arqmath2/{name}.trec" for name in layer["rerankers"]]
    result = _dry_run(tmp_path, layer, *targets)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    jobs = _jobs(result.stdout + result.stderr)
    assert not {"finetune", "pretrain", "triplets"} & set(jobs)
    assert str(dpr) in jobs["encoder_rerank"][0].split(", ")
    assert "results/indexes/arqmath/authors-dpr" in jobs["encoder_rerank"][0].split(", ")
    assert str(dpr) in jobs["encoder_index"][0].split(", ")
    assert str(roberta) in jobs["mlm_rerank"][0].split(", ")


def test_a_missing_local_checkpoint_stops_the_dry_run_naming_the_key(tmp_path):
    released = {"authors-dpr": {"encoder": "dpr", "checkpoint": str(tmp_path / "missing")}}
    result = _dry_run(tmp_path, released, "results/runs/arqmath/arqmath2/authors-dpr.trec")
    assert result.returncode != 0
    # Named by the overlay that sets the key.
    key = "math_models.released.authors-dpr.checkpoint"
    said = f"{tmp_path / 'released.yaml'}: {key}: no such local checkpoint"
    assert said in result.stdout + result.stderr


def test_math_tokens_dollar_writes_pya0s_form_of_the_pre_tokenized_text():
    texts = {"d": "find <x> <plus> <1> <{> in a<b, <not a token and <Vert> <A> <Vert>"}
    assert model_texts(texts, {"math_tokens": "angle"}) == texts
    assert model_texts(texts, {}) == texts  # the workflow's own models
    assert model_texts(texts, {"math_tokens": "dollar"}) == {
        "d": "find $x$ $plus$ $1$ ${$ in a<b, <not a token and $Vert$ $A$ $Vert$"
    }


def _pya0_dpr(path: Path, prefix: str) -> Path:
    """A tiny DPR as pya0 saves one: BERT with its pooling layer under ``prefix`` (``bert``
    since pya0's ARQMath-3 code, whose models are on the hub; ``m_bert`` in its EMNLP 2022
    replication branch), weights drawn wide so that pooled vectors differ between texts."""
    import torch
    from transformers import BertConfig, BertModel, BertPreTrainedModel

    class DprEncoder(BertPreTrainedModel):
        def __init__(self, config):
            super().__init__(config)
            setattr(self, prefix, BertModel(config, add_pooling_layer=True))
            self.post_init()

    tokenizer_dir = _tiny_bert(path.parent / "tokenizer")
    config = BertConfig.from_pretrained(tokenizer_dir)
    config.initializer_range = 0.5
    torch.manual_seed(1)
    DprEncoder(config).save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / name, path / name)
    return path


def test_pooler_pooling_embeds_as_pya0s_dpr_encoder(tmp_path, documents):
    """pya0's DprEncoder returns BERT's ``pooler_output``; index and search with ``pooling:
    pooler`` rank by its dot products, and differently from [CLS] pooling."""
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = _pya0_dpr(tmp_path / "dpr", "bert")
    entry = _released_entry("dpr", str(model)) | {"pooling": "pooler", "math_tokens": "angle"}
    root = tmp_path / "pooler"
    root.mkdir()
    run_file = _run_file("dpr", model, entry, documents, root, Job())
    bert = AutoModel.from_pretrained(model).eval()
    tokenizer = AutoTokenizer.from_pretrained(model)

    def pooled(texts, max_length):
        inputs = tokenizer(texts, truncation=True, max_length=max_length, return_tensors="pt",
                           padding=True)  # fmt: skip
        with torch.inference_mode():
            return bert(**inputs).pooler_output.numpy()

    ids = list(documents)
    passages = np.vstack([pooled([documents[d]], DPR["passage_max_length"]) for d in ids])
    lines = [line.split() for line in run_file.splitlines()]
    for topic, text in QUERIES.items():
        scores = passages @ pooled([text], DPR["query_max_length"])[0]
        expected = sorted(zip(ids, scores, strict=True), key=lambda pair: (-pair[1], pair[0]))
        got = [(line[2], float(line[4])) for line in lines if line[0] == topic]
        assert [doc for doc, _ in got[:5]] == [doc for doc, _ in expected[:5]], topic
        for (_, score), (_, exact) in zip(got, expected, strict=True):
            assert score == pytest.approx(float(exact), rel=1e-4, abs=1e-4)
    cls_root = tmp_path / "cls"
    cls_root.mkdir()
    cls_entry = entry | {"pooling": "cls"}
    assert _run_file("dpr", model, cls_entry, documents, cls_root, Job()) != run_file


def test_a_checkpoint_whose_weights_automodel_cannot_place_is_an_error(tmp_path, documents):
    """pya0's EMNLP 2022 DPR keeps BERT under ``m_bert.``: AutoModel would load a random model
    and only print a report."""
    model = _pya0_dpr(tmp_path / "emnlp-dpr", "m_bert")
    entry = _released_entry("dpr", str(model)) | {"pooling": "pooler", "math_tokens": "angle"}
    with pytest.raises(InputFormatError, match=r"weights of the encoder are not in the checkpoint"):
        encoder("dpr").index(model, documents, tmp_path / "index", entry, Job())


def _pya0_colbert(path: Path) -> Path:
    """A tiny ColBERT as pya0 saves one (its ``transformer.ColBERT``: BERT under ``bert.``, a
    bias-free linear map to 128 dimensions, ``save_pretrained``), with no colbert-ai metadata;
    the tokenizer has ColBERT's ``[unused0]`` / ``[unused1]`` markers, as pya0's math tokenizer."""
    import torch
    from transformers import BertConfig, BertModel, BertPreTrainedModel

    class ColBERT(BertPreTrainedModel):
        def __init__(self, config):
            super().__init__(config)
            self.bert = BertModel(config, add_pooling_layer=False)
            self.linear = torch.nn.Linear(config.hidden_size, 128, bias=False)
            self.post_init()

    tokenizer_dir = _tiny_bert(path.parent / "tokenizer")
    torch.manual_seed(2)
    ColBERT(BertConfig.from_pretrained(tokenizer_dir)).save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / name, path / name)
    return path


def test_pya0s_colbert_checkpoint_scores_as_pya0_scores_it(tmp_path, documents, extensions_dir):
    """colbert-ai loads pya0's checkpoint with its default settings (128 dimensions), and its
    late interaction is pya0's ``colbert_infer`` with query augmentation: ``[CLS] [unused0]
    query [SEP]`` padded with [MASK] (unattended) to the query length, ``[CLS] [unused1] doc
    [SEP]``, L2-normalised token vectors, per query token the best document token, summed."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModel, AutoTokenizer

    model = _pya0_colbert(tmp_path / "colbert")
    # 8 bits of residual: re-ranking scores the index's token vectors, within 2% of pya0's.
    entry = _released_entry("colbert", str(model)) | {"math_tokens": "angle", "nbits": 8}
    candidates = {topic: sorted(documents)[:6] for topic in QUERIES}
    job = Job(extensions_dir=extensions_dir)
    # Index and search load it too (colbert's metadata, absent here, only fills defaults).
    index = tmp_path / "index"
    encoder("colbert").index(model, documents, index, entry, job)
    assert json.loads((index / "metadata.json").read_text())["config"]["dim"] == 128
    searched = encoder("colbert").search(model, index, QUERIES, 50, entry, job)
    assert all(set(docs) == set(documents) for docs in searched.values())
    run = encoder("colbert").rerank(model, index, candidates, QUERIES, entry, job)
    bert = AutoModel.from_pretrained(model).eval()
    linear = torch.nn.Linear(bert.config.hidden_size, 128, bias=False)
    state = load_file(str(model / "model.safetensors"))  # as save_pretrained writes it
    linear.weight.data = state["linear.weight"]
    tokenizer = AutoTokenizer.from_pretrained(model)
    # pya0's colbert_init: the markers are whole tokens, never split as text.
    tokenizer.add_special_tokens({"additional_special_tokens": ["[unused0]", "[unused1]"]})

    def vectors(text, max_length=None):
        padding = "max_length" if max_length else "longest"
        inputs = tokenizer([text], padding=padding, max_length=max_length, truncation=True,
                           return_tensors="pt")  # fmt: skip
        if max_length:
            inputs["input_ids"][inputs["input_ids"] == tokenizer.pad_token_id] = (
                tokenizer.mask_token_id
            )
        with torch.inference_mode():
            hidden = bert(**inputs).last_hidden_state
            return torch.nn.functional.normalize(linear(hidden), p=2, dim=2)[0]

    for topic, docs in run.items():
        query = vectors("[unused0] " + QUERIES[topic], entry["query_maxlen"])
        for doc, score in docs.items():
            document = vectors("[unused1] " + documents[doc])
            exact = (document @ query.T).max(0).values.sum().item()
            assert score == pytest.approx(exact, rel=2e-2), (topic, doc)
            assert score == pytest.approx(searched[topic][doc], rel=1e-6), (topic, doc)
