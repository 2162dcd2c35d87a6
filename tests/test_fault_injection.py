"""The fault-injection hook of hybrid_ir.jobs.run.run_step (HYBRID_IR_FAULT), without a cluster:
the first attempt of the named rule fails or hangs, every later one runs the step."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hybrid_ir.errors import HybridIRError
from hybrid_ir.jobs.run import InjectedFault, armed_faults, inject_fault

# A workflow script in miniature: run_step around a step that writes its output.
STEP = """
import sys
from pathlib import Path
from types import SimpleNamespace
from hybrid_ir.jobs.run import run_step

log, output = sys.argv[1], Path(sys.argv[2])
limits = {"max_relevance": 1000, "max_line_chars": 1 << 25}
job = SimpleNamespace(rule="toy_rule", log=[log], config=limits)
run_step(job, lambda: output.write_text("done"))
"""


def step_command(tmp_path: Path) -> list[str]:
    return [sys.executable, "-c", STEP, str(tmp_path / "step.log"), str(tmp_path / "out.txt")]


def fault_env(setting: str, markers: Path) -> dict[str, str]:
    return {**os.environ, "HYBRID_IR_FAULT": setting, "HYBRID_IR_FAULT_DIR": str(markers)}


def test_setting_names_a_mode_per_rule():
    assert armed_faults("fail:convert_toy, hang:retrieve,") == {
        "convert_toy": "fail",
        "retrieve": "hang",
    }
    assert armed_faults("") == {}


@pytest.mark.parametrize("entry", ["crash:retrieve", "fail:", "retrieve"])
def test_malformed_setting_is_one_clear_error(entry):
    with pytest.raises(HybridIRError, match=f"HYBRID_IR_FAULT: '{entry}' is not fail:<rule>"):
        armed_faults(f"fail:ok,{entry}")


def test_only_the_first_attempt_of_the_named_rule_fails(tmp_path):
    environ = {"HYBRID_IR_FAULT": "fail:retrieve", "HYBRID_IR_FAULT_DIR": str(tmp_path / "m")}
    inject_fault("evaluate_run", environ)  # another rule: untouched, no marker
    assert not (tmp_path / "m").exists()
    with pytest.raises(InjectedFault, match="first attempt of rule retrieve fails on purpose"):
        inject_fault("retrieve", environ)
    assert (tmp_path / "m" / "retrieve.fail").exists()
    inject_fault("retrieve", environ)  # the retry
    (tmp_path / "m" / "retrieve.fail").unlink()
    with pytest.raises(InjectedFault):
        inject_fault("retrieve", environ)  # re-armed


def test_no_setting_no_fault_and_a_missing_marker_directory_is_an_error(tmp_path):
    inject_fault("retrieve", {})
    inject_fault("retrieve", {"HYBRID_IR_FAULT": "", "HYBRID_IR_FAULT_DIR": str(tmp_path)})
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(HybridIRError, match="HYBRID_IR_FAULT_DIR .* is not"):
        inject_fault("retrieve", {"HYBRID_IR_FAULT": "fail:retrieve"})


def test_failed_first_attempt_reports_one_line_and_the_retry_runs_the_step(tmp_path):
    env = fault_env("fail:toy_rule", tmp_path / "markers")
    first = subprocess.run(step_command(tmp_path), capture_output=True, text=True, env=env)
    assert first.returncode == 1
    message = "HYBRID_IR_FAULT: first attempt of rule toy_rule fails on purpose"
    assert first.stderr.strip() == f"hybrid-ir error: {message}"
    assert message in (tmp_path / "step.log").read_text()
    assert not (tmp_path / "out.txt").exists()

    retry = subprocess.run(step_command(tmp_path), capture_output=True, text=True, env=env)
    assert retry.returncode == 0, retry.stderr
    assert (tmp_path / "out.txt").read_text() == "done"


def test_hanging_first_attempt_waits_until_killed_and_the_retry_runs_the_step(tmp_path):
    env = fault_env("hang:toy_rule", tmp_path / "markers")
    first = subprocess.Popen(step_command(tmp_path), env=env)
    log = tmp_path / "step.log"
    deadline = time.monotonic() + 60  # a safety net against a step that never starts
    while not (log.exists() and "hangs on purpose until killed" in log.read_text()):
        assert first.poll() is None, "the hanging attempt exited"
        assert time.monotonic() < deadline, "the hanging attempt never said so in its log"
        time.sleep(0.1)
    assert first.poll() is None and not (tmp_path / "out.txt").exists()
    first.kill()
    first.wait()

    retry = subprocess.run(step_command(tmp_path), capture_output=True, text=True, env=env)
    assert retry.returncode == 0, retry.stderr
    assert (tmp_path / "out.txt").read_text() == "done"
