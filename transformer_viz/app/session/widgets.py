"""View widgets: keyed by their field, kept for the session, fitted to what they can show, their translated
choices kept as options across a language switch; the view as they set it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import streamlit as st

from transformer_viz.app.server import state
from transformer_viz.app.server.state import VIEW_FIELDS, View
from transformer_viz.app.session.link import field_texts
from transformer_viz.app.session.words import FORMATS, LABELS_IN, lang, tr
from transformer_viz.i18n import LANGUAGES


def view_widget(widget: Callable, field: str, label: str, *args, **kwargs):
    """`widget(label, *args, ...)` for a view field: keyed by the field's name, kept for the session.

    Its value lives in st.session_state[field] (the link is written from there: frame/link.py), so it
    outlives page changes. Choices are labelled by FORMATS[field]. A value the widget cannot show (from a
    link, a room, or the options of another model) gives way to the widget's default.
    """
    if field in FORMATS:
        kwargs.setdefault("format_func", FORMATS[field])
    default = getattr(View, field)
    name = getattr(widget, "__name__", "")
    if name in ("radio", "selectbox") and "index" not in kwargs and default in args[0]:
        kwargs["index"] = list(args[0]).index(default)  # the widget's own default is the view's
    fit_to_widget(name, field, args)
    if name == "selectbox" and None in args[0]:  # Streamlit shows a None value as "no choice": the placeholder
        kwargs.setdefault("placeholder", kwargs["format_func"](None))
    if name == "multiselect":  # Streamlit's own placeholder is English ("Choose options")
        kwargs.setdefault("placeholder", tr("widget.choose"))
    translated = field in state.TRANSLATED_FIELDS
    if translated:
        by_language = st.session_state.setdefault(state.CHOICE_LABELS, {}).setdefault(field, {})
        by_language[lang()] = {kwargs["format_func"](option): option for option in args[0]}
    if kwargs.get("on_change") is not None:
        kwargs["on_change"] = on_real_change(field, kwargs["on_change"])
    value = widget(label, *args, key=field, persist_state="session", **kwargs)
    if translated:
        st.session_state.setdefault(state.CHOICES_SHOWN, {})[field] = value
    return value


def lazy_expander(container, label: str, key: str):
    """An expander whose `.open` the script reads: opening or closing it reruns the page (Streamlit's lazy
    expander), so what it holds is drawn only while it is open. Its label is part of its identity: after a
    language switch it is a new expander, which opens as the old one was."""
    return container.expander(label, expanded=bool(st.session_state.get(key)), key=key, on_change="rerun")


class Fold:
    """View widgets in an expander, drawn only while it is open (Streamlit's lazy expander): a folded widget costs
    the page nothing. Folded, a field keeps its session value, checked as its widget would check it, and reads
    as the widget would return it."""

    def __init__(self, container, label: str, key: str):
        self.expander = lazy_expander(container, label, key)

    def widget(self, widget: Callable, field: str, label: str, *args, **kwargs):
        """`view_widget(widget, field, label, ...)` in the fold; folded, the field's value without a widget."""
        if self.expander.open:
            with self.expander:
                return view_widget(widget, field, label, *args, **kwargs)
        fit_to_widget(widget.__name__, field, args)
        return st.session_state.get(field, getattr(View, field))


def fit_to_widget(name: str, field: str, args: tuple) -> None:
    """Make the session's value of `field` one the widget `name` (drawn with `args`) can show: a multiple choice
    keeps its known options; any other value it cannot show (an unknown option, a number out of a slider's range)
    is dropped, and the widget shows its default."""
    if field not in st.session_state:
        return
    value = st.session_state[field]
    if name == "slider":
        if type(value) is not type(args[0]) or not args[0] <= value <= args[1]:
            del st.session_state[field]
    elif name in ("text_input", "toggle", "checkbox"):
        if type(value) is not (str if name == "text_input" else bool):
            del st.session_state[field]
    elif isinstance(value, list):  # multiselect, multiple pills
        known = [item if item in args[0] else option_labelled(field, args[0], item) for item in value]
        known = [item for item in known if item is not None]
        if known != value:
            st.session_state[field] = known
            read_as(field, known)
    elif value not in args[0]:
        named = option_labelled(field, args[0], value)
        if named is None:
            del st.session_state[field]
        else:
            st.session_state[field] = named
            read_as(field, named)


def option_labelled(field: str, options: Sequence, label: object) -> object | None:
    """The option that `label` names on screen in some language, or None. Links made before they named ids carry
    labels (`task=English → French`, `kind=编码器自注意力`): they still open their view."""
    if field not in FORMATS or not isinstance(label, str):
        return None
    for code in LANGUAGES:
        token = LABELS_IN.set(code)
        try:
            found = [option for option in options if FORMATS[field](option) == label]
        finally:
            LABELS_IN.reset(token)
        if found:
            return found[0]
    return None


def read_as(field: str, value: object) -> None:
    """The opening link named `field`'s value by a label: it asked for `value` (not a setting to name as reset)."""
    asked = st.session_state.get(state.LINK_ASKED, {})
    if field in asked:
        asked[field] = field_texts(field, value)


def language_widget(container, label: str, on_change: Callable) -> str:
    """The language: shown by its name, linked by its code (`lang=zh`)."""
    return view_widget(container.radio, state.LANG, label, LANGUAGES, horizontal=True, on_change=on_change)


def restore_choices() -> None:
    """Turn translated choices that arrive as labels of another language back into their options.

    Streamlit identifies a choice by its label. A request the browser sent before it redrew a language switch (a
    room's poll, a click under load) names the choices in the old language: their options are not found, and the
    label itself would become the value. Callbacks run before the script, so each one calls this first
    (`callback`), and so does the sidebar before any widget.
    """
    for field, by_language in st.session_state.get(state.CHOICE_LABELS, {}).items():
        labels = {text: option for language_labels in by_language.values() for text, option in language_labels.items()}
        options = set(labels.values())
        value = st.session_state.get(field)
        if isinstance(value, list):
            restored = [choice if choice in options else labels.get(choice, choice) for choice in value]
            if restored != value:
                st.session_state[field] = restored
        elif value is not None and value not in options and value in labels:
            st.session_state[field] = labels[value]


def callback(function: Callable) -> Callable:
    """A widget's callback, run with the translated choices restored (see restore_choices)."""
    @functools.wraps(function)
    def call(*args, **kwargs):
        restore_choices()
        return function(*args, **kwargs)
    return call


def on_real_change(field: str, function: Callable) -> Callable:
    """A view widget's callback, run only when its choice changed: not for its own label in another language."""
    @functools.wraps(function)
    def call(*args, **kwargs):
        restore_choices()
        shown = st.session_state.get(state.CHOICES_SHOWN, {})
        if field in shown and st.session_state.get(field) == shown[field]:
            return
        return function(*args, **kwargs)
    return call


def relabel_translated() -> None:
    """After a language switch: write the translated widgets' values again, so that they show their labels in the
    new language (a keyed widget keeps its identity, and the browser its shown label, unless its value is written).
    A written None shows the selectbox's placeholder, which view_widget makes None's label."""
    for field in state.TRANSLATED_FIELDS:
        if field in st.session_state:
            st.session_state[field] = st.session_state[field]


def current_view() -> View:
    """The view as the widgets of this session set it (fields whose widget was never drawn: defaults)."""
    values = {f: st.session_state[f] for f in VIEW_FIELDS if f in st.session_state}
    for field, value in values.items():
        if isinstance(value, list):  # multiselect and pills return lists; the view is frozen
            values[field] = tuple(value)
    return View(**values)


def clamped_index(value: int | None, count: int) -> int:
    """An index for a widget's default that exists among `count` options."""
    return min(max(value or 0, 0), count - 1)
