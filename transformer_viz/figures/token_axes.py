"""Tokens on a figure: escaped text, axes of integer positions with tokens as tick text, a cell's hover heading."""

from __future__ import annotations

from collections.abc import Sequence

from transformer_viz.i18n import text
from transformer_viz.trace.names import token_labels


def escape_text(shown: str) -> str:
    """Text Plotly shows literally: "<s>" or "<pad>" would otherwise be read as markup."""
    return str(shown).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def token_texts(tokens: Sequence[str] | None, length: int) -> list[str]:
    """`token_labels`, escaped for tick text, hover and annotations."""
    return [escape_text(t) for t in token_labels(tokens, length)]


def token_axis(tokens: Sequence[str] | None, length: int, reverse: bool = False) -> dict:
    """An axis of integer positions with tokens as tick text, so a repeated token keeps its own column.

    The tick text is escaped, so "<s>" or "<pad>" shows as written.
    """
    axis = dict(tickmode="array", tickvals=list(range(length)), ticktext=token_texts(tokens, length),
                showgrid=False, zeroline=False)
    if reverse:
        axis["autorange"] = "reversed"  # first query at the top
    return axis


def cell_label(query: int, query_text: str, key: int, key_text: str, lang: str = "en") -> str:
    """Hover heading of one attention cell: query 2 “cat” → key 0 “the” (texts already escaped)."""
    return text("cell", lang, query=query, query_text=query_text, key=key, key_text=key_text)
