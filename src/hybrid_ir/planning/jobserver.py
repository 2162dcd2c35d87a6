"""Torch script jobs started from a process that has imported torch and transformers already.

Every torch job of the default configuration spent 5-10 s of its core importing torch,
transformers and colbert before doing any work, as often as there are jobs (39 in the default
configuration, about 100 in the paper configuration's test). Here a **job server** imports
those libraries once and forks a child per job; the child is that job's Python process (its
standard streams, working directory, environment, ``sys.argv`` and ``__main__``) and starts in
a few milliseconds. Only the scripts :func:`serves` names (those importing the package's torch
code) go to servers.

What makes a forked child the same as a fresh interpreter:

- **Environment read at import.** Libraries read some variables when they are loaded (the
  thread counts Snakemake sets per job, ``OMP_NUM_THREADS`` and the BLAS ones; anything a user
  sets). A server serves only jobs whose environment equals the one it was started with, temp
  directories aside (read at call time: ``tempfile`` forgets its cached choice in the child);
  jobs with another environment get a server of their own, started by the first such job.
- **Nothing run before the fork.** The server imports modules and nothing else: no CUDA
  context, no JVM (pyserini is not preloaded), no Python thread, and no folder put before
  others on ``sys.path`` (pya0 is not preloaded: it puts its own folder first; colbert's
  setuptools and Snakemake append theirs, which only adds modules found nowhere else). It
  checks those three and serves nothing otherwise. Native pools started at import (OpenBLAS's
  workers where a job has more than one thread, jemalloc's background thread under pyarrow)
  restart themselves in a forked child through their own fork handlers. The package's own
  modules are not preloaded: a child imports them from disk, as they are when the job starts.
- **Lifetime.** A child dies with its server (``PR_SET_PDEATHSIG``), the server kills a child
  whose client went away, and a server ends when the Snakemake process that owns it ends.
  Signals sent to the client (Snakemake stopping a job) are forwarded to the child, and the
  client exits as the child did.
- **Names.** A child is named after its script at once and after its rule and wildcards when
  the job starts (:mod:`hybrid_ir.joblog.process_title`), so that ``ps`` and ``top`` tell jobs apart
  instead of showing the server's command line for each.
- **Measurements.** A child is not a descendant of the job's shell, so the server records
  ``<client pid> -> <child pid>`` in its directory, where Snakemake's benchmark sampler
  (:func:`hybrid_ir.planning.snakemake_patches.run_python_scripts_in_job_servers`) finds it: the
  benchmark files measure the child as they measured the fresh process (the job that started
  a server also counts the server's start, which it waited for).

A job finds no usable server (none configured, a start that failed, a refusal) and runs as
before: the client replaces itself with a fresh interpreter running the script.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import signal
import socket
import struct
import sys
import time
from pathlib import Path

from hybrid_ir.joblog.process_title import TITLE_PREFIX, name_process
from hybrid_ir.planning.code_digest import imported_modules

DIRECTORY_ENV = "HYBRID_IR_JOB_SERVERS"
"""The directory of one Snakemake run's servers (sockets, locks, logs, client registry)."""
OWNER_ENV = "HYBRID_IR_JOB_SERVERS_OWNER"
"""The pid of the Snakemake process whose end ends the servers."""
REGISTRY = "jobs"
"""The servers' directory's folder of ``<client pid>`` files, each holding its child's pid."""
SERVER_PID_ENV = "HYBRID_IR_JOB_SERVER_PID"
"""Set in a served job's environment: the server it was forked from (its log says so)."""

CALL_TIME_VARIABLES = frozenset({"TMPDIR", "TMP", "TEMP", "TEMPDIR", "_"})
"""Variables a job may set differently from its server's: read when used, not at import (and
the shell's last argument, `_`)."""

PRELOADED_MODULES = (
    "numpy",
    "scipy.stats",
    "torch",
    "transformers",
    "transformers.models.bert.modeling_bert",
    "transformers.models.bert.tokenization_bert",
    "transformers.models.roberta.modeling_roberta",
    "transformers.models.roberta.tokenization_roberta",
    "sentence_transformers",
    "faiss",
    "colbert",
    "colbert.indexing.collection_indexer",
    "colbert.indexing.collection_encoder",
    "colbert.modeling.base_colbert",
    "colbert.modeling.hf_colbert",
    "snakemake.script",
)
"""Third-party modules of the torch jobs, which take seconds to import."""

SERVED_PACKAGE = "hybrid_ir.neural"
"""Scripts importing this package's torch code (directly or through other modules) go to job
servers; the others (readers, BM25, evaluation, tables) import in well under a second, less
than a server's preloading, and run in a fresh interpreter."""

START_TIMEOUT_S = 600
_HEADER = struct.Struct("!I")
_PR_SET_PDEATHSIG = 1
_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Unserved(Exception):
    """The job cannot run in a server (and runs in a fresh interpreter)."""


def server_key(environ: dict[str, str]) -> str:
    """One server per environment, temp directories aside."""
    relevant = sorted((k, v) for k, v in environ.items() if k not in CALL_TIME_VARIABLES)
    return hashlib.sha256(json.dumps(relevant).encode()).hexdigest()[:16]


# -- messages: a 4-byte length, then JSON --------------------------------------------------


def _send(connection: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    payload = json.dumps(message).encode()
    data = _HEADER.pack(len(payload)) + payload
    sent = socket.send_fds(connection, [data], fds) if fds else connection.send(data)
    connection.sendall(data[sent:])


def _receive(connection: socket.socket, max_fds: int = 0) -> tuple[dict | None, list[int]]:
    """One message (None at end of stream) and the descriptors sent with it."""
    fds: list[int] = []
    buffer = b""
    while len(buffer) < _HEADER.size or len(buffer) < _HEADER.size + _length(buffer):
        if max_fds and not fds:
            chunk, fds, _flags, _address = socket.recv_fds(connection, 65536, max_fds)
        else:
            chunk = connection.recv(65536)
        if not chunk:
            for fd in fds:
                os.close(fd)
            return None, []
        buffer += chunk
    return json.loads(buffer[_HEADER.size :]), fds


def _length(buffer: bytes) -> int:
    return _HEADER.unpack_from(buffer)[0] if len(buffer) >= _HEADER.size else 0


@functools.cache
def serves(script: str) -> bool:
    """Whether jobs of ``script`` (a workflow script's path) go to a job server."""

    return any(
        name == SERVED_PACKAGE or name.startswith(f"{SERVED_PACKAGE}.")
        for name in imported_modules(script)
    )


def script_step(script: str) -> str:
    """The workflow script a job runs: ``retrieve`` for Snakemake's copy of it
    (``.snakemake/scripts/tmpk3j2x9ab.retrieve.py``), else the file's name without ``.py``."""
    stem = Path(script).name.removesuffix(".py")
    prefix, dot, rest = stem.partition(".")
    return rest if dot and prefix.startswith("tmp") and rest else stem


def open_job_servers() -> Path:
    """Give the script jobs this process starts from now on job servers (their directory in
    the environment jobs inherit); servers start on demand, one per job environment."""
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="hybrid-ir-jobs-"))
    os.environ[DIRECTORY_ENV] = str(directory)
    os.environ[OWNER_ENV] = str(os.getpid())
    return directory


def close_job_servers() -> None:
    """End the servers :func:`open_job_servers` gave jobs and remove their directory."""
    import shutil

    directory = os.environ.pop(DIRECTORY_ENV, None)
    os.environ.pop(OWNER_ENV, None)
    if not directory:
        return
    for pid_file in Path(directory).glob("*.pid"):
        try:
            os.kill(int(pid_file.read_text()), signal.SIGTERM)
        except (OSError, ValueError):
            continue
    shutil.rmtree(directory, ignore_errors=True)


# -- the client: `python -m hybrid_ir.planning.jobserver run SCRIPT` -------------------------------


def run_script(script: str) -> None:
    """Run ``script`` as a job in its server, else exec a fresh interpreter on it."""
    directory = os.environ.get(DIRECTORY_ENV)
    if directory:
        try:
            _exit_as(_run_served(Path(directory), script))
        except Unserved as reason:
            print(
                f"hybrid_ir.planning.jobserver: {reason}; a fresh interpreter runs the job",
                file=sys.stderr,
                flush=True,
            )
    os.execv(sys.executable, [sys.executable, script])


def _exit_as(status: int) -> None:
    """Exit with the child's wait status: its code, or the signal that ended it."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _run_served(directory: Path, script: str) -> int:
    connection = _connect(directory, server_key(dict(os.environ)))
    with connection:
        request = {
            "script": os.path.abspath(script),
            "cwd": os.getcwd(),
            "environ": dict(os.environ),
        }
        try:
            _send(connection, request, [0, 1, 2])
            reply, _ = _receive(connection)
        except OSError as error:
            raise Unserved(f"the job server did not take the job ({error})") from error
        if reply is None or "pid" not in reply:
            raise Unserved(f"the job server refused the job: {(reply or {}).get('refused')}")
        child = reply["pid"]

        def forward(number: int, _frame: object) -> None:
            try:
                os.kill(child, number)
            except ProcessLookupError:
                pass

        for number in _FORWARDED_SIGNALS:
            signal.signal(number, forward)
        reply, _ = _receive(connection)  # retried after each forwarded signal (PEP 475)
    if reply is None or "status" not in reply:
        print(
            "hybrid_ir.planning.jobserver: the job server ended before the job did", file=sys.stderr
        )
        return 1 << 8
    return reply["status"]


def _connect(directory: Path, key: str) -> socket.socket:
    """A connection to the server for ``key``, started here if it is not running."""
    path = directory / f"{key}.sock"
    connection = _try_connect(path)
    if connection is not None:
        return connection
    import fcntl

    with open(directory / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        connection = _try_connect(path)
        if connection is None:
            _start_server(directory, key)
            connection = _try_connect(path)
    if connection is None:
        raise Unserved(f"no job server answers at {path}")
    return connection


def _try_connect(path: Path) -> socket.socket | None:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(path))
    except OSError:
        connection.close()
        return None
    return connection


def _start_server(directory: Path, key: str) -> None:
    """Start the server for ``key`` and wait until it listens (it preloads first)."""
    import subprocess

    failed = directory / f"{key}.failed"
    if failed.exists():
        raise Unserved(f"the job server for this environment failed to start (see {failed})")
    owner = os.environ.get(OWNER_ENV, "")
    log = directory / f"{key}.log"
    with open(log, "ab") as output:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hybrid_ir.planning.jobserver",
                "serve",
                str(directory / f"{key}.sock"),
                owner,
            ],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
            close_fds=True,
            env={k: v for k, v in os.environ.items() if k not in CALL_TIME_VARIABLES},
        )
    (directory / f"{key}.pid").write_text(f"{server.pid}\n")
    began = time.monotonic()
    while not (directory / f"{key}.sock").exists():
        if server.poll() is not None or time.monotonic() - began > START_TIMEOUT_S:
            failed.write_text(f"exit {server.poll()}; log: {log}\n")
            raise Unserved(f"the job server did not start (its log: {log})")
        time.sleep(0.05)


# -- the server: `python -m hybrid_ir.planning.jobserver serve SOCKET OWNER_PID` -------------------


def _preload() -> str | None:
    """Import the preloaded modules; the reason not to serve, if any."""
    import importlib
    import threading

    path = list(sys.path)
    for name in PRELOADED_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue  # a module this installation lacks: its jobs import what they have
    if sys.path[: len(path)] != path:
        return "a preloaded module put a folder before others on sys.path"
    if threading.active_count() != 1:
        return "preloading started a Python thread, which a forked child would lack"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "preloading initialised CUDA, which a forked child cannot use"
    return None


def serve(socket_path: str, owner: int | None) -> None:
    """Serve jobs on ``socket_path`` until ``owner`` ends or SIGTERM."""
    import selectors

    began = time.monotonic()
    name_process(f"{TITLE_PREFIX} job server {Path(socket_path).stem}", "job server")
    before = dict(os.environ)
    own_environ = {k: v for k, v in before.items() if k not in CALL_TIME_VARIABLES}
    refusal = _preload()
    # What importing set in the environment, a fresh interpreter's import would set too.
    set_by_imports = {k: v for k, v in os.environ.items() if before.get(k) != v}
    print(
        f"preloaded in {time.monotonic() - began:.1f} s"
        + (f"; serving nothing: {refusal}" if refusal else ""),
        flush=True,
    )
    registry = Path(socket_path).parent / REGISTRY
    registry.mkdir(exist_ok=True)

    wakeup_read, wakeup_write = os.pipe()
    os.set_blocking(wakeup_write, False)
    signal.set_wakeup_fd(wakeup_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: None)
    signal.signal(signal.SIGINT, lambda *_: None)

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temporary = f"{socket_path}.{os.getpid()}"
    listener.bind(temporary)
    listener.listen(64)
    os.rename(temporary, socket_path)  # clients see the socket only once it accepts

    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wakeup_read, selectors.EVENT_READ, "signal")
    owner_fd = None
    if owner:
        try:
            owner_fd = os.pidfd_open(owner)
            selector.register(owner_fd, selectors.EVENT_READ, "owner")
        except ProcessLookupError:
            return
    jobs: dict[int, tuple[socket.socket, int]] = {}  # child pid -> (connection, client pid)
    stopping = False
    while not stopping:
        for event, _mask in selector.select():
            if event.data == "accept":
                connection, _ = listener.accept()
                server_fds = [
                    listener.fileno(),
                    wakeup_read,
                    wakeup_write,
                    owner_fd,
                    selector.fileno(),
                    *(c.fileno() for c, _ in jobs.values()),
                ]
                child = _start_job(
                    connection, refusal, own_environ, set_by_imports, registry, server_fds
                )
                if child is None:
                    connection.close()
                    continue
                jobs[child[0]] = (connection, child[1])
                selector.register(connection, selectors.EVENT_READ, child[0])
            elif event.data == "signal":
                received = os.read(wakeup_read, 512)
                stopping = any(n in received for n in (signal.SIGTERM, signal.SIGINT))
                _reap(jobs, selector, registry)
            elif event.data == "owner":
                stopping = True
            else:  # the client closed its end: it was killed, so is its child
                client_end = event.fileobj
                assert isinstance(client_end, socket.socket)
                try:
                    gone = client_end.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    _kill(event.data, signal.SIGKILL)
                selector.unregister(client_end)  # a client sends nothing after its request
    for child in jobs:
        _kill(child, signal.SIGTERM)
    for path in (socket_path, registry.parent / f"{Path(socket_path).stem}.pid"):
        Path(path).unlink(missing_ok=True)
    sys.stdout.flush()
    os._exit(0)  # without the preloaded libraries' teardown, which takes seconds


def _kill(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


def _reap(jobs: dict, selector, registry: Path) -> None:
    while jobs:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection, client = jobs.pop(pid)
        (registry / str(client)).unlink(missing_ok=True)
        try:
            selector.unregister(connection)
        except KeyError:
            pass  # unregistered when its client went away
        try:
            _send(connection, {"status": status})
        except OSError:
            pass
        connection.close()


def _start_job(connection, refusal, own_environ, set_by_imports, registry, server_fds):
    """Fork the child for the job on ``connection``: (child pid, client pid), or None."""
    connection.settimeout(30)
    try:
        request, fds = _receive(connection, max_fds=3)
    except (OSError, ValueError):
        return None
    connection.settimeout(None)
    if request is None:
        return None
    environ = {k: v for k, v in request["environ"].items() if k not in CALL_TIME_VARIABLES}
    if refusal is None and environ != own_environ:
        refusal = "the job's environment differs from the server's"
    if refusal is None and len(fds) != 3:
        refusal = "the job's standard streams did not arrive"
    if refusal is not None:
        for fd in fds:
            os.close(fd)
        try:
            _send(connection, {"refused": refusal})
        except OSError:
            pass
        return None
    credentials = connection.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
    )
    client = struct.unpack("3i", credentials)[0]
    sys.stdout.flush()
    sys.stderr.flush()
    server = os.getpid()
    child = os.fork()
    if child == 0:
        for fd in (connection.fileno(), *server_fds):
            if fd is not None:
                os.close(fd)
        _become_job(request, set_by_imports, fds, server)  # never returns
    for fd in fds:
        os.close(fd)
    (registry / str(client)).write_text(f"{child}\n")
    _send(connection, {"pid": child})
    return child, client


def _become_job(request: dict, set_by_imports: dict[str, str], fds: list[int], server: int) -> None:
    """In the forked child: become the job's interpreter and run its script."""
    import atexit
    import ctypes
    import runpy
    import tempfile
    import traceback

    status = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != server:  # the server ended before the line above
            return
        signal.set_wakeup_fd(-1)
        for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["environ"] | set_by_imports | {SERVER_PID_ENV: str(server)})
        tempfile.tempdir = None
        script = request["script"]
        # Until the job names itself by its rule (hybrid_ir.jobs.run.run_step), by its script
        # rather than as the server it was forked from.
        step = script_step(script)
        name_process(f"{TITLE_PREFIX} job {step}", step)
        sys.argv = [script]
        sys.path[0] = os.path.dirname(script)
        try:
            runpy.run_path(script, run_name="__main__")
            status = 0
        except SystemExit as end:
            if end.code is None or isinstance(end.code, int):
                status = end.code or 0
            else:
                print(end.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)


def main(arguments: list[str]) -> None:
    if arguments[:1] == ["run"] and len(arguments) == 2:
        run_script(arguments[1])
    elif arguments[:1] == ["serve"] and len(arguments) == 3:
        serve(arguments[1], int(arguments[2]) if arguments[2] else None)
    else:
        sys.exit(
            "usage: python -m hybrid_ir.planning.jobserver run SCRIPT | serve SOCKET OWNER_PID"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
