"""hybrid_ir.planning.snakemake_patches: Snakemake's scheduler keeps one pending re-evaluation
timer, its start goes without pandas and pure-Python YAML, deciding the same things, and script jobs
go to job servers only where the workflow opened them, their benchmarks sampling the served
child."""

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psutil
import pytest
import snakemake.common.configfile as configfile_module
from snakemake.persistence import PersistenceBase
from snakemake.scheduling.job_scheduler import JobScheduler
from snakemake_interface_common.exceptions import WorkflowError

from hybrid_ir.planning.jobserver import DIRECTORY_ENV
from hybrid_ir.planning.snakemake_patches import (
    keep_one_pending_timer,
    read_configfiles_with_libyaml,
    run_python_scripts_in_job_servers,
    serialize_params_lazily,
)

REPOSITORY = Path(__file__).resolve().parents[1]


class _Rounds:
    """Stands in for Snakemake's scheduler: what the timer releases, and the method replaced."""

    def __init__(self) -> None:
        self._open_jobs = threading.Semaphore(0)

    def _schedule_reevalutation(self, delay: float) -> None:
        raise AssertionError("replaced by keep_one_pending_timer")


def _timer_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if isinstance(thread, threading.Timer)]


def test_many_rounds_leave_one_daemon_timer_that_wakes_the_scheduler_once():
    assert keep_one_pending_timer(_Rounds)
    scheduler = _Rounds()
    before = len(_timer_threads())
    for _ in range(50):
        scheduler._schedule_reevalutation(0.3)
    timers = _timer_threads()
    assert len(timers) == before + 1
    assert scheduler._pending_reevaluation in timers and scheduler._pending_reevaluation.daemon
    assert scheduler._open_jobs.acquire(timeout=5)
    assert not scheduler._open_jobs.acquire(timeout=0.5)  # one wake-up for the 50 rounds
    scheduler._pending_reevaluation.join(timeout=5)
    scheduler._schedule_reevalutation(0.05)  # once it has fired, a round starts the next one
    assert scheduler._open_jobs.acquire(timeout=5)


def test_applying_it_twice_keeps_one_replacement():
    assert keep_one_pending_timer(_Rounds)
    replaced = _Rounds._schedule_reevalutation
    assert keep_one_pending_timer(_Rounds)
    assert _Rounds._schedule_reevalutation is replaced


def test_a_scheduler_without_the_method_is_left_alone():
    class Other:
        pass

    assert not keep_one_pending_timer(Other)
    assert not hasattr(Other, "_schedule_reevalutation")


def test_the_pinned_snakemake_has_the_method_the_workflow_replaces():
    """Snakemake renaming it would silently bring the timer chains back: fail here instead."""
    assert callable(getattr(JobScheduler, "_schedule_reevalutation", None))
    assert keep_one_pending_timer()


class _Persistence:
    """Stands in for Snakemake's persistence: the property replaced and the two serializers."""

    @property
    def _serialize_param(self):
        raise AssertionError("replaced by serialize_params_lazily")

    def _serialize_param_pandas(self, value):
        return ("pandas", value)

    def _serialize_param_builtin(self, value):
        return ("builtin", value)


def test_parameters_go_to_the_pandas_serializer_only_once_pandas_is_imported(monkeypatch):
    assert serialize_params_lazily(_Persistence)
    persistence = _Persistence()
    monkeypatch.delitem(sys.modules, "pandas", raising=False)
    assert persistence._serialize_param(3) == ("builtin", 3)
    monkeypatch.setitem(sys.modules, "pandas", object())
    assert persistence._serialize_param(3) == ("pandas", 3)
    assert serialize_params_lazily(_Persistence)  # twice: one replacement
    assert persistence._serialize_param(3) == ("pandas", 3)


def test_a_snakemake_start_imports_neither_pandas_nor_pyyamls_python_loader_for_the_config(
    tmp_path,
):
    """A dry run of a one-rule workflow with a params entry and a configfile, in a fresh
    process: the parameters are serialized (Snakemake checks them for the rule's output) and
    the configuration arrives, without pandas being imported."""
    (tmp_path / "config.yaml").write_text("greeting: hello\nnested: {a: [1, 2]}\n")
    (tmp_path / "out.txt").write_text("hello\n")
    (tmp_path / "Snakefile").write_text(
        textwrap.dedent(
            """
            import sys
            from hybrid_ir.planning.snakemake_patches import (
                read_configfiles_with_libyaml,
                serialize_params_lazily,
            )

            read_configfiles_with_libyaml()
            serialize_params_lazily()

            configfile: "config.yaml"

            assert config == {"greeting": "hello", "nested": {"a": [1, 2]}}, config

            onstart:
                print("pandas imported:", "pandas" in sys.modules)

            rule all:
                output: "out.txt"
                params: greeting=config["greeting"]
                shell: "echo {params.greeting} > {output}"
            """
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--forceall", "--quiet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "pandas imported: False" in run.stdout + run.stderr
    assert (tmp_path / "out.txt").read_text() == "hello\n"


@pytest.fixture
def configfile_reader(monkeypatch):
    """Snakemake's configfile module with the replacement applied, undone afterwards."""
    monkeypatch.setattr(configfile_module, "load_configfile", configfile_module.load_configfile)
    assert read_configfiles_with_libyaml()
    return configfile_module.load_configfile


def test_the_configfile_reader_gives_what_snakemakes_gives(configfile_reader, tmp_path):
    text = Path("config.yaml").read_text(encoding="utf-8")
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    original = configfile_module._load_configfile(str(path))
    assert configfile_reader(str(path)) == original
    # Each call returns a copy: Snakemake fills schema defaults into what it receives.
    first = configfile_reader(str(path))
    first["seeds"] = "changed"
    assert configfile_reader(str(path)) == original


def test_json_and_yte_files_are_read_as_snakemake_reads_them(configfile_reader, tmp_path):
    json_file = tmp_path / "config.json"
    json_file.write_text('{"a": 1, "b": 1e5}')  # 1e5: a number in JSON, a string in YAML 1.1
    assert configfile_reader(str(json_file)) == {"a": 1, "b": 100000.0}
    templated = tmp_path / "templated.yaml"
    templated.write_text("__use_yte__: true\na:\n  ?if True:\n    1\n  ?else:\n    2\n")
    assert configfile_reader(str(templated)) == {"a": 1}
    for path in (json_file, templated):
        assert configfile_reader(str(path)) == configfile_module._load_configfile(str(path))


def test_a_bad_configfile_is_one_line_naming_it(configfile_reader, tmp_path):
    bomb = tmp_path / "bomb.yaml"
    layers = "\n".join(
        [f"l0: &l0 [{', '.join(['x'] * 10)}]"]
        + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 8)]
    )
    bomb.write_text(layers + "\n")
    with pytest.raises(WorkflowError, match="bomb.yaml.*too many aliases"):
        configfile_reader(str(bomb))
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("a: caf\xe9\n".encode("latin-1"))
    with pytest.raises(WorkflowError, match="latin.yaml.*not UTF-8"):
        configfile_reader(str(latin))
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(WorkflowError, match="list.yaml.*top level is a list"):
        configfile_reader(str(listed))


def test_a_missing_configfile_is_named(configfile_reader, tmp_path):
    with pytest.raises(WorkflowError, match="cannot read .*absent.yaml.*No such file"):
        configfile_reader(str(tmp_path / "absent.yaml"))


def test_the_pinned_snakemake_has_what_the_workflow_replaces():
    """Snakemake renaming either would silently bring the costs back: fail here instead."""
    assert isinstance(PersistenceBase.__dict__["_serialize_param"], property)
    assert serialize_params_lazily()
    assert callable(getattr(configfile_module, "load_configfile", None))
    assert run_python_scripts_in_job_servers()


class _Source:
    """Stands in for Snakemake's ``SourceFile`` of a script."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def get_path_or_uri(self, secret_free: bool = False) -> str:
        return str(self.path)


class _Script:
    """Stands in for Snakemake's ``PythonScript``: the replaced method and the one it calls."""

    conda_env = container_img = env_modules = None

    def __init__(self, path: Path) -> None:
        self.path = _Source(path)
        self.commands: list[tuple[str, str]] = []

    def execute_script(self, fname, edit=False):
        self.commands.append(("python {fname:q}", fname))

    def _execute_cmd(self, cmd, **kwargs):
        self.commands.append((cmd, kwargs["fname"]))


class _Timer:
    """Stands in for Snakemake's ``BenchmarkTimer``: what its constructor sets."""

    def __init__(self, pid, bench_record=None):
        self.main = psutil.Process(pid)


def test_torch_script_jobs_go_to_job_servers_only_where_the_workflow_opened_them(
    monkeypatch, tmp_path
):
    assert run_python_scripts_in_job_servers(_Script, _Timer)
    scripts = REPOSITORY / "workflow" / "scripts"
    encoder, evaluation = (
        _Script(scripts / "encoder_search.py"),
        _Script(scripts / "evaluate_run.py"),
    )
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    encoder.execute_script("job.py")
    monkeypatch.setenv(DIRECTORY_ENV, str(tmp_path))
    encoder.execute_script("job.py")
    evaluation.execute_script("job.py")  # no torch: a fresh interpreter starts sooner
    encoder.conda_env = "envs/other.yaml"  # its own interpreter: Snakemake's way
    encoder.execute_script("job.py")
    assert encoder.commands == [
        ("python {fname:q}", "job.py"),
        ("{py_exec} -m hybrid_ir.planning.jobserver run {fname:q}", "job.py"),
        ("python {fname:q}", "job.py"),
    ]
    assert evaluation.commands == [("python {fname:q}", "job.py")]


def test_a_benchmark_samples_the_child_a_server_runs_for_a_client(monkeypatch, tmp_path):
    assert run_python_scripts_in_job_servers(_Script, _Timer)
    monkeypatch.setenv(DIRECTORY_ENV, str(tmp_path))
    (tmp_path / "jobs").mkdir()
    client = subprocess.Popen(["sleep", "30"])
    served = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        (tmp_path / "jobs" / str(client.pid)).write_text(f"{served.pid}\n")
        observed = _Timer(os.getpid()).main
        assert observed.pid == os.getpid()
        found = {process.pid for process in observed.children(recursive=True)}
        assert {client.pid, served.pid} <= found
    finally:
        client.kill()
        served.kill()
