"""Property tests over the public API: whatever it is given, it answers or raises ValueError, quickly.

Random ModelConfig settings (wrong types, huge sizes), random texts (any unicode, surrogates included,
up to 100,000 characters) through the tasks and the model, random layer / head / query / key choices for
the figure builders, random values in a checkpoint's metadata. Only ValueError may escape; no call
takes 5 s; a produced trace holds no NaN and no infinity (but the -inf fill of blocked masked scores).

Each test runs 200 examples; set TV_FUZZ_EXAMPLES=2000 (say) for a longer hunt.
"""

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from transformer_viz import POSITIONAL_ENCODINGS, ModelConfig, Transformer, load_pretrained, run_text
from transformer_viz.analysis.walkthrough import cell_numbers, head_walkthrough
from transformer_viz.config import SIZE_LIMITS, SWITCHES, is_whole
from transformer_viz.data.tasks import TASKS, model_config_for
from transformer_viz.figures.attention import attention_heatmap, attention_lines, head_entropy
from transformer_viz.figures.decoding import cross_attention_by_step
from transformer_viz.figures.grid import attention_grid
from transformer_viz.figures.head import dot_product_figure
from transformer_viz.figures.masks import masking_steps
from transformer_viz.trace.names import ATTENTION_KINDS
from transformer_viz.weights.pretrained import CHECKPOINT_DIR

_EXAMPLES = os.environ.get("TV_FUZZ_EXAMPLES", "200")
if not _EXAMPLES.isdigit() or int(_EXAMPLES) < 1:
    raise ValueError(f"TV_FUZZ_EXAMPLES must be a positive whole number of examples, got {_EXAMPLES!r}.")
settings.register_profile("api-fuzz", max_examples=int(_EXAMPLES), deadline=None, database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ = settings(settings.get_profile("api-fuzz"))
# What one call may cost, in CPU seconds of this process (all its threads): a bound on what hostile input costs a
# server, which a busy machine does not change (its wall time it would).
CPU_SECONDS = 10.0
REFUSED = object()

# Anything at all: wrong types, NaN and infinities, and whole numbers that are no valid size (zero or less,
# just above a limit, huge), so that every valid size comes from the small strategies below.
OUT_OF_RANGE = st.one_of(st.integers(max_value=0), st.sampled_from([limit + 1 for limit in SIZE_LIMITS.values()]),
                         st.integers(min_value=10**5))
WILD = st.one_of(st.none(), st.booleans(), OUT_OF_RANGE, st.floats(), st.text(max_size=4), st.complex_numbers(),
                 st.lists(st.integers(), max_size=2), st.just(float("-inf")))


def weighted(*choices: tuple[int, st.SearchStrategy]) -> st.SearchStrategy:
    """A value of one of the strategies, picked in proportion to its weight (one_of would merge repeats)."""
    return st.sampled_from([strategy for weight, strategy in choices for _ in range(weight)]).flatmap(lambda s: s)


def mostly(valid: st.SearchStrategy) -> st.SearchStrategy:
    """A valid value three times in four, anything otherwise: most examples get past validation."""
    return weighted((3, valid), (1, WILD))


# Valid values stay small, so that a model built from them runs in milliseconds.
VALID_SHAPE = {
    "d_model": st.sampled_from([4, 8, 16]), "n_heads": st.sampled_from([1, 2, 4]), "d_ff": st.integers(1, 32),
    "dropout": st.floats(0, 0.9), "positional": st.sampled_from(POSITIONAL_ENCODINGS),
    "mask_value": st.sampled_from([-1e9, -1e4, -1, -3.4e38, float("-inf")]),
    **{switch: st.booleans() for switch in SWITCHES},
}
CONFIG = st.fixed_dictionaries(
    {"src_vocab_size": mostly(st.integers(1, 40)), "tgt_vocab_size": mostly(st.integers(1, 40))},
    optional={**{field: mostly(valid) for field, valid in VALID_SHAPE.items()}, "max_len": mostly(st.integers(1, 24)),
              "n_encoder_layers": mostly(st.integers(1, 2)), "n_decoder_layers": mostly(st.integers(1, 2)),
              "pad_id": mostly(st.integers(0, 3)), "colour": WILD})
# A task's model: a valid shape three times in four, else one setting replaced by anything.
VALID_TASK_SHAPE = st.fixed_dictionaries({}, optional={**VALID_SHAPE, "max_len": st.integers(16, 24),
                                                       "layers": st.integers(1, 2)})
ONE_WILD_SETTING = st.builds(lambda shape, field, value: {**shape, field: value}, VALID_TASK_SHAPE,
                             st.sampled_from([*VALID_SHAPE, "max_len", "layers", "pad_id"]), WILD)
TASK_SHAPE = weighted((3, VALID_TASK_SHAPE), (1, ONE_WILD_SETTING))
EXAMPLES = sorted({text for task in TASKS.values() for text in task.examples})
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=20)  # surrogates too
TEXT = weighted((4, st.sampled_from(EXAMPLES)), (2, ANY_TEXT), (1, WILD),
               (1, st.builds(lambda piece, times: piece * times, ANY_TEXT, st.integers(1000, 100_000))))
INDEX = weighted((8, st.integers(0, 1)), (1, st.integers(-3, 30)), (1, WILD))  # layer, head, query, key


def call(function, *args, **kwargs):
    """function(*args, **kwargs), or REFUSED after a ValueError; any other error, or a costly call, fails the test."""
    start = time.process_time()
    try:
        return function(*args, **kwargs)
    except ValueError:
        return REFUSED
    finally:
        cpu = time.process_time() - start
        assert cpu < CPU_SECONDS, f"{function.__name__} cost {cpu:.1f} s of CPU"


def assert_finite(trace) -> None:
    """No NaN anywhere; an infinity only where a blocked masked score holds a -inf fill."""
    for name, tensor in trace.items():
        if tensor.dtype == torch.bool:
            continue
        fine = torch.isfinite(tensor)
        if name.endswith(".masked_scores"):
            blocked = ~trace[name.removesuffix("masked_scores") + "mask"]  # (batch, 1, q_len, k_len)
            fine |= blocked & (tensor == trace.config.mask_value)
        assert fine.all(), f"{name} holds NaN or an infinity"


@FUZZ
@given(CONFIG)
def test_model_config_either_refuses_with_value_error_or_is_within_its_limits(config_settings):
    config = call(ModelConfig.from_dict, config_settings)
    event("config refused" if config is REFUSED else "config ok")
    if config is REFUSED:
        return
    for field, limit in SIZE_LIMITS.items():
        assert is_whole(getattr(config, field)) and 1 <= getattr(config, field) <= limit
    assert all(isinstance(getattr(config, switch), bool) for switch in SWITCHES)
    assert 0 <= config.dropout < 1 and config.mask_value < 0 and is_whole(config.pad_id)
    model = Transformer(config)
    src = torch.randint(0, config.src_vocab_size, (2, config.max_len))  # (batch, src_len)
    tgt = torch.randint(0, config.tgt_vocab_size, (2, config.max_len))  # (batch, tgt_len)
    _, trace = call(model.eval().run_with_trace, src, tgt)
    assert_finite(trace)


def _figures(model, run, kind, layer, head, query, key) -> dict:
    """Every builder that takes a choice, as name -> call."""
    trace = run.trace
    return {
        "heatmap": lambda: attention_heatmap(trace, kind, layer, head, highlight=(query, key)),
        "lines": lambda: attention_lines(trace, kind, layer, head, query),
        "grid": lambda: attention_grid(trace, kind, highlight=(layer, head)),
        "masking": lambda: masking_steps(trace, kind, layer, head),
        "entropy": lambda: head_entropy(trace, kind),
        "by_step": lambda: cross_attention_by_step([run.step(k) for k in range(run.n_steps)], layer, head),
        "cell": lambda: cell_numbers(trace, kind, layer, head, query, key),
        "walkthrough": lambda: dot_product_figure(head_walkthrough(model, trace, kind, layer, head), query, key),
    }


@FUZZ
@given(st.sampled_from(sorted(TASKS)), TASK_SHAPE, TEXT, weighted((2, st.none()), (1, TEXT)),
       mostly(st.integers(0, 24)), weighted((2, st.none()), (1, INDEX)), st.data())
def test_text_to_trace_to_figures_only_ever_raises_value_error(task_name, shape, src_text, tgt_text, pad_to,
                                                               max_new_tokens, data):
    task = TASKS[task_name]
    config = call(model_config_for, task, **shape)
    event("config refused" if config is REFUSED else "config ok")
    if config is REFUSED:
        return
    torch.manual_seed(0)
    model = Transformer(config).eval()
    run = call(run_text, model, task, src_text, tgt_text, max_new_tokens=max_new_tokens, pad_to=pad_to)
    event("text refused" if run is REFUSED else "text ran")
    if run is REFUSED:
        return
    assert_finite(run.trace)
    if run.n_steps:
        assert_finite(run.step(0))
    kind = data.draw(mostly(st.sampled_from(list(ATTENTION_KINDS))), label="kind")
    choices = [data.draw(INDEX, label=label) for label in ("layer", "head", "query", "key")]
    for figure, build in _figures(model, run, kind, *choices).items():
        event(f"{figure} {'refused' if call(build) is REFUSED else 'drawn'}")


JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6)),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=6)
META_KEYS = ["format_version", "task", "config", "src_vocab", "tgt_vocab", "weights", "name", "metrics", "training"]
CONFIG_KEYS = [*SIZE_LIMITS, "dropout", "pad_id", "positional", "mask_value", *SWITCHES]


@pytest.fixture(scope="module")
def checkpoint_copy():
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


@FUZZ
@given(st.one_of(st.tuples(st.sampled_from(META_KEYS), JSON),
                 st.tuples(st.sampled_from(CONFIG_KEYS).map(lambda key: f"config.{key}"),
                           st.one_of(JSON, st.integers(1, 64), OUT_OF_RANGE))))
def test_a_checkpoint_with_any_metadata_value_loads_or_is_refused(checkpoint_copy, change):
    key, value = change
    shutil.copy(CHECKPOINT_DIR / "sort.safetensors", checkpoint_copy / "sort.safetensors")
    meta = json.loads((CHECKPOINT_DIR / "sort.json").read_text(encoding="utf-8"))
    section, _, field = key.rpartition(".")
    (meta[section] if section else meta)[field] = value
    (checkpoint_copy / "sort.json").write_text(json.dumps(meta), encoding="utf-8")
    loaded = call(load_pretrained, "sort", checkpoint_copy)
    if loaded is not REFUSED:  # a checkpoint that loads reads its task's inputs
        translated = call(loaded.translate, "cab")
        assert translated is not REFUSED
        assert_finite(translated[1])
