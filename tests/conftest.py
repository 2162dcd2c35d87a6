"""Shared fixtures: the raw-data mirror (for count checks on the real collections), and the
default configuration's plan (what the rules ask of it, tested without Snakemake)."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
REQUIRE_GPU_ENV = "HYBRID_IR_REQUIRE_GPU"
"""Set by ``make test-gpu``: a ``gpu`` test on a machine without CUDA fails instead of skipping."""


SLOW_MODULES = (
    "test_distributed.py",
    "test_determinism.py",
    "test_workflow.py",
    "test_docs_guides.py",
    "test_structure.py",
    "test_report.py",
    "test_as_module.py",
    "test_ntcir12_table2.py",
    "test_released_checkpoints.py",
    "test_reader_properties.py",
    "test_hub.py",
    "test_dpr.py",
    "test_collections_arqmath.py",
    "test_pretrain.py",
    "test_paper_config.py",
    "test_colbert.py",
    "test_profiles.py",
)
"""The modules that take longest (whole toy workflows, multi-process training: 15-110 s each
on 2 cores), longest first. pytest-xdist hands whole modules out in collection order (``--dist
loadfile``): started first, they no longer leave one worker alone with them at the end."""


def pytest_collection_modifyitems(config, items):
    """The slow modules first (each module's tests keep their order); ``gpu`` tests skip where
    torch sees no CUDA device, unless :data:`REQUIRE_GPU_ENV` says a GPU is expected (then they
    run and fail, so a broken CUDA install cannot pass as skips)."""
    rank = {name: position for position, name in enumerate(SLOW_MODULES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    import torch

    if torch.cuda.is_available() or os.environ.get(REQUIRE_GPU_ENV) == "1":
        return
    skip = pytest.mark.skip(reason="needs CUDA (make test-gpu on a GPU machine runs it)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _mirror() -> Path | None:
    candidate = Path(os.environ.get("HYBRID_IR_MIRROR", REPO.parent / "shared" / "data"))
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The real raw-data mirror; tests that need it are marked ``mirror``."""
    path = _mirror()
    if path is None:
        pytest.skip("raw-data mirror not found: set HYBRID_IR_MIRROR or place it at ../shared/data")
    return path


TINY_WORDS = (
    "the a of and is to in that it for on with as by prove show let be we find value sum "
    "integral function number prime matrix norm inequality root x y n k p q"
).split()


def make_tiny_bert(path: Path, seed: int = 0) -> Path:
    """A randomly initialised 2-layer BERT (hidden 32) with a WordPiece tokenizer, saved as an
    encoder without MLM head, like the packaged all-MiniLM-L6-v2."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    characters = list("abcdefghijklmnopqrstuvwxyz0123456789<>{}()[]^_+-=.,:;!?$\\|/*")
    pieces = [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    vocab = specials + characters + pieces + TINY_WORDS
    (path / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(path / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(path)
    return path


PAPER_UNPINNED = (
    "approach0/dpr-bertnsp-220", "approach0/colbert-bertnsp-600",
    "shauryr/arqmath-roberta-base-1.5M", "allenai/specter2", "allenai/specter2_adhoc_query",
)  # fmt: skip
"""The hub models configs/paper.yaml names without a pin (`hybrid-ir hub pin` adds them)."""


def paper_pins(directory: Path) -> Path:
    """An overlay pinning :data:`PAPER_UNPINNED` to made-up commits, for tests that build the
    paper configuration's DAG without fetching anything."""
    import hashlib

    import yaml

    pins = {m: {"revision": hashlib.sha1(m.encode()).hexdigest()} for m in PAPER_UNPINNED}
    path = directory / "paper-pins.yaml"
    path.write_text(yaml.safe_dump({"hub_models": pins}))
    return path


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert") / "model")


@pytest.fixture(scope="session")
def extensions_dir() -> Path:
    """colbert JIT-compiles four C++ kernels, about 30 s each on two cores (2 minutes in all),
    into the directory the workflow's colbert jobs use (their ``extensions`` param): whichever of
    the tests and the workflow runs first in a clone compiles them, once. torch keys each build
    by its sources and flags and locks it while it compiles."""
    return REPO / ".cache" / "torch_extensions"


@pytest.fixture(scope="module")
def plan():
    """The default configuration's plan, as common.smk loads it (a module's tests may change a
    deep copy of its configuration). Imported here, not at the top: every test process loads
    this file, and tests check what some imports leave out."""
    from hybrid_ir.config.claim_setups import claims_by_paper
    from hybrid_ir.config.published import fill_published
    from hybrid_ir.config.validation import validate_config
    from hybrid_ir.data.fetch import load_manifest
    from hybrid_ir.evaluation.checks import load_expected
    from hybrid_ir.planning.plan import Plan

    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    validate_config(config, REPO / "workflow/schemas/config.schema.yaml")
    expected = load_expected([REPO / path for path in config["expected"]])
    fill_published(config, expected)
    claims = claims_by_paper([REPO / path for path in config["claims"]], config)
    manifest = load_manifest(REPO / config["manifest"])
    return Plan(copy.deepcopy(config), manifest, expected, claims, Path("/mirror"))
