"""Training in worker processes for a server shared by a class: at most `workers` at once, the rest in line.

A training holds Python's GIL for most of each step (this model's ops are small), so trainings run in the
server's own threads would slow every other student's rerun. Here each one runs in a worker process with one
torch thread and a lower CPU priority: the server keeps its core for the students, and a Stop ends a run
within one step. Measured in bench/bench_class.py (see README, "Host it for a class").

    pool = TrainingPool(workers=2)
    job = pool.submit(model, "reverse", steps=400)
    job.position()      # 0: training now; k: k-th in line
    job.progress()      # StepInfo of the steps done since the last call
    job.stop()          # ends it within one step (or takes it out of the line)
    job.result()        # (trained copy of the model, TrainResult)
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import queue
import sys
import threading
import types
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import torch

from transformer_viz.config import ModelConfig
from transformer_viz.data.tasks import get_task
from transformer_viz.model import Transformer
from transformer_viz.train.loop import StepInfo, TrainResult, evaluate, train

NICENESS = 10  # workers yield the CPU to the server's reruns


def _start_worker() -> None:
    """The worker owns its process: one torch thread (train() never sets it), a lower priority."""
    torch.set_num_threads(1)
    with contextlib.suppress(OSError, AttributeError):  # not on Windows
        os.nice(NICENESS)


def _train_job(config: dict, weights: dict, task_name: str, settings: dict, updates, started, stop_event,
               evaluate_on: int) -> tuple[dict, TrainResult, float | None]:
    """In a worker: rebuild the model, train it, send every step; -> (weights, result, exact match or None)."""
    started.set()
    model = Transformer(ModelConfig.from_dict(config))
    model.load_state_dict(weights)
    task = get_task(task_name)

    def on_step(info: StepInfo) -> None:
        updates.put(StepInfo(info.step, info.loss, info.accuracy, info.lr))  # the snapshots come with the result

    result = train(model, task, on_step=on_step, should_stop=stop_event.is_set, **settings)
    exact = None
    if evaluate_on and not result.stopped_early:
        exact = evaluate(model, task, n=evaluate_on).exact_match
    return model.state_dict(), result, exact


def worker_context() -> multiprocessing.context.BaseContext:
    """Workers forked from a fresh server process that has imported this module (and torch) once: never a fork
    of a server that runs threads, and never a re-run of the main script, which a Streamlit page may be."""
    if "forkserver" not in multiprocessing.get_all_start_methods():  # Windows
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


@contextlib.contextmanager
def _no_main_script():
    """A new worker re-runs the parent's `__main__` file; under Streamlit that is a page script, which must not
    run there. While processes start, `__main__` is an empty module (Streamlit swaps it per run anyway)."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


class TrainingJob:
    """One training submitted to a TrainingPool: where it stands, its steps so far, and a way to stop it."""

    def __init__(self, pool: TrainingPool, number: int, model: Transformer, future: Future, updates, started,
                 stop_event):
        self._pool, self.number, self._model, self._future = pool, number, model, future
        self._updates, self._started, self._stop_event = updates, started, stop_event

    def progress(self) -> list[StepInfo]:
        """The steps reported since the last call (oldest first)."""
        steps = []
        with contextlib.suppress(queue.Empty, OSError, EOFError):
            while True:
                steps.append(self._updates.get_nowait())
        return steps

    def waiting(self) -> bool:
        """Still in line: not started, not finished, not stopped."""
        return not (self._future.done() or self._stop_event.is_set() or self._started.is_set())

    def position(self) -> int:
        """0 when training (or finished), else the place in line: 1 is next."""
        return self._pool.place_in_line(self) if self.waiting() else 0

    def done(self) -> bool:
        return self._future.done()

    def stop(self) -> None:
        """Leave the line, or end the training after the step it is in (what was trained is kept)."""
        self._stop_event.set()
        self._future.cancel()

    def result(self, timeout: float | None = None) -> tuple[Transformer, TrainResult, float | None]:
        """(a trained copy of the submitted model, its TrainResult, exact match on fresh inputs or None)."""
        weights, result, exact = self._future.result(timeout)
        trained = Transformer(self._model.config)
        trained.load_state_dict(weights)
        return trained.eval(), result, exact


class TrainingPool:
    """At most `workers` trainings at once, each in its own process on one core; the others wait in line.

    `processes=False` runs them in threads of this process instead (the same line and stop), to measure what the
    processes spare the other users (bench/bench_class.py --training-in threads)."""

    def __init__(self, workers: int, processes: bool = True):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers!r}.")
        self.workers, self.processes = workers, processes
        if processes:
            self._context = worker_context()
            with _no_main_script():
                self._manager = self._context.Manager()  # its queues and events can be sent to a worker
        self._executor = self._new_executor()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._jobs: list[TrainingJob] = []  # submitted and not known to have ended

    def submit(self, model: Transformer, task_name: str, *, evaluate_on: int = 0, **settings) -> TrainingJob:
        """Train a copy of `model` on the task (train()'s settings: steps, lr, batch_size, snapshot_every...)."""
        if self.processes:
            updates, started, stop_event = self._manager.Queue(), self._manager.Event(), self._manager.Event()
        else:
            updates, started, stop_event = queue.Queue(), threading.Event(), threading.Event()
        weights = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
        arguments = (model.config.to_dict(), weights, task_name, settings, updates, started, stop_event, evaluate_on)
        # submit() starts a worker process when none is idle
        with self._lock, _no_main_script() if self.processes else contextlib.nullcontext():
            try:
                future = self._executor.submit(_train_job, *arguments)
            except BrokenProcessPool:  # a worker died (killed, out of memory): start afresh
                self._executor = self._new_executor()
                future = self._executor.submit(_train_job, *arguments)
        job = TrainingJob(self, next(self._numbers), model, future, updates, started, stop_event)
        with self._lock:
            self._jobs.append(job)
        return job

    def _new_executor(self) -> ProcessPoolExecutor | ThreadPoolExecutor:
        if self.processes:
            return ProcessPoolExecutor(self.workers, mp_context=self._context, initializer=_start_worker)
        return ThreadPoolExecutor(self.workers, thread_name_prefix="training")

    def place_in_line(self, job: TrainingJob) -> int:
        """1 + the jobs submitted before `job` that have not started and are still wanted."""
        with self._lock:
            self._jobs = [j for j in self._jobs if not j.done()]
            return 1 + sum(j.number < job.number and j.waiting() for j in self._jobs)

    def shutdown(self) -> None:
        """Stop every job (each after its current step) and the workers."""
        with self._lock:
            for job in self._jobs:
                job.stop()
        self._executor.shutdown(wait=True, cancel_futures=True)
        if self.processes:
            self._manager.shutdown()
