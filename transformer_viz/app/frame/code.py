"""The model's own code beside a figure: the lines that computed it, marked, read from the running source."""

from __future__ import annotations

import html
from collections.abc import Sequence

import streamlit as st

from transformer_viz.analysis.source import CodeExcerpt
from transformer_viz.app.session.words import tr

CODE_CONTEXT = 3  # lines shown around a step's own lines
CODE_STYLE = ("margin:0;padding:0.5rem 0.75rem;font:14px/1.5 ui-monospace,Menlo,Consolas,monospace;"
              "background:#f6f8fa;border-radius:6px;overflow-x:auto;white-space:pre")
ROW_STYLE = {False: "display:block", True: "display:block;background:#fff3b0;font-weight:600"}  # marked or not


def show_code(excerpts: Sequence[CodeExcerpt], where=st) -> None:
    """The lines of the model's code that computed a step (its own lines marked), folded in one expander."""
    files = ", ".join(dict.fromkeys(f"“{excerpt.path.rsplit('/', 1)[-1]}”" for excerpt in excerpts))  # quoted: names
    with where.expander(tr("code.where", files=files), icon=":material/code:"):
        for excerpt in excerpts:
            st.html(f'<pre style="{CODE_STYLE}">' + "".join(code_rows(excerpt)) + "</pre>")


def code_rows(excerpt: CodeExcerpt) -> list[str]:
    """The function's first line and its marked lines in context, numbered as in its file (HTML rows)."""
    marked = set(excerpt.marked)
    place = tr("code.place", path=excerpt.path, lines=", ".join(map(str, excerpt.marked_line_numbers)))
    rows = [f'<span style="{ROW_STYLE[False]};color:#666"># {html.escape(place)}</span>']
    shown = sorted({0} | {index for mark in marked for index in range(mark - CODE_CONTEXT, mark + CODE_CONTEXT + 1)
                          if 0 <= index < len(excerpt.lines)})  # the def line, and the step's lines in context
    previous = None
    for index in shown:
        if previous is not None and index > previous + 1:
            rows.append(f'<span style="{ROW_STYLE[False]};color:#666">    …</span>')
        number = f'<span style="color:#666">{excerpt.first_line + index:>4}  </span>'
        rows.append(f'<span style="{ROW_STYLE[index in marked]}">{number}{html.escape(excerpt.lines[index])}</span>')
        previous = index
    return rows
