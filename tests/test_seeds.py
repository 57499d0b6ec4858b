"""Seeds are private to each caller: models and trainings draw from their own torch.Generator, never from torch's
global RNG or thread count, which every session's thread of a server shares."""

from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
import torch

from transformer_viz.app.server import measurements, models
from transformer_viz.data.tasks import get_task, model_config_for
from transformer_viz.model import Transformer
from transformer_viz.train.loop import train

TRIALS = 10


def tiny_config(task_name: str = "reverse", **shape):
    return model_config_for(get_task(task_name), **{"d_model": 16, "n_heads": 2, "d_ff": 32, "layers": 1, **shape})


def seeded(config, seed: int) -> Transformer:
    return Transformer(config, generator=torch.Generator().manual_seed(seed))


def same_weights(a: Transformer, b: Transformer) -> bool:
    a, b = a.state_dict(), b.state_dict()
    return a.keys() == b.keys() and all(torch.equal(a[name], b[name]) for name in a)


def side_by_side(build, seeds: list[int]) -> list:
    """build(seed) for every seed, each in its own thread, all released at once; -> the results in seed order."""
    barrier = Barrier(len(seeds))

    def run(seed):
        barrier.wait()
        return build(seed)

    with ThreadPoolExecutor(len(seeds)) as pool:
        return list(pool.map(run, seeds))


def test_a_model_from_a_generator_is_the_same_alone_and_beside_another():
    config = model_config_for(get_task("reverse"), positional="learned")
    alone = [seeded(config, seed) for seed in (0, 1)]
    assert not same_weights(*alone)
    for _ in range(TRIALS):
        together = side_by_side(lambda seed: seeded(config, seed), [0, 1])
        assert same_weights(together[0], alone[0]) and same_weights(together[1], alone[1])


@pytest.mark.parametrize("shape", [{}, {"positional": "learned", "embed_norm": True}, {"norm_first": False}])
def test_a_generator_draws_what_the_global_rng_drew_at_that_seed(shape):
    """The same values as `torch.manual_seed(seed); Transformer(config)` always gave: every seed's random model and
    every retrained checkpoint start from the weights they started from before."""
    config = model_config_for(get_task("en-fr"), **shape)
    state = torch.random.get_rng_state()
    from_generator = seeded(config, 7)
    assert torch.equal(torch.random.get_rng_state(), state)  # building did not draw from the global RNG
    torch.manual_seed(7)
    assert same_weights(Transformer(config), from_generator)  # without a generator: the global RNG, as before
    assert torch.equal(from_generator.src_embed.token_table.weight[config.pad_id], torch.zeros(config.d_model))


def test_the_apps_random_model_is_its_seeds_whoever_builds_at_the_same_time():
    """Two sessions asking for seeds 0 and 1 at once: the cache must keep each seed's own model for the class."""
    build = models.random_model.__wrapped__  # the function under st.cache_resource
    config = model_config_for(get_task("reverse"))
    state = torch.random.get_rng_state()
    alone = [build(config, seed) for seed in (0, 1)]
    assert torch.equal(torch.random.get_rng_state(), state)
    assert same_weights(alone[0], seeded(config, 0))
    for _ in range(TRIALS):
        together = side_by_side(lambda seed: build(config, seed), [0, 1])
        assert same_weights(together[0], alone[0]) and same_weights(together[1], alone[1])


def test_the_cheating_model_leaves_the_global_rng_alone_and_is_the_same_beside_another(monkeypatch):
    monkeypatch.setattr(measurements, "CHEAT_STEPS", 3)
    build = measurements.cheating_model.__wrapped__
    state = torch.random.get_rng_state()
    alone = build("en-fr")  # dropout 0.1
    assert torch.equal(torch.random.get_rng_state(), state)
    for first, second in side_by_side(lambda _: (build("en-fr"), build("en-fr")), [0, 1]):
        assert same_weights(first, alone) and same_weights(second, alone)


def test_train_leaves_the_thread_count_and_the_global_rng_alone():
    torch.set_num_threads(3)  # the process's setting (the conftest fixture puts its own back afterwards)
    torch.manual_seed(1234)
    state = torch.random.get_rng_state()
    seen = []

    def on_step(info):
        seen.append((torch.get_num_threads(), torch.equal(torch.random.get_rng_state(), state)))

    train(seeded(tiny_config("en-fr"), 0), get_task("en-fr"), steps=3, batch_size=4, seed=5, on_step=on_step)
    assert seen == [(3, True)] * 3  # not even during the run: other threads of the process use both
    assert torch.get_num_threads() == 3 and torch.equal(torch.random.get_rng_state(), state)


def trained(seed: int) -> tuple[Transformer, list]:
    """A fresh tiny en-fr model (dropout 0.1) from `seed`, trained 4 steps with `seed`."""
    model = seeded(tiny_config("en-fr"), seed)
    return model, train(model, get_task("en-fr"), steps=4, batch_size=8, lr=1e-3, warmup=1, seed=seed).history


def test_the_same_seed_trains_the_same_weights_twice_whatever_the_global_rng_does():
    torch.manual_seed(1)
    first, first_history = trained(0)
    torch.manual_seed(2)
    torch.rand(100)
    second, second_history = trained(0)
    other, other_history = trained(1)
    assert first_history == second_history and same_weights(first, second)
    assert other_history != first_history and not same_weights(other, first)


def test_trainings_side_by_side_train_what_they_would_alone():
    """Dropout's masks come from the training's own generator: a training beside another (and beside a thread that
    draws from the global RNG) repeats what it does alone."""
    alone = [trained(seed) for seed in (0, 1)]

    def build(seed):
        if seed < 0:  # another session's thread, using the global RNG meanwhile
            return [torch.rand(1000) for _ in range(200)]
        return trained(seed)

    for _ in range(5):
        together = side_by_side(build, [0, 1, -1])
        for (model, history), (expected, expected_history) in zip(together[:2], alone, strict=True):
            assert history == expected_history and same_weights(model, expected)
