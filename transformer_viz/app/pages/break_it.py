"""Break it: switch parts of a trained model off and measure what it loses, in numbers and in pictures."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from transformer_viz.analysis.measures import mean_entropy
from transformer_viz.app.server import measurements, models, state
from transformer_viz.app.server.state import View
from transformer_viz.app.session.charts import MAIN_WIDTH, chart, figure_min_font
from transformer_viz.app.session.interventions import SWITCHES, head_ids, intervention_of
from transformer_viz.app.session.page import page_context, toy_only
from transformer_viz.app.session.widgets import view_widget
from transformer_viz.app.session.words import head_label, lang, literal, tr
from transformer_viz.data.tasks import get_task
from transformer_viz.figures.compare import difference_grid
from transformer_viz.figures.grid import attention_grid
from transformer_viz.trace.form import form_of
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.names import ATTENTION_KINDS
from transformer_viz.train.evaluation import evaluate


def render() -> None:
    st.title(tr("break.title"))
    st.markdown(tr("break.intro"))
    if toy_only():
        return
    ctx = page_context(show_tokens=False)
    if ctx is None:
        return
    if ctx.resolved.weights == "random":
        st.warning(tr("break.random"), icon=":material/casino:")
    config = ctx.trace.config
    # The switches' pills scroll sideways when their column is narrower than their row (half at 150 % zoom).
    switches_column, heads_column = st.columns([3, 2], gap="large")
    switches = view_widget(switches_column.pills, state.BREAKS, tr("break.switches"), SWITCHES,
                           selection_mode="multi")
    with heads_column:
        ids = head_ids(config)
        heads = view_widget(st.multiselect, state.ABLATE, tr("break.ablate"), ids, format_func=head_label)
        ablation = view_widget(st.radio, state.ABLATION, tr("break.ablation"), ("zero", "mean"), horizontal=True)
    intervention = intervention_of(switches, heads, ablation)
    if intervention.changes_nothing:
        st.info(tr("break.nothing"), icon=":material/touch_app:")
    effects(ctx, intervention)
    st.divider()
    ranking(ctx)
    st.divider()
    cheating_decoder(ctx.view.task, config.architecture)


def effects(ctx, intervention) -> None:
    """Exact match, teacher-forced accuracy, entropy and the current output, before → after; the attention."""
    model, model_id, task = ctx.model, ctx.resolved.model_id, ctx.view.task
    before = measurements.measured(model_id, task, Intervention(), _model=model)
    after = measurements.measured(model_id, task, intervention, _model=model)
    broken = models.run(ctx.view, ctx.resolved, intervention=intervention)
    # As wide as their labels, side by side while they fit: three columns cut a label short at 150 % zoom.
    exact = forced = entropy = st.container(horizontal=True)
    exact.metric(tr("break.exact", n=measurements.EVALUATION_INPUTS), f"{after.exact_match:.0%}",
                 delta=f"{after.exact_match - before.exact_match:+.0%}",
                 help=tr("break.before", value=f"{before.exact_match:.0%}"), width="content")
    forced.metric(tr("break.forced"), f"{after.teacher_forced_accuracy:.0%}",
                  delta=f"{after.teacher_forced_accuracy - before.teacher_forced_accuracy:+.0%}",
                  help=tr("break.forced_help"), width="content")
    kinds = form_of(ctx.trace.config).kinds
    kind = view_widget(st.selectbox, state.KIND, tr("attention.kind"), kinds,
                       index=kinds.index(View.kind) if View.kind in kinds else 0)
    try:  # both read the intact model's answer (teacher forcing), so every attention cell has a partner
        forced = replace(ctx.view, tgt_text=ctx.view.tgt_text or ctx.run.output_text or "")
        intact = models.run(forced, ctx.resolved).trace
        aligned = models.run(forced, ctx.resolved, intervention=intervention).trace
    except ValueError:  # no answer to read (the model wrote <eos> first): each its own run, no difference
        intact, aligned = ctx.trace, None
    entropy_before, entropy_after = mean_entropy(intact, kind), mean_entropy(aligned or broken.trace, kind)
    entropy.metric(tr("break.entropy"), f"{entropy_after:.2f}", delta=f"{entropy_after - entropy_before:+.2f}",
                   delta_color="off", help=tr("break.entropy_help"), width="content")
    if not intervention.look_ahead:  # exact match and teacher-forced accuracy part ways here: say why
        st.caption(tr("break.look_ahead_why"))
    if not ctx.run.teacher_forced:
        st.markdown(tr("break.output", text=literal(ctx.view.src_text), before=literal(ctx.run.output_text),
                       after=literal(broken.output_text)))
    whose = tr("break.grid_whose") if intervention != Intervention() else ""  # nothing switched off: the model
    chart(attention_grid(aligned or broken.trace, kind, width=MAIN_WIDTH, whose=whose, min_font=figure_min_font(),
                         lang=lang()), key="break_grid")
    if aligned is None:
        st.caption(tr("break.no_difference"))
        return
    st.caption(tr("break.difference_help"))
    chart(difference_grid(intact, aligned, kind, width=MAIN_WIDTH, min_font=figure_min_font(), lang=lang()),
          key="break_diff")


def ranking(ctx) -> None:
    """Every head ablated in turn, and every layer's heads all at once: which ones the task needs."""
    st.subheader(tr("break.ranking"))
    st.caption(tr("break.ranking_help", n=measurements.RANKING_INPUTS))
    if not requested(state.BREAK_RANK, tr("break.rank"), ":material/leaderboard:"):
        return
    with st.spinner(tr("break.measuring")):
        rows = ranked(ctx.resolved.model_id, ctx.view.task, _model=ctx.model)
    table = pd.DataFrame([(head_label(name) if "-" in name else layer_label(name), drop, exact)
                          for name, drop, exact in rows],
                         columns=[tr("break.ablated"), tr("break.drop"), tr("break.exact_after")])
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={tr("break.drop"): st.column_config.NumberColumn(format="percent"),
                                tr("break.exact_after"): st.column_config.NumberColumn(format="percent")})


def requested(key: str, text: str, icon: str) -> bool:
    """A button whose result stays on the page for the rest of the session once pressed."""
    if st.button(text, icon=icon, key=key):
        st.session_state[state.SHOWN.format(key)] = True
    return st.session_state.get(state.SHOWN.format(key), False)


def layer_label(group: str) -> str:
    """"cross 2" -> "all heads of Cross-attention · Layer 2"."""
    kind, layer = group.split()
    return tr("break.whole_layer", layer=f"{tr(f'kind.{kind}')} · {tr('layer', layer=layer)}")


@st.cache_resource(max_entries=32, show_spinner=False)
def ranked(model_id: str, task_name: str, *, _model) -> list[tuple[str, float, float]]:
    """(head id or "kind layer", exact-match drop, exact match) for every head and every layer, largest drop
    first; once per server and model."""
    task, n = get_task(task_name), measurements.RANKING_INPUTS
    base = evaluate(_model, task, n=n, seed=7).exact_match
    config = _model.config
    groups = {h: [h] for h in head_ids(config)}
    for kind in form_of(config).kinds:
        layers = config.n_encoder_layers if ATTENTION_KINDS[kind].stack == "encoder" else config.n_decoder_layers
        for layer in range(1, layers + 1):
            groups[f"{kind} {layer}"] = [f"{kind}-{layer}-{head}" for head in range(1, config.n_heads + 1)]
    rows = []
    for name, heads in groups.items():
        exact = evaluate(_model, task, n=n, seed=7, intervention=intervention_of((), heads)).exact_match
        rows.append((name, base - exact, exact))
    return sorted(rows, key=lambda row: -row[1])


def cheating_decoder(task_name: str, architecture: str) -> None:
    """A model trained without the look-ahead mask: near-perfect when it may read the answer, lost without."""
    st.subheader(tr("break.cheat"))
    st.caption(tr("break.cheat_help", steps=measurements.CHEAT_STEPS))
    if not requested(state.BREAK_CHEAT, tr("break.cheat_run"), ":material/visibility_off:"):
        return
    with st.spinner(tr("break.measuring")):
        model = measurements.cheating_model(task_name, architecture)
    model_id = f"cheat:{task_name}:{architecture}"
    peeking = measurements.measured(model_id, task_name, Intervention(look_ahead=False), _model=model)
    honest = measurements.measured(model_id, task_name, Intervention(), _model=model)
    forced, greedy = st.columns(2)
    forced.metric(tr("break.cheat_forced"), f"{peeking.teacher_forced_accuracy:.0%}")
    greedy.metric(tr("break.cheat_greedy"), f"{honest.exact_match:.0%}")
    st.markdown(tr("break.cheat_explain"))
