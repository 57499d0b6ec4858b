"""Step 8, decoding: greedy decoding writes the most probable next token, one step at a time; after the answer,
the Decoding page's sampling controls draw the next token at random instead, the distribution before and after."""

from __future__ import annotations

import numpy as np

from transformer_viz.analysis.inference import next_token_distributions, next_token_probabilities
from transformer_viz.data.tasks import TASKS
from transformer_viz.figures.decoding import attention_by_step, sampling_bars, topk_bars
from transformer_viz.lessons.question import CHOICE, Choice, Question
from transformer_viz.lessons.step import Host, Step, held_back, layer_head, not_here
from transformer_viz.model.generation import generation_loop

CHOICES = 4  # the next word is one of the model's likeliest, in the order of the alphabet (not of probability)


def show(host: Host) -> Question:
    ctx = host.page(show_tokens=False)  # the whole output would answer the question: drawn below, cut at step k
    if ctx is None or ctx.run.teacher_forced:
        return not_here(host, host.text("lesson.decoding.question", prefix="…"),
                        host.text("lesson.decoding.why", steps=2))
    k = min(max(ctx.view.step, 1), ctx.run.n_steps) - 1  # the step asked about, from 0: tokens 0..k-1 are written
    trace = ctx.run.step(k)
    question = host.text("lesson.decoding.question", prefix=host.literal(" ".join(trace.tgt_tokens)))
    source, output = host.columns(2)
    form = ctx.trace.form  # a decoder-only model: its prompt, and its self-attention looks back over it
    source.token_chips(host.text(f"tokens.{form.input_name}"), form.input_tokens(ctx.trace, ctx.run.prompt_len))
    written = output.slot()
    written.token_chips(host.text("lesson.decoding.so_far"), ctx.run.output_tokens[:k])
    layer, head = layer_head(ctx, form.aligning_kind)
    vocab = output_vocab(ctx)
    probabilities = next_token_probabilities(trace)
    bars, steps = host.columns([2, 3], gap="large")
    held = held_back(bars, host.text("lesson.decoding.held_back"))
    by_step = steps.slot()

    def draw_steps(where: Host, count: int, key: str) -> None:
        if count:
            where.chart(attention_by_step([ctx.run.step(i) for i in range(count)], layer, head,
                                          produced=ctx.run.output_tokens[:count], kind=form.aligning_kind,
                                          min_font=host.min_font, lang=host.lang), key=key)

    draw_steps(by_step, k, "lesson_by_step")
    ranked = [int(i) for i in np.argsort(probabilities)[::-1]]
    first, second = ranked[:2]

    def reveal(host: Host) -> str:
        written.again().token_chips(host.text("tokens.output"), ctx.run.output_tokens)
        held.again().chart(next_word_bars(ctx, k, host),
                           key="lesson_topk" if ctx.run.sampling is None else "lesson_sampling")
        draw_steps(by_step.again(), k + 1, "lesson_by_step_answer")
        host.caption(host.text("lesson.decoding.try_sampling"))
        host.sampling()
        answer = host.text("lesson.decoding.answer", token=vocab.tokens[first], p=probabilities[first],
                           second=vocab.tokens[second], p2=probabilities[second])
        if ctx.run.sampling is not None:
            answer += " " + host.text("lesson.decoding.drawn", token=host.literal(ctx.run.output_tokens[k]))
        return answer

    likeliest = sorted(ranked[:CHOICES], key=lambda i: vocab.tokens[i])
    return Question(question, CHOICE, reveal, truth=str(first),
                    choices=tuple(Choice(str(i), host.literal(vocab.tokens[i])) for i in likeliest),
                    tells=(float(probabilities[first]), float(probabilities[second])))


def output_vocab(ctx):
    """The tokens of the shown model's output ids (its Architecture's)."""
    return ctx.architecture.output_vocab(ctx.model, ctx.architecture.tasks().get(ctx.view.task))


def next_word_bars(ctx, k: int, host: Host):
    """The next-word distribution at step k (from 0), the written word highlighted; when sampling, the
    distribution before and after temperature, top-k and top-p."""
    trace, vocab = ctx.run.step(k), output_vocab(ctx)
    written = vocab.index(ctx.run.output_tokens[k])
    if ctx.run.sampling is None:
        return topk_bars(next_token_probabilities(trace), vocab.tokens, k=5, chosen=written,
                         min_font=host.min_font, lang=host.lang)
    before, after = next_token_distributions(trace, ctx.run.sampling)
    return sampling_bars(before, after, vocab.tokens, chosen=written, k=6, min_font=host.min_font, lang=host.lang)


# The lines of the model's own code this step is about (shown beside it; analysis/source.py).
CODE = ((generation_loop, ("next_ids = next_tokens(logits[:, -1], sampling, generator)",
                            "ids = torch.cat([ids, next_ids[:, None]], dim=1)")),)

STEP = Step("decoding", "decoding", r"y_t=\arg\max_{w}\ P(w\mid y_{<t},\,x)", show,
            setup={"task": "en-fr", "src_text": TASKS["en-fr"].examples[0], "step": 3, "head": 1}, code=CODE)
