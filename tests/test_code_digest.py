"""Code digests: each rule's digest covers its script and every package module the script
imports, transitively, so that editing any of them re-runs the rule's jobs."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hybrid_ir.planning import code_digest
from hybrid_ir.planning.code_digest import PACKAGE_DIR, imported_modules

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((REPO / "workflow" / "scripts").glob("*.py"))


def rule_blocks() -> list[tuple[str, str]]:
    """(rule file, rule text) of every rule in the workflow's rule files."""
    blocks = []
    for path in sorted((REPO / "workflow" / "rules").rglob("*.smk")):
        for block in re.split(r"(?m)^(?=\s*rule\b)", path.read_text()):
            if re.match(r"\s*rule\b", block):
                blocks.append((path.name, block))
    return blocks


def test_every_rule_digests_its_own_script():
    checked = set()
    for rule_file, block in rule_blocks():
        script = re.search(r'script:\s*\n\s*"(?:\.\./)+scripts/(\w+)\.py"', block)
        if script is None:
            continue
        versions = re.findall(r"code=code_version\(\"(\w+)\"\)", block)
        assert versions == [script.group(1)], f"{rule_file}: {block.splitlines()[0]}"
        checked.add(script.group(1))
    assert len(checked) == len(SCRIPTS) >= 20  # every adapter script is some rule's


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_digest_covers_every_module_the_script_loads(script):
    """What importing the script's package imports really loads is within the digest."""
    tree = ast.parse(script.read_text())
    imports = [
        ast.unparse(node)
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hybrid_ir")
    ]
    probe = "\n".join([*imports, "import json, sys", "print(json.dumps(sorted(sys.modules)))"])
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = {name for name in json.loads(result.stdout) if name.startswith("hybrid_ir")}
    assert loaded and loaded <= set(imported_modules(script))


def _planted_package(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A copy of the package the digests read, and a script importing its run reader."""
    package = tmp_path / "hybrid_ir"
    shutil.copytree(PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(code_digest, "PACKAGE_DIR", package)
    script = tmp_path / "import_run.py"
    script.write_text("from hybrid_ir.data.runs import read_run\n")
    return package, script


def test_a_planted_import_deep_in_the_package_enters_the_digest(tmp_path, monkeypatch):
    package, script = _planted_package(tmp_path, monkeypatch)
    before = imported_modules(script)
    assert "hybrid_ir.data.runs" in before and "hybrid_ir.evaluation.significance" not in before
    digest = code_digest.code_digest(script)
    # A lazy import inside a function of a module the script imports...
    runs = package / "data" / "runs.py"
    runs.write_text(
        runs.read_text()
        + "\n\ndef _p_values():\n    from hybrid_ir.evaluation import significance\n"
    )
    assert "hybrid_ir.evaluation.significance" in imported_modules(script)
    planted = code_digest.code_digest(script)
    assert planted != digest
    # ...and an edit of the module it reaches re-runs the script's jobs.
    significance = package / "evaluation" / "significance.py"
    significance.write_text(significance.read_text() + "\n# edited\n")
    assert code_digest.code_digest(script) != planted


def test_modules_named_as_strings_are_imports(tmp_path):
    script = tmp_path / "convert.py"
    script.write_text("from hybrid_ir.data.collections import convert\n")
    assert "hybrid_ir.data.collections.arqmath" in imported_modules(script)  # imported by name


def test_the_digest_cache_recomputes_exactly_when_a_covered_file_changes(tmp_path, monkeypatch):
    package, script = _planted_package(tmp_path, monkeypatch)
    store = tmp_path / ".snakemake" / "digests.json"
    first = code_digest.DigestCache(store).digest(script)
    assert first == code_digest.code_digest(script) and store.is_file()

    # A later process answers from the file without hashing anything.
    computed = []
    monkeypatch.setattr(
        code_digest, "code_digest", lambda path: computed.append(path) or "recomputed"
    )
    assert code_digest.DigestCache(store).digest(script) == first and not computed
    # An edit of an imported module, or a module added to the package, is seen.
    runs = package / "data" / "runs.py"
    runs.write_text(runs.read_text() + "\n# edited\n")
    assert code_digest.DigestCache(store).digest(script) == "recomputed"
    (package / "added.py").write_text("")
    computed.clear()
    assert code_digest.DigestCache(store).digest(script) == "recomputed" and computed


def test_an_unreadable_digest_cache_is_an_empty_one(tmp_path):
    store = tmp_path / "digests.json"
    store.write_text("{half a file")
    script = tmp_path / "import_run.py"
    script.write_text("from hybrid_ir.data.runs import read_run\n")
    assert code_digest.DigestCache(store).digest(script) == code_digest.code_digest(script)
    assert json.loads(store.read_text())["scripts"]


@pytest.mark.parametrize(
    "script", ["pretrain", "triplets", "finetune", "encoder_index", "encoder_search", "mlm_rerank"]
)
def test_training_and_dense_steps_do_not_follow_fusion_figures_or_tables(script):
    """Editing fusion, a figure, a table or cross-validation must not retrain the models or
    re-encode the corpus: their scripts import none of those modules, even indirectly."""
    covered = set(imported_modules(REPO / "workflow" / "scripts" / f"{script}.py"))
    outside = {"fusion", "figures", "tables", "crossval", "sweeps", "stats", "evaluate"}
    assert not covered & {f"hybrid_ir.{name}" for name in outside}


class _GarbageThatYields:
    """A reference cycle whose finalizer gives up the GIL: the garbage collector, run by an
    allocation inside ``ast.parse``, lets another thread in mid-parse."""

    def __init__(self) -> None:
        self.cycle = self

    def __del__(self) -> None:
        time.sleep(0)


def test_threads_digesting_at_once_do_not_break_the_parser():
    # Snakemake runs local jobs in threads; each asks which modules its script imports.
    source = code_digest.PACKAGE_DIR / "cli" / "docs_reference.py"
    errors: list[BaseException] = []

    def nested(depth: int, call):
        return nested(depth - 1, call) if depth else call()

    def digest_repeatedly(depth: int) -> None:
        for _ in range(25):
            for _ in range(200):
                _GarbageThatYields()
            try:
                nested(depth, lambda: code_digest._direct_imports.__wrapped__(str(source), 0, 0))
            except SystemError as error:
                errors.append(error)

    threads = [
        threading.Thread(target=digest_repeatedly, args=(depth,)) for depth in (1, 9, 17, 25)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
