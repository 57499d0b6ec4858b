"""Step 12, Is attention an explanation? The attention of one output token beside what leaving each input word
out does to it: the brightest cell and the word the model needs are not always the same."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from transformer_viz.analysis.attribution import Attribution, explain, leave_one_out, telling_output
from transformer_viz.data.tasks import TASKS
from transformer_viz.data.vocab import Vocab
from transformer_viz.figures.attribution import attribution_figure
from transformer_viz.lessons.question import TOKEN, Question, token_choices, unasked
from transformer_viz.lessons.step import Host, Step, held_back, not_here

EXAMPLE = "the girl sees a big house"  # "une" looks at "a"; "house" (la maison, feminine) decides it


def explained(ctx) -> list[Attribution]:
    """Every method for each output token of the run (the model's own answer), computed once per run."""
    vocab = ctx.architecture.output_vocab(ctx.model, TASKS[ctx.view.task])
    positions = [p for p, token in enumerate(ctx.trace.tgt_tokens) if token not in (Vocab.PAD, Vocab.EOS)]
    return [explain(ctx.trace, p, vocab.tokens, ctx.model, TASKS[ctx.view.task]) for p in positions]


def attention_only(result: Attribution) -> Attribution:
    """The same token with its attention rows alone: what the class sees before the answer."""
    return replace(result, scores={m: s for m, s in result.scores.items() if m.startswith("attention.")})


def explanation_figures(ctx, *, min_font: int, lang: str) -> dict:
    result = telling_output(explained(ctx))
    return {"result": result,
            "before": attribution_figure(attention_only(result), min_font=min_font, lang=lang),
            "after": attribution_figure(result, min_font=min_font, lang=lang)}


def show(host: Host) -> Question:
    ctx = host.page()
    unknown = host.text("lesson.explanation.question", output="…", attended="…")
    if ctx is None:
        return unasked(unknown, "")
    if not ctx.architecture.toy:  # gradients and leave-one-out need a model of this project
        return not_here(host, unknown, host.text("lesson.explanation.why"))
    figures = ctx.figures(explanation_figures)
    result = figures["result"]
    last = max(int(method.split(".")[1]) for method in result.scores if method.startswith("attention."))
    attention, left_out = result.scores[f"attention.{last}"], result.scores["leave_one_out"]
    attended, needed = int(np.argmax(attention)), int(np.argmax(left_out))
    question = host.text("lesson.explanation.question", output=host.literal(result.output),
                         attended=host.literal(result.tokens[attended]))
    figure = host.slot()
    figure.chart(figures["before"], key="lesson_explanation_attention")
    held_back(host, host.text("lesson.explanation.held_back"))

    def reveal(host: Host) -> str:
        figure.again().chart(figures["after"], key="lesson_explanation_methods")
        agreement = result.correlations()
        return host.text(
            "lesson.explanation.answer", output=host.literal(result.output), needed=host.literal(result.tokens[needed]),
            drop=left_out[needed], attended=host.literal(result.tokens[attended]), weight=attention[attended],
            attended_drop=left_out[attended], needed_weight=attention[needed], raw=agreement[f"attention.{last}"],
            flow=agreement[f"flow.{last}"], integrated=agreement["integrated_gradients"])

    return Question(question, TOKEN, reveal, truth=str(needed), choices=token_choices(result.tokens, host.literal),
                    tells=(left_out,))


# The lines that measure the answer: the batch with one word left out per row, and the fall of log p.
CODE = ((leave_one_out, ("blanked = ", "blanked[torch.arange", "log_p = ", "return (log_p[0]")),)

STEP = Step(
    "explanation", "attribution",
    r"\mathrm{LOO}_i=\log p(y\mid x)-\log p\big(y\mid x_{i\to\langle unk\rangle}\big)",
    show, setup={"task": "en-fr", "src_text": EXAMPLE, "architecture": "encoder_decoder", "output": 4},
    code=CODE,
)
