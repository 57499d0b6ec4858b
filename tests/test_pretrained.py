"""The shipped models: files, loading (and refusing bad files), translate(), and their quality
measured on fresh held-out inputs (seeds the training and the metadata never used)."""

import hashlib
import json
import pickle
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from transformer_viz import name
from transformer_viz.data.tasks import LM_TASKS, TASKS, get_task, model_config_for
from transformer_viz.errors import TranslatableError
from transformer_viz.model import DecoderOnlyTransformer, Transformer
from transformer_viz.train.evaluation import Evaluation, evaluate
from transformer_viz.weights.pretrained import (
    CHECKPOINT_DIR,
    CHECKPOINTS_ENV,
    Pretrained,
    available_pretrained,
    checkpoint_dirs,
    extra_checkpoints,
    load_pretrained,
    save_pretrained,
)

TEST_SEED = 777  # not the CLI's evaluation seed (12345) and not a training seed
CHAR_TASKS = [n for n, task in TASKS.items() if task.level == "char"]
DECODER_ONLY = ["copy", "reverse", "sort"]  # tasks whose decoder-only model (`<task>-gpt`) ships too
WORD_TASKS = [n for n, task in TASKS.items() if task.level == "word"]


@pytest.fixture(scope="module")
def models() -> dict[str, Pretrained]:
    return {n: load_pretrained(n) for n in available_pretrained()}


@pytest.fixture(scope="module")
def fresh_metrics(models) -> dict[str, Evaluation]:
    """Quality on 500 fresh held-out inputs per model (lengths 1..max for the letter tasks)."""
    with torch.inference_mode():
        return {n: evaluate(p.model, p.task, n=500, seed=TEST_SEED) for n, p in models.items()}


# --- what ships ----------------------------------------------------------------------------

def test_every_task_ships_a_model_and_they_stay_small():
    decoder_only = [f"{task}-gpt" for task in (*DECODER_ONLY, *LM_TASKS)]
    assert available_pretrained() == sorted([*TASKS, *decoder_only])
    sizes = {path.name: path.stat().st_size for path in CHECKPOINT_DIR.iterdir() if path.is_file()}
    assert sum(sizes.values()) < 5 * 1024 * 1024
    assert all(size < 1024 * 1024 for size in sizes.values())


@pytest.mark.parametrize("task_name", sorted(TASKS))
def test_metadata_records_how_the_model_was_made_and_what_it_scored(task_name):
    meta = json.loads((CHECKPOINT_DIR / f"{task_name}.json").read_text(encoding="utf-8"))
    assert meta["task"] == task_name
    assert meta["training"]["command"].startswith("python -m transformer_viz.train ")
    assert f"--task {task_name}" in meta["training"]["command"] or "--task all" in meta["training"]["command"]
    assert meta["training"]["steps_done"] == meta["training"]["steps"] == get_task(task_name).train_defaults.steps
    metrics = meta["metrics"]
    assert metrics["samples"] >= 1000
    assert metrics["exact_match"] >= (0.99 if task_name in CHAR_TASKS else 0.90)
    if task_name in ("copy", "reverse"):
        assert metrics["alignment_accuracy"] >= 0.95
    if task_name in WORD_TASKS:
        assert metrics["alignment_accuracy"] >= 0.80


# --- quality on fresh inputs ---------------------------------------------------------------

@pytest.mark.parametrize("task_name", DECODER_ONLY)
def test_decoder_only_models_are_exact_on_fresh_inputs_and_say_how_they_were_made(task_name, models, fresh_metrics):
    loaded = models[f"{task_name}-gpt"]
    assert isinstance(loaded.model, DecoderOnlyTransformer) and loaded.task.name == task_name
    assert "--architecture decoder_only" in loaded.meta["training"]["command"]
    assert loaded.meta["metrics"]["exact_match"] >= 0.99
    assert fresh_metrics[f"{task_name}-gpt"].exact_match >= 0.99


@pytest.mark.parametrize("task_name", CHAR_TASKS)
def test_letter_tasks_are_exact_on_fresh_inputs_of_every_length(task_name, fresh_metrics):
    metrics = fresh_metrics[task_name]
    assert metrics.exact_match >= 0.99
    assert set(metrics.exact_match_by_length) == set(range(1, get_task(task_name).max_input_len + 1))


@pytest.mark.parametrize("task_name", WORD_TASKS)
def test_translations_are_right_on_heldout_sentences(task_name, fresh_metrics):
    assert fresh_metrics[task_name].exact_match >= 0.90


@pytest.mark.parametrize(("task_name", "threshold"), [("copy", 0.95), ("reverse", 0.95), ("en-fr", 0.80),
                                                      ("en-zh", 0.80)])
def test_cross_attention_points_at_the_gold_source(task_name, threshold, fresh_metrics):
    assert fresh_metrics[task_name].alignment_accuracy >= threshold


def test_reverse_draws_an_anti_diagonal(models):
    pretrained = models["reverse"]
    output, trace = pretrained.translate("stressed")
    assert output == "desserts"
    layer = pretrained.metrics["alignment_layer"]
    weights = trace[name("decoder", layer, "cross_attn", "weights")][0].mean(0)  # (tgt_len, src_len)
    assert weights.argmax(-1)[:8].tolist() == [7, 6, 5, 4, 3, 2, 1, 0]


def test_copy_draws_a_diagonal_even_with_repeated_letters(models):
    pretrained = models["copy"]
    output, trace = pretrained.translate("banana")
    assert output == "banana"
    layer = pretrained.metrics["alignment_layer"]
    weights = trace[name("decoder", layer, "cross_attn", "weights")][0].mean(0)  # (tgt_len, src_len)
    assert weights.argmax(-1)[:6].tolist() == [0, 1, 2, 3, 4, 5]


# --- translate() ---------------------------------------------------------------------------

@pytest.mark.parametrize("task_name", sorted(TASKS))
def test_translate_answers_the_examples_and_traces_the_whole_answer(task_name, models):
    pretrained = models[task_name]
    task = pretrained.task
    for example in task.examples:
        output, trace = pretrained.translate(example)
        assert output == task.target(example)
        n_src, n_tgt = len(task.split(example)) + 1, len(task.split_target(output)) + 1
        assert trace.src_tokens == (*task.split(example), "<eos>")
        assert trace.tgt_tokens == ("<bos>", *task.split_target(output))
        cross = trace[name("decoder", 0, "cross_attn", "weights")]
        assert cross.shape == (1, pretrained.model.config.n_heads, n_tgt, n_src)
        assert trace["logits"][0, -1].argmax().item() == pretrained.tgt_vocab.eos_id  # the last row wrote <eos>


def test_translate_reads_unknown_characters_as_unk_and_refuses_empty_text(models):
    output, trace = models["copy"].translate("ab?c")
    assert trace.src_tokens == ("a", "b", "<unk>", "c", "<eos>")
    assert isinstance(output, str)
    with pytest.raises(ValueError, match="empty"):
        models["copy"].translate("")
    with pytest.raises(ValueError, match="at most"):
        models["reverse"].translate("a" * 40)


def test_loading_gives_a_fresh_model_each_time_and_copy_is_independent(models):
    first, second = load_pretrained("reverse"), load_pretrained("reverse")
    assert first.model is not second.model
    clone = first.copy()
    with torch.no_grad():
        clone.model.output_proj.bias.add_(1.0)
    assert torch.equal(first.model.output_proj.bias, second.model.output_proj.bias)
    assert not torch.equal(first.model.output_proj.bias, clone.model.output_proj.bias)
    assert not first.model.training


# --- saving and refusing bad files ---------------------------------------------------------

def test_save_and_load_round_trip(tmp_path):
    task = get_task("sort")
    torch.manual_seed(0)
    model = Transformer(model_config_for(task, d_model=16, n_heads=2, d_ff=32, layers=1)).eval()
    save_pretrained(model, task, tmp_path, name="tiny", metrics={"exact_match": 0.5}, training={"steps": 1})
    loaded = load_pretrained("tiny", tmp_path)
    assert available_pretrained(tmp_path) == ["tiny"]
    assert loaded.metrics == {"exact_match": 0.5} and loaded.meta["training"] == {"steps": 1}
    assert loaded.model.config == model.config and loaded.task is task
    src, tgt = torch.tensor([[5, 6, 7, 2]]), torch.tensor([[1, 5, 6, 7]])
    with torch.no_grad():  # weights are stored in half precision
        torch.testing.assert_close(loaded.model(src, tgt), model(src, tgt), atol=2e-2, rtol=0)


@pytest.fixture()
def copied(tmp_path):
    for suffix in (".json", ".safetensors"):
        shutil.copy(CHECKPOINT_DIR / f"reverse{suffix}", tmp_path / f"reverse{suffix}")
    assert load_pretrained("reverse", tmp_path).task.name == "reverse"
    return tmp_path


def test_a_missing_model_is_a_clear_value_error(tmp_path):
    with pytest.raises(ValueError, match=r"no pretrained model called 'nope'.*available: copy, copy-gpt, en-fr"):
        load_pretrained("nope")
    with pytest.raises(ValueError, match="not a valid model name"):
        load_pretrained("../reverse")
    with pytest.raises(ValueError, match="available: none"):
        load_pretrained("reverse", tmp_path)


def test_corrupt_metadata_is_a_clear_value_error(copied):
    (copied / "reverse.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"metadata file .* is corrupt"):
        load_pretrained("reverse", copied)


def test_metadata_for_another_vocabulary_is_refused(copied):
    meta = json.loads((copied / "reverse.json").read_text(encoding="utf-8"))
    meta["src_vocab"] = meta["src_vocab"][:-1]
    (copied / "reverse.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ValueError, match="other vocabularies"):
        load_pretrained("reverse", copied)


def test_damaged_weights_are_a_clear_value_error(copied):
    data = (copied / "reverse.safetensors").read_bytes()
    (copied / "reverse.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="checksum"):
        load_pretrained("reverse", copied)
    # Even when the checksum is made to match, a truncated file is refused, never half-loaded.
    meta = json.loads((copied / "reverse.json").read_text(encoding="utf-8"))
    meta["weights"]["sha256"] = hashlib.sha256(data[: len(data) // 2]).hexdigest()
    (copied / "reverse.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ValueError, match="cannot be loaded"):
        load_pretrained("reverse", copied)


class _Payload:
    """Unpickling this would run code; a safe loader never does."""

    ran = False

    def __reduce__(self):
        return (_mark_ran, ())


def _mark_ran():
    _Payload.ran = True
    return {}


def test_a_pickle_in_place_of_the_weights_is_refused_without_running_it(copied):
    payload = pickle.dumps(_Payload())
    (copied / "reverse.safetensors").write_bytes(payload)
    meta = json.loads((copied / "reverse.json").read_text(encoding="utf-8"))
    meta["weights"]["sha256"] = hashlib.sha256(payload).hexdigest()
    (copied / "reverse.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ValueError, match="cannot be loaded"):
        load_pretrained("reverse", copied)
    assert not _Payload.ran


# --- hostile files: refused before anything is built, quickly ------------------------------

def refuse_real_builds(monkeypatch):
    """Make building a model anywhere but on the meta device (shapes only, no memory) fail the test."""
    def build(config):
        assert torch.empty(0).device.type == "meta", "a model was built before the files were checked"
        return Transformer(config)
    monkeypatch.setattr("transformer_viz.weights.pretrained.Transformer", build)


def edit_metadata(directory, change):
    """Apply `change(meta)` to the copied reverse.json."""
    path = directory / "reverse.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    change(meta)
    path.write_text(json.dumps(meta), encoding="utf-8")


def replace_weights(directory, change):
    """Apply `change(tensors)` to the copied weights and make the checksum match, so the loader must look inside."""
    tensors = load_file(str(directory / "reverse.safetensors"))
    change(tensors)
    save_file(tensors, str(directory / "reverse.safetensors"))
    digest = hashlib.sha256((directory / "reverse.safetensors").read_bytes()).hexdigest()
    edit_metadata(directory, lambda meta: meta["weights"].update(sha256=digest))


@pytest.mark.parametrize("setting, value, message", [
    ("n_encoder_layers", 5000, "n_encoder_layers = 5000 is more than"),  # was 16 s and 1.2 GB before the error
    ("n_encoder_layers", 10**6, "n_encoder_layers = 1000000 is more than"),  # was a hang
    ("max_len", 40_000_000, "max_len = 40000000 is more than"),  # was 5.3 GB
    ("max_len", 4e7, "max_len must be a positive whole number, got 40000000.0"),  # JSON reads 4e7 as a float
    ("norm_first", "false", "norm_first must be True or False, got 'false'"),  # was quietly pre-LN
    ("src_vocab_size", 31, "does not fit its task: .* the config has src_vocab_size = 31"),
    ("max_len", 5, "does not fit its task: max_len = 5 is too short for the reverse task"),  # every input refused
])
def test_an_impossible_config_is_refused_before_the_model_is_built(copied, monkeypatch, setting, value, message):
    def build(config):  # not even on the meta device: a million-layer model of shapes alone was a hang
        pytest.fail("a model was built before its config was refused")
    monkeypatch.setattr("transformer_viz.weights.pretrained.Transformer", build)
    edit_metadata(copied, lambda meta: meta["config"].update({setting: value}))
    with pytest.raises(ValueError, match=message):
        load_pretrained("reverse", copied)


@pytest.mark.parametrize("key, value, message", [
    ("metrics", 5, "metrics should be a JSON object"),
    ("training", [], "training should be a JSON object"),
    ("name", 7, "name should be a string"),
    ("format_version", True, "unknown format_version True"),
    ("src_vocab", "<pad><bos>", "src_vocab should be a list of strings"),
    ("tgt_vocab", [0, 1, 2], "tgt_vocab should be a list of strings"),
    ("config", [], "config should be a JSON object"),
    ("config", {"src_vocab_size": 30}, "ModelConfig settings must include tgt_vocab_size"),
    ("weights", {"sha256": 5}, "weights.sha256 should be a string"),
])
def test_metadata_of_the_wrong_shape_is_a_clear_value_error(copied, key, value, message):
    edit_metadata(copied, lambda meta: meta.update({key: value}))
    with pytest.raises(ValueError, match=rf"metadata file .* is corrupt or incomplete \(.*{message}"):
        load_pretrained("reverse", copied)


def test_deeply_nested_or_huge_metadata_is_refused_without_parsing_it_all(copied):
    (copied / "reverse.json").write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")  # was RecursionError
    with pytest.raises(ValueError, match="nested too deeply"):
        load_pretrained("reverse", copied)
    (copied / "reverse.json").write_text(" " * 2_000_000 + "{}", encoding="utf-8")
    with pytest.raises(ValueError, match="2,000,002 bytes, more than metadata ever needs"):
        load_pretrained("reverse", copied)


@pytest.mark.parametrize("name", ["a" * 10_000, "a" * 65, "Reverse", "reverse\n", "re verse", "", 5, None])
def test_a_name_is_checked_before_the_file_system_is_touched(name):
    with pytest.raises(ValueError, match="not a valid model name"):  # 10,000 characters was an OSError
        load_pretrained(name)


def test_a_directory_that_is_not_a_path_is_a_value_error():
    with pytest.raises(ValueError, match="directory must be a folder path"):
        load_pretrained("reverse", 5)
    with pytest.raises(ValueError, match="directory must be a folder path"):
        available_pretrained(5)


@pytest.mark.parametrize("change, message", [
    (lambda t: t["output_proj.bias"].__setitem__(0, float("nan")), "output_proj.bias holds NaN or infinite values"),
    (lambda t: t["output_proj.bias"].__setitem__(0, float("inf")), "output_proj.bias holds NaN or infinite values"),
    (lambda t: t.update({"output_proj.weight": t["output_proj.weight"].to(torch.int8)}),
     "output_proj.weight is stored as int8"),
    (lambda t: t.update({"output_proj.weight": t["output_proj.weight"].T.contiguous()}),
     r"output_proj.weight has shape \(64, 30\) but the model needs \(30, 64\)"),
    (lambda t: t.pop("encoder.norm.weight"), "missing: encoder.norm.weight"),
    (lambda t: t.update({"extra.weight": torch.zeros(2)}), "unexpected: extra.weight"),
])
def test_weights_are_checked_before_the_model_is_built(copied, monkeypatch, change, message):
    replace_weights(copied, change)
    refuse_real_builds(monkeypatch)
    with pytest.raises(ValueError, match=rf"weights file .* cannot be loaded \(.*{message}"):
        load_pretrained("reverse", copied)


def test_weights_in_any_float_dtype_still_load(copied):
    replace_weights(copied, lambda t: t.update({key: value.to(torch.bfloat16) for key, value in t.items()}))
    assert load_pretrained("reverse", copied).model.output_proj.weight.dtype == torch.float32


def test_a_weights_file_larger_than_its_config_allows_is_refused_before_reading_it(copied):
    with open(copied / "reverse.safetensors", "ab") as file:
        file.write(b"\0" * 2_000_000)
    with pytest.raises(ValueError, match="is larger than a model of this config can be"):
        load_pretrained("reverse", copied)


@pytest.mark.parametrize("settings, message", [
    ({"metrics": 5}, "metrics must be a dict"),
    ({"training": ["steps"]}, "training must be a dict"),
    ({"metrics": {"when": object()}}, "metrics and training must hold JSON values"),
    ({"name": "../up"}, "not a valid model name"),
])
def test_saving_refuses_what_loading_would_refuse_and_writes_nothing(tmp_path, settings, message):
    task = get_task("sort")
    model = Transformer(model_config_for(task, d_model=16, n_heads=2, d_ff=32, layers=1))
    with pytest.raises(ValueError, match=message):
        save_pretrained(model, task, tmp_path, **settings)
    assert list(tmp_path.iterdir()) == []


def test_saving_refuses_weights_that_half_precision_cannot_hold(tmp_path):
    task = get_task("sort")
    model = Transformer(model_config_for(task, d_model=16, n_heads=2, d_ff=32, layers=1))
    with torch.no_grad():
        model.output_proj.bias[0] = 1e5  # float16 reaches 65504: it would be stored as inf
    with pytest.raises(ValueError, match=r"output_proj\.bias holds values that float16 cannot store"):
        save_pretrained(model, task, tmp_path)
    assert list(tmp_path.iterdir()) == []


# --- extra folders: checkpoints of one's own ---------------------------------------------------

def tiny_checkpoint(folder, name, task_name="sort"):
    task = get_task(task_name)
    model = Transformer(model_config_for(task, d_model=16, n_heads=2, d_ff=32, layers=1))
    return save_pretrained(model, task, folder, name=name)


def test_extra_folders_are_listed_in_order_and_the_first_one_with_a_name_wins(tmp_path):
    first, second, empty = tmp_path / "first", tmp_path / "second", tmp_path / "empty"
    tiny_checkpoint(first, "mine")
    tiny_checkpoint(second, "mine", "copy")
    tiny_checkpoint(second, "theirs", "copy")
    empty.mkdir()
    (second / "half.json").write_text("{}", encoding="utf-8")  # no weights beside it: not a checkpoint
    found = extra_checkpoints([first, second, empty, tmp_path / "missing"])
    assert found == {"mine": first, "theirs": second}
    assert load_pretrained("mine", found["mine"]).task.name == "sort"


def test_the_environment_variable_names_the_extra_folders(tmp_path, monkeypatch):
    import os

    tiny_checkpoint(tmp_path / "a", "one")
    tiny_checkpoint(tmp_path / "b", "two")
    value = os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b"), str(tmp_path / "a")])
    assert checkpoint_dirs({CHECKPOINTS_ENV: value}) == [tmp_path / "a", tmp_path / "b"]
    assert checkpoint_dirs({}) == []
    monkeypatch.setenv(CHECKPOINTS_ENV, value)
    assert extra_checkpoints() == {"one": tmp_path / "a", "two": tmp_path / "b"}
    monkeypatch.setenv("HOME", str(tmp_path))
    assert checkpoint_dirs({CHECKPOINTS_ENV: "~/a"}) == [tmp_path / "a"]
    monkeypatch.delenv(CHECKPOINTS_ENV)
    assert extra_checkpoints() == {}


def test_the_launcher_adds_its_folders_to_the_environment_variable(tmp_path, monkeypatch):
    import os

    from transformer_viz.app.launch import streamlit_args

    monkeypatch.setenv(CHECKPOINTS_ENV, "/already/there")
    command = streamlit_args(["--checkpoints", str(tmp_path), "--port", "8600"])
    assert command[2:4] == ["--server.port", "8600"]
    assert os.environ[CHECKPOINTS_ENV] == os.pathsep.join([str(tmp_path.resolve()), "/already/there"])


def test_a_broken_checkpoint_in_an_extra_folder_is_listed_and_refused_with_a_reason(tmp_path):
    tiny_checkpoint(tmp_path, "good")
    tiny_checkpoint(tmp_path, "broken")
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    assert extra_checkpoints([tmp_path]) == {"good": tmp_path, "broken": tmp_path}
    with pytest.raises(TranslatableError, match=r"metadata file .* is corrupt") as info:
        load_pretrained("broken", tmp_path)
    assert info.value.values["problem"] == "json"
    assert info.value.values["command"] == f"python -m transformer_viz.train --task broken --out {tmp_path}"


@pytest.mark.parametrize("change, problem, values", [
    (lambda t: t["output_proj.bias"].__setitem__(0, float("nan")), "nonfinite", {"tensor": "output_proj.bias"}),
    (lambda t: t.update({"output_proj.weight": t["output_proj.weight"].T.contiguous()}), "shape",
     {"tensor": "output_proj.weight", "shape": "(64, 30)", "expected": "(30, 64)"}),
    (lambda t: t.pop("encoder.norm.weight"), "tensors", {}),
    (lambda t: t.update({"output_proj.weight": t["output_proj.weight"].to(torch.int8)}), "dtype",
     {"tensor": "output_proj.weight", "dtype": "int8"}),
])
def test_each_problem_has_a_code_an_app_can_say_in_its_own_words(copied, change, problem, values):
    replace_weights(copied, change)
    with pytest.raises(TranslatableError) as info:
        load_pretrained("reverse", copied)
    assert info.value.key == "checkpoint.bad" and info.value.values["problem"] == problem
    assert values.items() <= info.value.values.items()


@pytest.mark.parametrize("change, problem", [
    (lambda meta: meta.update(task="juggle"), "task"),
    (lambda meta: meta.pop("config"), "format"),
    (lambda meta: meta["config"].update(d_model=63), "config"),
    (lambda meta: meta.update(src_vocab=meta["src_vocab"][:-1]), "vocab"),
    (lambda meta: meta["config"].update(max_len=5), "fit"),
    (lambda meta: meta["weights"].update(sha256="0" * 64), "checksum"),
])
def test_each_metadata_problem_has_a_code(copied, change, problem):
    edit_metadata(copied, change)
    with pytest.raises(TranslatableError) as info:
        load_pretrained("reverse", copied)
    assert info.value.values["problem"] == problem
