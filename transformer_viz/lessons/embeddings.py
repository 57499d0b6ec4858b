"""Step 2, embeddings: a token's vector is a row of a table, the same wherever the token stands; the position
is added to it."""

from __future__ import annotations

from transformer_viz.figures.embeddings import embedding_pipeline
from transformer_viz.lessons.question import CHOICE, Choice, Question, unasked
from transformer_viz.lessons.step import Host, Step, not_here, repeated_pair
from transformer_viz.model.embeddings import Embeddings
from transformer_viz.trace.record import Trace


def equal_token_rows(trace: Trace, first: int, second: int, side: str = "src") -> tuple[float, float]:
    """Two positions holding the same token: the largest difference of their token embeddings (0: the same
    vector) and of their inputs to layer 1 (embedding + position)."""
    token, total = trace[f"{side}_embed.token"][0], trace[f"{side}_embed.out"][0]  # (seq_len, d_model)
    return (float((token[first] - token[second]).abs().max()), float((total[first] - total[second]).abs().max()))


SAME = 1e-6  # a largest difference below this is the same vector (float32 rounding)
ANSWERS = ("same_same", "same_different", "different_same", "different_different")  # token rows, then layer 1 inputs


def show(host: Host) -> Question:
    ctx = host.page()
    if ctx is None:
        return unasked(host.text("lesson.embeddings.question", first=2, second=3), "")
    side = ctx.trace.form.sides[0]  # the input's table: the source's, or a decoder-only model's one stream
    pair = repeated_pair(ctx.trace.form.input_tokens(ctx.trace, ctx.run.prompt_len))
    first, second = pair or (2, 3)
    question = host.text("lesson.embeddings.question", first=first, second=second)
    host.chart(ctx.figure(embedding_pipeline, side), key="lesson_pipeline")
    if pair is None:
        return not_here(host, question, host.text("lesson.embeddings.why"))
    token, total = equal_token_rows(ctx.trace, first, second, side)
    truth = "_".join("same" if difference < SAME else "different" for difference in (token, total))
    return Question(question, CHOICE, lambda host: host.text("lesson.embeddings.answer", token=token, total=total)
                    + " " + host.text(f"lesson.embeddings.because.{truth}"),
                    truth=truth, choices=tuple(Choice(a, host.text(f"lesson.embeddings.{a}")) for a in ANSWERS),
                    tells=(token, total))


# The lines of the model's own code this step is about (shown beside it; analysis/source.py).
CODE = ((Embeddings.forward, ("token = self.token_table(ids)", "position = self.positional(",
                                  "return self.hook_out(self.dropout(self.norm(token + position)))")),)

STEP = Step("embeddings", "embeddings", r"x_i = E[t_i] + PE_i", show, setup={"src_text": "hello"}, code=CODE)
