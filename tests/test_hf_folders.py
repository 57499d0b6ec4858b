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


HOSTILE_CONFIGS = {
    "an unknown RoPE variant": ("llama", {"rope_scaling": {"rope_type": "mystery", "factor": 2.0}}),
    "longrope": ("llama", {"rope_scaling": {"rope_type": "longrope", "factor": 2.0, "short_factor": [1.0] * 4,
                                            "long_factor": [1.0] * 4}}),
    "a NaN epsilon": ("llama", {"rms_norm_eps": float("nan")}),
    "no positions": ("llama", {"max_position_embeddings": 0}),
    "a trillion positions": ("llama", {"max_position_embeddings": 10**12}),
    "an infinite rope_theta": ("llama", {"rope_parameters": {"rope_type": "default", "rope_theta": float("inf")}}),
    "an unknown activation": ("gpt2", {"activation_function": "wiggle"}),
}


@pytest.mark.parametrize("case", HOSTILE_CONFIGS, ids=list(HOSTILE_CONFIGS))
def test_a_hostile_config_in_an_allowed_folder_gets_a_sentence(case, tmp_path, monkeypatch):
    """Issue 41, item 4: each raised KeyError, ZeroDivisionError or RuntimeError, or loaded and then misbehaved."""
    import json

    from devtools.hf_tiny import save_tiny
    from transformer_viz.weights import hf_causal

    family, changes = HOSTILE_CONFIGS[case]
    folder = save_tiny(family, tmp_path / family)
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError):
        hf_causal.load(str(folder))


def test_a_folder_that_failed_to_load_is_not_read_again_on_the_next_visit(tmp_path, monkeypatch):
    from transformer_viz.app.server import models

    monkeypatch.setenv(HF_DIRS_ENV, str(tmp_path))
    folder = tmp_path / "broken"
    folder.mkdir()
    reads = []
    monkeypatch.setattr(models.hf_causal, "model_type", lambda name, allow: reads.append(name) or None)
    for _ in range(2):
        resolved = models.resolve_hugging_face(str(folder), False)
        assert resolved.model is None and resolved.error is not None
    assert len(reads) == 1, "the second visit read the folder again"
