"""Pinned hub models: the configuration check, the fetch into the workflow's model cache (from
a local server speaking the hub's file API), and compute jobs that run with the hub off."""

from __future__ import annotations

import copy
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hub_server import LocalHub

from hybrid_ir.config.validation import validate_config
from hybrid_ir.data.hub import (
    cache_dir,
    check_pins,
    current_revisions,
    fetch_model,
    hub_references,
    use_model_cache,
)
from hybrid_ir.errors import ConfigError, HybridIRError

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
NEWER = "89abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture()
def hub_endpoint(monkeypatch):
    """Point huggingface_hub at ``url`` for this test (it reads HF_ENDPOINT at import)."""
    import huggingface_hub.constants as constants

    def point(url: str) -> None:
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.setattr(constants, "ENDPOINT", url)
        monkeypatch.setattr(
            constants,
            "HUGGINGFACE_CO_URL_TEMPLATE",
            url + "/{repo_id}/resolve/{revision}/{filename}",
        )
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)

    return point


@pytest.fixture(scope="module")
def served_model(tmp_path_factory) -> Path:
    """A tiny BERT with TensorFlow weights beside it, which the fetch leaves out."""
    from conftest import make_tiny_bert

    model = make_tiny_bert(tmp_path_factory.mktemp("served") / "tiny")
    (model / "tf_model.h5").write_bytes(b"not fetched")
    return model


def config_with(**math_models) -> dict:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["math_models"]["backbones"].update(math_models)
    return config


def test_a_hub_model_without_a_pin_is_a_config_error_naming_its_key():
    config = config_with(bert={"model": "bert-base-uncased"})
    with pytest.raises(ConfigError, match=r"config: math_models\.backbones\.bert\.model: hub "
                       r"model 'bert-base-uncased' has no pinned revision; add 'hub_models: "
                       r"\{bert-base-uncased: \{revision: <commit sha>\}\}'"):  # fmt: skip
        validate_config(config, SCHEMA)


def test_a_revision_that_is_not_a_commit_is_a_config_error():
    config = config_with(bert={"model": "bert-base-uncased"})
    config["hub_models"] = {"bert-base-uncased": {"revision": "main"}}
    with pytest.raises(ConfigError, match=r"hub_models\.bert-base-uncased\.revision: 'main' "
                       "does not match"):  # fmt: skip
        validate_config(config, SCHEMA)


def test_every_kind_of_model_reference_is_pinned_and_pointed_at_the_cache():
    config = config_with(bert={"model": "bert-base-uncased"})
    config["retrievers"]["cf"]["dense-specter2"] = {
        "model": "dense",
        "params": {"model": "allenai/specter2_base", "document_adapter": "allenai/specter2"},
    }
    pins = {
        "bert-base-uncased": COMMIT,
        "allenai/specter2_base": COMMIT,
        "allenai/specter2": NEWER,
    }
    config["hub_models"] = {model: {"revision": sha} for model, sha in pins.items()}
    validate_config(config, SCHEMA)
    assert hub_references(config) == {
        "bert-base-uncased": "math_models.backbones.bert.model",
        "allenai/specter2_base": "retrievers.cf.dense-specter2.params.model",
        "allenai/specter2": "retrievers.cf.dense-specter2.params.document_adapter",
    }
    packaged = config["math_models"]["backbones"]["minilm"]["model"]
    use_model_cache(config)
    assert config["math_models"]["backbones"]["bert"]["model"] == (
        f"results/models/hub/bert-base-uncased/{COMMIT}"
    )
    params = config["retrievers"]["cf"]["dense-specter2"]["params"]
    assert params["document_adapter"] == cache_dir("allenai/specter2", NEWER)
    assert config["math_models"]["backbones"]["minilm"]["model"] == packaged  # no hub id
    again = copy.deepcopy(config)
    check_pins(again, "config")  # cache paths are local: nothing left to pin


def test_fetch_downloads_the_pinned_revision_and_hashes_every_file(
    served_model, tmp_path, hub_endpoint
):
    with LocalHub({"org/tiny": {COMMIT: served_model}}) as hub:
        hub_endpoint(hub.url)
        hashes = fetch_model("org/tiny", COMMIT, tmp_path / "cache")
    assert "tf_model.h5" not in hashes  # other frameworks' weights are left on the hub
    expected = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in served_model.iterdir()
        if p.name != "tf_model.h5"
    }
    assert hashes == expected
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted(expected)
    from transformers import AutoModel

    AutoModel.from_pretrained(tmp_path / "cache")  # a loadable model directory


def test_a_revision_the_hub_lacks_is_one_line_naming_it_and_leaves_nothing(
    served_model, tmp_path, hub_endpoint
):
    with LocalHub({"org/tiny": {COMMIT: served_model}}) as hub:
        hub_endpoint(hub.url)
        with pytest.raises(HybridIRError, match=f"hub_models.org/tiny.revision: the hub has no "
                           f"revision {NEWER} of 'org/tiny'"):  # fmt: skip
            fetch_model("org/tiny", NEWER, tmp_path / "cache")
    assert list(tmp_path.iterdir()) == []


def test_pin_asks_the_hub_for_the_commit_it_serves_now(served_model, hub_endpoint):
    with LocalHub({"org/tiny": {COMMIT: served_model, NEWER: served_model}}) as hub:
        hub_endpoint(hub.url)
        assert current_revisions(["org/tiny"]) == {"org/tiny": NEWER}


def test_pins_are_added_to_the_files_block_or_appended_leaving_other_lines(tmp_path):
    from hybrid_ir.data.hub import write_pins

    with_block = tmp_path / "with.yaml"
    with_block.write_text("# top\nhub_models:\n  a/b: {revision: x}\n\n# next\nseed: 1\n")
    write_pins(with_block, {"c/d": NEWER})
    assert with_block.read_text() == (
        f'# top\nhub_models:\n  a/b: {{revision: x}}\n  c/d: {{revision: "{NEWER}"}}\n\n'
        "# next\nseed: 1\n"
    )
    without = tmp_path / "without.yaml"
    without.write_text("seed: 1\n")
    write_pins(without, {"org/m": "1234567890" * 4})  # an all-digit commit stays a string
    assert yaml.safe_load(without.read_text()) == {
        "seed": 1,
        "hub_models": {"org/m": {"revision": "1234567890" * 4}},
    }


def test_a_compute_step_cannot_reach_the_hub(tmp_path):
    """run_step switches the hub off for every job but the fetch, also in a process that
    imported huggingface_hub before."""
    script = f"""
import huggingface_hub
from types import SimpleNamespace
from hybrid_ir.jobs.run import run_step
def step():
    from huggingface_hub.errors import OfflineModeIsEnabled
    try:
        huggingface_hub.HfApi(endpoint="http://127.0.0.1:9").model_info("org/tiny")
    except OfflineModeIsEnabled:
        print("offline")
job = SimpleNamespace(log=[r"{tmp_path / "step.log"}"], rule="encoder_index",
                      config={{"max_relevance": 1000, "max_line_chars": 1 << 25}})
run_step(job, step)
"""
    subprocess.run([sys.executable, "-c", script], check=True, env={"PATH": "/usr/bin"} | {
        "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "0"})  # fmt: skip
    assert (tmp_path / "step.log").read_text().strip().endswith("offline")


def test_the_fetch_rule_fills_the_cache_and_compute_jobs_run_with_the_hub_gone(
    tmp_path, served_model
):
    """The workflow on a toy collection whose dense retriever names a hub model: the local
    rule fetches it from a local hub, which then stops; the retriever's jobs run without it
    and the run's provenance carries the model's file hashes."""
    import json

    from toy_workflow import DENSE_RUN, make_toy, snakemake

    root = make_toy(tmp_path, dense=True)
    config = yaml.safe_load((root / "config.yaml").read_text())
    config["retrievers"]["toy"][DENSE_RUN]["params"]["model"] = "org/tiny"
    config["hub_models"] = {"org/tiny": {"revision": COMMIT}}
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    cache = cache_dir("org/tiny", COMMIT)
    run = f"results/runs/toy/test/{DENSE_RUN}.trec"
    with LocalHub({"org/tiny": {COMMIT: served_model}}) as hub:
        done = snakemake(root, cache, env={"HF_ENDPOINT": hub.url})
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"GET /api/models/org/tiny/revision/{COMMIT}" in hub.requests
    assert not (root / cache / "tf_model.h5").exists()
    done = snakemake(root, run, env={"HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "fetch_hub_model" not in done.stderr  # fetched once, before: no job, no stats row
    record = json.loads((root / "results/provenance" / f"{run}.json").read_text())
    config_sha = hashlib.sha256((served_model / "config.json").read_bytes()).hexdigest()
    assert record["raw_inputs"][f"hub:org/tiny@{COMMIT}/config.json"] == config_sha
    assert cache in record["inputs"]
