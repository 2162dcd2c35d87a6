"""Where the workflow puts each artifact; the rules and the check/table code share these names."""

from __future__ import annotations

RESULTS = "results"


def raw(path: str) -> str:
    return f"{RESULTS}/raw/{path}"


def corpus(collection: str) -> str:
    return f"{RESULTS}/collections/{collection}/corpus.jsonl"


def topics(collection: str, name: str) -> str:
    return f"{RESULTS}/collections/{collection}/topics/{name}.jsonl"


def qrels(collection: str, name: str) -> str:
    return f"{RESULTS}/collections/{collection}/qrels/{name}.qrels"


def table(collection: str, name: str) -> str:
    return f"{RESULTS}/collections/{collection}/tables/{name}.tsv"


def index(collection: str, name: str) -> str:
    return f"{RESULTS}/indexes/{collection}/{name}"


def index_stats(collection: str, name: str) -> str:
    return f"{RESULTS}/indexes/{collection}/{name}.stats.json"


def run(collection: str, topic_set: str, system: str) -> str:
    return f"{RESULTS}/runs/{collection}/{topic_set}/{system}.trec"


def evaluation(collection: str, topic_set: str, system: str, qrels_set: str) -> str:
    return f"{RESULTS}/eval/{collection}/{topic_set}/{system}.{qrels_set}.json"


def pretok(collection: str, name: str) -> str:
    """A pre-tokenized canonical file: ``name`` is ``corpus`` or ``topics/<set>``."""
    return f"{RESULTS}/pretok/{collection}/{name}.jsonl"


def model(kind: str, backbone: str) -> str:
    """A trained model directory: ``kind`` is ``pretrained``, ``dpr`` or ``colbert``."""
    return f"{RESULTS}/models/{kind}/{backbone}"
