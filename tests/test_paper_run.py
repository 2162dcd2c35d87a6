"""``make test-paper``: every job of the paper configuration, executed on stand-ins.

``configs/paper.yaml`` with ``configs/paper004-beir.yaml`` and
``configs/paper002-multilingual.yaml``, and ``configs/ntcir12.yaml`` on its own, run here on the
CPU over stand-in collections in the official formats (``tests/standins_math.py``,
``tests/standins_text.py``, ``tests/standins_multilingual.py``) and tiny checkpoints of each hub
model's family (``tests/standins_models.py``), served by a local hub and fetched by the workflow's
own rule; ``tests/paper_standins.yaml`` cuts lengths, sizes and devices and nothing else. Every job
runs; the one expected to fail is ``assert_scores``: the stand-ins cannot reproduce the
collections' published scores, and its summary must say so check by check. Every table and figure
is opened: each row the configuration names is there, and a row with a run has no empty cell. Every
job (rule and first output), the tables and the figures are printed (``make test-paper`` shows
them).
"""

from __future__ import annotations

import collections
import csv
import hashlib
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hub_server import LocalHub
from standins_math import FILES as MATH_FILES
from standins_models import write_models
from standins_multilingual import FILES as MULTILINGUAL_FILES
from standins_text import FILES as TEXT_FILES
from toy_workflow import snakemake_environment, write_manifest

from hybrid_ir.monitor.snakemake_log import run_logs

pytestmark = pytest.mark.paper

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
HYBRID_IR = Path(sys.executable).with_name("hybrid-ir")
OVERLAY = REPO / "tests" / "paper_standins.yaml"
PAPER = [
    REPO / "configs" / "paper.yaml",
    REPO / "configs" / "paper004-beir.yaml",
    REPO / "configs" / "paper002-multilingual.yaml",
]
NTCIR12 = [REPO / "configs" / "ntcir12.yaml"]
NTCIR12_TARGET = "results/tables/paper000-table2.md"

LENGTH_SIZE_DEVICE_KEYS = {
    "epochs", "steps", "batch_size", "micro_batch_size", "max_length", "query_max_length",
    "passage_max_length", "query_maxlen", "doc_maxlen", "checkpoint_every", "eval_every",
    "device", "tf32", "threads", "mem_mb", "runtime", "gpu",
}  # fmt: skip
WORDS = sorted(
    {
        *"integral derivative sum series prime number matrix group ring limit function".split(),
        *"proof theorem equation root norm inequality vector space field polynomial".split(),
        *"cell protein gene patient lung infection virus treatment cystic fibrosis".split(),
    }
)


def _leaves(tree: dict, prefix: str = ""):
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", key


def test_the_overlay_changes_lengths_sizes_and_devices_only():
    overlay = yaml.safe_load(OVERLAY.read_text(encoding="utf-8"))
    others = [path for path, key in _leaves(overlay) if key not in LENGTH_SIZE_DEVICE_KEYS]
    assert not others, f"{OVERLAY.name} sets more than lengths, sizes and devices: {others}"


def _overlay_for(configfiles, directory: Path) -> Path:
    """The overlay without the models a configuration does not have (``configs/ntcir12.yaml``
    lacks the paper's backbones, released checkpoints and re-rankers), so as not to add them."""
    overlay = yaml.safe_load(OVERLAY.read_text(encoding="utf-8"))
    base = _merged(configfiles)["math_models"]
    for section in ("backbones", "released", "rerankers"):
        entries = overlay["math_models"].get(section, {})
        for name in [name for name in entries if name not in base.get(section, {})]:
            del entries[name]
    path = directory / OVERLAY.name
    path.write_text(yaml.safe_dump(overlay), encoding="utf-8")
    return path


def _environment(root: Path, hub_url: str) -> dict[str, str]:
    return snakemake_environment({"HF_ENDPOINT": hub_url, "HF_HOME": str(root / "hf-home")})


def _snakemake(workdir: Path, configfiles, mirror: Path, manifest: Path, *arguments: str):
    return [
        str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
        *arguments, "--cores", "2", "--configfile", *map(str, configfiles),
        "--config", f"mirror={mirror}", f"manifest={manifest}",
    ]  # fmt: skip


def _workdir(root: Path, name: str) -> Path:
    """A working directory with the repository's config.yaml, expected scores and kernel cache."""
    workdir = root / name
    workdir.mkdir()
    shutil.copyfile(REPO / "config.yaml", workdir / "config.yaml")
    (workdir / "expected").symlink_to(REPO / "expected")
    (REPO / ".cache").mkdir(exist_ok=True)
    (workdir / ".cache").symlink_to(REPO / ".cache")
    return workdir


def _jobs_run(log: str) -> list[str]:
    """Each finished job as ``rule output`` (its first output), in the order they finished,
    from Snakemake's job blocks (``rule x:`` then indented fields) and its ``Finished jobid: n
    (Rule: x)`` lines."""
    outputs: dict[str, str] = {}
    rule = output = None
    for line in log.splitlines():
        if match := re.match(r"^(?:local)?rule (\S+):$", line):
            rule, output = match.group(1), None
        elif rule and (match := re.match(r"^\s+output: ([^,\s]+)", line)):
            output = match.group(1)
        elif rule and (match := re.match(r"^\s+jobid: (\d+)$", line)):
            outputs[match.group(1)] = f"{rule} {output or '(no output)'}"
            rule = None
    finished = re.findall(r"^Finished jobid: (\d+) \(Rule: (\S+)\)", log, re.M)
    return [outputs.get(jobid, rule) for jobid, rule in finished]


def _print_jobs(title: str, jobs: list[str]) -> None:
    print(f"\nmake test-paper: {len(jobs)} jobs of {title}")
    for rule, count in sorted(collections.Counter(job.split()[0] for job in jobs).items()):
        print(f"  {count:4d}  {rule}")
    print("  every job (rule, first output):")
    for job in jobs:
        print(f"    {job}")


def _run_log(workdir: Path, run: subprocess.CompletedProcess) -> str:
    """Snakemake's own log of the run (every job's block, each failure's "Error in rule"),
    which the run's console (hybrid_ir.monitor.console) shortens to a line per job; the console's
    output after it, for the failure messages."""
    logs = run_logs(workdir)
    own = logs[-1].read_text(encoding="utf-8") if logs else ""
    return own + "\n" + run.stdout + run.stderr


def _failed(log: str) -> list[str]:
    return re.findall(r"^Error in rule (\S+):", log, re.M)


def _planned(dry_run: str) -> set[str]:
    return set(re.findall(r"^(?:local)?rule (\S+):", dry_run, re.M))


@pytest.fixture(scope="module")
def paper_run(tmp_path_factory) -> dict:
    started = time.perf_counter()
    root = tmp_path_factory.mktemp("paper-run")
    mirror, manifest = root / "mirror", root / "manifest.tsv"
    makers = {**MATH_FILES, **TEXT_FILES, **MULTILINGUAL_FILES}
    files = {path: make() for path, make in makers.items()}
    for path, content in files.items():
        (mirror / path).parent.mkdir(parents=True, exist_ok=True)
        (mirror / path).write_bytes(content)
    write_manifest(manifest, files)
    models = write_models(root / "models", WORDS)

    paper_workdir, ntcir12_workdir = _workdir(root, "paper"), _workdir(root, "ntcir12")
    paper = paper_workdir / "paper.yaml"
    shutil.copyfile(PAPER[0], paper)
    pinned = yaml.safe_load(paper.read_text(encoding="utf-8"))["hub_models"]
    commits = {model: hashlib.sha1(model.encode()).hexdigest() for model in models}
    commits |= {model: entry["revision"] for model, entry in pinned.items()}
    repositories = {model: {commits[model]: path} for model, path in models.items()}
    configfiles = [paper, *PAPER[1:], OVERLAY]
    outcome: dict = {"mirror_files": len(files), "models": sorted(models)}
    with LocalHub(repositories) as hub:
        environment = _environment(root, hub.url)
        pin = [str(HYBRID_IR), "hub", "pin", "--base", str(REPO / "config.yaml")]
        pin += ["--configfile", str(paper), "--write", str(paper)]
        done = subprocess.run(pin, env=environment, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        outcome["pinned"] = done.stdout.count("pinned")
        command = _snakemake(paper_workdir, configfiles, mirror, manifest, "--keep-going")
        runs = subprocess.run(command, env=environment, capture_output=True, text=True)
        outcome["paper"] = _run_log(paper_workdir, runs)
        overlay = _overlay_for(NTCIR12, ntcir12_workdir)
        command = _snakemake(ntcir12_workdir, [*NTCIR12, overlay], mirror, manifest)
        runs = subprocess.run([*command, "--", NTCIR12_TARGET], env=environment,
                              capture_output=True, text=True)  # fmt: skip
        outcome["ntcir12"] = _run_log(ntcir12_workdir, runs)
        outcome["ntcir12_status"] = runs.returncode
        outcome["hub_requests"] = len(hub.requests)
    dry = subprocess.run(
        _snakemake(paper_workdir, configfiles, mirror, manifest, "--dry-run"),
        env=environment, capture_output=True, text=True,
    )  # fmt: skip
    outcome["paper_dry_run"] = dry.stdout + dry.stderr
    outcome |= {"root": root, "paper_workdir": paper_workdir, "ntcir12_workdir": ntcir12_workdir}
    outcome["seconds"] = time.perf_counter() - started
    return outcome


def _merged(configfiles) -> dict:
    """The configuration the workflow sees: merged, validated, its templates expanded."""
    from hybrid_ir.config.layers import config_layers, merged_config
    from hybrid_ir.config.validation import validate_config

    config = merged_config(config_layers([REPO / "config.yaml", *configfiles], {}))
    schema = REPO / "workflow" / "schemas" / "config.schema.yaml"
    validate_config(config, schema, require_pins=False)
    return config


def test_every_job_of_the_paper_configuration_runs(paper_run):
    log = paper_run["paper"]
    _print_jobs("configs/paper.yaml + paper004-beir + paper002-multilingual", _jobs_run(log))
    assert _failed(log) == ["assert_scores"], log[-6000:]
    # Afterwards nothing is left to do but the check that must fail on stand-ins.
    assert _planned(paper_run["paper_dry_run"]) <= {"assert_scores", "all"}, paper_run[
        "paper_dry_run"
    ][-4000:]
    with (paper_run["paper_workdir"] / "results/checks/summary.tsv").open(newline="") as handle:
        verdicts = collections.Counter(
            row["status"] for row in csv.DictReader(handle, delimiter="\t")
        )
    print(f"  checks on stand-ins (expected to leave their bands): {dict(verdicts)}")
    assert verdicts["FAIL"] > 0


def test_every_job_of_the_ntcir12_configuration_runs(paper_run):
    log = paper_run["ntcir12"]
    assert paper_run["ntcir12_status"] == 0, log[-6000:]
    _print_jobs("configs/ntcir12.yaml", _jobs_run(log))
    print(f"  wall time of the whole test: {paper_run['seconds']:.0f} s")


def _rows(table: dict) -> dict[str, dict]:
    """Each row the configuration gives the table, by label."""
    return {row["label"]: row for block in table.get("blocks", []) for row in block["rows"]}


def _check_table(path: Path, table: dict) -> int:
    """The rows of one table's CSV, checked against its configuration; the number of cells."""
    with path.open(encoding="utf-8", newline="") as handle:
        cells = list(csv.DictReader(handle))
    assert cells, f"{path.name}: no cells"
    by_label = collections.defaultdict(list)
    for cell in cells:
        by_label[cell["run"]].append(cell)
    for label, row in _rows(table).items():
        # A per-topic row's label is a template ("VSR (Q{topic})"): one row per topic.
        pattern = re.compile(re.escape(label).replace(re.escape("{topic}"), ".+") + "$")
        matched = [cell for name, row_cells in by_label.items() if pattern.match(name)
                   for cell in row_cells]  # fmt: skip
        assert matched, f"{path.name}: row {label!r} missing"
        if "published_only" in row:
            assert any(cell["published"] for cell in matched), (path.name, label)
            continue
        # A row may declare measures its run cannot have (`unavailable`): those stay empty.
        empty = [cell["column"] for cell in matched if cell["value"] == ""]
        assert set(empty) <= set(row.get("unavailable", [])), (
            f"{path.name}: row {label!r} has empty cells {empty}"
        )
    return len(cells)


def test_every_table_and_figure_is_made_and_opens(paper_run):
    from PIL import Image

    made = {}
    for configfiles, workdir in (
        ([*PAPER, OVERLAY], paper_run["paper_workdir"]),
        (NTCIR12, paper_run["ntcir12_workdir"]),
    ):
        config = _merged(configfiles)
        names = list(config["tables"])
        if workdir == paper_run["ntcir12_workdir"]:
            names = [Path(NTCIR12_TARGET).stem]
        for name in names:
            markdown = workdir / "results" / "tables" / f"{name}.md"
            assert markdown.read_text(encoding="utf-8").startswith("#"), markdown
            cells = _check_table(markdown.with_suffix(".csv"), config["tables"][name])
            made[f"{workdir.name}: table {name}"] = f"{cells} cells"
        if workdir == paper_run["ntcir12_workdir"]:
            continue
        for name, table in config["parameter_tables"].items():
            path = workdir / "results" / "tables" / f"{name}.csv"
            with path.open(encoding="utf-8", newline="") as handle:
                rows = list(csv.DictReader(handle))
            assert [row["label"] for row in rows] == list(table["languages"]), path
            assert all(row["value"] and row["published"] for row in rows), path
            made[f"{workdir.name}: parameter table {name}"] = f"{len(rows)} rows"
        for name in config["figures"]:
            png = workdir / "results" / "figures" / f"{name}.png"
            with Image.open(png) as image:
                image.verify()
                made[f"{workdir.name}: figure {name}"] = "x".join(map(str, image.size))
    print(f"\nmake test-paper: {len(made)} tables and figures opened")
    for name, what in sorted(made.items()):
        print(f"  {name} ({what})")
