"""The view object and the text catalog, without Streamlit."""

import math
import re
from pathlib import Path

from app_pages.state import View
from app_pages.text import CATALOGS, ENGLISH, t


def test_default_view_makes_an_empty_link():
    assert View().to_params() == {}


def test_view_round_trips_through_query_parameters():
    view = View(lang="zh", task="copy", weights="random", n_heads=8, norm_first=False, mask_value=-math.inf,
                src_text="the cat", kind="cross", layer=1, head=3, value="masked_scores")
    params = view.to_params()
    assert all(isinstance(v, str) for v in params.values())
    assert View.from_params(params) == (view, [])


def test_unreadable_parameters_are_reported_and_left_at_default():
    view, rejected = View.from_params({"n_heads": "many", "norm_first": "maybe", "kind": "sideways",
                                       "d_model": "32", "colour": "red"})
    assert sorted(rejected) == ["kind", "n_heads", "norm_first"]
    assert view.d_model == 32 and view.n_heads == View.n_heads and view.kind == View.kind


def test_every_text_key_used_by_the_app_is_in_the_english_catalog():
    sources = "\n".join(p.read_text() for p in Path("app_pages").glob("*.py")) + Path("app.py").read_text()
    used = set(re.findall(r'tr\("([a-z_.]+)"', sources))
    assert used, "no tr() calls found"
    assert sorted(used - set(ENGLISH)) == []


def test_missing_translation_falls_back_to_english_and_fills_placeholders():
    assert t("attention.large", "xx", layer=2, head=3) == "Layer 2, head 3"
    for catalog in CATALOGS.values():
        assert set(catalog) <= set(ENGLISH)


def test_the_chinese_catalog_is_complete_with_the_same_placeholders():
    from string import Formatter

    from app_pages.text import CHINESE

    assert sorted(set(ENGLISH) - set(CHINESE)) == []

    def fields(text):
        return {name for _, name, _, _ in Formatter().parse(text) if name}

    assert {k: fields(v) for k, v in CHINESE.items()} == {k: fields(ENGLISH[k]) for k in CHINESE}


def test_every_catalog_key_is_used_by_the_app():
    sources = "\n".join(p.read_text() for p in Path("app_pages").glob("*.py") if not p.name.startswith("text"))
    dynamic = ("kind.", "value.", "positional.", "weights.", "nav.", "head.step.")  # built as f"kind.{kind}" etc.
    unused = [k for k in ENGLISH if f'"{k}"' not in sources and f"'{k}'" not in sources and not k.startswith(dynamic)]
    assert unused == []
