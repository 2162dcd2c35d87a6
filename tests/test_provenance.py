"""Provenance records (hybrid_ir.jobs.provenance) and ``hybrid-ir provenance``, without Snakemake: a
stand-in job with the attributes of a script's ``snakemake`` object writes records, and the
chain is read back from them."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from hybrid_ir.cli import main as cli
from hybrid_ir.jobs.environment import freeze_sha256, installed
from hybrid_ir.jobs.provenance import (
    PROVENANCE_STATES,
    GitState,
    Identity,
    chain,
    config_hash,
    git_state,
    package_versions,
    read_record,
    record_path,
    seeds,
    write_records,
)

REPO = Path(__file__).resolve().parents[1]
CONFIG = {"seed": 1234, "mirror": "/data/mirror", "manifest": "m.tsv", "run_depth": 1000}


class Job:
    """What write_records reads of Snakemake's ``snakemake`` object."""

    def __init__(self, rule, inputs, outputs, params=None, wildcards=None):
        self.rule = rule
        self.input = inputs
        self.output = outputs
        self.params = params or {}
        self.wildcards = wildcards or {}
        self.config = CONFIG
        self.threads = 1
        self.scriptdir = str(REPO / "workflow" / "scripts")


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def make(path: str, text: str) -> str:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)
    return path


def three_steps() -> None:
    """raw file -> corpus -> run, each recorded as the workflow records it."""
    raw = make("results/raw/c/data.zip", "raw bytes")
    write_records(Job("fetch_raw", [], [raw]), 0.1, raw={"c/data.zip": "ab" * 32})
    corpus = make("results/collections/c/corpus.jsonl", '{"id": "d1"}\n')
    write_records(Job("convert_c", [raw], [corpus]), 0.2)
    run = make("results/runs/c/test/bm25.trec", "q1 Q0 d1 1 1.0 bm25\n")
    expected = make("expected/c.yaml", "runs: {}\n")
    write_records(
        Job("retrieve", [corpus, expected], [run], {"code": "abc", "spec": {"seed": 7}}), 1.5
    )


def test_configuration_hash_leaves_out_where_the_data_is_and_how_large_jobs_are():
    moved = {**CONFIG, "mirror": "/elsewhere", "manifest": "/tmp/m.tsv", "resources": {"x": 1}}
    assert config_hash(moved) == config_hash(CONFIG)
    assert config_hash({**CONFIG, "seed": 1}) != config_hash(CONFIG)
    assert len(config_hash(CONFIG)) == 64


def test_seeds_are_found_anywhere_in_the_params():
    params = {"spec": {"seed": 7, "folds": [{"seed": 3}]}, "seed_note": "x", "code": "abc"}
    assert seeds(params) == {"params.spec.seed": 7, "params.spec.folds[0].seed": 3}


def test_records_carry_the_raw_files_down_and_the_facts_of_the_job(workdir):
    three_steps()
    record = read_record("results/runs/c/test/bm25.trec")
    assert record["raw_inputs"] == {"c/data.zip": "ab" * 32}
    assert record["rule"] == "retrieve" and record["seeds"] == {"params.spec.seed": 7}
    assert record["code"] == "abc" and record["wall_time_s"] == 1.5
    assert record["config_sha256"] == config_hash(CONFIG)
    assert record["device"] == "cpu"
    assert {"torch", "transformers", "pyserini", "ir-measures"} <= set(record["packages"])
    assert len(record["git"]["commit"]) == 40
    assert record_path("results/runs/c/test/bm25.trec") == Path(
        "results/provenance/results/runs/c/test/bm25.trec.json"
    )


def test_records_name_the_lock_and_flag_packages_that_differ_from_it(workdir):
    three_steps()
    run = "results/runs/c/test/bm25.trec"
    environment = read_record(run)["environment"]
    assert environment == {
        "lock_sha256": hashlib.sha256((REPO / "requirements.lock").read_bytes()).hexdigest(),
        "freeze_sha256": freeze_sha256(installed()),
        "lock_mismatches": [],
    }
    text = "\n".join(chain(run))
    assert f"environment: requirements.lock sha256 {environment['lock_sha256']}; " in text
    assert "differ from requirements.lock" not in text

    # A job run in an environment that left the lock: its record says which packages moved.
    record_file = record_path(run)
    record = json.loads(record_file.read_text())
    record["environment"]["lock_mismatches"] = ["numpy 2.4.6 locked, installed 2.4.5"]
    record_file.write_text(json.dumps(record))
    assert (
        "  [installed packages differ from requirements.lock: numpy 2.4.6 locked, installed "
        "2.4.5]" in "\n".join(chain(run))
    )
    del record["environment"]  # a record from before environments were recorded
    record_file.write_text(json.dumps(record))
    assert "  environment: not recorded" in "\n".join(chain(run))


def test_chain_reaches_the_raw_files_and_says_what_is_gone_or_changed(workdir):
    three_steps()
    text = "\n".join(chain("results/runs/c/test/bm25.trec"))
    assert "raw files (1):\n    c/data.zip sha256 " + "ab" * 32 in text
    assert "results/raw/c/data.zip\n" in text and "rule fetch_raw" in text
    assert "expected/c.yaml (a file of the workflow's repository)" in text
    assert "seeds: params.spec.seed = 7" in text

    Path("results/collections/c/corpus.jsonl").write_text("edited\n")
    Path("results/raw/c/data.zip").unlink()
    text = "\n".join(chain("results/runs/c/test/bm25.trec"))
    assert "results/collections/c/corpus.jsonl [changed on disk since its record" in text
    assert "results/raw/c/data.zip [no longer on disk]" in text
    assert (
        "results/runs/c/test/none.trec (no longer on disk, and no provenance record)"
        in "\n".join(chain("results/runs/c/test/none.trec"))
    )


def test_an_input_met_twice_is_expanded_once(workdir):
    three_steps()
    corpus = "results/collections/c/corpus.jsonl"
    table = make("results/tables/t.md", "# t\n")
    write_records(Job("paper_table", ["results/runs/c/test/bm25.trec", corpus], [table]), 0.3)
    lines = list(chain(table))
    assert sum(line.strip().startswith("rule convert_c") for line in lines) == 1
    assert any(line.strip() == f"{corpus} (listed above)" for line in lines)


def test_cli_prints_the_chain_and_a_missing_result_is_not_an_error(workdir, capsys):
    three_steps()
    assert cli.main(["provenance", "results/runs/c/test/bm25.trec"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("results/runs/c/test/bm25.trec\n  rule retrieve")
    assert cli.main(["provenance", "results/tables/gone.md"]) == 0
    assert "no longer on disk" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("corrupt", "problem"),
    [
        (lambda text: text[: len(text) // 2], "not a provenance record: "),
        (lambda text: "[1, 2]\n", ":1: not a provenance record: not a JSON object"),
        (lambda text: text.replace('"rule"', '"rules"'), "without a valid 'rule'"),
        (lambda text: text.replace('"threads": 1', '"threads": "1"'), "without a valid 'threads'"),
        (lambda text: text.replace('"commit"', '"commits"'), "without a valid 'git'"),
        (lambda text: "\udcff" + text, "not a provenance record: "),
    ],
    ids=["cut", "list", "no rule", "threads a string", "no commit", "not UTF-8"],
)
def test_a_corrupt_record_is_one_line_naming_its_file(workdir, capsys, corrupt, problem):
    """A cut, edited or foreign record was a traceback (JSONDecodeError, KeyError)."""
    three_steps()
    corpus = "results/collections/c/corpus.jsonl"
    record = record_path(corpus)
    corrupted = corrupt(record.read_text(encoding="utf-8"))
    record.write_bytes(corrupted.encode("utf-8", errors="surrogateescape"))
    assert cli.main(["provenance", "results/runs/c/test/bm25.trec"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"hybrid-ir error: {record}") and err.count("\n") == 1
    assert problem in err


def test_git_state_names_the_commit_and_dirtiness(tmp_path):
    state = git_state(str(REPO))
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert state.commit == head
    assert git_state(str(tmp_path)) == GitState("unknown", False)
    assert GitState("0123456789abcdef", True).describe(6) == "012345 (dirty)"
    footer = Identity(GitState("f" * 40, False), "e" * 64).footer()
    assert footer == f"hybrid-ir at commit {'f' * 12}, configuration sha256 {'e' * 12}"


def test_package_versions_include_anserini_from_pyserini_jar():
    versions = package_versions()
    assert versions["anserini"][0].isdigit()
    json.dumps(versions)


def test_json_is_the_same_tree_the_text_prints(workdir, capsys):
    three_steps()
    corpus = "results/collections/c/corpus.jsonl"
    Path(corpus).write_text("edited\n")
    assert cli.main(["provenance", "results/runs/c/test/bm25.trec", "--format", "json"]) == 0
    tree = json.loads(capsys.readouterr().out)
    assert (tree["file"], tree["state"], tree["rule"]) == (
        "results/runs/c/test/bm25.trec", "recorded", "retrieve"
    )  # fmt: skip
    keys = {"commit", "dirty", "config_sha256", "packages", "environment", "device", "threads",
            "raw_inputs", "sha256", "wall_time_s", "seeds", "inputs", "wildcards"}  # fmt: skip
    assert keys <= set(tree)
    assert tree["raw_inputs"] == {"c/data.zip": "ab" * 32}

    def nodes(node):
        yield node
        for child in node.get("inputs", []):
            yield from nodes(child)

    states = {node["file"]: node["state"] for node in nodes(tree)}
    assert states[corpus] == "changed"
    assert states["expected/c.yaml"] == "repository"
    assert all("commit" not in node for node in list(nodes(tree))[1:])
    assert set(states.values()) <= set(PROVENANCE_STATES)
    assert cli.main(["provenance", "results/runs/c/test/bm25.trec"]) == 0
    assert capsys.readouterr().out.splitlines() == list(chain("results/runs/c/test/bm25.trec"))
