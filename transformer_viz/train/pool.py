"""Training in worker processes for a server shared by a class: at most `workers` at once, the rest in line.

A training holds Python's GIL for most of each step (this model's ops are small), so trainings run in the
server's own threads would slow every other student's rerun. Here each one runs in a worker process of its own,
with one torch thread and a lower CPU priority: the server keeps its core for the students, and a Stop ends a
run within one step. Measured in bench/bench_class.py (see README, "Host it for a class").

A worker that dies (killed, out of memory) fails its own training only, with WorkerDied: the others share no
process, queue or lock with it, and the next training in line takes its place in a new process.

    pool = TrainingPool(workers=2)
    job = pool.submit(model, "reverse", steps=400)
    job.position()      # 0: training now; k: k-th in line
    job.progress()      # StepInfo of the steps done since the last call
    job.stop()          # ends it within one step (or takes it out of the line)
    job.result()        # (trained copy of the model, TrainResult), or WorkerDied
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import itertools
import logging
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import types
from concurrent.futures import Future, wait
from multiprocessing.sharedctypes import RawValue

import torch

from transformer_viz.config import ModelConfig
from transformer_viz.data.tasks import get_task
from transformer_viz.model import build_model
from transformer_viz.train.evaluation import evaluate
from transformer_viz.train.loop import Model, StepInfo, TrainResult, train

NICENESS = 10  # workers yield the CPU to the server's reruns
log = logging.getLogger(__name__)


class WorkerDied(RuntimeError):
    """A training's worker process ended without its result (killed, out of memory): that training is lost."""

    def __init__(self, number: int, exitcode: int | None):
        how = f"killed by {signal.Signals(-exitcode).name}" if exitcode and exitcode < 0 else f"exit code {exitcode}"
        super().__init__(f"Training {number} is lost: its worker process ended ({how}) before it finished.")
        self.number, self.exitcode = number, exitcode


def _train_job(spec: dict, on_step, should_stop) -> tuple[dict, TrainResult, float | None]:
    """Rebuild the model, train it, report every step; -> (weights, result, exact match or None)."""
    model = build_model(ModelConfig.from_dict(spec["config"]), generator=torch.Generator())  # replaced below
    model.load_state_dict(spec["weights"])
    task = get_task(spec["task"])

    def report(info: StepInfo) -> None:
        on_step(StepInfo(info.step, info.loss, info.accuracy, info.lr))  # the snapshots come with the result

    result = train(model, task, on_step=report, should_stop=should_stop, **spec["settings"])
    exact = None
    if spec["evaluate_on"] and not result.stopped_early:
        exact = evaluate(model, task, n=spec["evaluate_on"]).exact_match
    return model.state_dict(), result, exact


def _work(spec: bytes, stop, results) -> None:
    """A worker process: one training (one torch thread, a lower priority); sends ("step", StepInfo) for each
    step, then ("done", pickled outcome) or ("error", exception) down `results`."""
    torch.set_num_threads(1)  # train() never sets it: the process's owner does
    with contextlib.suppress(OSError, AttributeError):  # not on Windows
        os.nice(NICENESS)
    try:  # plain pickle: the tensors travel in the message, not in shared memory this process would have to keep
        message = ("done", pickle.dumps(_train_job(pickle.loads(spec), lambda info: results.send(("step", info)),
                                                   lambda: stop.value)))
    except Exception as error:  # the server raises it from job.result()
        message = ("error", error)
    try:
        results.send(message)
    except Exception:  # an exception that does not pickle: its sentence
        results.send(("error", RuntimeError(f"{type(message[1]).__name__}: {message[1]}")))


def worker_context() -> multiprocessing.context.BaseContext:
    """Workers forked from a fresh server process that has imported this module (and torch) once: never a fork
    of a server that runs threads, and never a re-run of the main script, which a Streamlit page may be."""
    if "forkserver" not in multiprocessing.get_all_start_methods():  # Windows
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


_MAIN_SWAP = threading.Lock()  # one swap at a time, or a second would put the empty module back for good


@contextlib.contextmanager
def _no_main_script():
    """A new worker re-runs the parent's `__main__` file; under Streamlit that is a page script, which must not
    run there. While a process starts, `__main__` is an empty module (Streamlit swaps it per run anyway)."""
    with _MAIN_SWAP:
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            sys.modules["__main__"] = main


class TrainingJob:
    """One training submitted to a TrainingPool: where it stands, its steps so far, and a way to stop it."""

    def __init__(self, pool: TrainingPool, number: int, model: Model):
        self._pool, self.number, self._model = pool, number, model
        self._future: Future = Future()
        self._updates: queue.Queue[StepInfo] = queue.Queue()
        self._stop = RawValue(ctypes.c_bool, False)  # shared memory, no lock a killed worker could keep
        self.started = False  # given a worker (set by the pool under its lock)

    def progress(self) -> list[StepInfo]:
        """The steps reported since the last call (oldest first)."""
        steps = []
        with contextlib.suppress(queue.Empty):
            while True:
                steps.append(self._updates.get_nowait())
        return steps

    def waiting(self) -> bool:
        """Still in line: not started, not finished, not stopped."""
        return not (self.started or self._future.done() or self._stop.value)

    def position(self) -> int:
        """0 when training (or finished), else the place in line: 1 is next."""
        return self._pool.place_in_line(self) if self.waiting() else 0

    def done(self) -> bool:
        return self._future.done()

    def stop(self) -> None:
        """Leave the line, or end the training after the step it is in (what was trained is kept)."""
        self._stop.value = True
        self._future.cancel()  # only while in line

    def result(self, timeout: float | None = None) -> tuple[Model, TrainResult, float | None]:
        """(a trained copy of the submitted model, its TrainResult, exact match on fresh inputs or None).
        Raises WorkerDied when its worker process died, CancelledError when it left the line."""
        weights, result, exact = self._future.result(timeout)
        trained = build_model(self._model.config, generator=torch.Generator())  # every value is replaced
        trained.load_state_dict(weights)
        return trained.eval(), result, exact


class TrainingPool:
    """At most `workers` trainings at once, each in a process of its own on one core; the others wait in line.

    `processes=False` runs them in threads of this process instead (the same line and stop), to measure what the
    processes spare the other users (bench/bench_class.py --training-in threads)."""

    def __init__(self, workers: int, processes: bool = True):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers!r}.")
        self.workers, self.processes = workers, processes
        if processes:
            self._context = worker_context()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._line: collections.deque[tuple[TrainingJob, dict]] = collections.deque()  # not started, in order
        self._running: set[TrainingJob] = set()

    def submit(self, model: Model, task_name: str, *, evaluate_on: int = 0, **settings) -> TrainingJob:
        """Train a copy of `model` on the task (train()'s settings: steps, lr, batch_size, snapshot_every...)."""
        weights = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
        spec = {"config": model.config.to_dict(), "weights": weights, "task": task_name, "settings": settings,
                "evaluate_on": evaluate_on}
        with self._lock:
            job = TrainingJob(self, next(self._numbers), model)
            self._line.append((job, spec))
            self._start_waiting()
        return job

    def _start_waiting(self) -> None:
        """Give the free workers to the first jobs in line (under the lock): a job is in line only while every
        worker is busy, so nobody is told to wait for a worker that is free."""
        while len(self._running) < self.workers and self._line:
            job, spec = self._line.popleft()
            if not job._future.set_running_or_notify_cancel():  # it left the line
                continue
            job.started = True
            self._running.add(job)
            threading.Thread(target=self._run, args=(job, spec), name=f"training-{job.number}", daemon=True).start()

    def _run(self, job: TrainingJob, spec: dict) -> None:
        try:
            if self.processes:
                outcome = self._in_process(job, spec)
            else:
                outcome = _train_job(spec, job._updates.put, lambda: job._stop.value)
        except BaseException as error:
            job._future.set_exception(error)
        else:
            job._future.set_result(outcome)
        finally:
            with self._lock:
                self._running.discard(job)
                self._start_waiting()

    def _in_process(self, job: TrainingJob, spec: dict) -> tuple[dict, TrainResult, float | None]:
        """Train in a new worker process named "training-<number>", relaying its steps; WorkerDied when it ends
        without sending its outcome."""
        results, sender = self._context.Pipe(duplex=False)
        process = self._context.Process(target=_work, args=(pickle.dumps(spec), job._stop, sender),
                                        name=f"training-{job.number}", daemon=True)
        try:
            with _no_main_script():
                process.start()
            sender.close()  # the worker holds the only sending end: its end is the reader's EOFError
            while (message := results.recv())[0] == "step":
                job._updates.put(message[1])
        except (EOFError, OSError):  # it died, or could not start
            if process.pid is not None:
                process.join()
            error = WorkerDied(job.number, process.exitcode)
            log.warning("%s The other trainings go on.", error)
            raise error from None
        finally:
            sender.close()
            results.close()
            if process.pid is not None:
                process.join()
        kind, payload = message
        if kind == "error":
            raise payload
        return pickle.loads(payload)

    def place_in_line(self, job: TrainingJob) -> int:
        """1 + the jobs submitted before `job` that have not started and are still wanted."""
        with self._lock:
            return 1 + sum(other.number < job.number and other.waiting() for other, _ in self._line)

    def shutdown(self) -> None:
        """Stop every job (each after its current step) and wait for the workers to end."""
        with self._lock:
            jobs = [job for job, _ in self._line] + list(self._running)
        for job in jobs:
            job.stop()
        wait([job._future for job in jobs])
