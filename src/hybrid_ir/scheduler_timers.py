"""One pending re-evaluation timer in Snakemake's job scheduler, instead of one per round.

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
"""

from __future__ import annotations

import threading
from typing import Any

_PATCHED_MARK = "_hybrid_ir_one_pending_timer"


def keep_one_pending_timer(scheduler_class: Any | None = None) -> bool:
    """Replace ``JobScheduler._schedule_reevalutation`` (Snakemake's spelling) in place.

    Returns whether the scheduler has that method (the patch applies); a Snakemake without it
    is left alone. ``scheduler_class`` defaults to Snakemake's ``JobScheduler`` (tests pass
    their own).
    """
    if scheduler_class is None:
        from snakemake.scheduling.job_scheduler import JobScheduler

        scheduler_class = JobScheduler
    original = getattr(scheduler_class, "_schedule_reevalutation", None)
    if original is None:
        return False
    if getattr(original, _PATCHED_MARK, False):
        return True

    def schedule_reevaluation(self: Any, delay: float) -> None:
        pending = getattr(self, "_pending_reevaluation", None)
        if pending is not None and pending.is_alive():
            return
        timer = threading.Timer(delay, self._open_jobs.release)
        timer.daemon = True
        self._pending_reevaluation = timer
        timer.start()

    setattr(schedule_reevaluation, _PATCHED_MARK, True)
    scheduler_class._schedule_reevalutation = schedule_reevaluation
    return True
