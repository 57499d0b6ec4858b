"""Property tests over the public API: whatever it is given, it answers or raises ValueError, quickly.

Random ModelConfig settings (wrong types, huge sizes), random texts (any unicode, surrogates included,
up to 100,000 characters) through the tasks and the model, random layer / head / query / key choices for
the figure builders, random values in a checkpoint's metadata; traces built of any fields, trace files
(.npz) of any entries and headers, uploads of any names and bytes, Hugging Face configs of any values
(issue 20). Only ValueError may escape; no call takes 10 s of CPU; a produced trace holds no NaN and no
infinity (but the -inf fill of blocked masked scores).

Each test runs 200 examples; set TV_FUZZ_EXAMPLES=2000 (say) for a longer hunt.
"""

import io
import json
import os
import shutil
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from transformer_viz import (
    POSITIONAL_ENCODINGS,
    Intervention,
    ModelConfig,
    Trace,
    Transformer,
    load_pretrained,
    run_text,
)
from transformer_viz.analysis.walkthrough import cell_numbers, head_walkthrough
from transformer_viz.config import SIZE_LIMITS, SWITCHES, is_whole
from transformer_viz.data.tasks import TASKS, model_config_for
from transformer_viz.figures.attention import attention_heatmap, attention_lines, head_entropy
from transformer_viz.figures.decoding import attention_by_step
from transformer_viz.figures.grid import attention_grid
from transformer_viz.figures.head import dot_product_figure
from transformer_viz.figures.masks import masking_steps
from transformer_viz.trace.names import ATTENTION_KINDS
from transformer_viz.weights.files import read_upload
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
    # The decoder-only switches would refuse three encoder-decoder configs in four (tests/test_decoder_only.py).
    **{switch: st.booleans() for switch in SWITCHES if switch not in ("attention_only", "tie_embeddings")},
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
        "by_step": lambda: attention_by_step([run.step(k) for k in range(run.n_steps)], layer, head),
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


# Traces built by hand, trace files, uploads and Hugging Face configs from elsewhere (issue 20).

SHAPES = st.lists(st.integers(0, 3), max_size=5).map(tuple)
ARRAYS = st.builds(lambda shape, dtype: np.zeros(shape, dtype), SHAPES, st.sampled_from(
    ["float32", "bool", "complex64", "datetime64[s]", "timedelta64[D]", "U3", "S2", "uint16"]))
TORCH_TENSORS = st.builds(lambda shape, dtype: torch.zeros(shape, dtype=dtype), SHAPES, st.sampled_from(
    [torch.float32, torch.float16, torch.bfloat16, torch.bool, torch.int64, torch.complex64, torch.uint8]))
TENSORS = weighted((3, st.dictionaries(st.text(max_size=12), TORCH_TENSORS, max_size=3)),
                   (1, st.dictionaries(st.one_of(st.text(max_size=4), st.integers()), st.one_of(ARRAYS, WILD),
                                       max_size=3)), (1, WILD))
TOKENS = weighted((2, st.none()), (2, st.lists(st.text(max_size=4), max_size=5)), (1, st.lists(WILD, max_size=2)),
                  (1, WILD))
TRACE_CONFIG = weighted((2, st.none()), (1, st.just(ModelConfig(8, 8))), (1, WILD),
                        (1, st.dictionaries(st.sampled_from(["n_heads", "d_model"]), WILD, max_size=2)))
INTERVENTION = weighted((3, st.none()), (1, st.just(Intervention(scale=False))), (1, WILD),
                        (1, st.builds(lambda h: {"ablate_heads": h}, WILD)))


@FUZZ
@given(TENSORS, TRACE_CONFIG, TOKENS, TOKENS, INTERVENTION, st.sampled_from([None, [[["cross"], 0, 0]], 5]))
def test_a_trace_of_any_fields_is_refused_or_exports_and_loads_again(tensors, config, src, tgt, intervention, heads):
    if heads is not None:
        call(Intervention, ablate_heads=heads)
    trace = call(Trace, tensors, config=config, src_tokens=src, tgt_tokens=tgt, intervention=intervention)
    event("trace refused" if trace is REFUSED else "trace built")
    if trace is REFUSED:
        return
    call(trace.to_dataframe)
    with tempfile.TemporaryDirectory() as folder:
        saved = call(trace.to_npz, Path(folder) / "trace.npz")
        if saved is not REFUSED:
            loaded = Trace.from_npz(Path(folder) / "trace.npz")
            assert list(loaded) == list(trace) and loaded.src_tokens == trace.src_tokens


def _npy_entry(shape, dtype, data_bytes) -> bytes:
    """An .npy file whose header says `shape` and `dtype` (true or not), then `data_bytes` zeros."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buffer.getvalue() + bytes(data_bytes)


NPY = st.one_of(
    st.builds(_npy_entry, st.lists(st.integers(0, 2**40), max_size=5).map(tuple),
              st.sampled_from(["<f4", "|b1", "<M8[s]", "<U2", "|O", "<c8", ">f8"]), st.integers(0, 64)),
    st.binary(max_size=80))
NPZ_NAMES = st.one_of(st.sampled_from(["meta.npy", "tensor/logits.npy", "tensor/x.npy"]),
                      st.text(st.characters(exclude_characters="\x00"), min_size=1, max_size=8))


@FUZZ
@given(st.lists(st.tuples(NPZ_NAMES, NPY), max_size=4), st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]),
       st.one_of(st.none(), st.integers(0, 400)), JSON)
def test_from_npz_of_any_archive_loads_or_is_refused(entries, compression, cut, meta):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        archive.writestr("meta.npy", _meta_npy(meta))
        for name, data in entries:
            archive.writestr(name, data)
    data = buffer.getvalue()
    if cut is not None:  # a byte changed: a damaged header, name or deflate stream
        data = data[:cut] + bytes([(data[cut % len(data)] + 1) % 256]) + data[cut + 1:]
    call(Trace.from_npz, io.BytesIO(data))


def _meta_npy(meta) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.array(json.dumps({"format": "transformer_viz.trace", "version": 1, "names": ["x"], **(
        meta if isinstance(meta, dict) else {"config": meta})})))
    return buffer.getvalue()


UPLOAD_NAMES = st.one_of(st.sampled_from(["w.zip", "w.json", "w.safetensors", "w.bin"]), WILD)


@FUZZ
@given(st.one_of(st.lists(st.tuples(UPLOAD_NAMES, st.one_of(st.binary(max_size=40), WILD)), max_size=3), WILD),
       st.lists(st.tuples(st.text(max_size=8), st.binary(max_size=40)), max_size=20))
def test_read_upload_of_any_files_loads_or_is_refused(files, zipped):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in zipped:
            archive.writestr(name.replace("\x00", "") or "x", data)
    call(read_upload, files)
    call(read_upload, [("upload.zip", buffer.getvalue())])


HF_FIELDS = ["vocab_size", "d_model", "d_kv", "d_ff", "num_layers", "num_decoder_layers", "num_heads",
             "relative_attention_num_buckets", "encoder_layers", "decoder_layers", "encoder_attention_heads",
             "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "max_position_embeddings",
             "decoder_vocab_size", "pad_token_id", "feed_forward_proj", "tie_word_embeddings"]


@pytest.mark.hf
@FUZZ
@given(mostly(st.sampled_from(["t5", "mt5", "umt5", "bart", "marian"])),
       st.dictionaries(st.sampled_from(HF_FIELDS), mostly(st.integers(1, 8)), max_size=8))
def test_a_hugging_face_config_of_any_values_is_refused_or_within_its_limits(model_type, fields):
    from transformer_viz.weights import hf
    from transformer_viz.weights.hf_limits import BART_FIELDS, HF_SIZE_LIMITS, MARIAN_FIELDS, T5_FIELDS

    if hf.missing_reason() is not None:
        pytest.skip(hf.missing_reason())
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "config.json").write_text(json.dumps({"model_type": model_type, **fields}, default=repr))
        start = time.process_time()
        with pytest.raises(ValueError) as refused:  # a config and no weights never loads
            hf.load(folder, max_parameters=10**6)
        assert time.process_time() - start < CPU_SECONDS
    key = getattr(refused.value, "key", "a plain ValueError")
    event(key)
    if key == "hf.not_here" and model_type in (*hf.FAMILIES, "mt5", "umt5"):  # past the checks of its config
        family_fields = {"bart": BART_FIELDS, "marian": MARIAN_FIELDS}.get(model_type, T5_FIELDS)
        assert all(1 <= fields[field] <= HF_SIZE_LIMITS[limit] for field, limit in family_fields.items()
                   if field in fields)
