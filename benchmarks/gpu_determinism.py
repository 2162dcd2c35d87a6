"""Does training repeat itself on one GPU? MLM+NSP pretraining and DPR, each run twice with the
same seed, per precision and attention kernel: equal loss curves, equal weight bytes, the largest
weight difference, and seconds per run.

torch.use_deterministic_algorithms(True, warn_only=True), which every training job sets, keeps
the attention kernels that scaled_dot_product_attention picks on CUDA (cuDNN, flash,
memory-efficient) on their non-deterministic backward passes, with a warning; the ``math``
rows force torch's composite attention, whose backward is matrix products and a softmax.
Nothing is downloaded: a randomly initialised BERT (``--layers`` x ``--hidden``) with a
WordPiece vocabulary of synthetic words, and synthetic pre-tokenized text and triplets.

Usage: python benchmarks/gpu_determinism.py [--device cuda|cpu] [--steps S]
"""

from __future__ import annotations

import contextlib
import json
import random
import tempfile
from pathlib import Path

import harness
import torch
from safetensors.torch import load_file
from transformers import BertConfig, BertForPreTraining, BertTokenizerFast

from hybrid_ir.neural.devices import cuda_settings
from hybrid_ir.neural.encoders import Job, encoder
from hybrid_ir.neural.pretrain import pretrain_job

WORDS = [f"w{a}{b}" for a in "abcdefghij" for b in "klmnopqrst"]
MATH = ["<x>", "<supscript>", "<2>", "<frac>"]
MODES = [("fp32", False, "default"), ("fp32", False, "math"), ("fp32", True, "default"),
         ("bf16", True, "default"), ("bf16", True, "math")]  # fmt: skip
COLUMNS = ("loop", "precision", "tf32", "attention", "same losses", "same weight bytes",
           "max weight diff", "s per run")  # fmt: skip


def synthetic_inputs(root: Path, layers: int, hidden: int) -> dict[str, Path]:
    rng = random.Random(3)
    model = root / "bert"
    model.mkdir(parents=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    (model / "vocab.txt").write_text("\n".join(specials + WORDS + ["."]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(model / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(model)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=hidden // 64, intermediate_size=4 * hidden,
                        max_position_embeddings=512)  # fmt: skip
    BertForPreTraining(config).bert.save_pretrained(model)

    def sentence() -> str:
        words = rng.choices(WORDS + MATH, k=rng.randint(8, 40))
        return " ".join(words) + "."

    corpus = root / "corpus.jsonl"
    with corpus.open("w") as out:
        for i in range(400):
            text = " ".join(sentence() for _ in range(rng.randint(3, 8)))
            out.write(json.dumps({"id": str(i), "title": "", "text": text}) + "\n")
    vocabulary = root / "vocabulary.tsv"
    vocabulary.write_text("token\tcount\n" + "".join(f"{token}\t3\n" for token in MATH))
    triplets = root / "triplets.jsonl"
    with triplets.open("w") as out:
        for i in range(400):
            positive, negative = sentence() * 3, sentence() * 3
            row = {"query_id": f"q{i}", "query": sentence(), "positive_id": f"p{i}",
                   "positive": positive, "negative_id": f"n{i}", "negative": negative}  # fmt: skip
            out.write(json.dumps(row) + "\n")
    return {"model": model, "corpus": corpus, "vocabulary": vocabulary, "triplets": triplets}


def attention(kind: str):
    if kind == "math":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        return sdpa_kernel(SDPBackend.MATH)
    return contextlib.nullcontext()


def weights(folder: Path) -> dict[str, torch.Tensor]:
    found: dict[str, torch.Tensor] = {}
    for path in sorted(folder.rglob("*.safetensors")):
        found |= {f"{path.relative_to(folder)}:{k}": v for k, v in load_file(path).items()}
    return found


def compare(first: Path, second: Path) -> tuple[bool, float]:
    one, two = weights(first), weights(second)
    same = all(torch.equal(one[name], two[name]) for name in one) and one.keys() == two.keys()
    diff = max((one[n].float() - two[n].float()).abs().max().item() for n in one)
    return same, diff


def pretrain(inputs: dict, out: Path, device: str, precision: str, steps: int) -> list:
    arguments = {
        "backbone": str(inputs["model"]),
        "corpora": [(str(inputs["corpus"]), ["text"])],
        "vocabulary": str(inputs["vocabulary"]),
        "output": str(out / "model"),
        "workdir": str(out / "work"),
        "settings": {
            "steps": steps,
            "batch_size": 16,
            "lr": 1e-4,
            "max_length": 256,
            "seed": 7,
            "checkpoint_every": steps,
            "eval_every": steps,
            "heldout": 0.1,
        },  # fmt: skip
        "precision": precision,
    }
    facts = pretrain_job(arguments, device, 1, 1)
    return [(row["mlm"], row["nsp"]) for row in facts["history"] if row["split"] == "train"]


def dpr(inputs: dict, out: Path, device: str, precision: str, steps: int) -> list:
    entry = {"steps": steps, "batch_size": 16, "lr": 1e-4, "seed": 3, "weight_decay": 0.01,
             "query_max_length": 32, "passage_max_length": 256, "snapshot_dirs": {},
             "workdir": str(out / "work")}  # fmt: skip
    job = Job(device, precision=precision)
    model = str(inputs["model"])
    facts = encoder("dpr").train(model, inputs["triplets"], out / "model", entry, job)
    return facts["losses"]


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    args = parser.parse_args()
    modes = MODES if args.device == "cuda" else [("fp32", False, "default")]
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "CPU"
    print(f"# Training twice on one device: {name}, torch {torch.__version__}")
    print(f"BERT {args.layers} layers x {args.hidden}, {args.steps} steps of 16, 256 pieces\n")
    print(harness.markdown_header(COLUMNS, right=COLUMNS[-2:]))
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        inputs = synthetic_inputs(root / "inputs", args.layers, args.hidden)
        for precision, tf32, kind in modes:
            if args.device == "cuda":
                cuda_settings(tf32)
            for loop, train in (("MLM+NSP", pretrain), ("DPR", dpr)):
                outs, curves, seconds = [], [], []
                for attempt in range(2):
                    out = root / f"{loop}-{precision}-{tf32}-{kind}-{attempt}"
                    with harness.stopwatch() as watch, attention(kind):
                        curves.append(train(inputs, out, args.device, precision, args.steps))
                    seconds.append(watch.seconds)
                    outs.append(out / "model")
                same, diff = compare(*outs)
                row = (loop, precision, tf32, kind, curves[0] == curves[1], same, f"{diff:.2e}",
                       f"{min(seconds):.1f}")  # fmt: skip
                print(harness.markdown_row(row), flush=True)


if __name__ == "__main__":
    main()
