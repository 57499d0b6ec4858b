"""Weights of one's own in the app: checkpoints of extra folders beside the shipped ones (sidebar, view, link), and
the Training page's download and upload (transformer_viz.weights.files behind them)."""

import io
import json
import zipfile

import pytest
import torch
from test_app import grid_tiles, run_page

from transformer_viz import Transformer, get_task, model_config_for, save_pretrained
from transformer_viz.app.pages.training import zipped
from transformer_viz.app.server.state import TrainedModel
from transformer_viz.weights.pretrained import CHECKPOINTS_ENV

TINY = {"d_model": 16, "n_heads": 2, "n_encoder_layers": 1, "n_decoder_layers": 1, "d_ff": 32}


def tiny_model(task_name="reverse", seed=0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(model_config_for(get_task(task_name), d_model=16, n_heads=2, d_ff=32, layers=1)).eval()


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    """An extra checkpoint folder named by $TVIZ_CHECKPOINTS: "tiny" (reverse, a small shape), "other" (copy)."""
    for name, task_name in (("tiny", "reverse"), ("other", "copy")):
        save_pretrained(tiny_model(task_name), get_task(task_name), tmp_path, name=name,
                        metrics={"exact_match": 0.25})
    monkeypatch.setenv(CHECKPOINTS_ENV, str(tmp_path))
    return tmp_path


def shape_of(at) -> dict:
    return {field: at.session_state[field] for field in TINY}


def test_an_extra_checkpoint_is_offered_for_its_task_and_chosen_through_the_view(folder):
    at = run_page("attention")
    weights = at.sidebar.radio(key="weights")
    assert weights.options == ["pretrained (ships with the app)", "random (untrained)", "checkpoint “tiny”"]
    weights.set_value("checkpoint:tiny").run()  # the value is a stable identifier; only its label is translated
    assert not at.exception and not at.error and not at.warning
    assert shape_of(at) == TINY  # choosing it gave the sidebar its shape
    assert grid_tiles(at) == 1 * 2
    assert any("Checkpoint “tiny” of this server" in c.value and "25.0% exact match" in c.value for c in at.caption)
    from transformer_viz.app.server.models import resolve
    from transformer_viz.app.server.state import View

    shown = resolve(View(weights="checkpoint:tiny", **TINY)).model
    assert all(torch.equal(a, b) for a, b in zip(shown.state_dict().values(),
                                                 tiny_model().half().float().state_dict().values(), strict=True))
    at.sidebar.selectbox(key="task").set_value("copy").run()  # another task: its own checkpoints only
    assert at.sidebar.radio(key="weights").options[-1] == "checkpoint “other”"


def test_a_shape_change_leaves_the_checkpoint_and_says_so(folder):
    at = run_page("attention", weights="checkpoint:tiny", shape_open=True, **TINY)
    assert not at.warning
    at.sidebar.slider(key="d_model").set_value(32).run()
    assert at.session_state["weights"] == "random"
    assert any("checkpoint “tiny”" in w.value for w in at.sidebar.warning)


@pytest.mark.parametrize("link, lang", [({"weights": "checkpoint:tiny"}, "en"),
                                        ({"weights": "checkpoint:tiny", "lang": "zh"}, "zh")])
def test_a_link_names_an_extra_checkpoint(folder, link, lang):
    at = run_page("attention", link={**link, **{field: str(value) for field, value in TINY.items()}}, lang=lang)
    assert not at.exception and not at.error
    assert not at.sidebar.warning  # every setting was used
    assert at.session_state["weights"] == "checkpoint:tiny" and shape_of(at) == TINY
    assert at.query_params["weights"] == link["weights"]
    assert not any("Random" in w.value or "随机" in w.value for w in at.warning)
    if lang == "zh":
        from test_chinese_everywhere import assert_chinese

        assert_chinese(at, link)  # the weights' label and the banner too


def test_a_link_naming_a_checkpoint_with_another_shape_shows_random_weights_and_says_why(folder):
    at = run_page("attention", link={"weights": "checkpoint:tiny"})  # the default shape
    assert at.session_state["weights"] == "checkpoint:tiny"
    assert any("Random weights" in w.value for w in at.warning)
    assert any("cannot hold the weights of checkpoint “tiny”" in c.value for c in at.caption)


def test_a_link_naming_a_checkpoint_this_server_does_not_have_says_so(folder):
    at = run_page("attention", link={"weights": "checkpoint:gone"})
    assert not at.exception and not at.error
    assert any("weights" in w.value for w in at.sidebar.warning)
    assert at.session_state["weights"] == "pretrained" and "weights" not in at.query_params
    (note,) = [c.value for c in at.sidebar.caption if "no checkpoint" in c.value]
    assert "` gone `" in note and "Reverse the letters" in note and "` tiny `" in note
    at = run_page("attention", link={"lang": "zh", "weights": "checkpoint:other"})  # copy's, not reverse's
    (note,) = [c.value for c in at.sidebar.caption if "没有" in c.value]
    assert "` other `" in note and "倒序字母" in note


def test_a_broken_checkpoint_is_named_never_offered_and_its_reason_goes_to_the_log_only(folder, caplog):
    (folder / "tiny.json").write_text("{not json", encoding="utf-8")
    at = run_page("attention")
    assert not at.exception and not at.error
    assert "checkpoint “tiny”" not in at.sidebar.radio(key="weights").options
    (note,) = [c.value for c in at.sidebar.caption if "cannot be used" in c.value]
    assert "` tiny `" in note and "server's log" in note
    assert str(folder) not in note and "python -m" not in note  # no server path, no command for every student
    assert any("tiny" in r.getMessage() and "corrupt" in r.getMessage() for r in caplog.records)
    at = run_page("attention", lang="zh")
    assert any("检查点 ` tiny ` 无法使用" in c.value for c in at.sidebar.caption)


def test_one_rule_for_every_weights_another_mask_value_keeps_them_another_shape_does_not(folder, monkeypatch):
    """config.fits decides for the shipped weights, a checkpoint's and this session's alike."""
    from dataclasses import replace

    from transformer_viz.app.server import models
    from transformer_viz.app.server.state import View

    trained = trained_model()
    monkeypatch.setattr(models, "trained_for", lambda task_name: trained if task_name == trained.task else None)
    for view in (View(), View(weights="checkpoint:tiny", **TINY), View(weights="trained", **TINY)):
        shown = models.resolve_toy(view)
        assert shown.weights == view.weights and shown.model.config == view.model_config()
        masked = models.resolve_toy(replace(view, mask_value=-1e4))
        assert masked.weights == view.weights and masked.model.config.mask_value == -1e4
        assert masked.model_id != shown.model_id
        assert all(torch.equal(a, b) for a, b in zip(masked.model.state_dict().values(),
                                                     shown.model.state_dict().values(), strict=True))
        assert models.resolve_toy(replace(view, d_ff=64)).weights == "random"


# --- download and upload on the Training page --------------------------------------------------

def trained_model(**changes) -> TrainedModel:
    settings = dict(model=tiny_model(seed=3), id="abc", task="reverse", steps=2,
                    history=((1, 2.5, 0.125), (2, 1.75, 0.25)), exact_match=0.25, seconds=1.25, finished=True)
    return TrainedModel(**(settings | changes))


def unzipped(data: bytes) -> tuple[dict, dict]:
    """(tensors, metadata without the checksum) of a download: safetensors orders its header differently each time."""
    from safetensors.torch import load

    archive = zipfile.ZipFile(io.BytesIO(data))
    (weights,), (metadata,) = ([archive.read(n) for n in archive.namelist() if n.endswith(suffix)]
                               for suffix in (".safetensors", ".json"))
    meta = json.loads(metadata)
    del meta["weights"]["sha256"]
    return {name: tensor.tolist() for name, tensor in load(weights).items()}, meta


def upload(at, *files):
    at.file_uploader(key="weights_upload").set_value(list(files)).run()
    assert not at.exception, at.exception
    return at


def test_download_then_upload_gives_the_same_weights_and_the_same_file():
    trained = trained_model()
    data = zipped(trained)
    assert sorted(zipfile.ZipFile(io.BytesIO(data)).namelist()) == ["reverse-trained.json",
                                                                    "reverse-trained.safetensors"]
    at = run_page("training", _trained=trained, weights="trained", **TINY)
    assert at.get("download_button") and not at.error
    at = upload(run_page("training"), ("reverse-trained.zip", data, "application/zip"))  # a new session
    assert not at.error
    assert any("Uploaded ` reverse-trained `" in s.value for s in at.success)
    uploaded = at.session_state["_trained"]
    assert at.session_state["weights"] == "trained" and shape_of(at) == TINY
    assert (uploaded.steps, uploaded.history, uploaded.exact_match, uploaded.uploaded) == (
        2, trained.history, 0.25, "reverse-trained")
    for name, tensor in trained.model.state_dict().items():  # the file holds half precision
        assert torch.equal(uploaded.model.state_dict()[name], tensor.half().float()), name
    assert unzipped(zipped(uploaded)) == unzipped(data)  # and a second round trip changes nothing
    assert any("Weights you uploaded (“reverse-trained”)" in i.value for i in at.info)
    # The two files instead of the zip
    pair = zipfile.ZipFile(io.BytesIO(data))
    at = upload(run_page("training"), *((name, pair.read(name), "application/octet-stream")
                                        for name in pair.namelist()))
    assert at.session_state["_trained"].uploaded == "reverse-trained" and not at.error


def test_an_upload_refused_says_why_and_keeps_the_session_as_it_was():
    data = zipped(trained_model())
    at = upload(run_page("training"), ("weights.pt", b"\x80\x04K\x01.", "application/octet-stream"))
    (error,) = [e.value for e in at.error]
    assert "never loads one" in error and "weights.pt" in error
    assert "_trained" not in at.session_state and at.session_state["weights"] == "pretrained"
    at = upload(run_page("training", task="copy"), ("reverse-trained.zip", data, "application/zip"))
    (error,) = [e.value for e in at.error]
    assert "trained on the reverse task, not on copy: choose reverse first" in error


def test_an_upload_refused_says_why_in_chinese(monkeypatch):
    import transformer_viz.app.session.words

    monkeypatch.setattr(transformer_viz.app.session.words, "lang", lambda: "zh")  # as AppTest relabels widgets
    data = zipped(trained_model())
    at = upload(run_page("training", lang="zh", task="copy"), ("reverse-trained.zip", data, "application/zip"))
    (error,) = [e.value for e in at.error]
    assert "这些权重是在「倒序字母」任务上训练的，而不是「复制字母」" in error
    at = upload(run_page("training", lang="zh"), ("notes.txt", b"hello", "text/plain"))
    assert [e.value for e in at.error] == ["这些文件无法使用：` notes.txt 不是 .safetensors、.json 或 .zip 文件。 `"]
