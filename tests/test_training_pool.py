"""TrainingPool: trainings in worker processes (or threads, to compare), in line when the workers are busy,
stopped within a step."""

import contextlib
import time
from concurrent.futures import CancelledError

import pytest
import torch

from transformer_viz import Transformer, get_task, model_config_for
from transformer_viz.train.loop import train
from transformer_viz.train.pool import TrainingPool


@pytest.fixture(scope="module", params=[True, False], ids=["processes", "threads"])
def pool(request):
    pool = TrainingPool(workers=1, processes=request.param)
    yield pool
    pool.shutdown()


def small_model(seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(model_config_for(get_task("reverse"), d_model=16, n_heads=2, d_ff=32))


def wait_until(condition, seconds: float = 120) -> None:
    """Wait for `condition()` (a generous deadline: the machine may be busy)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_worker_trains_exactly_what_train_would_in_this_process(pool):
    model = small_model()
    job = pool.submit(model, "reverse", steps=30, batch_size=16, seed=3, snapshot_every=10)
    trained, result, exact = job.result(timeout=120)
    reference = small_model()
    expected = train(reference, get_task("reverse"), steps=30, batch_size=16, seed=3, snapshot_every=10)
    assert result.history == expected.history and result.steps == 30 and not result.stopped_early
    assert [s.step for s in result.snapshots] == [0, 10, 20, 30] and exact is None
    for name, tensor in reference.state_dict().items():
        assert torch.equal(trained.state_dict()[name], tensor), name
    assert not trained.training
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), small_model().state_dict().values(),
                                                 strict=True))  # the submitted model is untouched


def test_steps_arrive_as_they_are_done_and_a_finished_run_is_evaluated(pool):
    job = pool.submit(small_model(), "reverse", steps=20, batch_size=16, evaluate_on=50)
    _, result, exact = job.result(timeout=120)
    steps = job.progress()
    assert [info.step for info in steps] == list(range(1, 21))
    assert [(info.step, info.loss, info.accuracy) for info in steps] == result.history
    assert 0.0 <= exact <= 1.0


def test_jobs_wait_in_line_first_come_first_served_and_stop_within_a_step(pool):
    first = pool.submit(small_model(), "reverse", steps=100_000, batch_size=16)
    second = pool.submit(small_model(), "reverse", steps=10, batch_size=16)
    third = pool.submit(small_model(), "reverse", steps=10, batch_size=16)
    wait_until(lambda: first.position() == 0 and first.progress())
    assert (second.position(), third.position()) == (1, 2)
    third.stop()  # leaves the line
    assert third.position() == 0 and second.position() == 1
    first.stop()
    _, result, _ = first.result(timeout=60)
    assert result.stopped_early and 0 < result.steps < 100_000
    _, result, _ = second.result(timeout=120)
    assert result.steps == 10
    with contextlib.suppress(CancelledError):  # out of the line, or (already handed over) stopped before step 1
        assert third.result(timeout=60)[1].steps == 0


def test_a_pool_needs_a_worker():
    with pytest.raises(ValueError, match="at least 1"):
        TrainingPool(workers=0)


def test_train_runs_at_the_process_thread_count_and_leaves_it_alone():
    """The thread count is process-wide: whoever owns the process sets it (a worker: one thread), never train()."""
    torch.set_num_threads(3)  # the conftest fixture puts the test process's count back afterwards
    seen = []
    train(small_model(), get_task("reverse"), steps=2, batch_size=4,
          on_step=lambda info: seen.append(torch.get_num_threads()))
    assert seen == [3, 3] and torch.get_num_threads() == 3
