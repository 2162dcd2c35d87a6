"""Paper 001's re-ranker: cosine of mean-pooled token embeddings of a further-pretrained MLM.

PSU re-ranked the top 1000 candidates of a first-stage run (tf.BERT: the TF-IDF run's) with
RoBERTa further pretrained on MSE: each candidate, a Q+A post (question title and body, then
the answer body), and each topic are embedded as the mean of the last layer's token vectors
over the real (unpadded) tokens, with head truncation: the first ``max_length - 2`` word pieces
are kept (510 plus [CLS] and [SEP] for 512 positions), which PSU found better than head+tail.
Candidates are re-scored by cosine similarity; documents below ``depth`` are dropped, so the
result is a re-ranked candidate list that fusion (RRF) combines with the first stage.

The backbone is anything ``AutoModel`` loads: this workflow's further-pretrained directory (a
``BertForPreTraining`` checkpoint, whose encoder weights ``AutoModel`` keeps), a local
checkpoint or a hub id (PSU released theirs as ``shauryr/arqmath-roberta-base-1.5M``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from hybrid_ir.data.runs import Run
from hybrid_ir.neural.candidates import top_candidates, unique_candidates
from hybrid_ir.neural.models import Encoder

logger = logging.getLogger(__name__)

# Run files keep six decimals; scores rounded to them before ranking give ties the canonical
# doc-id order in memory and in the file alike, and make the ranking independent of the last
# float bits, which vary with the length-sorted batch a document is encoded in.
SCORE_DECIMALS = 6


def rerank_by_embeddings(
    model: str | Path,
    base: Run,
    documents: Mapping[str, str],
    queries: Mapping[str, str],
    depth: int,
    max_length: int = 512,
    batch_size: int = 16,
    device: str = "cpu",
    precision: str = "fp32",
) -> Run:
    """Each query's top ``depth`` documents of ``base`` scored by embedding cosine.

    Every distinct candidate is encoded once, however many topics retrieve it, so the cost is
    one pass over the candidates' union (at most the corpus) plus one over the queries.
    """
    candidates = top_candidates(base, queries, depth)
    unique = unique_candidates(candidates, documents, queries)
    encoder = Encoder(
        model,
        pooling="mean",
        max_length=max_length,
        batch_size=batch_size,
        normalize=True,
        device=device,
        precision=precision,
    )
    # The paper's head truncation whatever the checkpoint's tokenizer config says: a hub
    # tokenizer may ship truncation_side="left", which would keep the tail instead.
    encoder.tokenizer.truncation_side = "right"
    logger.info(
        "re-ranking %d topics' top %d: %d candidates, %d distinct documents to encode",
        len(candidates),
        depth,
        sum(len(docs) for docs in candidates.values()),
        len(unique),
    )
    embedded = encoder.encode([documents[doc] for doc in unique], progress=True)
    row = {doc: index for index, doc in enumerate(unique)}
    topics = list(candidates)
    query_vectors = encoder.encode([queries[topic] for topic in topics])
    run: Run = {}
    for query, topic in zip(query_vectors, topics, strict=True):
        docs = candidates[topic]
        scores = embedded[[row[doc] for doc in docs]] @ query
        run[topic] = {
            doc: round(float(score), SCORE_DECIMALS)
            for doc, score in zip(docs, scores, strict=True)
        }
    return run
