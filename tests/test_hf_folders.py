"""A link may open a Hugging Face model from disk only under the server's folders (TVIZ_HF_DIRS); any other
folder gets the same answer whether it exists or not, so no link can find out which paths the server has."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_app import run_page
from transformer_viz.app.server.hf_folders import HF_DIRS_ENV, allowed_folders, check_folder, names_a_folder


@pytest.fixture
def allowed(tmp_path, monkeypatch):
    folder = tmp_path / "models"
    (folder / "tiny").mkdir(parents=True)
    monkeypatch.setenv(HF_DIRS_ENV, str(folder))
    return folder


def refusal(name: str) -> str:
    with pytest.raises(ValueError) as raised:
        check_folder(name)
    return str(raised.value).replace(repr(name), "NAME")


def test_a_folder_elsewhere_gets_one_answer_whether_it_exists_or_not(allowed, tmp_path):
    (tmp_path / "secret").mkdir()
    answers = {refusal(name) for name in ("/etc", "/no/such/folder", str(tmp_path / "secret"),
                                          str(tmp_path / "missing"), f"{allowed}/../secret", "~/.ssh", "./app.py")}
    assert len(answers) == 1, answers


def test_the_pages_answer_is_the_same_for_a_folder_that_exists_and_one_that_does_not(allowed):
    shown = []
    for name in ("/etc", "/etc-not-there"):
        at = run_page("attention", source="hf", hf_model=name)
        assert not at.exception
        shown.append("\n".join(e.value for e in at.error).replace(name, "NAME"))
    assert shown[0] == shown[1] and "TVIZ_HF_DIRS" in shown[0] and "Unrecognized" not in shown[0]


def test_a_folder_under_the_allowed_ones_and_hub_ids_pass(allowed, tmp_path):
    check_folder(str(allowed / "tiny"))
    check_folder(str(allowed / "not-yet"))  # under an allowed folder: loading it says what is wrong
    for hub_id in ("t5-small", "Helsinki-NLP/opus-mt-en-zh"):
        assert not names_a_folder(hub_id)
        check_folder(hub_id)
    (allowed / "way-out").symlink_to(tmp_path)  # a link inside that leads outside
    with pytest.raises(ValueError, match="not a model this server offers"):
        check_folder(str(allowed / "way-out"))


def test_by_default_the_hugging_face_cache_and_the_checkpoint_folders_are_allowed(tmp_path):
    pytest.importorskip("huggingface_hub")
    from huggingface_hub.constants import HF_HUB_CACHE

    folders = allowed_folders({"TVIZ_CHECKPOINTS": str(tmp_path)})
    assert folders[0] == Path(HF_HUB_CACHE).expanduser().resolve()
    assert tmp_path.resolve() in folders
