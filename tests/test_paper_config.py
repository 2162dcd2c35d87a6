"""The paper configuration: overlays replace the training length they override, and
``configs/paper.yaml`` plans the papers' training settings."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from conftest import PAPER_UNPINNED, paper_pins

from hybrid_ir.cli.main import main
from hybrid_ir.config.layers import config_layers, merged_config, resolve_overrides
from hybrid_ir.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


def _math(**sections) -> dict:
    return {"math_models": sections}


def test_an_overlay_length_replaces_the_length_of_the_layer_below():
    base = _math(pretraining={"steps": 150, "lr": 1e-4}, dpr={"steps": 75, "batch_size": 8})
    overlay = _math(pretraining={"epochs": 7}, dpr={"epochs": 10})
    config = merged_config([("config.yaml", base), ("paper.yaml", overlay)])
    assert config["math_models"]["pretraining"] == {"epochs": 7, "lr": 1e-4}
    assert config["math_models"]["dpr"] == {"epochs": 10, "batch_size": 8}
    # The layers themselves are left as they were.
    assert base["math_models"]["dpr"] == {"steps": 75, "batch_size": 8}


def test_a_lower_layer_keeps_its_length_when_no_overlay_gives_one():
    base = _math(colbert={"steps": 75, "lr": 1e-5})
    config = merged_config([("config.yaml", base), ("paper.yaml", _math(colbert={"lr": 1e-6}))])
    assert config["math_models"]["colbert"] == {"steps": 75, "lr": 1e-6}


def test_the_topmost_layer_wins_across_three_layers():
    layers = [
        ("config.yaml", _math(dpr={"steps": 75})),
        ("paper.yaml", _math(dpr={"epochs": 10})),
        ("--config", _math(dpr={"steps": 5})),
    ]
    assert merged_config(layers)["math_models"]["dpr"] == {"steps": 5}


def test_a_layer_setting_both_lengths_is_an_error_naming_the_layer_and_key():
    layers = [
        ("config.yaml", _math(dpr={"steps": 75})),
        ("configs/mine.yaml", _math(backbones={"b": {"pretraining": {"steps": 3, "epochs": 1}}})),
    ]
    with pytest.raises(ConfigError, match=r"^configs/mine.yaml: math_models.backbones.b."):
        merged_config(layers)


def test_backbone_lengths_are_resolved_per_backbone():
    base = _math(backbones={"m": {"model": "x", "pretraining": {"steps": 150}}})
    overlay = _math(backbones={"m": {"pretraining": {"epochs": 3}}})
    config = yaml.safe_load(yaml.safe_dump(base))
    config["math_models"]["backbones"]["m"]["pretraining"]["epochs"] = 3  # Snakemake's merge
    resolve_overrides(config, [("config.yaml", base), ("paper.yaml", overlay)])
    assert config["math_models"]["backbones"]["m"]["pretraining"] == {"epochs": 3}


def test_config_yaml_with_both_lengths_fails_validation_naming_the_key(tmp_path):
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    config["math_models"]["dpr"]["epochs"] = 2
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"config.yaml: math_models.dpr: sets both"):
        merged_config(config_layers([tmp_path / "config.yaml"], {}))


def test_paper_configuration_trains_every_model_as_the_paper(capsys):
    """Paper 000 (Section 3.3, Table 1): further pretraining 7 epochs (3 for row 3) at batch 240,
    lr 1e-4, 512 tokens; DPR 10 epochs, batch 36, lr 3e-6; ColBERT 3 epochs, batch 30, lr 1e-6."""
    argv = ["config", "--base", str(REPO / "config.yaml")]
    assert main([*argv, "--configfile", str(REPO / "configs/paper.yaml")]) == 0
    plan = yaml.safe_load(capsys.readouterr().out)["training"]
    for name, settings in plan.items():
        assert "steps" not in settings, name
    for backbone, epochs in {"bert-math-3ep": 3, "bert-math-7ep": 7}.items():
        pretraining = plan[f"pretraining {backbone}"]
        assert (pretraining["epochs"], pretraining["batch_size"]) == (epochs, 240)
        assert (pretraining["lr"], pretraining["max_length"]) == (1e-4, 512)
    dpr, colbert = plan["dpr bert-math-7ep"], plan["colbert bert-math-7ep"]
    assert (dpr["epochs"], dpr["batch_size"], dpr["lr"]) == (10, 36, 3e-6)
    assert (colbert["epochs"], colbert["batch_size"], colbert["lr"]) == (3, 30, 1e-6)
    # Table 1 rows (1)-(3) read DPR after its first epoch only: training stops there.
    for backbone in ("bert", "scibert", "bert-math-3ep"):
        dpr = plan[f"dpr {backbone}"]
        assert (dpr["epochs"], dpr["batch_size"], dpr["lr"], dpr["snapshots"]) == (1, 36, 3e-6, [1])
        assert f"colbert {backbone}" not in plan
    assert not any(
        name.endswith(" roberta-math") for name in plan if name.startswith(("dpr", "col"))
    )
    assert "pretraining bert" not in plan and "pretraining scibert" not in plan


def test_an_overlay_that_lists_a_collections_sources_replaces_all_of_them():
    base = {"collections": {"arqmath": {"reader": "arqmath_html", "sources": {"threads": "t.tgz"}}}}
    overlay = {
        "collections": {"arqmath": {"reader": "arqmath_posts_xml", "sources": {"posts": "P.xml"}}}
    }
    config = merged_config([("config.yaml", base), ("paper.yaml", overlay)])
    assert config["collections"]["arqmath"] == {
        "reader": "arqmath_posts_xml",
        "sources": {"posts": "P.xml"},
    }
    kept = merged_config([("config.yaml", base), ("--config", {"collections": {"arqmath": {}}})])
    assert kept["collections"]["arqmath"]["sources"] == {"threads": "t.tgz"}


def test_layers_merge_as_snakemake_merges_configfiles():
    from snakemake.utils import update_config

    from hybrid_ir.config.layers import resolve_overrides

    layers = config_layers([REPO / "config.yaml", REPO / "configs/paper.yaml"], {})
    snakemake_merged: dict = {}
    for _, layer in layers:
        update_config(snakemake_merged, yaml.safe_load(yaml.safe_dump(dict(layer))))
    resolve_overrides(snakemake_merged, layers)
    assert merged_config(layers) == snakemake_merged


# The paper configuration's DAG, on stand-ins for the full collections -------------------------

SNAKEMAKE = Path(sys.executable).with_name("snakemake")
MATH_NS = "http://www.w3.org/1998/Math/MathML"


def _tar(files: dict[str, bytes], mode: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _posts_xml() -> bytes:
    """Posts.xml as the ARQMath collection ships it (the Math StackExchange dump's layout)."""
    rows = [
        '<row Id="1" PostTypeId="1" AcceptedAnswerId="2" CreationDate="2014-01-02T10:00:00.000" '
        'Score="3" Title="Sum of $1/n^2$" Tags="&lt;sequences&gt;&lt;series&gt;" '
        'Body="&lt;p&gt;What is $\\sum 1/n^2$?&lt;/p&gt;" />',
        '<row Id="2" PostTypeId="2" ParentId="1" CreationDate="2014-01-02T11:00:00.000" '
        'Score="9" Body="&lt;p&gt;It is $\\pi^2/6$.&lt;/p&gt;" />',
        '<row Id="3" PostTypeId="1" CreationDate="2015-03-04T10:00:00.000" Score="1" '
        'Title="Basel problem" Tags="&lt;series&gt;" Body="&lt;p&gt;Why $\\zeta(2)$?&lt;/p&gt;" />',
        '<row Id="4" PostTypeId="2" ParentId="3" CreationDate="2015-03-04T12:00:00.000" '
        'Score="2" Body="&lt;p&gt;Euler.&lt;/p&gt;" />',
    ]
    return ('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "\n".join(rows)).encode() + (
        b"\n</posts>\n"
    )


def _post_links_xml() -> bytes:
    return (
        b'<?xml version="1.0" encoding="utf-8"?>\n<postlinks>\n'
        b'  <row Id="10" CreationDate="2015-03-05T00:00:00.000" PostId="3" RelatedPostId="1" '
        b'LinkTypeId="3" />\n</postlinks>\n'
    )


def _ntcir12_corpus() -> bytes:
    """The NTCIR-12 MathIR Wikipedia corpus's layout: a .tar.bz2 whose MathTagArticles/ holds
    one .tar.bz2 of XHTML articles, each formula a MathML element with its TeX annotation."""
    math = (
        f'<math xmlns="{MATH_NS}" id="Binomial_coefficient:0" display="inline"><semantics>'
        '<mi>x</mi><annotation encoding="application/x-tex">\\binom{n}{k}</annotation>'
        "</semantics></math>"
    )
    article = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        f"<head><title>Binomial_coefficient</title></head><body><p>{math}</p></body></html>\n"
    ).encode()
    inner = _tar({"wpmath0000001/Articles/Binomial_coefficient.html": article}, "w:bz2")
    root = "NTCIR12_MathIR_WikiCorpus_v2.1.0"
    return _tar({f"{root}/MathTagArticles/wpmath0000001.tar.bz2": inner}, "w:bz2")


def _stackmathqa_shards() -> bytes:
    pair = {
        "Q": "Is $\\sqrt 2$ irrational?",
        "A": "Yes.",
        "meta": {"url": "https://math.stackexchange.com/questions/5", "answer_id": 6},
    }
    return _tar({"stackmathqa100k/0.jsonl": (json.dumps(pair) + "\n").encode()}, "w:gz")


# The full collections configs/paper.yaml names (manifest paths a user fills in).
FULL_COLLECTIONS = {
    "arqmath/full/Posts.V1.3.xml": _posts_xml,
    "arqmath/full/PostLinks.V1.3.xml": _post_links_xml,
    "math-text/stackmathqa100k.tar.gz": _stackmathqa_shards,
    "ntcir12-wiki-formula/NTCIR12_MathIR_WikiCorpus_v2.1.0.tar.bz2": _ntcir12_corpus,
}


@pytest.fixture(scope="module")
def stand_in_mirror(tmp_path_factory) -> tuple[Path, Path]:
    """(mirror, manifest): the stand-ins in a mirror, and the committed manifest without them."""
    root = tmp_path_factory.mktemp("paper")
    mirror = root / "mirror"
    for path, make in FULL_COLLECTIONS.items():
        (mirror / path).parent.mkdir(parents=True, exist_ok=True)
        (mirror / path).write_bytes(make())
    manifest = root / "manifest.tsv"
    shutil.copyfile(REPO / "workflow/resources/manifest.tsv", manifest)
    return mirror, manifest


def _dry_run(mirror: Path, manifest: Path, *configfiles: str) -> subprocess.CompletedProcess:
    command = [
        str(SNAKEMAKE), "--dry-run", "--forceall", "--nolock", "--cores", "1",
        "--configfile", *configfiles, "--config", f"manifest={manifest}",
    ]  # fmt: skip
    environment = os.environ | {"HYBRID_IR_MIRROR": str(mirror)}
    return subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True)


def _outputs(dry_run: subprocess.CompletedProcess) -> set[str]:
    outputs = set()
    for line in dry_run.stdout.splitlines():
        if line.strip().startswith("output:"):
            outputs |= {path.strip() for path in line.split(":", 1)[1].split(",")}
    return outputs


PINNED = [
    "bert-base-uncased", "roberta-base", "allenai/scibert_scivocab_uncased",
    "allenai/specter2_base",
]  # fmt: skip


def test_a_full_collection_missing_from_the_manifest_is_one_line_with_the_command(
    stand_in_mirror, tmp_path
):
    mirror, manifest = stand_in_mirror
    done = _dry_run(mirror, manifest, "configs/paper.yaml", str(paper_pins(tmp_path)))
    assert done.returncode != 0
    said = (done.stdout + done.stderr).splitlines()
    problem = next(line for line in said if "is not in the manifest" in line)
    missing = next(path for path in FULL_COLLECTIONS if f"'{path}'" in problem)
    assert f"hybrid-ir manifest add {mirror / missing} --mirror {mirror}" in problem


EXPECTED_TABLES = [
    "paper000-table1", "paper000-table2", "paper000-table3-arqmath2", "paper000-table4",
    "paper001-table1", "paper001-first-stage-arqmath1", "paper003-cf",
    "paper003-fig3-queries", "paper003-cf-specter2-adapters", "paper004-scifact",
    "paper002-scifact",
]  # fmt: skip
EXPECTED_FIGURES = [
    "paper000-fig2", "paper000-fig3", "paper001-fig2", "paper003-fig2-ndcg",
    "paper003-cf-pr-curves", "paper003-fig4-pr", "paper003-fig4-ndcg", "paper003-fig5-pr",
    "paper003-fig5-ndcg",
    "paper004-fig3",
]  # fmt: skip


def test_the_paper_configuration_builds_every_table_and_figure(
    stand_in_mirror, capsys, tmp_path, monkeypatch
):
    from hub_server import LocalHub

    mirror, manifest = stand_in_mirror
    files = [str(mirror / path) for path in FULL_COLLECTIONS]
    added = ["manifest", "add", *files, "--mirror", str(mirror), "--manifest", str(manifest)]
    assert main(added) == 0
    assert capsys.readouterr().out.count("written") == len(FULL_COLLECTIONS)
    # The hub models configs/paper.yaml could not pin here stop the DAG, one line each ...
    done = _dry_run(mirror, manifest, "configs/paper.yaml")
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "hub model 'approach0/dpr-bertnsp-220' has no pinned revision" in said
    # ... until `hybrid-ir hub pin --write` adds the commits a hub serves (here a local one).
    paper = tmp_path / "paper.yaml"
    shutil.copyfile(REPO / "configs/paper.yaml", paper)
    served = tmp_path / "served"
    served.mkdir()
    (served / "config.json").write_text("{}")
    commits = {model: hashlib.sha1(model.encode()).hexdigest() for model in PAPER_UNPINNED}
    with LocalHub({model: {commit: served} for model, commit in commits.items()}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", hub.url)
        argv = ["hub", "pin", "--base", str(REPO / "config.yaml"), "--configfile", str(paper)]
        assert main([*argv, "--write", str(paper)]) == 0
    assert capsys.readouterr().out.count("pinned") == len(PAPER_UNPINNED)
    pins = yaml.safe_load(paper.read_text())["hub_models"]
    assert {model: pin["revision"] for model, pin in pins.items() if model in commits} == commits
    assert set(pins) == {*PAPER_UNPINNED, *PINNED}
    done = _dry_run(mirror, manifest, str(paper))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    outputs = _outputs(done)
    for model, pin in pins.items():  # each fetched once, on the submit host
        assert f"results/models/hub/{model}/{pin['revision']}" in outputs, model
    for table in EXPECTED_TABLES:
        assert f"results/tables/{table}.md" in outputs, table
    for figure in EXPECTED_FIGURES:
        assert f"results/figures/{figure}.png" in outputs, figure
    # The paper's models are trained, not only configured.
    for model in ("pretrained/bert-math-7ep", "dpr/bert-math-7ep", "colbert/bert-math-7ep"):
        assert f"results/models/{model}" in outputs, model
    # Table 1's rows (1)-(4) (DPR after one epoch) and its NTCIR-12 columns.
    for run in ("arqmath/arqmath2/dpr-epoch1-bert-math-7ep", "ntcir12/concrete/dpr-epoch1-bert"):
        assert f"results/runs/{run}.trec" in outputs, run
    # The full ARQMath's Approach0 index in 8 shard jobs, their hits merged into the run.
    for shard in range(8):
        assert f"results/shards/indexes/arqmath/approach0-pya0/{shard}" in outputs, shard
        assert f"results/shards/runs/arqmath/arqmath2/approach0-pya0/{shard}.trec" in outputs
    assert "results/indexes/arqmath/approach0-pya0" not in outputs
    # The same run name, whole, on NTCIR-12 (its rules tell the two apart by collection).
    assert "results/indexes/ntcir12/approach0-pya0" in outputs
    assert "results/runs/ntcir12/concrete/approach0-pya0.trec" in outputs
    assert "results/runs/arqmath/arqmath2/approach0-pya0.trec" in outputs


def test_a_local_dense_model_directory_is_an_input_of_its_retriever(tmp_path):
    model = tmp_path / "my-specter2"
    model.mkdir()
    overlay = tmp_path / "local.yaml"
    commit = hashlib.sha1(b"allenai/specter2").hexdigest()
    overlay.write_text(yaml.safe_dump({"retrievers": {"cf": {"dense-minilm": {"params": {
        "model": str(model), "document_adapter": "allenai/specter2"}}}},
        "hub_models": {"allenai/specter2": {"revision": commit}}}))  # fmt: skip
    command = [
        str(SNAKEMAKE), "--dry-run", "--forcerun", "retrieve", "--nolock", "--cores", "1",
        "--configfile", str(overlay), "--", "results/runs/cf/all/dense-minilm.trec",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    job = done.stdout[done.stdout.index("rule retrieve:") :]
    inputs = next(line for line in job.splitlines() if line.strip().startswith("input:"))
    adapter = f"results/models/hub/allenai/specter2/{commit}"
    assert str(model) in inputs and adapter in inputs
    assert "rule fetch_hub_model:" in done.stdout
