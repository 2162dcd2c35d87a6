"""Three of Snakemake 9's internals replaced, each without changing what Snakemake decides.
Each function below replaces one attribute and returns whether Snakemake had it (one without
it is left alone; tests fail if the pinned Snakemake renames any); the ``Snakefile`` applies
all three before its ``configfile:``.

**One pending re-evaluation timer** (:func:`keep_one_pending_timer`).

Snakemake 9's scheduler ends every scheduling round by starting a ``threading.Timer`` that
wakes it again after ``--max-jobs-per-timespan``'s span (default 1 s), so that jobs the rate
limit held back get another chance. A round woken by such a timer starts another, and every
finished job wakes one more round: after N finished jobs, N timer chains each wake the scheduler
once a second. In a default-configuration run (199 jobs) Snakemake's own process reached
70 threads and 16-18 % of a core by a third of the run, taken from the jobs on a 2-core machine.
The timers are also non-daemon threads, so a longer span delays Snakemake's exit by up to that
span after the last job (a 20 s span: 6 one-second jobs took 28 s instead of 10 s).

:func:`keep_one_pending_timer` makes a round start a timer only when none is pending, as a
daemon thread. Nothing is lost: every timer has the same span, so a round that needs a
re-evaluation gets one from the pending timer no later than from its own.

**Two costs of every start** (:func:`serialize_params_lazily`,
:func:`read_configfiles_with_libyaml`):

- **pandas for parameters.** To tell whether a job's parameters changed, Snakemake 9 serializes
  them with a function that imports pandas (0.5-0.7 s on 2 cores) whenever pandas is installed,
  so that a DataFrame parameter can be hashed. A value can only be a pandas object if pandas is
  already imported, so :func:`serialize_params_lazily` imports nothing: it hands values to the
  pandas-aware serializer only once pandas is in ``sys.modules``.
- **Pure-Python YAML for the configuration file.** Snakemake reads the ``configfile:`` file
  with PyYAML's pure-Python loader, through yte (0.3-0.5 s for config.yaml; ``--configfile``
  files are read before the Snakefile runs, by that reader still).
  :func:`read_configfiles_with_libyaml` reads it with the package's loader
  (:data:`hybrid_ir.data.formats.YAML_LOADER`, libyaml's parser) and the same checks as ``hybrid-ir
  config`` (alias bombs, deep nesting, an endless file, non-UTF-8 text, a top level that is not
  a mapping); JSON and yte's templating (``__use_yte__``) are read as Snakemake reads them.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hybrid_ir.config.layers import read_config_file
from hybrid_ir.errors import ConfigError
from hybrid_ir.planning.jobserver import DIRECTORY_ENV, REGISTRY, serves

_PATCHED_MARK = "_hybrid_ir_patched"


def _replace_once(owner: Any, name: str, build: Callable[[Any], Any]) -> bool:
    """Set ``owner.<name>`` to ``build(original)``, once: False where ``owner`` lacks it."""
    original = getattr(owner, name, None)
    if original is None:
        return False
    marked = original.fget if isinstance(original, property) else original
    if getattr(marked, _PATCHED_MARK, False):
        return True
    replacement = build(original)
    marked = replacement.fget if isinstance(replacement, property) else replacement
    setattr(marked, _PATCHED_MARK, True)
    setattr(owner, name, replacement)
    return True


def keep_one_pending_timer(scheduler_class: Any | None = None) -> bool:
    """Replace ``JobScheduler._schedule_reevalutation`` (Snakemake's spelling); tests pass their
    own ``scheduler_class``."""
    if scheduler_class is None:
        from snakemake.scheduling.job_scheduler import JobScheduler

        scheduler_class = JobScheduler

    def build(_original: Any) -> Callable[[Any, float], None]:
        def schedule_reevaluation(self: Any, delay: float) -> None:
            pending = getattr(self, "_pending_reevaluation", None)
            if pending is not None and pending.is_alive():
                return
            timer = threading.Timer(delay, self._open_jobs.release)
            timer.daemon = True
            self._pending_reevaluation = timer
            timer.start()

        return schedule_reevaluation

    return _replace_once(scheduler_class, "_schedule_reevalutation", build)


def serialize_params_lazily(persistence_class: Any | None = None) -> bool:
    """Replace ``PersistenceBase._serialize_param`` (a property) with one that imports nothing."""
    if persistence_class is None:
        from snakemake.persistence import PersistenceBase

        persistence_class = PersistenceBase
    if not isinstance(getattr(persistence_class, "_serialize_param", None), property) or not all(
        hasattr(persistence_class, name)
        for name in ("_serialize_param_pandas", "_serialize_param_builtin")
    ):
        return False

    def serializer(self: Any) -> Callable[[Any], Any]:
        if "pandas" in sys.modules:
            return self._serialize_param_pandas
        return self._serialize_param_builtin

    return _replace_once(persistence_class, "_serialize_param", lambda _: property(serializer))


def read_configfiles_with_libyaml(configfile_module: Any = None) -> bool:
    """Replace ``snakemake.common.configfile.load_configfile`` (which the ``configfile:``
    directive calls) with one that reads YAML through :mod:`hybrid_ir.config.validation`."""
    if configfile_module is None:
        from snakemake.common import configfile

        configfile_module = configfile

    def build(original: Callable[[Any], dict]) -> Callable[[Any], dict]:
        def load_configfile(configpath: Any) -> dict:
            if not isinstance(configpath, (str, Path)):
                return original(configpath)
            try:
                return read_config_file(configpath)
            except ConfigError as error:
                from snakemake_interface_common.exceptions import WorkflowError

                raise WorkflowError(str(error)) from None

        return load_configfile

    return _replace_once(configfile_module, "load_configfile", build)


def run_python_scripts_in_job_servers(
    script_class: Any | None = None, timer_class: Any | None = None
) -> bool:
    """Replace ``PythonScript.execute_script`` and ``BenchmarkTimer.__init__`` so that a
    ``script:`` job runs in a :mod:`hybrid_ir.planning.jobserver` child and its benchmark measures
    that child. Both do what Snakemake did unless
    :func:`hybrid_ir.planning.jobserver.open_job_servers` set the servers' directory in this
    process's environment; only the scripts
    :func:`hybrid_ir.planning.jobserver.serves` names go to servers, and a job with a conda
    environment, a container, environment modules or ``--edit-notebook`` always runs as Snakemake
    runs it."""

    if script_class is None:
        from snakemake.script import PythonScript

        script_class = PythonScript
    if timer_class is None:
        from snakemake.benchmark import BenchmarkTimer

        timer_class = BenchmarkTimer

    def build_execute(original: Callable[..., None]) -> Callable[..., None]:
        def execute_script(self: Any, fname: str, edit: bool = False) -> None:
            own_interpreter = (
                edit
                or self.conda_env is not None
                or self.container_img is not None
                or self.env_modules is not None
            )
            if (
                own_interpreter
                or not os.environ.get(DIRECTORY_ENV)
                or not serves(self.path.get_path_or_uri(secret_free=True))
            ):
                return original(self, fname, edit)
            self._execute_cmd(
                "{py_exec} -m hybrid_ir.planning.jobserver run {fname:q}",
                py_exec=sys.executable,
                fname=fname,
                is_python_script=True,
            )

        return execute_script

    def build_init(original: Callable[..., None]) -> Callable[..., None]:
        def init(self: Any, pid: int, *args: Any, **kwargs: Any) -> None:
            original(self, pid, *args, **kwargs)
            directory = os.environ.get(DIRECTORY_ENV)
            if directory:
                self.main = _WithServedChildren(self.main, Path(directory) / REGISTRY)

        return init

    return _replace_once(script_class, "execute_script", build_execute) and _replace_once(
        timer_class, "__init__", build_init
    )


class _WithServedChildren:
    """A ``psutil.Process`` whose descendants include the job server children of the clients
    among them (the server registers ``jobs/<client pid>`` holding the child's pid)."""

    def __init__(self, process: Any, registry: Path) -> None:
        self._process = process
        self._registry = registry

    def __getattr__(self, name: str) -> Any:
        return getattr(self._process, name)

    def children(self, recursive: bool = False) -> list[Any]:
        import psutil

        found = self._process.children(recursive=recursive)
        served = []
        for process in [self._process, *found]:
            try:
                child = int((self._registry / str(process.pid)).read_text())
                served.append(psutil.Process(child))
            except (OSError, ValueError, psutil.Error):
                continue
        for process in list(served):
            try:
                served.extend(process.children(recursive=recursive))
            except psutil.Error:
                continue
        return found + served
