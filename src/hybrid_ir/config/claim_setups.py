"""What a claim's two rows ran in this configuration, beside what the paper ran, and the
comparability label that follows from the two.

Each row of a table names a run (or a cross-validated fusion); a run's origin (the
configuration section that makes it, :mod:`hybrid_ir.config.run_origins`) says what it is: Lucene
BM25, a dense retriever and its model, DPR or ColBERT on a backbone further pretrained for so
many steps, a fusion of other runs, the authors' own run file. The claims file gives, per
table, the paper's collection (as this workflow's collection of that name), the model ids of
its neural rows and its setup in words. The label is then:

- *a different collection* when the claim's column searches another collection than the
  paper's (or the paper's has no counterpart here);
- *a scaled-down stand-in* when a row searches a sample of the paper's collection
  (``pool_restricted``) or uses a model the paper did not;
- *the paper's setup* otherwise.

The share of the relevant documents the searched corpus holds comes from the collection's
files when the claims are judged (:mod:`hybrid_ir.reports.claims.comparability`), not from the
configuration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from hybrid_ir.config.run_origins import systems
from hybrid_ir.config.settings import math_model_runs
from hybrid_ir.errors import ConfigError
from hybrid_ir.reports.claims.comparability import settle
from hybrid_ir.reports.claims.file import Claim, PaperClaims, Setup, check_claims, load_claims
from hybrid_ir.reports.tables.spec import column_key, row_sources, table_groups

_ENCODER_NAMES = {"dpr": "DPR", "colbert": "ColBERT"}


@dataclass(frozen=True)
class RunFacts:
    """A run in words, the model ids it uses, and whether it searched this workflow's corpus
    (an imported run file did not)."""

    text: str
    models: frozenset[str] = frozenset()
    searches_corpus: bool = True


@dataclass(frozen=True)
class ClaimSetup:
    """A claim's rows as this configuration runs them, the paper's setup, and the label."""

    label: str
    why: str
    collection: str
    topics: str
    qrels: str
    system: str
    baseline: str
    paper: str
    differences: Mapping[str, str]
    """What differs from the paper's setup: ``collection``, ``sample``, ``models`` -> why."""
    searches_corpus: bool

    def as_dict(self) -> dict:
        return {**asdict(self), "differences": dict(self.differences)}


def _length(settings: Mapping) -> str:
    if settings.get("epochs") is not None:
        amount = f"{settings['epochs']} epoch{'s' if settings['epochs'] != 1 else ''}"
    else:
        amount = f"{settings.get('steps')} steps"
    batch = settings.get("batch_size")
    return amount + (f" (batch {batch})" if batch else "")


def _backbone(math: Mapping, name: str) -> tuple[str, str]:
    """A backbone's model id and how it was prepared, in words."""
    entry = math["backbones"][name]
    model = entry.get("model", name)
    if not entry.get("pretrain"):
        return model, f"{model} as is"
    settings = {**math.get("pretraining", {}), **entry.get("pretraining", {})}
    return model, f"{model} further pretrained {_length(settings)}"


def _math_run(config: Mapping, collection: str, topics: str, name: str) -> RunFacts:
    math = config["math_models"]
    run = math_model_runs(math)[name]
    if "checkpoint" in run:
        return RunFacts(f"{run['kind']} released checkpoint {run['checkpoint']}",
                        frozenset({run["checkpoint"]}))  # fmt: skip
    if run["kind"] in ("rerank", "encoder_rerank"):
        base = describe_run(config, collection, topics, run["base"])
        if "released" in run:
            released = describe_run(config, collection, topics, run["released"])
            return RunFacts(f"{base.text}, its top candidates re-scored by {released.text}",
                            base.models | released.models, base.searches_corpus)  # fmt: skip
        model, prepared = _backbone(math, run["backbone"])
        if "encoder" in run:
            scorer = f"{_ENCODER_NAMES.get(run['encoder'], run['encoder'])} on {prepared}"
        else:
            scorer = f"{prepared} embeddings"
        return RunFacts(f"{base.text}, its top candidates re-scored by {scorer}",
                        base.models | {model}, base.searches_corpus)  # fmt: skip
    model, prepared = _backbone(math, run["backbone"])
    encoder = run["kind"]
    trained = _length(math[encoder]) if run["model"] == encoder else run["model"].split("-", 1)[-1]
    name = _ENCODER_NAMES.get(encoder, encoder)
    return RunFacts(f"{name} on {prepared}, fine-tuned {trained}", frozenset({model}))


def _components(config: Mapping, collection: str, topics: str, names: Iterable[str]) -> RunFacts:
    parts = [describe_run(config, collection, topics, name) for name in names]
    models: frozenset[str] = frozenset().union(*(part.models for part in parts))
    texts = [part.text for part in parts]
    return RunFacts(
        ", ".join(texts[:-1]) + " and " + texts[-1] if len(texts) > 1 else texts[0],
        models,
        any(part.searches_corpus for part in parts),
    )


def describe_run(config: Mapping, collection: str, topics: str, name: str) -> RunFacts:
    """A run of the configuration, in words, with the models it uses."""
    origin = systems(config, collection, topics).get(name)
    if origin == "bm25":
        return RunFacts(f"Lucene BM25 (k1 {config['bm25']['k1']}, b {config['bm25']['b']})")
    if origin == "structure":
        return RunFacts("Approach0 structure search (pya0)")
    if origin == "external_runs":
        return RunFacts("the authors' run file", searches_corpus=False)
    if origin == "math_models":
        return _math_run(config, collection, topics, name)
    if origin == "retrievers":
        entry = config["retrievers"][collection][name]
        if entry["model"] == "dense":
            model = entry["params"]["model"]
            return RunFacts(f"dense retrieval with {model}", frozenset({model}))
        if "base" in entry:
            base = describe_run(config, collection, topics, entry["base"])
            return RunFacts(f"{base.text}, re-ranked by {entry['model']}", base.models)
        return RunFacts(entry["model"].replace("_", " "))
    if origin == "fusions":
        entry = config["fusions"][collection][topics][name]
        parts = _components(config, collection, topics, entry["runs"])
        return RunFacts(f"{entry['method']} fusion of {parts.text}", parts.models,
                        parts.searches_corpus)  # fmt: skip
    if origin == "sweeps":
        entry = config["sweeps"][name.removesuffix("-best")]
        parts = _components(config, collection, topics, entry["runs"])
        return RunFacts(
            f"{entry['method']} fusion of {parts.text} at its best {entry['parameter']}",
            parts.models,
            parts.searches_corpus,
        )
    raise ConfigError(f"config: run {name!r} of {collection}/{topics} has no origin")


def _row_facts(config: Mapping, spec: Mapping, group: Mapping, label: str) -> RunFacts:
    row = next(row for block in spec["blocks"] for row in block["rows"] if row["label"] == label)
    groups = [g["name"] for g in table_groups(spec)]
    kind, name = row_sources(row, groups)[group["name"]]
    collection, topics = group["collection"], group["topics"]
    if kind == "run":
        return describe_run(config, collection, topics, name)
    entry = config["crossval"][name]
    parts = _components(config, collection, topics, (entry["dense"], entry["base"]))
    folds = entry["folds"]
    return RunFacts(
        f"linear fusion of {parts.text}, its weight cross-validated ({folds} folds)",
        parts.models,
        parts.searches_corpus,
    )


def claim_group(spec: Mapping, column: str) -> dict:
    """The column group of a table that holds ``column``."""
    return next(
        group
        for group in table_groups(spec)
        for name in group["columns"]
        if column_key(group["name"], name) == column
    )


def claim_setup(config: Mapping, claim: Claim, paper: Setup) -> ClaimSetup:
    """What the claim's rows ran here, beside the paper's setup, and the label."""
    spec = config["tables"][claim.table]
    group = claim_group(spec, claim.column)
    collection = group["collection"]
    system, baseline = (
        _row_facts(config, spec, group, label) for label in (claim.system, claim.baseline)
    )
    searches = system.searches_corpus or baseline.searches_corpus
    sample = bool(searches and config["collections"][collection].get("pool_restricted"))
    other_models = sorted((system.models | baseline.models) - set(paper.backbones))
    differences: dict[str, str] = {}
    if collection not in paper.collections:
        differences["collection"] = (
            f"searches {collection}; the paper searched {', '.join(paper.collections)}"
            if paper.collections
            else f"searches {collection}; the paper's collection has no counterpart here"
        )
    if sample:
        differences["sample"] = f"searches a sample of {collection}"
    if paper.backbones and other_models:
        differences["models"] = (
            f"uses {', '.join(other_models)} where the paper used {', '.join(paper.backbones)}"
        )
    label, why = settle(differences, searches, collection)
    return ClaimSetup(
        label, why, collection, group["topics"], group.get("qrels", group["topics"]),
        system.text, baseline.text, paper.described, differences, searches,
    )  # fmt: skip


def claims_by_paper(paths: Sequence[str | Path], config: Mapping) -> dict[str, PaperClaims]:
    """Each configured claims file, loaded and checked against the configuration (its tables,
    rows and columns, and each stated comparability), by its paper's three digits."""
    papers: dict[str, PaperClaims] = {}
    for path in paths:
        claims = load_claims(path)
        if claims.paper in papers:
            raise ConfigError(
                f"{path}: paper {claims.paper} already has claims in {papers[claims.paper].source}"
            )
        check_claims(claims, config)
        for claim in claims.claims:
            if claim.table in config["tables"]:
                check_comparability(config, claims.source, claim, claims.setups[claim.table])
        papers[claims.paper] = claims
    return papers


def check_comparability(config: Mapping, source: str, claim: Claim, paper: Setup) -> None:
    """Refuse a claim whose stated ``comparability`` is not the label this configuration
    gives it."""
    if claim.comparability is None:
        return
    setup = claim_setup(config, claim, paper)
    if setup.label != claim.comparability:
        raise ConfigError(
            f"{source}: claim {claim.id}: comparability: says {claim.comparability!r}, but "
            f"this configuration makes it {setup.label!r} ({setup.why})"
        )


def judged_setups(config: Mapping, claims: PaperClaims) -> dict[str, dict]:
    """Claim id -> its setup as the claims rule reads it, for each claim whose table this
    configuration builds; where its rows search the corpus, ``share`` names the inputs (corpus
    and the topic set's full qrels) and the grade the relevant share is counted from: the
    highest relevance level among the column group's measures (ARQMath's H+M, grade 2)."""
    from hybrid_ir.evaluation.measures import resolve_measures

    setups = {}
    for claim in claims.claims:
        if claim.table not in config["tables"]:
            continue
        setup = claim_setup(config, claim, claims.setups[claim.table])
        entry = setup.as_dict()
        collection = config["collections"][setup.collection]
        if setup.searches_corpus and collection.get("corpus", True):
            group = claim_group(config["tables"][claim.table], claim.column)
            levels = [
                column.relevance_level
                for column in resolve_measures(group.get("measures", []))
                if column.relevance_level is not None
            ]
            qrels = collection.get("restricted_qrels", {}).get(setup.qrels, setup.qrels)
            entry["share"] = {
                "corpus": f"corpus_{setup.collection}",
                "qrels": f"qrels_{setup.collection}_{qrels}",
                "qrels_name": qrels,
                "level": max(levels, default=1),
            }
        setups[claim.id] = entry
    return setups
