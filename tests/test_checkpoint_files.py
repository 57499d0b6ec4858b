"""A checkpoint as a download and back: every upload refused with its reason, in English and in Chinese."""

import hashlib
import io
import json
import pickle
import re
import zipfile

import pytest
import torch
from safetensors.torch import load, save

from transformer_viz import Transformer, get_task, model_config_for
from transformer_viz.errors import TranslatableError
from transformer_viz.i18n import text
from transformer_viz.weights.files import MAX_UPLOAD_BYTES, checkpoint_zip, read_upload

TASK = get_task("reverse")


def tiny(seed=0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(model_config_for(TASK, d_model=16, n_heads=2, d_ff=32, layers=1)).eval()


def pair(model=None, name="mine") -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(checkpoint_zip(model or tiny(), TASK, name)))
    return {n.rsplit(".", 1)[1]: archive.read(n) for n in archive.namelist()}


GOOD = pair()


def files(weights=None, meta=None, meta_change=None, weights_change=None, fix_checksum=True):
    """The two files of GOOD, with changes: weights_change(tensors), meta_change(meta); the checksum made to match."""
    weights = GOOD["safetensors"] if weights is None else weights
    if weights_change is not None:
        tensors = load(weights)
        weights_change(tensors)
        weights = save(tensors)
    metadata = json.loads(GOOD["json"]) if meta is None else meta
    if fix_checksum:
        metadata["weights"]["sha256"] = hashlib.sha256(weights).hexdigest()
    if meta_change is not None:
        meta_change(metadata)
    return [("mine.safetensors", weights), ("mine.json", json.dumps(metadata).encode())]


def zipped(**members: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name.replace("_", "."), data)
    return buffer.getvalue()


class _Payload:
    ran = False

    def __reduce__(self):
        return (_run, ())


def _run():
    _Payload.ran = True


PICKLED = pickle.dumps(_Payload())
CASES = {
    "type": ([("notes.txt", b"hello")], "notes.txt"),
    "pickle": ([("model.pth", PICKLED)], "model.pth"),
    "too_big": ([("mine.safetensors", b"\0" * (MAX_UPLOAD_BYTES + 1)), ("mine.json", GOOD["json"])],
                "mine.safetensors"),
    "count": ([*files(), ("more.json", GOOD["json"])], None),
    "missing": ([("mine.safetensors", GOOD["safetensors"])], None),
    "zip": ([("mine.zip", b"PK but not a zip")], "mine.zip"),
    "zip_content": ([("mine.zip", zipped(mine_json=GOOD["json"]))], "mine.zip"),
    "json": ([files()[0], ("mine.json", b"{not json")], "mine.json"),
    "format": (files(meta_change=lambda meta: meta.pop("config")), "mine.json"),
    "task": (files(meta_change=lambda meta: meta.update(task="juggle")), "mine.json"),
    "config": (files(meta_change=lambda meta: meta["config"].update(d_model=15)), "mine.json"),
    "vocab": (files(meta_change=lambda meta: meta.update(src_vocab=meta["src_vocab"][:-1])), "mine.json"),
    "fit": (files(meta_change=lambda meta: meta["config"].update(max_len=4)), "mine.json"),
    "checksum": (files(weights=pair(tiny(seed=1))["safetensors"], fix_checksum=False), "mine.safetensors"),
    "unreadable": (files(weights=PICKLED), "mine.safetensors"),
    "tensors": (files(weights_change=lambda t: t.pop("output_proj.bias")), "mine.safetensors"),
    "dtype": (files(weights_change=lambda t: t.update({"output_proj.bias": t["output_proj.bias"].int()})),
              "mine.safetensors"),
    "shape": (files(weights_change=lambda t: t.update({"output_proj.weight": t["output_proj.weight"].T.contiguous()})),
              "mine.safetensors"),
    "nonfinite": (files(weights_change=lambda t: t["output_proj.bias"].__setitem__(0, float("nan"))),
                  "mine.safetensors"),
}


def refused(files, **kwargs) -> TranslatableError:
    with pytest.raises(TranslatableError) as info:
        read_upload(files, **kwargs)
    return info.value


@pytest.mark.parametrize("reason", CASES)
def test_every_refusal_says_its_reason_in_english_and_in_chinese(reason):
    uploaded, file = CASES[reason]
    error = refused(uploaded)
    assert error.key == f"upload.{reason}"
    assert error.values.get("file") == file
    assert text(f"detail.{error.key}", "en", **error.values) == str(error)  # the package's own sentence
    chinese = text(f"detail.{error.key}", "zh", **error.values)
    assert chinese != str(error) and re.search(r"[\u4e00-\u9fff]", chinese)
    assert not _Payload.ran  # a pickle is never unpickled


def test_the_sentences_name_what_is_wrong():
    shape = "mine.safetensors: output_proj.weight has shape (16, 30), but the model needs (30, 16)."
    assert str(refused(CASES["shape"][0])) == shape
    assert "output_proj.bias holds NaN" in str(refused(CASES["nonfinite"][0]))
    assert "16.0 MB can be uploaded" in str(refused(CASES["too_big"][0]))
    assert "The .json file is missing" in str(refused(CASES["missing"][0]))
    assert "its field config is missing or wrong" in str(refused(CASES["format"][0]))


def test_weights_of_another_task_are_refused_when_a_task_is_asked_for():
    assert read_upload(files(), task="reverse").task.name == "reverse"
    error = refused(files(), task="copy")
    assert error.key == "upload.other_task" and error.values == {"task": "reverse", "current_task": "copy"}


def test_a_zip_member_is_read_within_its_limit_not_as_large_as_it_unpacks():
    bomb = zipped(mine_safetensors=GOOD["safetensors"], mine_json=b" " * 2_000_000 + GOOD["json"])
    assert len(bomb) < 100_000
    error = refused([("mine.zip", bomb)])
    assert error.key == "upload.too_big" and error.values["file"] == "mine.zip: mine.json"


def test_a_zip_or_the_two_files_give_the_same_model_and_a_folder_or_clutter_inside_is_fine():
    archive = zipped(**{"folder/mine_json": GOOD["json"], "folder/mine_safetensors": GOOD["safetensors"],
                        "__MACOSX/._mine_json": b"junk"})
    for uploaded in ([("mine.zip", archive)], files(), [("MINE.SAFETENSORS", GOOD["safetensors"]),
                                                       ("other-name.json", GOOD["json"])]):
        loaded = read_upload(uploaded)
        assert loaded.name == "mine"
        for name, tensor in tiny().state_dict().items():
            assert torch.equal(loaded.model.state_dict()[name], tensor.half().float()), name
