"""Where the workflow puts each artifact; the rules and the check/table code share these names."""

from __future__ import annotations

RESULTS = "results"
MANIFEST = "workflow/resources/manifest.tsv"
BY_HAND = "workflow/resources/by-hand.tsv"
"""The workflow's manifest of raw files (config.yaml's `manifest`)."""


def raw(path: str) -> str:
    return f"{RESULTS}/raw/{path}"


def partial_downloads() -> str:
    """Where downloads of raw files wait to be verified (resumed by the next attempt), apart
    from the raw files themselves."""
    return f"{RESULTS}/downloads/partial"


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


def structure_queries(collection: str, topic_set: str, system: str) -> str:
    """The keyword queries a structure-search run sent to the engine (readable JSONL)."""
    return f"{RESULTS}/runs/{collection}/{topic_set}/{system}.queries.jsonl"


def structure_shard(collection: str, name: str, shard: str) -> str:
    """One shard of a sharded Approach0 index (``structure.<collection>.<name>.shards``)."""
    return f"{RESULTS}/shards/indexes/{collection}/{name}/{shard}"


def structure_shard_stats(collection: str, name: str, shard: int | str) -> str:
    return f"{RESULTS}/shards/indexes/{collection}/{name}/{shard}.stats.json"


def structure_shard_run(collection: str, topic_set: str, system: str, shard: int | str) -> str:
    """A topic set searched on one shard of a sharded Approach0 index, before the merge."""
    return f"{RESULTS}/shards/runs/{collection}/{topic_set}/{system}/{shard}.trec"


def structure_shard_facts(collection: str, topic_set: str, system: str, shard: int | str) -> str:
    return f"{RESULTS}/shards/runs/{collection}/{topic_set}/{system}/{shard}.facts.json"


def evaluation(collection: str, topic_set: str, system: str, qrels_set: str) -> str:
    return f"{RESULTS}/eval/{collection}/{topic_set}/{system}.{qrels_set}.json"


def pretok(collection: str, name: str) -> str:
    """A pre-tokenized canonical file: ``name`` is ``corpus`` or ``topics/<set>``."""
    return f"{RESULTS}/pretok/{collection}/{name}.jsonl"


def model(kind: str, backbone: str) -> str:
    """A trained model directory: ``kind`` is ``pretrained``, ``dpr`` or ``colbert``."""
    return f"{RESULTS}/models/{kind}/{backbone}"


def run_facts(collection: str, topic_set: str, system: str) -> str:
    """What a configured retriever reports beside its run (timing, tuned parameters)."""
    return f"{RESULTS}/runs/{collection}/{topic_set}/{system}.facts.json"


def sweep(collection: str, topic_set: str, name: str) -> str:
    return f"{RESULTS}/sweeps/{collection}/{topic_set}/{name}.json"


def crossval(name: str) -> str:
    return f"{RESULTS}/crossval/{name}.json"


def crossval_folds(name: str) -> str:
    return f"{RESULTS}/crossval/{name}.folds.tsv"


def figure(name: str, extension: str) -> str:
    return f"{RESULTS}/figures/{name}.{extension}"


def result_table(name: str, extension: str) -> str:
    """A paper-style or BM25 table: ``extension`` is md, tex, csv or per_query.tsv."""
    return f"{RESULTS}/tables/{name}.{extension}"


def claims(paper: str, extension: str) -> str:
    """A paper's claims and their verdicts: ``extension`` is json, md or html."""
    return f"{RESULTS}/claims/paper{paper}.{extension}"


def checks(name: str) -> str:
    """``summary.tsv`` (every expected-score check) or ``passed`` (all passed)."""
    return f"{RESULTS}/checks/{name}"


def pretok_facts(collection: str, name: str) -> str:
    """``stats.json`` or ``math_tokens.tsv`` of a collection's pre-tokenization."""
    return f"{RESULTS}/pretok/{collection}/{name}"


def model_file(name: str) -> str:
    """A file of the model stage: ``triplets.jsonl``, ``math_vocabulary.tsv`` ..."""
    return f"{RESULTS}/models/{name}"


def checkpoints(backbone: str) -> str:
    """Pretraining checkpoints: outside the rule's outputs, which Snakemake removes on failure."""
    return f"{RESULTS}/models/checkpoints/{backbone}"


def log(stage: str, name: str) -> str:
    return f"{RESULTS}/logs/{stage}/{name}.log"


def benchmark(stage: str, name: str) -> str:
    return f"{RESULTS}/benchmarks/{stage}/{name}.tsv"
