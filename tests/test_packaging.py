"""The package on its own: pyproject.toml declares what it needs as ranges the pins of
requirements.txt satisfy, ``python -m build`` makes a wheel, and the wheel installed into a fresh
virtual environment (offline, its dependencies the ones already installed here) runs
``hybrid-ir --version`` and ``hybrid-ir evaluate``."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from hybrid_ir.jobs.environment import read_requirements

REPO = Path(__file__).resolve().parents[1]


def _runtime_pins() -> dict[str, str]:
    """requirements.txt's runtime pins (up to its tests) and the Makefile's torch pin."""
    runtime = read_requirements(REPO / "requirements.txt", runtime_only=True)
    pins = {name: version for name, (version, _) in runtime.items()}
    (torch,) = re.findall(r"^TORCH_VERSION := (\S+)$", (REPO / "Makefile").read_text(), re.M)
    return pins | {"torch": torch}


def _declared() -> dict[str, Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [Requirement(text) for text in project["dependencies"]]
    return {canonicalize_name(requirement.name): requirement for requirement in requirements}


def test_every_runtime_pin_is_declared_and_lies_in_its_range():
    pins, declared = _runtime_pins(), _declared()
    assert pins.keys() == declared.keys()
    outside = {name: (pins[name], str(declared[name].specifier)) for name in pins
               if not declared[name].specifier.contains(pins[name])}  # fmt: skip
    assert not outside


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel ``python -m build`` makes from a copy of the sources (no build folder left in
    the checkout; no network: the installed setuptools builds it)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        cwd=source, check=True, capture_output=True, text=True,
    )  # fmt: skip
    (built,) = out.glob("hybrid_ir-*-py3-none-any.whl")
    return built


def test_the_wheel_installs_into_a_fresh_environment_and_runs(wheel, tmp_path):
    fresh = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True)
    python = fresh / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    # The dependencies are the ones installed here, seen through a .pth file, as
    # make setup-slurm layers its environment; the package itself comes from the wheel only.
    Path(site, "installed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-index", "--no-deps", "--ignore-installed",
         "--quiet", str(wheel)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    where = subprocess.run(
        [str(python), "-c", "import hybrid_ir; print(hybrid_ir.__file__)"],
        cwd=tmp_path, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert where.startswith(site), where
    checked = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True)
    assert "hybrid-ir" not in checked.stdout, checked.stdout  # its declared ranges are met

    command = fresh / "bin" / "hybrid-ir"
    version = subprocess.run([str(command), "--version"], check=True, capture_output=True,
                             text=True, cwd=tmp_path).stdout  # fmt: skip
    assert version.strip() == f"hybrid-ir {_version()}"
    (tmp_path / "test.qrels").write_text("q1 0 d1 1\nq1 0 d3 1\nq2 0 d2 1\n")
    (tmp_path / "run.trec").write_text(
        "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq1 Q0 d3 3 0.5 r\nq2 Q0 d2 1 1.0 r\n"
    )
    evaluated = subprocess.run(
        [str(command), "evaluate", "--qrels", "test.qrels", "--run", "run.trec", "--measures",
         "P@1", "nDCG@10", "--format", "csv"],
        check=True, capture_output=True, text=True, cwd=tmp_path,
    ).stdout  # fmt: skip
    header, row = evaluated.splitlines()
    scores = dict(zip(header.split(","), row.split(","), strict=True))
    # nDCG of q1 = (1 + 1/log2(4)) / (1 + 1/log2(3)), of q2 = 1.
    assert float(scores["P@1"]) == 1.0
    assert float(scores["nDCG@10"]) == pytest.approx((1.5 / (1 + 1 / 1.584962500721156) + 1) / 2)


def _version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]
