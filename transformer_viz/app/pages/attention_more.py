"""Below the Attention page's grid: head scores (sortable), attention rollout, and the trace to take home."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import streamlit as st

from transformer_viz.app.session.page import PageContext
from transformer_viz.app.session.widgets import chart, lang, tr
from transformer_viz.data.tasks import TASKS
from transformer_viz.figures.rollout import head_score_table, rollout_figure


def head_scores_and_rollout(ctx: PageContext, kind: str) -> None:
    st.subheader(tr("attention.scores"))
    st.caption(tr("attention.scores_help"))
    task = TASKS[ctx.view.task]
    pairs = task.alignment(ctx.trace.src_tokens, ctx.trace.tgt_tokens) if kind == "cross" else None
    st.dataframe(head_score_table(ctx.trace, kind, pairs or None, lang=lang()), hide_index=True, width="stretch")
    if kind != "cross":
        st.subheader(tr("attention.rollout"))
        st.caption(tr("attention.rollout_help"))
        chart(ctx.figure(rollout_figure, kind), key="attention_rollout")
    else:
        st.caption(tr("attention.rollout_cross"))


def trace_downloads(ctx: PageContext) -> None:
    """The whole trace as .npz (tensors, tokens, config) and its attention weights as a tidy CSV table."""
    npz, csv = st.columns(2)
    npz.download_button(tr("attention.download_npz"), data=lambda: npz_bytes(ctx.trace), file_name="trace.npz",
                        mime="application/octet-stream", on_click="ignore", icon=":material/download:")
    csv.download_button(tr("attention.download_csv"), data=lambda: ctx.trace.to_dataframe().to_csv(index=False),
                        file_name="attention.csv", mime="text/csv", on_click="ignore", icon=":material/download:")


def npz_bytes(trace) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.npz"
        trace.to_npz(path)
        return io.BytesIO(path.read_bytes()).getvalue()
