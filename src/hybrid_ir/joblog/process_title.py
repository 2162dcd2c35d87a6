"""Jobs named where people look: a job's rule and wildcards as its process title.

Every job forked from a job server shows in ``ps`` and ``htop`` as the server's command line
(``python -m hybrid_ir.planning.jobserver serve ...sock 8197``) and in ``top`` as ``python``, and a
fresh interpreter as ``python .snakemake/scripts/tmpk3j2.retrieve.py``: which job is which
cannot be told. :func:`name_process` rewrites the command line that ``ps``, ``htop`` and
``/proc/<pid>/cmdline`` show (setproctitle) and the short name ``top`` and ``ps -o comm``
show (the kernel's 15-character thread name: the rule, as much of it as fits).
"""

from __future__ import annotations

from typing import Any

TITLE_PREFIX = "hybrid-ir"
_PR_SET_NAME = 15
_COMM_CHARS = 15


def job_title(rule: str, wildcards: Any = None) -> str:
    """``hybrid-ir <rule> key=value ...``: what a job's process is called (``wildcards``: a
    mapping, or Snakemake's named list of them)."""
    items = wildcards.items() if hasattr(wildcards, "items") else ()
    named = " ".join(f"{key}={value}" for key, value in items)
    return f"{TITLE_PREFIX} {rule}" + (f" {named}" if named else "")


def name_process(title: str, short: str) -> None:
    """Show ``title`` as this process's command line and ``short`` as its name."""
    try:
        from setproctitle import setproctitle, setthreadtitle
    except ImportError:  # an environment without it (an older conda env): the name alone
        import ctypes

        name = short[:_COMM_CHARS].encode("utf-8", errors="replace")
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)
        return
    setproctitle(title)
    setthreadtitle(short[:_COMM_CHARS])


def name_job(rule: str, wildcards: Any = None) -> None:
    """This process is the job of ``rule`` with ``wildcards``."""
    name_process(job_title(rule, wildcards), rule)
