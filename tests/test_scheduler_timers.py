"""The scheduler keeps one pending re-evaluation timer, a daemon, however many rounds end."""

import threading

from snakemake.scheduling.job_scheduler import JobScheduler

from hybrid_ir.snakemake_patches import keep_one_pending_timer


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
