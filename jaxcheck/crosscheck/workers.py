"""Sweep jobs in worker processes (`mem4d sweep --jobs N`): each worker starts jax for the target once and verifies
the configurations it is handed; the parent (no jax) appends each record as it arrives."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Callable

from .sweep import Job, append_result, run_job

_STATE: dict = {}  # per worker process: the target and whether to measure


def _init(target_spec: str, world: int, measure: bool) -> None:
    """Worker start: load the target and start jax with enough devices for the largest mesh (before any compile)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    from ..backend import start
    from ..targets import load

    target = load(target_spec)
    start(target.with_memory(2**50), world)
    _STATE.update(target=target, measure=measure)


def _one(job: Job) -> dict:
    import jax

    from .verify import verify

    def run(spec):
        try:
            return verify(spec.shape, spec.train, spec.opts, target=_STATE["target"], measure=_STATE["measure"])
        finally:
            jax.clear_caches()

    return run_job(job, run, devices=2**31)


def run_parallel(
    todo: list[Job],
    fd: int,
    target_spec: str,
    world: int,
    measure: bool,
    workers: int,
    on_done: Callable[[dict], None],
    extra: dict,
) -> int:
    """Run the jobs on `workers` processes, appending every record (plus `extra`) as soon as it is back."""
    context = multiprocessing.get_context("spawn")
    written = 0
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_init, initargs=(target_spec, world, measure)
    )
    try:
        running = {pool.submit(_one, job) for job in todo}
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                record = future.result() | extra
                append_result(fd, record)
                written += 1
                on_done(record)
    except BaseException:
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return written
