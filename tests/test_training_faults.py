"""Trainings on a shared server when something fails: a worker killed by pid mid-training fails its own training
only (the others go on, the next in line takes its place), and the line counts only those that wait ahead."""

import multiprocessing
import os
import signal
import threading

import pytest
from test_app import run_page
from test_training_pool import small_model, wait_until

from transformer_viz.i18n.en import ENGLISH
from transformer_viz.train.pool import TrainingPool, WorkerDied

LONG = 100_000  # steps no test waits for: such a training ends when stopped or killed


def training_processes() -> dict[str, multiprocessing.Process]:
    """This process's living training workers by name ("training-<job number>")."""
    return {p.name: p for p in multiprocessing.active_children() if p.name.startswith("training-") and p.is_alive()}


@pytest.fixture()
def pool():
    pool = TrainingPool(workers=2)
    yield pool
    pool.shutdown()


def test_a_killed_worker_fails_its_own_training_only_and_the_next_in_line_takes_its_place(pool):
    doomed, other = (pool.submit(small_model(seed), "reverse", steps=LONG, batch_size=16) for seed in (0, 1))
    queued = pool.submit(small_model(2), "reverse", steps=10, batch_size=16)
    wait_until(lambda: doomed.progress() and other.progress())  # both are training
    assert queued.position() == 1
    os.kill(training_processes()[f"training-{doomed.number}"].pid, signal.SIGKILL)
    with pytest.raises(WorkerDied, match="SIGKILL"):
        doomed.result(timeout=120)
    _, result, _ = queued.result(timeout=120)  # a new worker in the dead one's place
    assert result.steps == 10 and not result.stopped_early
    other.progress()
    wait_until(other.progress)  # still training after the kill
    other.stop()
    _, result, _ = other.result(timeout=120)
    assert result.stopped_early and result.steps > 0


def test_the_training_page_says_that_a_killed_workers_training_is_lost():
    """The page's training loses its worker mid-run: a message on the page, no traceback, nothing kept."""
    killed = threading.Event()

    def kill_the_training_worker() -> None:
        wait_until(training_processes)
        for process in training_processes().values():
            os.kill(process.pid, signal.SIGKILL)
        killed.set()

    killer = threading.Thread(target=kill_the_training_worker, daemon=True)
    killer.start()
    at = run_page("training", n_heads=2, d_model=16, d_ff=32, weights="random", train_steps=3000)
    at.button(key="training_start").click().run()
    killer.join()
    assert killed.is_set() and not at.exception
    assert [e.value for e in at.error] == [ENGLISH["training.lost"]]
    assert "_trained" not in at.session_state
    assert not at.run().error  # said once


def test_a_training_given_a_free_worker_is_not_in_line(pool):
    first = pool.submit(small_model(), "reverse", steps=LONG, batch_size=16)
    assert first.position() == 0  # at once, while its worker process starts
    second = pool.submit(small_model(), "reverse", steps=LONG, batch_size=16)
    assert second.position() == 0
    third = pool.submit(small_model(), "reverse", steps=10, batch_size=16)
    assert third.position() == 1  # next: nobody waits before it
    first.stop()
    wait_until(lambda: third.position() == 0)
    second.stop()
