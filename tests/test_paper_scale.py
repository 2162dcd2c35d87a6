"""The paper-scale projection (benchmarks/paper_scale.py): its arithmetic on made-up inputs, the
exit status when a job cannot finish within its request, and the paper configuration's jobs.
Nothing here measures anything."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

from hybrid_ir.config.settings import fine_tuning_settings
from hybrid_ir.errors import ConfigError
from hybrid_ir.neural import distributed
from hybrid_ir.neural.models import training_steps

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "paper_scale.py"
HOUR = 3600.0


@pytest.fixture(scope="module")
def scale():
    spec = importlib.util.spec_from_file_location("paper_scale_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(SCRIPT.parent))  # where its `import harness` finds the harness
        spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def paper(scale):
    """The paper configuration and its rows."""
    config = scale.load_config(scale.CONFIGS)
    return config, scale.paper_jobs(config, [])


@pytest.fixture
def no_cuda(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _job(scale, **changes):
    """A made-up training job: 1000 steps of 1 TFLOP on one GPU, 60-minute runtime."""
    values = dict(
        label="made-up",
        rule="pretrain",
        instances=["made-up"],
        shape=scale.BERT_BASE,
        gpus=1,
        ranks=1,
        micro_batch=None,
        accumulation=1,
        steps=1000,
        step_flops=1e12,
        useful_flops=1e12,
        tokens_per_step=0.0,
        extra_flops={},
        extra_s=0.0,
        activations=0.0,
        gpu_fixed=0.0,
        host_bytes=0.0,
        runtime_min=60,
        mem_mb=1000,
        resumes=True,
        checkpoint_every=100,
        checkpoint_bytes=0.0,
    )
    return scale.Job(**(values | changes))


def _gpu(scale, memory_gib=80.0):
    return scale.Gpu("made-up", memory_gib, {"fp32": 1e12, "tf32": 1e12, "bf16": 1e12})


@pytest.fixture
def quick_starts(scale, monkeypatch):
    """Start-up of 60 s, so that the made-up jobs' arithmetic is easy to follow."""
    monkeypatch.setitem(scale.ASSUMPTIONS, "startup_s", (60.0, "test"))


# The arithmetic -------------------------------------------------------------------------------


def _split(scale, batch, processes, micro, section="pretraining"):
    """The projection's split of a global batch on a paper job of ``processes`` GPUs."""
    rule = "pretrain" if section == "pretraining" else "finetune"
    config = {
        "math_models": {"device": "cuda", "cpu_processes": 1},
        "resources": {"default": {"gpu": 0}, rule: {"gpu": processes}},
    }
    settings = {"batch_size": batch, "micro_batch_size": micro}
    return scale.batch_split(config, section, settings)


@pytest.mark.parametrize(
    ("batch", "processes", "micro", "accumulation", "rows"),
    [
        (240, 1, 30, 8, 30),
        (240, 2, 30, 4, 30),
        (240, 8, 30, 1, 30),
        (36, 1, 9, 4, 9),
        (36, 2, None, 1, 18),  # no micro-batches: one pass over the share
        (36, 4, 9, 1, 9),  # a micro-batch of the whole share
    ],
)
def test_the_projection_splits_a_batch_as_the_training_code_does(
    scale, batch, processes, micro, accumulation, rows
):
    split = _split(scale, batch, processes, micro)
    section = "math_models.pretraining"
    assert split.accumulation == distributed.accumulation_steps(batch, processes, micro, section)
    assert split.accumulation == accumulation
    assert split.rows == distributed.micro_batch_rows(batch, processes, accumulation) == rows
    assert (split.ranks, split.share) == (processes, batch // processes)


def test_a_batch_the_training_code_cannot_split_is_a_config_error(scale):
    with pytest.raises(ConfigError, match="does not split evenly"):
        _split(scale, 240, 7, 30)
    with pytest.raises(ConfigError, match="does not divide"):
        _split(scale, 36, 1, 7, "dpr")
    # Above the share: the projection's former rule took it as one pass; the code refuses it.
    with pytest.raises(ConfigError, match="does not divide the 9 examples"):
        _split(scale, 36, 4, 18, "dpr")
    # ColBERT trains on one process whatever its job's GPUs.
    assert _split(scale, 30, 8, 10, "colbert").accumulation == 3


def test_the_projection_follows_the_training_code(scale, paper, monkeypatch):
    """Rows take their accumulation and micro-batch rows from hybrid_ir.neural.distributed at
    the time they are built, so a change there moves them."""
    config, jobs = paper
    monkeypatch.setattr(distributed, "accumulation_steps", lambda *arguments: 5)
    monkeypatch.setattr(distributed, "micro_batch_rows", lambda *arguments: 7)
    changed = scale.paper_jobs(config, [])
    for before, after in zip(jobs, changed, strict=True):
        if before.resumes:
            assert after.accumulation == 5 and after.activations != before.activations
        else:
            assert after == before


def test_pya0_pairs_take_one_and_a_half_windows_each(scale):
    assert scale.pya0_pairs(4.5e6, 3) == pytest.approx(1e6)
    # Paper 000: 9M sentences gave 2.2M pairs; the rule gives 2.0M.
    assert scale.pya0_pairs(9e6, 3) == pytest.approx(2.2e6, rel=0.1)


def test_flop_and_parameter_counts_of_bert_base(scale):
    bert = scale.BERT_BASE
    assert scale.matmul_params(bert) == 12 * (4 * 768**2 + 2 * 768 * 3072) == 84_934_656
    assert scale.total_params(bert) == pytest.approx(110e6, rel=0.01)
    assert scale.total_params(scale.SHAPES["roberta-base"]) == pytest.approx(125e6, rel=0.01)
    one = 2 * 84_934_656 * 512 + 4 * 12 * 512**2 * 768
    assert scale.forward_flops(bert, 3, 512) == 3 * one
    assert scale.head_flops(bert, 10) == 10 * 2 * (768**2 + 768 * 30522)


def test_activation_formula_is_korthikanti_s_b_h_times_34_plus_5_a_s_over_h(scale):
    bert = scale.BERT_BASE
    sixteen = scale.layer_activation_bytes(bert, 2, 512, sixteen_bit=True)
    assert sixteen == 2 * 512 * 768 * (34 + 5 * 12 * 512 / 768)
    # fp32: every tensor twice the size but the two one-byte dropout masks per layer.
    full = scale.layer_activation_bytes(bert, 2, 512, sixteen_bit=False)
    assert full == 2 * sixteen - 2 * 512 * 768 * (2 + 12 * 512 / 768)


def test_attempts_count_the_start_and_the_steps_lost_at_each_kill(scale):
    assert scale.attempts_needed(3 * HOUR, 4 * HOUR, 0.5 * HOUR, 0.5 * HOUR) == 1
    # 10 h of work, 4 h runtimes, 0.5 h start and up to 0.5 h lost: 3 h of progress per kill.
    assert scale.attempts_needed(10 * HOUR, 4 * HOUR, 0.5 * HOUR, 0.5 * HOUR) == 4
    assert scale.attempts_needed(10 * HOUR, 1 * HOUR, 0.5 * HOUR, 0.5 * HOUR) == math.inf


def test_precision_picks_the_peak_rate(scale):
    assert scale.precision_mode("fp32", True) == "tf32"
    assert scale.precision_mode("fp32", False) == "fp32"
    assert scale.precision_mode("bf16", True) == "bf16"
    assert scale.precision_mode("fp16", False) == "bf16"


# Verdicts -------------------------------------------------------------------------------------


def test_a_job_that_fits_one_runtime_is_ok(scale, quick_starts):
    # 1000 steps of 1 TFLOP at 1 TFLOP/s: 1000 s of work and a 60 s start, in 60 minutes.
    row = scale.project(_job(scale), {"tf32": 1e12}, "tf32", _gpu(scale), retries=2)
    assert row.verdict == "ok" and row.attempts == 1
    assert row.seconds_per_step == pytest.approx(1.0)
    assert row.wall_h == pytest.approx(1060 / HOUR)
    assert row.limit_h == pytest.approx(3.0)


def test_a_resuming_job_may_use_its_retries_but_not_more(scale, quick_starts):
    rates = {"tf32": 1e12}
    # 7000 s of work; each 3600 s attempt: 60 s start, up to 100 steps (100 s) lost.
    fits = scale.project(_job(scale, steps=7000), rates, "tf32", _gpu(scale), retries=2)
    assert fits.verdict == "ok" and fits.attempts == 3
    assert "3 of 3 attempts" in fits.reason
    too_long = scale.project(_job(scale, steps=11000), rates, "tf32", _gpu(scale), retries=2)
    assert too_long.verdict == "FAIL" and too_long.attempts == 4
    assert "time" in too_long.reason
    no_retries = scale.project(_job(scale, steps=7000), rates, "tf32", _gpu(scale), retries=0)
    assert no_retries.verdict == "FAIL"


def test_a_job_that_does_not_resume_must_fit_one_runtime(scale, quick_starts):
    job = _job(scale, steps=7000, resumes=False, checkpoint_every=None, rule="encoder_index")
    row = scale.project(job, {"tf32": 1e12}, "tf32", _gpu(scale), retries=2)
    assert row.verdict == "FAIL" and "one runtime" in row.reason
    assert row.limit_h == pytest.approx(1.0)


def test_memory_over_the_card_or_mem_mb_fails(scale, quick_starts):
    gib = scale.GIB
    gpu = _gpu(scale, memory_gib=40)
    over_card = _job(scale, gpu_fixed=20 * gib, activations=20 * gib)
    row = scale.project(over_card, {"tf32": 1e12}, "tf32", gpu, retries=2)
    assert row.verdict == "FAIL" and "GPU memory" in row.reason
    over_host = _job(scale, host_bytes=2 * gib, mem_mb=1000)
    row = scale.project(over_host, {"tf32": 1e12}, "tf32", gpu, retries=2)
    assert row.verdict == "FAIL" and "host memory" in row.reason


def test_tokenising_is_spread_over_the_jobs_threads(scale, quick_starts):
    job = _job(scale, tokens_per_step=1000.0, threads=4)
    row = scale.project(job, {"tf32": 1e12}, "tf32", _gpu(scale), 2, tokenize_s_per_piece=1e-3)
    assert row.tokenize_s == pytest.approx(0.25)
    assert row.seconds_per_step == pytest.approx(1.25)


# The script -----------------------------------------------------------------------------------


def test_exit_status_is_1_when_a_job_cannot_finish(scale, monkeypatch, tmp_path, no_cuda):
    monkeypatch.setattr(scale, "paper_jobs", lambda config, notes: [_job(scale, steps=10**6)])
    out = tmp_path / "scale.json"
    assert scale.main(["--skip-cpu-check", "--json", str(out)]) == 1
    document = json.loads(out.read_text())
    assert [row["verdict"] for row in document["rows"]] == ["FAIL"]
    monkeypatch.setattr(scale, "paper_jobs", lambda config, notes: [_job(scale, steps=10)])
    assert scale.main(["--skip-cpu-check"]) == 0


def test_the_paper_configuration_has_a_row_for_every_gpu_rule(scale, paper):
    config, jobs = paper
    assert {job.rule for job in jobs} == set(scale.GPU_RULES)
    math_config = config["math_models"]
    pretrained = [name for name, entry in math_config["backbones"].items() if entry["pretrain"]]
    assert sorted(n for j in jobs if j.rule == "pretrain" for n in j.instances) == sorted(
        pretrained
    )
    for job in jobs:
        if job.rule == "pretrain":
            section = "pretraining"
            settings = math_config[section]
        elif job.rule == "finetune":
            section, backbone = job.instances[0].split("-", 1)
            settings = fine_tuning_settings(math_config, section, backbone)
            assert job.steps == training_steps(settings, scale.assumption("triplets"))
        else:
            continue
        batch, micro = settings["batch_size"], settings["micro_batch_size"]
        key = f"math_models.{section}"
        assert job.accumulation == distributed.accumulation_steps(batch, job.ranks, micro, key)
        assert job.resumes and job.checkpoint_every
    assert not [job for job in jobs if job.rule.startswith("encoder_") and job.resumes]


def test_compact_names_a_run_once_for_all_its_topic_sets(scale):
    assert scale.compact(["a/x", "a/y", "b/x", "b/y"]) == "a, b (each on x, y)"
    assert scale.compact(["a", "b"]) == "a, b"


def test_a_gpu_measurement_replaces_the_modelled_rate(scale, monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(scale, "paper_jobs", lambda config, notes: [_job(scale)])
    measurement = {
        "device": "made-up GPU",
        "memory_gib": 80.0,
        "flops_per_s": 2e12,
        "peak_bytes": 0,
        "fixed_bytes": 0,
        "layers": 12,
        "activations_predicted": 1.0,
    }
    monkeypatch.setattr(scale, "gpu_measurement", lambda *args, **kwargs: measurement)
    assert scale.main(["--skip-cpu-check"]) == 0
    out = capsys.readouterr().out
    assert "measured 2.0 TFLOP/s" in out
    assert "| 0.500 M |" in out  # 1 TFLOP per step at the measured 2 TFLOP/s
