"""Speed of the scientific-document branch, printed as figures (run after `make reproduce`).

- sparse-matrix BM25, pivoted TF-IDF and TF-IDF cosine: time to score all 300 SciFact test
  queries against the 5,183 documents once fitted (target under 1 s each);
- paper 002's analyzer: documents per second on SciFact;
- the dense encoder (all-MiniLM-L6-v2 on the CPU): CF documents per second;
- wall time of each paper's branch, summed from the rules' benchmark files.

Usage: python benchmarks/sparse_dense.py [--dense-docs N]
"""

from __future__ import annotations

import harness
from harness import RESULTS, seconds

from hybrid_ir.data.formats import read_records
from hybrid_ir.neural.dense import SentenceEncoder, document_text
from hybrid_ir.retrieval.analysis import Analyzer
from hybrid_ir.retrieval.sparse import PivotedTfidf, SparseBM25, TfidfCosine, record_texts

BRANCHES = {
    "paper 001 first stage (ARQMath)": [
        "runs/arqmath/*/bm25-flat.tsv", "runs/arqmath/*/tfidf-qa.tsv", "index/arqmath/bm25-*.tsv",
    ],
    "paper 002 (SciFact sparse)": [
        "runs/scifact/*/tfidf-pivoted.tsv", "runs/scifact/*/bm25-sparse*.tsv",
    ],
    "paper 003 (CF hybrid)": ["runs/cf/all/vsr.tsv", "runs/cf/all/dense-minilm.tsv"],
    "paper 004 (AskMe on SciFact)": ["runs/scifact/test/bm25-askme*.tsv"],
}  # fmt: skip


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--dense-docs", type=int, default=1239, help="CF documents to encode")
    args = parser.parse_args()
    collections = RESULTS / "collections"
    corpus = record_texts(read_records(collections / "scifact/corpus.jsonl"))
    queries = record_texts(read_records(collections / "scifact/topics/test.jsonl"))
    analyzer = Analyzer()
    models = {
        "BM25 (sparse matrix)": SparseBM25(analyzer, k1=0.9, b=0.4),
        "pivoted TF-IDF": PivotedTfidf(analyzer),
        "TF-IDF cosine": TfidfCosine(),
    }
    print(f"SciFact: {len(corpus)} documents, {len(queries)} test queries")
    for name, model in models.items():
        fit = seconds(lambda model=model: model.fit(corpus))
        search = seconds(lambda model=model: model.search(queries, 1000))
        verdict = "met" if search < 1 else "NOT met"
        print(f"  {name:22s} fit {fit:6.2f} s, score 300 queries {search:5.3f} s "
              f"(target < 1 s: {verdict})")  # fmt: skip
    texts = list(corpus.values())
    analysis = seconds(lambda: Analyzer().analyze_many(texts))
    print(f"analyzer (spaCy stop words + lookup lemmas): {len(texts) / analysis:,.0f} docs/s")

    records = list(read_records(collections / "cf/corpus.jsonl"))[: args.dense_docs]
    encoder = SentenceEncoder(threads=2)
    documents = [document_text(record) for record in records]
    encoding = seconds(lambda: encoder.encode(documents, progress=False))
    rate = len(records) / encoding
    print(f"dense encoding (all-MiniLM-L6-v2, CPU, 2 threads): {rate:,.1f} CF docs/s")
    for branch, patterns in BRANCHES.items():
        total = harness.benchmark_seconds(patterns)
        print(f"wall time of {branch}: {total:,.1f} s (sum of its rules' benchmark files)")


if __name__ == "__main__":
    main()
