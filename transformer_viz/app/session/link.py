"""The link of a view: its fields as query parameters that name ids, never labels. No Streamlit here.

A field's parameter is its name; only values that differ from the `View`'s default are written. Choices are
their stable ids (`task=en-fr`, `kind=cross`, `weights=checkpoint:mine`), booleans `true`/`false`, positions
their index (`cell_query=3`), a multiple choice one parameter per item. Layers and heads count from 1, as on
screen (`layer=2` is the second layer); the `View` counts from 0.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping, Sequence

from transformer_viz.app.server import state
from transformer_viz.app.server.state import VIEW_FIELDS, VIEW_TYPES, View
from transformer_viz.i18n import LANGUAGE_NAMES, LANGUAGES

COUNTED_FROM_ONE = (state.LAYER, state.HEAD)
POSITIONS = (state.CELL_QUERY, state.CELL_KEY)  # older links name them "3: noir": the position comes first
NONE = ""  # the text of None (no query chosen, the task's own learning rate)
MAX_ITEMS = 64  # a multiple choice's items read from a link, at most (more are ignored)


def value_text(field: str, value) -> str:
    """One value (or item of a multiple choice) as the link writes it."""
    if value is None:
        return NONE
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        short = f"{value:g}"  # -1e+09, -inf, 0.003
        return short if float(short) == value else repr(value)
    if field in COUNTED_FROM_ONE:
        return str(value + 1)
    return str(value)


def field_texts(field: str, value) -> list[str]:
    """A view value as the link writes it: one text, or one per item of a multiple choice."""
    if isinstance(value, tuple | list):
        return [value_text(field, item) for item in value]
    return [value_text(field, value)]


def link_params(view: View) -> dict[str, list[str]]:
    """The query parameters of a view: every field whose value is not the default, as texts."""
    defaults = View()
    return {field: field_texts(field, getattr(view, field)) for field in VIEW_FIELDS
            if getattr(view, field) != getattr(defaults, field)}


def parse_value(field: str, text: str, hint):
    """The value of one text for a field annotated `hint`. Raises ValueError when the text is not one."""
    if hint is str and field == state.LANG:
        code = linked_language(text)
        if code is None:
            raise ValueError(f"not a language: {text!r}")
        return code
    if hint is str:
        return text
    if hint is bool:
        if text.lower() not in ("true", "false"):
            raise ValueError(f"not a boolean: {text!r}")
        return text.lower() == "true"
    if hint is int:
        number = int(text.split(":", 1)[0] if field in POSITIONS else text)  # "inf", "nan", "1.5": ValueError
        return number - 1 if field in COUNTED_FROM_ONE else number
    if hint is float:
        number = float(text)
        if math.isnan(number):
            raise ValueError("not a number")
        return number
    options = [option for option in typing.get_args(hint) if option is not type(None)]
    if len(options) == 1:  # int | None, float | None
        return None if text == NONE else parse_value(field, text, options[0])
    raise TypeError(f"no link form for {hint}")


def read_params(params: Mapping[str, Sequence[str]]) -> tuple[dict[str, object], list[str]]:
    """The view values a link names, typed as session state holds them (a multiple choice: a list), and the view
    fields whose text is no value of their type. Ranges and options are the widgets' to check."""
    values, unreadable = {}, []
    for field, texts in params.items():
        if field not in VIEW_FIELDS or not texts:
            continue
        hint = VIEW_TYPES[field]
        try:
            if typing.get_origin(hint) is tuple:
                item = typing.get_args(hint)[0]
                values[field] = [parse_value(field, text, item) for text in texts[:MAX_ITEMS] if text != ""]
            else:
                values[field] = parse_value(field, texts[-1], hint)
        except ValueError:
            unreadable.append(field)
    return values, unreadable


def linked_language(value: str | None) -> str | None:
    """The language a link names: its code (lang=zh), or its name in links made before codes (lang=中文)."""
    if value in LANGUAGES:
        return value
    return next((code for code, name in LANGUAGE_NAMES.items() if name == value), None)
