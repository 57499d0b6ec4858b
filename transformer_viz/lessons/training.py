"""Step 9, training: a few hundred steps turn random cross-attention into the mirror that reversing needs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import torch

from transformer_viz.figures.fit import MIN_FONT_PX
from transformer_viz.figures.look import base_layout
from transformer_viz.figures.token_axes import token_axis, token_texts
from transformer_viz.figures.training import attention_heatmap_trace
from transformer_viz.i18n import text
from transformer_viz.lessons.question import NUMBER, Question, unasked
from transformer_viz.lessons.step import Host, Step, not_here
from transformer_viz.trace.names import attention_name
from transformer_viz.trace.record import Trace
from transformer_viz.train.loop import _training_step
from transformer_viz.weights.pretrained import load_pretrained

TRAIN_STEPS = 400


def mirror_mass(trace: Trace, layer: int, head: int) -> float:
    """How much of the cross-attention follows the anti-diagonal of reversing: the mean weight that decoder
    row i puts on source position n-1-i, over the n source tokens before <eos>. 1 = a perfect mirror."""
    weights = trace[attention_name("cross", layer, "weights")][0, head].double()  # (tgt_len, src_len)
    n = min(trace.src_tokens.index("<eos>") if "<eos>" in trace.src_tokens else weights.shape[1], weights.shape[0])
    return float(torch.stack([weights[i, n - 1 - i] for i in range(n)]).mean())


def last_layer_mirror(trace: Trace) -> float:
    """The mirror mass of the last cross-attention layer, mean of its heads."""
    layer = trace.n_layers("cross") - 1
    return float(np.mean([mirror_mass(trace, layer, h) for h in range(trace.config.n_heads)]))


def answer_run(host: Host, view, weights: str):
    """The run of the view's input with these weights, teacher-forced on the right answer (None: no such
    weights)."""
    return host.run_of(replace(view, weights=weights, tgt_text=view.src_text[::-1]))


def shipped_steps(task: str) -> int:
    """How many steps the shipped model of a task was trained."""
    return int(load_pretrained(task).meta["training"]["steps_done"])


def start_figure(trace: Trace, *, lang: str, title: str, min_font: int = MIN_FONT_PX) -> go.Figure:
    """The last layer's cross-attention, mean of heads, of a model not trained yet: where training starts. No text
    under `min_font`."""
    weights = trace[attention_name("cross", trace.n_layers("cross") - 1, "weights")][0].mean(0).numpy()
    q_len, k_len = weights.shape  # (tgt_len, src_len)
    fig = go.Figure(attention_heatmap_trace(weights, token_texts(trace.tgt_tokens, q_len),
                                            token_texts(trace.src_tokens, k_len), lang))
    fig.data[0].colorbar.title.side = "right"  # beside the bar: above it, it meets the top tick label
    base_layout(fig, title, height=max(360, 160 + 34 * q_len), min_font=min_font)
    fig.update_xaxes(token_axis(trace.src_tokens, k_len), title_text=text("key", lang))
    fig.update_yaxes(token_axis(trace.tgt_tokens, q_len, reverse=True), title_text=text("query", lang))
    return fig


def show(host: Host) -> Question:
    view = host.view()
    trained_for = host.cached(shipped_steps, view.task) if view.task == "reverse" else 0
    question = host.text("lesson.training.question", shipped_steps=trained_for)
    if view.task != "reverse":
        return not_here(host, question, host.text("task.reverse"))
    architecture = host.architecture(view)
    if architecture is not None and not architecture.toy:  # it trains a fresh model of this project
        return not_here(host, question, host.text("lesson.training.why"))
    free, busy = host.training_time(view)
    host.caption(host.text("lesson.training.time", steps=view.train_steps, free=free, busy=max(1, round(busy / 60)),
                           shipped_steps=trained_for))
    runs = {weights: answer_run(host, view, weights) for weights in ("random", "trained", "pretrained")}
    if runs["random"] is not None and runs["trained"] is None:  # until trained: where training starts
        host.chart(start_figure(runs["random"].trace, lang=host.lang, title=host.text("lesson.training.start"),
                                min_font=host.min_font), key="lesson_training_start")
    steps = host.train(view) or view.train_steps  # draws the live loss curve while it trains, then the result
    before, after, shipped = (None if run is None else last_layer_mirror(run.trace) for run in runs.values())
    if shipped is None:
        return unasked(question, host.text("lesson.training.no_shipped"))

    def reveal(host: Host) -> str:
        answer = host.text("lesson.training.answer", before=before or 0.0, steps=steps, shipped=shipped,
                           after=host.text("lesson.training.not_yet") if after is None else f"{after:.0%}",
                           shipped_steps=trained_for)
        if after is not None and round(after, 2) < round(shipped, 2):
            answer += "\n\n" + host.text("lesson.training.shorter", steps=steps, shipped_steps=trained_for)
        return answer

    return Question(question, NUMBER, reveal, truth=100 * shipped, tolerance=10.0, low=0.0, high=100.0,
                    tells=(shipped,))


# The lines of the model's own code this step is about (shown beside it; analysis/source.py).
CODE = ((_training_step, ("logits = model(*inputs)", "loss = loss_fn(", "loss.backward()", "optimizer.step()")),)

STEP = Step("training", "training", r"\mathcal{L}=-\frac{1}{T}\sum_{t=1}^{T}\log P(y_t\mid y_{<t},\,x)", show,
            setup={"src_text": "hello", "weights": "random", "train_steps": TRAIN_STEPS}, code=CODE,
            needs=("cross",))  # its measure is cross-attention's mirror
