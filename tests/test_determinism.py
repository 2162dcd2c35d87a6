"""Determinism, proven end to end on the toy workflow of tests/toy_workflow.py (with its dense
MiniLM retriever, so that a torch job runs too).

Two runs in two directories give byte-identical results, except for what is excluded below with
its reason; a changed crossval seed re-runs exactly the jobs downstream of that entry, as
Snakemake's own file graph (``--detailed-summary``) names them, rewrites only their files, and
changes the bytes of only those the seed can change.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import yaml
from toy_workflow import make_toy, snakemake

from hybrid_ir.fusion.crossval import assign_folds

pytestmark = pytest.mark.lucene

CROSSVAL = "toy-linear"
NEW_SEED = 8
"""A seed whose folds differ from the toy configuration's (7), so that the rerun has an effect."""

TIMINGS = ("results/logs/", "results/benchmarks/", "results/provenance/")
"""Excluded from the byte comparison: logs and Snakemake benchmarks record wall times and dates,
and so does each provenance record (its ``wall_time_s``); the records are compared without that
field instead."""
PROVENANCE = "results/provenance/"

LUCENE_INDEX = "results/indexes/toy/bm25-flat/"
LUCENE_SEGMENT_FILE = re.compile(r"(_\d+.*|segments_\d+)$")
"""Excluded from the byte comparison (compared by name and size instead): Lucene writes a random
16-byte segment id into every codec header (``CodecUtil.writeIndexHeader``), a ``timestamp``
diagnostic into ``_0.si``, and ids plus a generation into ``segments_N``; each file's CRC32
footer then differs too. Measured on two toy runs: every differing byte lay in those fields.
What the index answers is compared byte for byte: its stats JSON and the BM25 run."""

KINDS = {
    "run": r"results/runs/.+\.trec",
    "evaluation": r"results/eval/.+\.json",
    "Markdown table": r"results/tables/.+\.md",
    "CSV table": r"results/tables/.+\.csv",
    "LaTeX table": r"results/tables/.+\.tex",
    "per-query table": r"results/tables/.+\.per_query\.tsv",
    "PNG figure": r"results/figures/.+\.png",
    "SVG figure": r"results/figures/.+\.svg",
    "crossval report": r"results/crossval/.+\.json",
    "crossval folds": r"results/crossval/.+\.folds\.tsv",
    "sweep": r"results/sweeps/.+\.json",
    "dense (torch) run": r"results/runs/.+/dense-minilm\.trec",
    "dense run facts": r"results/runs/.+/dense-minilm\.facts\.json",
}


def is_lucene_segment_file(name: str) -> bool:
    return name.startswith(LUCENE_INDEX) and bool(
        LUCENE_SEGMENT_FILE.match(name[len(LUCENE_INDEX) :])
    )


def outputs(root: Path) -> dict[str, Path]:
    """Every file under ``root/results`` but the timing records, by its workflow-relative name."""
    files = {
        path.relative_to(root).as_posix(): path
        for path in (root / "results").rglob("*")
        if path.is_file()
    }
    return {name: path for name, path in files.items() if not name.startswith(TIMINGS)}


def provenance_records(root: Path) -> dict[str, dict]:
    """Every provenance record but its wall time, by its workflow-relative name."""
    records = {}
    for path in (root / PROVENANCE).rglob("*.json"):
        record = json.loads(path.read_text())
        del record["wall_time_s"]
        records[path.relative_to(root).as_posix()] = record
    return records


def footer_only_difference(before: str, after: str) -> bool:
    """Whether two versions of a table differ in the provenance footer line alone."""
    old, new = before.splitlines(), after.splitlines()
    if len(old) != len(new):
        return False
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    return len(changed) == 1 and all("configuration sha256" in line for line in changed[0])


def digests(root: Path) -> dict[str, str]:
    return {
        name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in outputs(root).items()
    }


def mtimes(root: Path) -> dict[str, int]:
    return {name: path.stat().st_mtime_ns for name, path in outputs(root).items()}


def job_counts(output: str) -> dict[str, int]:
    """The rule → job count table Snakemake prints under "Job stats:" after a run."""
    table = output.split("Job stats:", 1)[1].splitlines()
    counts = {}
    for line in table[3:]:  # "Job stats:" remainder, header, rule
        rule, count = line.split()
        if rule == "total":
            return counts
        counts[rule] = int(count)
    raise AssertionError(f"no total in the job stats:\n{output}")


def downstream(summary: str, seeds: set[str]) -> dict[str, str]:
    """The files ``seeds`` and every output derived from them, with the rule that makes each,
    from ``snakemake --detailed-summary``'s output/rule/input columns."""
    rows = [line.split("\t") for line in summary.splitlines() if line.startswith("results/")]
    made_by = {row[0]: row[2] for row in rows}
    inputs = {row[0]: set(filter(None, row[4].split(","))) for row in rows}
    reached = set(seeds)
    while True:
        more = {name for name, used in inputs.items() if used & reached} - reached
        if not more:
            return {name: made_by[name] for name in reached}
        reached |= more


@pytest.fixture(scope="module")
def twin_runs(tmp_path_factory) -> tuple[Path, Path]:
    """The dense toy configuration run twice, each in its own directory with its own mirror:
    the first with its torch job in a job server (the default), the second without."""
    roots = []
    for name, servers in (("first", "True"), ("second", "False")):
        root = make_toy(tmp_path_factory.mktemp(name), dense=True)
        result = snakemake(root, "--config", f"job_servers={servers}")
        assert result.returncode == 0, result.stderr[-4000:]
        starts = {
            path.name: "forked from job server" in path.read_text()
            for path in (root / "results" / "logs").rglob("*.log")
            if "process " in path.read_text()
        }
        served = {name for name, forked in starts.items() if forked}
        retrieve_jobs = {"dense-minilm.retrieve.log", "tfidf.retrieve.log"}  # they import torch
        assert served == (retrieve_jobs if servers == "True" else set()), starts
        roots.append(root)
    return roots[0], roots[1]


def test_two_runs_in_two_directories_give_identical_bytes(twin_runs):
    first, second = (outputs(root) for root in twin_runs)
    assert sorted(first) == sorted(second)
    lucene = sorted(name for name in first if is_lucene_segment_file(name))
    compared = sorted(name for name in first if name not in lucene)
    different = [name for name in compared if first[name].read_bytes() != second[name].read_bytes()]
    assert different == [], f"differ between two identical runs: {different}"

    for kind, pattern in KINDS.items():
        assert any(re.fullmatch(pattern, name) for name in compared), f"no {kind} compared"
    assert f"{LUCENE_INDEX.rstrip('/')}.stats.json" in compared
    # The segment files are excluded from the byte comparison only; there must be some, the same
    # ones, of the same sizes.
    assert any(name.endswith(".si") for name in lucene)
    sizes = [(name, first[name].stat().st_size, second[name].stat().st_size) for name in lucene]
    assert all(one == two for _, one, two in sizes), sizes

    # One provenance record per output, equal in both directories but for the wall time: the
    # mirror's location is not part of the configuration hash, so neither is the directory.
    records = [provenance_records(root) for root in twin_runs]
    assert records[0] == records[1]
    recorded = [
        name for name in compared if any(re.fullmatch(pattern, name) for pattern in KINDS.values())
    ]
    assert recorded and all(f"{PROVENANCE}{name}.json" in records[0] for name in recorded)


def test_changed_crossval_seed_reruns_and_changes_exactly_its_downstream(twin_runs):
    root = twin_runs[1]
    config = yaml.safe_load((root / "config.yaml").read_text())
    entry = config["crossval"][CROSSVAL]
    topics = ["q1", "q2"]  # the toy qrels' topics (tests/toy_workflow.py QRELS)
    assert assign_folds(topics, entry["folds"], seed=NEW_SEED) != assign_folds(
        topics, entry["folds"], seed=entry["seed"]
    )
    idle = snakemake(root, "--dry-run")
    assert idle.returncode == 0 and "Nothing to be done" in idle.stdout + idle.stderr

    summary = snakemake(root, "--detailed-summary", cores="1")
    assert summary.returncode == 0, summary.stderr[-4000:]
    crossval_files = {
        f"results/crossval/{CROSSVAL}.json",
        f"results/crossval/{CROSSVAL}.folds.tsv",
    }
    expected = downstream(summary.stdout, crossval_files)
    # What the graph must hold for this test to mean something: the crossval job and a table
    # that consumes it.
    assert {"crossvalidate", "paper_table"} <= set(expected.values())
    before = digests(root)
    tables_before = {name: (root / name).read_text() for name in before if "/tables/" in name}
    written = mtimes(root)
    report = json.loads((root / f"results/crossval/{CROSSVAL}.json").read_text())

    entry["seed"] = NEW_SEED
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    rerun = snakemake(root)
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    ran = job_counts(rerun.stdout + rerun.stderr)
    # "all" is the target rule; it has no output and runs whenever anything does.
    assert ran == {"all": 1, **{rule: 1 for rule in set(expected.values())}}, ran
    rewritten = {name for name, stamp in mtimes(root).items() if written[name] != stamp}
    assert rewritten == set(expected), (sorted(rewritten), sorted(expected))

    after = digests(root)
    assert sorted(after) == sorted(before)
    changed = {name for name in before if before[name] != after[name]}
    # The configuration hash in a re-run table's footer is new; every other byte is not.
    footers = {
        name
        for name in changed - crossval_files
        if footer_only_difference(tables_before.get(name, ""), (root / name).read_text())
    }
    assert footers and changed == crossval_files | footers, sorted(changed)
    # The table re-ran but kept its bytes, and must: two topics in two folds can only swap the
    # folds' labels, and each topic is still scored by a model fitted on the other, so the
    # per-topic and mean cross-validated scores (all the table reads) stay the same.
    new_report = json.loads((root / f"results/crossval/{CROSSVAL}.json").read_text())
    assert new_report["folds"] != report["folds"]
    for measure, column in report["columns"].items():
        assert new_report["columns"][measure]["per_topic"] == column["per_topic"]
        assert new_report["columns"][measure]["mean_test_score"] == column["mean_test_score"]
