"""Resources per rule (the config's `resources` section), the workstation profile's GPU claims,
and what the paper configuration asks a SLURM cluster for (a dry run through profiles/slurm)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_paper_config import FULL_COLLECTIONS

from hybrid_ir.cli.main import main
from hybrid_ir.config.layers import config_layers, merged_config
from hybrid_ir.config.settings import rule_resources, rule_threads
from hybrid_ir.config.validation import validate_config as validated
from hybrid_ir.errors import ConfigError
from hybrid_ir.neural import devices

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
# The SLURM executor plugin is in `make setup-slurm`'s venv over the default one, not in it.
SLURM_SNAKEMAKE = REPO / ".venv-slurm" / "bin" / "snakemake"
TORCH_RULES = ("pretrain", "finetune", "encoder_index", "encoder_search", "mlm_rerank")


def _default_config(**resources) -> dict:
    config = merged_config(config_layers([REPO / "config.yaml"], {"resources": resources}))
    validated(config, SCHEMA, "config.yaml")
    return config


# The resources section -------------------------------------------------------------------------


def test_a_rule_takes_its_own_entry_over_default_and_no_unset_partition():
    config = _default_config(pretrain={"threads": 3, "gpu": 1, "slurm_partition": "gpu"})
    assert rule_threads(config, "pretrain") == 3
    # A GPU job stays on one node (--nodes=1): one torchrun starts all its ranks.
    assert rule_resources(config, "pretrain") == {
        "mem_mb": 4000, "runtime": 30, "gpu": 1, "slurm_partition": "gpu", "nodes": 1,
    }  # fmt: skip
    # A rule without an entry: default's values; no partition key at all (never -p '').
    assert rule_threads(config, "evaluate_run") == 1
    assert rule_resources(config, "evaluate_run") == {"mem_mb": 2000, "runtime": 30, "gpu": 0}


def test_the_default_configuration_runs_every_job_on_one_thread_and_asks_no_gpu():
    config = _default_config()
    # On two cores two one-threaded jobs at once keep both busy (docs/scaling.md).
    rules = (*TORCH_RULES, "encoder_rerank", "bm25_search", "retrieve", "bm25_index")
    assert {rule_threads(config, rule) for rule in (*rules, "convert_arqmath")} == {1}
    rules = set(config["resources"]) | {"convert_cf", "pretokenize_arqmath", "triplets"}
    assert {rule_resources(config, rule)["gpu"] for rule in rules} == {0}


def test_schema_defaults_alone_give_one_thread_but_two_for_retrieve():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    del config["resources"]
    validated(config, SCHEMA)
    assert config["resources"]["default"] == {"threads": 1, "mem_mb": 2000, "runtime": 30, "gpu": 0}
    assert rule_threads(config, "retrieve") == 2
    assert rule_threads(config, "pretrain") == rule_threads(config, "bm25_index") == 1


def test_more_default_threads_leave_bm25_indexing_on_one_thread():
    # One indexing thread keeps the corpus order in Lucene, and with it every run's tie order.
    config = _default_config(default={"threads": 4})
    assert rule_threads(config, "bm25_index") == 1
    assert rule_threads(config, "evaluate_run") == 4


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"pretrian": {"threads": 2}}, "config.yaml: resources.pretrian: no rule 'pretrian'"),
        ({"convert_nope": {"mem_mb": 9}}, "config.yaml: resources.convert_nope: no rule"),
        ({"pretrain": {"cpus_per_gpu": 2}}, "resources.pretrain.cpus_per_gpu: needs gpu > 0"),
        (
            {"pretrain": {"gpu": 1, "cpus_per_gpu": 1, "threads": 4}},
            "resources.pretrain.threads: 4 threads on 1 GPU(s) x 1 cpus_per_gpu",
        ),
        ({"pretrain": {"slurm_partition": ""}}, "resources.pretrain.slurm_partition: '' does"),
        ({"finetune": {"runtime": "2h"}}, "resources.finetune.runtime: '2h' is not of type"),
        ({"default": {"gpus": 1}}, "resources.default: Additional properties"),
    ],
)
def test_a_bad_resources_entry_is_one_line_naming_the_key(resources, message):
    with pytest.raises(ConfigError) as error:
        _default_config(**resources)
    assert message in str(error.value)


@pytest.mark.parametrize("section", ["math_models", "bm25"])
def test_the_old_thread_keys_are_rejected_naming_them(section):
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config[section]["threads"] = 2
    with pytest.raises(ConfigError, match=rf"config: {section}: Additional properties .*'threads'"):
        validated(config, SCHEMA)


def _rule_blocks() -> dict[str, str]:
    """Rule name (per-collection rules as convert / pretokenize) -> its text in the rule files."""
    blocks = {}
    for path in (REPO / "workflow" / "rules").rglob("*.smk"):
        text = path.read_text()
        starts = list(re.finditer(r"^\s*rule (\w+):|^\s+f\"(\w+)_\{_(?:name|kind)\}\"", text, re.M))
        ends = [start.start() for start in starts[1:]] + [len(text)] if starts else []
        for start, end in zip(starts, ends, strict=True):
            blocks[start.group(1) or start.group(2)] = text[start.start() : end]
    return blocks


def test_every_rule_that_runs_a_script_sizes_its_jobs_from_the_section():
    from hybrid_ir.reports.figures.kinds import FIGURE_KINDS

    blocks = {name: text for name, text in _rule_blocks().items() if "script:" in text}
    for name, text in blocks.items():
        quoted = f'f"{name}_{{_name}}"' if name in ("convert", "pretokenize") else f'"{name}"'
        if name == "figure":  # one rule per kind, sized by the kind's resources entry
            quoted = "_entry.resources"
        assert f"threads: rule_threads({quoted})" in text, name
        assert f"**rule_resources({quoted})," in text, name
    # The schema names each of them (per-collection rules by pattern, checked in
    # config/validation.py).
    schema = yaml.safe_load(SCHEMA.read_text())
    named = set(schema["properties"]["resources"]["properties"]) - {"default"}
    figure_entries = {kind.resources for kind in FIGURE_KINDS.values()}
    assert named == set(blocks) - {"convert", "pretokenize", "figure"} | figure_entries


# GPU claims on a workstation ------------------------------------------------------------------


@pytest.fixture
def two_gpu_machine(tmp_path, monkeypatch):
    """A fake nvidia-smi listing two GPUs first on PATH, lock files in tmp, no GPU chosen yet."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n"
        'echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)"\n'
        'echo "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)"\n'
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(devices.GPU_LOCK_DIR_ENV, str(tmp_path / "locks"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with devices.released_gpus():
        yield monkeypatch


def test_two_jobs_claim_different_gpus_and_a_third_fails(two_gpu_machine):
    assert devices.machine_gpu_count() == 2
    assert devices.claim_gpus(1) == ["0"]
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0"
    two_gpu_machine.delenv("CUDA_VISIBLE_DEVICES")  # the next job is another process
    assert devices.claim_gpus(1) == ["1"]
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    two_gpu_machine.delenv("CUDA_VISIBLE_DEVICES")
    with pytest.raises(ConfigError, match=r"needs 1 GPU\(s\) but only 0 of the 2 of this machine"):
        devices.claim_gpus(1)


def test_released_gpus_are_free_again(two_gpu_machine):
    with devices.released_gpus():
        assert devices.claim_gpus(2) == ["0", "1"]
    two_gpu_machine.delenv("CUDA_VISIBLE_DEVICES")
    assert devices.claim_gpus(1) == ["0"]


def test_a_gpu_chosen_by_the_scheduler_is_not_claimed(two_gpu_machine, tmp_path):
    two_gpu_machine.setenv("SLURM_JOB_ID", "17")
    two_gpu_machine.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert devices.claim_gpus(1) == []
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    assert devices.claim_gpus(0) == []
    assert not (tmp_path / "locks").exists()


# Profiles, dry runs ---------------------------------------------------------------------------


def _jobs(dry_run: str) -> list[tuple[str, int, dict[str, str]]]:
    """(rule, threads, resources) of each job a dry run prints."""
    jobs = []
    for block in re.split(r"^(?=(?:local)?rule \S+:$)", dry_run, flags=re.M)[1:]:
        rule = block.split()[1].rstrip(":")
        threads = re.search(r"^\s+threads: (\d+)$", block, re.M)
        resources = re.search(r"^\s+resources: (.*)$", block, re.M)
        pairs = resources.group(1).split(", ") if resources else []
        jobs.append(
            (rule, int(threads.group(1)) if threads else 1, dict(p.split("=", 1) for p in pairs))
        )
    return jobs


def _snakemake(
    *arguments: str, env: dict | None = None, snakemake: Path = SNAKEMAKE
) -> subprocess.CompletedProcess:
    command = [str(snakemake), "--dry-run", "--forceall", "--nolock", *arguments]
    return subprocess.run(
        command, cwd=REPO, env=os.environ | (env or {}), capture_output=True, text=True
    )


def test_the_workstation_profile_builds_the_dag_with_the_rules_requests():
    target = "results/models/pretrained/minilm-math.losses.tsv"
    done = _snakemake("--profile", "profiles/workstation", target)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    jobs = {rule: (threads, resources) for rule, threads, resources in _jobs(done.stdout)}
    threads, resources = jobs["pretrain"]
    assert (resources["gpu"], resources["mem_mb"], resources["runtime"]) == ("0", "4000", "30")
    assert threads == 1


def test_the_workstation_profile_gives_a_job_no_more_gpus_than_it_provides():
    # The profile provides gpu=1: Snakemake scales a request of 2 down to it, as it does threads.
    target = "results/models/pretrained/minilm-math.losses.tsv"
    # (the target before --set-resources, which takes every word after it)
    done = _snakemake(
        "--profile", "profiles/workstation", target, "--set-resources", "pretrain:gpu=2"
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    jobs = {rule: resources for rule, _, resources in _jobs(done.stdout)}
    assert jobs["pretrain"]["gpu"] == "1"


@pytest.fixture(scope="module")
def paper_mirror(tmp_path_factory) -> tuple[Path, Path]:
    """(mirror, manifest): test_paper_config's stand-ins for the full collections, listed."""
    root = tmp_path_factory.mktemp("paper-resources")
    mirror, manifest = root / "mirror", root / "manifest.tsv"
    for path, make in FULL_COLLECTIONS.items():
        (mirror / path).parent.mkdir(parents=True, exist_ok=True)
        (mirror / path).write_bytes(make())
    shutil.copyfile(REPO / "workflow/resources/manifest.tsv", manifest)
    files = [str(mirror / path) for path in FULL_COLLECTIONS]
    assert (
        main(["manifest", "add", *files, "--mirror", str(mirror), "--manifest", str(manifest)]) == 0
    )
    return mirror, manifest


PAPER = "configs/paper.yaml"


def test_the_paper_configuration_asks_the_cluster_for_gpus_where_it_trains(paper_mirror, tmp_path):
    from conftest import paper_pins

    mirror, manifest = paper_mirror
    # A dry run caps threads at --cores (1 when not given), a SLURM run does not: --cores 1024
    # only lifts that cap, so what is printed is what sbatch would be asked for.
    assert SLURM_SNAKEMAKE.exists(), f"{SLURM_SNAKEMAKE} is missing: run make setup-slurm"
    done = _snakemake(
        "--profile", "profiles/slurm", "--cores", "1024", "--configfile", PAPER,
        str(paper_pins(tmp_path)),
        "--config", f"manifest={manifest}",
        env={"HYBRID_IR_MIRROR": str(mirror), "HYBRID_IR_SLURM_PARTITION": ""},
        snakemake=SLURM_SNAKEMAKE,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    paper = yaml.safe_load((REPO / PAPER).read_text())["resources"]
    jobs = _jobs(done.stdout)
    by_rule: dict[str, list] = {}
    for rule, threads, resources in jobs:
        by_rule.setdefault(rule, []).append((threads, resources))
    # finetune_snapshots is the DPR fine-tuning job (with its epoch snapshots): finetune's entry.
    pairs = [("pretrain", "pretrain"), ("finetune", "finetune"), ("encoder_index", "encoder_index")]
    for rule, entry in [*pairs, ("finetune_snapshots", "finetune")]:
        assert by_rule[rule], rule
        for threads, resources in by_rule[rule]:
            assert (resources["gpu"], resources["slurm_partition"]) == ("1", "gpu"), rule
            wanted = paper[entry]
            assert int(resources["mem_mb"]) == wanted["mem_mb"], rule
            assert int(resources["runtime"]) == wanted["runtime"], rule
            assert threads == wanted["threads"], rule
    # Converting Posts.xml runs on a CPU node: no GPU, the profile's (default) partition.
    (convert,) = by_rule["convert_arqmath"]
    assert convert[1]["gpu"] == "0"
    assert convert[1]["slurm_partition"] == ""
    assert int(convert[1]["mem_mb"]) == paper["convert_arqmath"]["mem_mb"]
    # Every job but the target rule `all` (no script) says what it asks for; only the torch
    # rules ask for a GPU.
    sized = [(rule, resources) for rule, _, resources in jobs if rule != "all"]
    assert all({"mem_mb", "runtime", "gpu"} <= set(resources) for _, resources in sized)
    gpu_rules = {rule for rule, resources in sized if resources["gpu"] != "0"}
    assert gpu_rules == {*TORCH_RULES, "finetune_snapshots", "encoder_rerank"}
    # One node per GPU job: its ranks are started by one torchrun (sbatch --nodes=1).
    assert {resources.get("nodes") for rule, resources in sized if rule in gpu_rules} == {"1"}
    assert all("nodes" not in resources for rule, resources in sized if rule not in gpu_rules)


def test_a_shell_export_narrows_the_claims_to_its_gpus(two_gpu_machine):
    # Without the claim every job would run on the first GPU of the exported set.
    two_gpu_machine.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert devices.claim_gpus(1) == ["1"]
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    two_gpu_machine.setenv("CUDA_VISIBLE_DEVICES", "1")  # the next job, same shell
    with pytest.raises(ConfigError, match=r"only 0 of the 1 of CUDA_VISIBLE_DEVICES=1 are free"):
        devices.claim_gpus(1)
    two_gpu_machine.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert devices.claim_gpus(1) == ["0"]


def test_cuda_settings_reach_the_ranks_through_the_environment(monkeypatch):
    import torch

    monkeypatch.delenv(devices.TF32_ENV, raising=False)
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        devices.cuda_settings(False)
        assert os.environ[devices.TF32_ENV] == "0"
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == devices.CUBLAS_WORKSPACE
        assert not torch.backends.cuda.matmul.allow_tf32
        devices.cuda_settings()  # a rank: the job's choice, read back
        assert not torch.backends.cuda.matmul.allow_tf32
        monkeypatch.setenv(devices.TF32_ENV, "1")
        devices.cuda_settings()
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.deterministic
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
