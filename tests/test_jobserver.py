"""hybrid_ir.planning.jobserver: a script run through a job server behaves as in a fresh interpreter
(streams, exit status, environment, working directory, signals), its process is found for
benchmarks, and a job the server cannot take runs in a fresh interpreter."""

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from hybrid_ir.planning import jobserver

SCRIPT = textwrap.dedent(
    """\
    import os, sys
    print("out", sys.argv[0], os.getcwd(), os.environ.get("JOB_VALUE"), __name__,
          "torch" in sys.modules, os.getpid(), os.getppid())
    print("err", file=sys.stderr)
    if sys.argv[0].endswith("raises.py"):
        raise ValueError("the job's own error")
    sys.exit(3 if sys.argv[0].endswith("exits3.py") else 0)
    """
)
SLEEPER = textwrap.dedent(
    """\
    import os, pathlib, time
    pathlib.Path("child.pid").write_text(str(os.getpid()))
    time.sleep(120)
    """
)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A servers' directory owned by this test process, and a job folder with the scripts."""
    work = tmp_path_factory.mktemp("jobs")
    for name in ("job.py", "raises.py", "exits3.py"):
        (work / name).write_text(SCRIPT)
    (work / "sleeper.py").write_text(SLEEPER)
    directory = Path(os.environ.get("TMPDIR", "/tmp")) / f"hybrid-ir-jobs-test-{os.getpid()}"
    directory.mkdir()
    environ = os.environ | {
        jobserver.DIRECTORY_ENV: str(directory),
        jobserver.OWNER_ENV: str(os.getpid()),
        "JOB_VALUE": "v",
    }
    yield work, directory, environ
    for pid_file in directory.glob("*.pid"):
        os.kill(int(pid_file.read_text()), signal.SIGTERM)
    subprocess.run(["rm", "-rf", str(directory)], check=True)


def _run(work, environ, script="job.py", **extra):
    return subprocess.run(
        [sys.executable, "-m", "hybrid_ir.planning.jobserver", "run", script],
        cwd=work,
        env=environ | extra,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _servers(directory):
    return sorted(path.name for path in directory.glob("*.pid"))


def test_a_job_runs_in_a_preloaded_child_as_in_a_fresh_interpreter(served):
    work, directory, environ = served
    first = _run(work, environ)
    assert first.returncode == 0, first.stderr
    words = first.stdout.split()
    assert words[:7] == ["out", str(work / "job.py"), str(work), "v", "__main__", "True", words[6]]
    assert first.stderr == "err\n"
    server = int((directory / _servers(directory)[0]).read_text())
    assert int(words[7]) == server  # the job's process is the server's child

    again = _run(work, environ, "exits3.py")
    assert again.returncode == 3 and again.stdout.startswith("out")


def test_a_job_with_another_environment_gets_its_own_server(served):
    work, directory, environ = served
    assert _run(work, environ).returncode == 0
    before = _servers(directory)
    assert _run(work, environ, TMPDIR=str(work)).returncode == 0  # read at call time
    assert _servers(directory) == before == [f"{jobserver.server_key(environ)}.pid"]
    assert jobserver.server_key(environ | {"OMP_NUM_THREADS": "2"}) != jobserver.server_key(
        environ | {"OMP_NUM_THREADS": "1"}
    )


def test_a_job_error_is_its_traceback_and_status_1(served):
    work, _directory, environ = served
    done = _run(work, environ, "raises.py")
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "ValueError: the job's own error" in done.stderr


def _start_sleeper(work, environ):
    (work / "child.pid").unlink(missing_ok=True)
    client = subprocess.Popen(
        [sys.executable, "-m", "hybrid_ir.planning.jobserver", "run", "sleeper.py"],
        cwd=work,
        env=environ,
    )
    deadline = time.monotonic() + 300
    while not (work / "child.pid").exists() or not (work / "child.pid").read_text():
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.05)
    return client, int((work / "child.pid").read_text())


def _gone(pid):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(") ")[1][0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_job_reaches_its_child_and_the_client_ends_as_it_did(served, number):
    work, directory, environ = served
    client, child = _start_sleeper(work, environ)
    assert (directory / "jobs" / str(client.pid)).read_text().strip() == str(child)
    client.send_signal(number)
    status = client.wait(timeout=30)
    assert status == (-signal.SIGTERM if number == signal.SIGTERM else 1)  # KeyboardInterrupt
    assert _gone(child)
    assert not (directory / "jobs" / str(client.pid)).exists()


def test_a_killed_client_takes_its_child_with_it(served):
    work, _directory, environ = served
    client, child = _start_sleeper(work, environ)
    client.kill()
    client.wait(timeout=30)
    assert _gone(child)


def test_without_a_server_the_job_runs_in_a_fresh_interpreter(served, tmp_path):
    work, _directory, environ = served
    fresh = _run(work, {k: v for k, v in environ.items() if k != jobserver.DIRECTORY_ENV})
    assert fresh.returncode == 0 and fresh.stdout.split()[5] == "False"  # torch not imported

    failed = tmp_path / "servers"
    failed.mkdir()
    unstarted = environ | {jobserver.DIRECTORY_ENV: str(failed)}
    (failed / f"{jobserver.server_key(unstarted)}.failed").write_text("exit 1\n")
    refused = _run(work, unstarted)
    assert refused.returncode == 0 and refused.stdout.split()[5] == "False"
    assert (
        "failed to start" in refused.stderr and "a fresh interpreter runs the job" in refused.stderr
    )


def test_closing_ends_the_servers_and_removes_their_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    directory = jobserver.open_job_servers()
    assert os.environ[jobserver.DIRECTORY_ENV] == str(directory)
    sleeper = subprocess.Popen(["sleep", "60"])
    (directory / "key.pid").write_text(f"{sleeper.pid}\n")
    jobserver.close_job_servers()
    assert sleeper.wait(timeout=10) == -signal.SIGTERM
    assert not directory.exists() and jobserver.DIRECTORY_ENV not in os.environ


def test_a_served_job_knows_its_server_under_the_name_its_log_reads():
    from hybrid_ir.jobs.run import JOB_SERVER_PID_ENV

    assert jobserver.SERVER_PID_ENV == JOB_SERVER_PID_ENV


def test_only_scripts_that_import_the_torch_code_go_to_servers():
    scripts = Path(__file__).resolve().parents[1] / "workflow" / "scripts"
    assert jobserver.serves(str(scripts / "encoder_search.py"))
    assert not jobserver.serves(str(scripts / "bm25_index.py"))


NAMED = textwrap.dedent(
    """\
    import os, pathlib, time
    from types import SimpleNamespace
    from hybrid_ir.jobs.run import run_step

    job = SimpleNamespace(
        rule="bm25_search",
        wildcards={"collection": "toy", "layout": "flat"},
        log=["named.log"],
        config={"max_relevance": 1000, "max_line_chars": 1 << 20},
    )

    def step():
        pathlib.Path("named.pid").write_text(str(os.getpid()))
        time.sleep(120)

    run_step(job, step)
    """
)


def test_a_forked_job_is_named_by_its_rule_and_wildcards_in_ps_and_top(served):
    """ps and htop read /proc/<pid>/cmdline, top and ``ps -o comm`` the kernel's short name."""
    work, directory, environ = served
    (work / "named.py").write_text(NAMED)
    (work / "named.pid").unlink(missing_ok=True)
    client = subprocess.Popen(
        [sys.executable, "-m", "hybrid_ir.planning.jobserver", "run", "named.py"],
        cwd=work,
        env=environ,
    )
    try:
        deadline = time.monotonic() + 120
        while not (work / "named.pid").exists():
            assert client.poll() is None, "the job ended before naming itself"
            assert time.monotonic() < deadline, "the job never started its step"
            time.sleep(0.1)
        child = int((work / "named.pid").read_text())
        server = int((directory / _servers(directory)[0]).read_text())
        assert int(Path(f"/proc/{child}/stat").read_text().split(") ")[1].split()[1]) == server
        command = Path(f"/proc/{child}/cmdline").read_bytes().rstrip(b"\0").decode()
        assert command == "hybrid-ir bm25_search collection=toy layout=flat"
        assert Path(f"/proc/{child}/comm").read_text().strip() == "bm25_search"
        served_by = Path(f"/proc/{server}/cmdline").read_bytes().rstrip(b"\0").decode()
        assert served_by.startswith("hybrid-ir job server ")
        header = (work / "named.log").read_text().splitlines()[0]
        assert "job bm25_search (collection=toy, layout=flat): 1 thread(s), device cpu" in header
        assert f"process {child}: forked from job server {server}" in header
    finally:
        client.terminate()
        client.wait(timeout=60)


def test_a_forked_job_is_named_after_its_script_until_it_names_its_rule():
    assert jobserver.script_step("/w/.snakemake/scripts/tmpk3j2x9ab.retrieve.py") == "retrieve"
    assert jobserver.script_step("/w/workflow/scripts/encoder_search.py") == "encoder_search"
    assert jobserver.script_step("/tmp/job.py") == "job"
