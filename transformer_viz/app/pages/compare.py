"""Compare: two models (or one model and a variant or intervention of it) on the same input, side by side."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from transformer_viz.app.server import measurements, models, state
from transformer_viz.app.server.state import KINDS, WEIGHT_CHOICES, View
from transformer_viz.app.session.charts import MAIN_WIDTH, chart, figure_min_font
from transformer_viz.app.session.interventions import SWITCHES, head_ids, intervention_of
from transformer_viz.app.session.page import token_chips, toy_only
from transformer_viz.app.session.widgets import Fold, current_view, view_widget
from transformer_viz.app.session.words import error_text, lang, literal, tr
from transformer_viz.figures.compare import difference_grid
from transformer_viz.figures.grid import attention_grid
from transformer_viz.figures.margins import line_up
from transformer_viz.trace.form import form_of

# A, B and B − A one under the other, each as wide as the main column at its narrowest (MAIN_WIDTH): side by side,
# half a column left no room for the keys' names, and the three line up tile for tile, cell for cell.
GRID_WIDTH = MAIN_WIDTH
VARIANTS = {"same": {}, "one_head": {state.N_HEADS: 1}, "eight_heads": {state.N_HEADS: 8},
            "no_positional": {state.POSITIONAL: "none"}, "post_ln": {state.NORM_FIRST: False},
            "encoder_decoder": {state.ARCHITECTURE: "encoder_decoder"},
            "decoder_only": {state.ARCHITECTURE: "decoder_only"}}
SIDES = {"a": (state.A_WEIGHTS, state.A_VARIANT, state.A_BREAKS, state.A_ABLATE),
         "b": (state.B_WEIGHTS, state.B_VARIANT, state.B_BREAKS, state.B_ABLATE)}


def render() -> None:
    st.title(tr("compare.title"))
    st.markdown(tr("compare.intro"))
    if toy_only():
        return
    view = current_view()
    kind_slot = st.container()  # above A and B; its options follow their models
    sides = {}
    for side, column in zip(SIDES, st.columns(2, gap="large"), strict=True):
        with column:
            sides[side] = one_side(view, side)
    if any(found is None for found in sides.values()):
        return
    kinds = tuple(kind for kind in KINDS if any(kind in form_of(resolved.model.config).kinds
                                                 for _, resolved, _, _ in sides.values()))
    kind = view_widget(kind_slot.selectbox, state.KIND, tr("attention.kind"), kinds,
                       index=kinds.index(View.kind) if View.kind in kinds else 0)
    # Both decoders read the same target (typed, or A's answer), so that their attention cells line up.
    target = view.tgt_text or sides["a"][3].output_text or ""
    traces, shown = {}, {}
    for side, (side_view, resolved, intervention, greedy) in sides.items():
        try:
            traces[side] = models.run(replace(side_view, tgt_text=target), resolved,
                                        intervention=intervention).trace
        except ValueError:  # A's answer is no valid target (an untrained model's rambling): each reads its own
            traces[side] = greedy.trace
        shown[side] = kind if kind in traces[side].attention_kinds() else "decoder_self"
    a, b = traces["a"], traces["b"]
    chosen, kind = kind, shown["a"]
    same_shape = shown["a"] == shown["b"] and (a.config.n_heads, a.n_layers(kind), a.attention_tokens(kind)) == (
        b.config.n_heads, b.n_layers(kind), b.attention_tokens(kind))
    grids = [attention_grid(traces[side], shown[side], width=GRID_WIDTH, whose=side.upper(),
                            min_font=figure_min_font(), lang=lang()) for side in sides]
    if same_shape:
        grids.append(difference_grid(a, b, kind, width=GRID_WIDTH, min_font=figure_min_font(), lang=lang()))
    line_up(grids)  # the three plots one above the other, their tiles in the same columns (built for this run)
    for side, grid in zip(sides, grids[:2], strict=True):
        if shown[side] != chosen:  # a decoder-only model: no encoder, no cross-attention
            st.caption(tr("compare.kind_missing", side=side.upper(), kind=tr(f"kind.{chosen}")))
        chart(grid, key=f"compare_grid_{side}")
    st.subheader(tr("compare.difference"))
    if same_shape:
        chart(grids[-1], key="compare_difference")
    else:
        st.caption(tr("compare.no_difference"))


def one_side(view: View, side: str):
    """Side A or B: its choices, its model, its output and exact match.
    -> (its view, its model, its intervention, its greedy run), or None after saying why there is none."""
    weights_field, variant_field, breaks_field, ablate_field = SIDES[side]
    st.markdown(f"### {side.upper()}")
    fold = Fold(st, tr("compare.change", side=side.upper()), key=state.COMPARE_OPEN.format(side))
    weights = fold.widget(st.radio, weights_field, tr("side.weights"), WEIGHT_CHOICES,
                          index=WEIGHT_CHOICES.index(getattr(View, weights_field)))
    variant = fold.widget(st.selectbox, variant_field, tr("compare.variant"), tuple(VARIANTS))
    switches = fold.widget(st.pills, breaks_field, tr("break.switches"), SWITCHES, selection_mode="multi")
    side_view = replace(view, weights=weights, **VARIANTS[variant])
    resolved = models.resolve(side_view)
    if resolved.error:
        st.error(tr("error.config", message=literal(error_text(resolved.error))), icon=":material/error:")
        return None
    ids = head_ids(resolved.model.config)
    heads = view_widget(st.multiselect, ablate_field, tr("break.ablate"), ids)
    intervention = intervention_of(switches, heads)
    if resolved.weights != weights:
        st.warning(tr("compare.fell_back", weights=tr(f"weights.{weights}")), icon=":material/casino:")
    try:
        run = models.run(side_view, resolved, intervention=intervention)
    except ValueError as error:
        st.error(tr("error.input", message=literal(error_text(error))), icon=":material/error:")
        return None
    measured = measurements.measured(resolved.model_id, view.task, intervention, _model=resolved.model)
    st.metric(tr("break.exact", n=measurements.EVALUATION_INPUTS), f"{measured.exact_match:.0%}")
    if not run.teacher_forced:
        token_chips(tr("tokens.output"), run.output_tokens)
    return side_view, resolved, intervention, run
