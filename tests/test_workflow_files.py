"""The workflow's own files a configuration names, found in the workflow's folder when the
working directory is another one (hybrid_ir.config.workflow_files): a module's user's, or a
snakedeploy deployment's."""

from __future__ import annotations

from pathlib import Path

import yaml

from hybrid_ir.config.validation import validate_config
from hybrid_ir.config.workflow_files import with_workflow_files

REPO = Path(__file__).resolve().parents[1]


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    root, user = tmp_path / "workflow", tmp_path / "user"
    for name in ("manifest.tsv", "expected/a.yaml", "expected/b.yaml", "claims/p.yaml"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("workflow's\n")
    (user / "expected").mkdir(parents=True)
    (user / "expected" / "a.yaml").write_text("user's\n")
    return root, user


def test_the_workflow_files_the_working_directory_lacks_come_from_the_workflow(tmp_path):
    root, user = _folders(tmp_path)
    config = {
        "mirror": "mirror",
        "manifest": "manifest.tsv",
        "expected": ["expected/a.yaml", "expected/b.yaml", "expected/missing.yaml"],
        "claims": ["claims/p.yaml"],
        "tables": {"t": {"published_from": "expected/b.yaml"}, "u": {}},
        "parameter_tables": {"p": {"published_from": str(user / "expected" / "a.yaml")}},
        "external_runs": {"c": {"test": {"mine": {"path": "expected/b.yaml"}}}},
    }
    resolved = with_workflow_files(config, root, user)
    assert resolved == ["manifest.tsv", "expected/b.yaml", "claims/p.yaml", "expected/b.yaml"]
    assert config["manifest"] == str(root / "manifest.tsv")
    # The user's own file wins; a path neither folder has stays as written (its error names it).
    b = str(root / "expected/b.yaml")
    assert config["expected"] == ["expected/a.yaml", b, "expected/missing.yaml"]
    assert config["claims"] == [str(root / "claims/p.yaml")]
    assert config["tables"]["t"]["published_from"] == str(root / "expected/b.yaml")
    assert config["parameter_tables"]["p"]["published_from"] == str(user / "expected" / "a.yaml")
    # The mirror and run files are the user's data: never taken from the workflow.
    assert config["mirror"] == "mirror"
    assert config["external_runs"]["c"]["test"]["mine"] == {"path": "expected/b.yaml"}


def test_nothing_changes_in_the_workflows_own_folder(tmp_path):
    root, _ = _folders(tmp_path)
    config = {"manifest": "manifest.tsv", "expected": ["expected/zzz.yaml"]}
    assert with_workflow_files(config, root, root) == []
    assert config == {"manifest": "manifest.tsv", "expected": ["expected/zzz.yaml"]}
    # A root that is no folder here (a module from a repository host) changes nothing either.
    assert with_workflow_files(config, "https://github.com/o/r/raw/v1", tmp_path) == []


def test_the_default_configuration_validates_from_another_folder(tmp_path, monkeypatch):
    """config.yaml as a deployment copies it (config/config.yaml), read from an empty folder:
    its manifest, expected-score, claims and published files (``{topics}`` templates
    expanded first) are the workflow's."""
    monkeypatch.chdir(tmp_path)
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    validate_config(config, REPO / "workflow/schemas/config.schema.yaml", workflow_root=REPO)
    assert config["manifest"] == str(REPO / "workflow/resources/manifest.tsv")
    assert all(Path(path).is_file() and Path(path).is_absolute() for path in config["expected"])
    assert all(Path(path).is_file() for path in config["claims"])
    published = [t["published_from"] for t in config["tables"].values() if "published_from" in t]
    assert published and all(Path(path).is_absolute() for path in published)
