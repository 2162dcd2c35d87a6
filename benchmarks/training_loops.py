"""The workflow's own training loops (MLM+NSP, DPR, ColBERT) as a fraction of the fp32 limit.

Each loop runs here, in one process, with the default configuration's settings on the inputs a
`make reproduce` left in results/ (pre-tokenized corpora, math vocabulary, triplets). A step's
FLOPs are counted by torch's FlopCounterMode, its seconds timed by the loop itself (the
`seconds` of its facts), each as the difference between a short and a longer run, so that what
a loop does once (MLM's held-out losses, the first step's allocations) cancels out. GFLOP/s per
step is set against the fp32 matmul limit measured on the same threads (cpu_precision.py's
2048 x 2048 product, best of 5). The workflow gives every torch job one thread (config.yaml
`resources`), hence the default `--threads 1`. Padding counts as work: a step's FLOPs are those
of the padded batch it computes.

Usage: python benchmarks/training_loops.py [--threads N] [--steps S]
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import harness
import yaml
from cpu_precision import GOAL, matmul_limit
from harness import RESULTS

from hybrid_ir.config.settings import pretraining_settings
from hybrid_ir.config.validation import validate_config

SCHEMA = Path("workflow/schemas/config.schema.yaml")
COUNTED_STEPS = (2, 4)
SHORT_RUN = 2


def flops(train, steps: int) -> int:
    """FLOPs of ``train(steps, workdir)``, all of it."""
    from torch.utils.flop_counter import FlopCounterMode

    with tempfile.TemporaryDirectory() as workdir, FlopCounterMode(display=False) as counter:
        train(steps, Path(workdir))
    return counter.get_total_flops()


def seconds(train, steps: int) -> float:
    """Seconds of ``steps`` steps, as the loop's own facts record them."""
    with tempfile.TemporaryDirectory() as workdir:
        return float(train(steps, Path(workdir))["seconds"])


def mlm(math: dict):
    from hybrid_ir.neural.pretrain import pretrain_job

    backbone = next(name for name, entry in math["backbones"].items() if entry.get("pretrain"))
    settings = pretraining_settings(math, backbone)
    corpora = [
        (str(RESULTS / "pretok" / name / "corpus.jsonl"), fields)
        for name, fields in math["pretraining"]["corpus"].items()
    ]

    def train(steps: int, workdir: Path) -> dict:
        arguments = {
            "backbone": math["backbones"][backbone]["model"],
            "corpora": corpora,
            "vocabulary": str(RESULTS / "models/math_vocabulary.tsv"),
            "output": str(workdir / "model"),
            "workdir": str(workdir / "work"),
            "settings": settings | {"steps": steps, "checkpoint_every": steps + 1},
            "precision": "fp32",
        }
        return pretrain_job(arguments, "cpu", 1, 1)

    return train


def encoder_loop(math: dict, kind: str, extensions: Path):
    from hybrid_ir.neural.encoders import Job, encoder

    source = math["backbones"]["minilm"]["model"]
    job = Job("cpu", extensions, precision="fp32")

    def train(steps: int, workdir: Path) -> dict:
        settings = math[kind] | {"steps": steps, "snapshot_dirs": {}, "workdir": None}
        triplets = RESULTS / "models/triplets.jsonl"
        return encoder(kind).train(source, triplets, workdir / "model", settings, job)

    return train


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--extensions", type=Path, default=Path(".cache/torch_extensions"))
    args = parser.parse_args()

    import torch

    from hybrid_ir.neural.devices import set_threads

    set_threads(args.threads)
    config = yaml.safe_load(Path(args.config).read_text())
    validate_config(config, SCHEMA, args.config)
    math = config["math_models"]
    limit = matmul_limit(torch.float32)
    print(f"{args.threads} thread(s); fp32 matmul limit {limit:.1f} GFLOP/s")
    print(f"{'loop':8} {'GFLOP/step':>10} {'steps/s':>8} {'GFLOP/s':>8} {'of limit':>9}  goal")
    loops = {
        "MLM+NSP": mlm(math),
        "DPR": encoder_loop(math, "dpr", args.extensions),
        "ColBERT": encoder_loop(math, "colbert", args.extensions),
    }
    for name, train in loops.items():
        short, long = COUNTED_STEPS
        step_flops = (flops(train, long) - flops(train, short)) / (long - short)
        step_seconds = (seconds(train, args.steps) - seconds(train, SHORT_RUN)) / (
            args.steps - SHORT_RUN
        )
        rate = step_flops / step_seconds / 1e9
        fraction = rate / limit
        verdict = "met" if fraction >= GOAL else "MISS"
        print(
            f"{name:8} {step_flops / 1e9:10.1f} {1 / step_seconds:8.3f} {rate:8.1f} "
            f"{fraction:9.0%}  >= {GOAL:.0%} {verdict}"
        )


if __name__ == "__main__":
    main()
