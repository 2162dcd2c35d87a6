"""A claim's comparability label, settled from what differs from the paper's setup, and the
share of the relevant documents the searched corpus holds, counted from the collection's files
when the claims are judged. :mod:`hybrid_ir.config.claim_setups` finds what differs from the
configuration when the DAG is built; this module is what the claims job itself reads, so that
the job imports no run origin or model code."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.reports.claims.file import LABELS

PAPER_SETUP, STAND_IN, OTHER_COLLECTION = LABELS


def settle(differences: Mapping[str, str], searches: bool, collection: str) -> tuple[str, str]:
    """The label and its reason from what differs from the paper's setup."""
    if "collection" in differences:
        return OTHER_COLLECTION, differences["collection"]
    if differences:
        return STAND_IN, "; ".join(differences.values())
    if searches:
        return PAPER_SETUP, f"searches {collection} with the paper's models"
    return PAPER_SETUP, f"scores the authors' own run files on {collection}'s judgments"


def with_relevant_shares(setups: Mapping[str, Mapping], inputs: Mapping[str, str]) -> dict:
    """The setups with each ``share`` counted from the inputs it names (each pair once). A
    collection the configuration calls a sample whose corpus holds every relevant document of
    the topic set is searched whole for this claim: the label is settled again without it."""
    counted: dict[tuple[str, str, int], dict] = {}
    filled = {}
    for claim_id, setup in setups.items():
        share = setup.get("share")
        if share is not None:
            key = (inputs[share["corpus"]], inputs[share["qrels"]], share["level"])
            if key not in counted:
                counted[key] = relevant_share(*key)
            setup = {**setup, "share": counted[key]}
            whole = counted[key]["held"] == counted[key]["relevant"]
            if whole and "sample" in setup["differences"]:
                differences = {k: v for k, v in setup["differences"].items() if k != "sample"}
                label, why = settle(differences, setup["searches_corpus"], setup["collection"])
                setup |= {"differences": differences, "label": label, "why": why}
        filled[claim_id] = dict(setup)
    return filled


def relevant_share(corpus: str | Path, qrels: str | Path, level: int) -> dict:
    """How many documents the canonical corpus holds, and how many of the qrels' documents
    judged at least ``level`` it holds (the sample's share of what the topics' pools found)."""
    ids = set()
    with open(corpus, encoding="utf-8") as handle:
        for line in handle:
            ids.add(json.loads(line)["id"])
    relevant = {
        (topic, doc)
        for topic, judged in read_qrels(qrels).items()
        for doc, relevance in judged.items()
        if relevance >= level
    }
    held = sum(1 for _, doc in relevant if doc in ids)
    return {"documents": len(ids), "relevant": len(relevant), "held": held, "level": level}
