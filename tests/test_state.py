"""The view object and its session-state keys, without Streamlit (the words: test_i18n.py)."""

import ast
from pathlib import Path

from transformer_viz.app.server import state
from transformer_viz.app.server.state import VIEW_FIELDS, View

APP = Path("transformer_viz/app")
PAGES = [p for p in APP.rglob("*.py") if p.name != "state.py"]


def test_every_view_field_has_its_key_constant():
    constants = {value for name, value in vars(state).items() if name.isupper() and isinstance(value, str)}
    assert set(VIEW_FIELDS) <= constants


def test_no_page_names_a_session_key_with_a_bare_string():
    """Keys live in transformer_viz/app/server/state.py: no literal in session_state[...] / .get / .pop /
    .setdefault, and no literal key= for a widget (display-only charts have ids, not session state, and may name
    themselves)."""
    offenders = []
    for path in [*PAGES, Path("app.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            literal = None
            if isinstance(node, ast.Subscript) and _is_session_state(node.value):
                literal = node.slice
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    _is_session_state(node.func.value) and node.args:
                literal = node.args[0]
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) != "chart":
                literal = next((k.value for k in node.keywords if k.arg == "key"), None)
            if isinstance(literal, ast.Constant | ast.JoinedStr):
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []


def _is_session_state(node) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "session_state"


def test_translated_choices_have_labels_and_language_independent_values():
    from transformer_viz.app.session.words import FORMATS

    # Position choices are labelled with their token too (by the page that knows the tokens).
    assert set(state.TRANSLATED_FIELDS) - {state.QUERY, state.CELL_QUERY, state.CELL_KEY} <= set(FORMATS)
    view = View()
    for field in state.TRANSLATED_FIELDS:
        assert not isinstance(getattr(view, field), str) or getattr(view, field).isascii()


def test_a_view_from_elsewhere_is_checked_field_by_field():
    """What a class room hands a student: only view fields, each of its type, a shape the server builds."""
    import math

    import pytest

    from transformer_viz.app.server.state import checked_view

    good = {"layer": 1, "dims": [0, 3], "mask_value": -math.inf, "query": None, "cell_query": 2, "train_lr": 3e-4,
            "norm_first": False, "src_text": "banana", "d_model": 32}
    assert checked_view(good) == good
    assert checked_view({"dims": (1, 2)}) == {"dims": [1, 2]}  # as a multiselect keeps it in session state
    for bad, named in [({"layer": True}, "layer"), ({"layer": 1.5}, "layer"), ({"src_text": 3}, "src_text"),
                       ({"dims": ["1"]}, "dims"), ({"query": "1"}, "query"), ({"x": 1}, "'x'"),
                       ({"n_decoder_layers": 10**6}, "n_decoder_layers"), ({"d_model": 512}, "d_model")]:
        with pytest.raises(ValueError, match=named):
            checked_view(bad)


def test_a_view_asks_for_its_tasks_model_in_its_shape():
    """View.model_config: the task's vocabularies, pad id, dropout and (max_len 0) longest sequence, the view's
    shape; the view's shape defaults are ModelConfig's, the shipped models' shape."""
    from dataclasses import replace

    import pytest

    from transformer_viz.data.tasks import get_task, model_config_for
    from transformer_viz.weights.pretrained import load_pretrained

    for task in ("reverse", "en-zh"):
        assert View(task=task).model_config() == model_config_for(get_task(task))
        assert load_pretrained(task).model.config == View(task=task).model_config()
    view = View(task="en-zh", d_model=32, n_heads=2, n_encoder_layers=3, n_decoder_layers=1, d_ff=64, max_len=24,
                positional="learned", norm_first=False, scale_embeddings=True, embed_norm=True, mask_value=-1e4)
    assert view.model_config() == model_config_for(
        get_task("en-zh"), d_model=32, n_heads=2, n_encoder_layers=3, n_decoder_layers=1, d_ff=64, max_len=24,
        positional="learned", norm_first=False, scale_embeddings=True, embed_norm=True, mask_value=-1e4)
    assert view.model_config().dropout == 0.1 and replace(view, max_len=0).model_config().max_len == 15
    with pytest.raises(ValueError, match="too short"):
        replace(view, max_len=8).model_config()
    with pytest.raises(ValueError, match="cannot be split evenly"):
        replace(view, n_heads=3).model_config()
