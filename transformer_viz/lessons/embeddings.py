"""Step 2, embeddings: a token's vector is a row of a table, the same wherever the token stands; the position
is added to it."""

from __future__ import annotations

from transformer_viz.figures.embeddings import embedding_pipeline
from transformer_viz.lessons.step import Host, Step, not_here, repeated_pair
from transformer_viz.model.embeddings import Embeddings
from transformer_viz.trace.record import Trace


def equal_token_rows(trace: Trace, first: int, second: int, side: str = "src") -> tuple[float, float]:
    """Two positions holding the same token: the largest difference of their token embeddings (0: the same
    vector) and of their inputs to layer 1 (embedding + position)."""
    token, total = trace[f"{side}_embed.token"][0], trace[f"{side}_embed.out"][0]  # (seq_len, d_model)
    return (float((token[first] - token[second]).abs().max()), float((total[first] - total[second]).abs().max()))


def show(host: Host) -> tuple[str, str]:
    ctx = host.page()
    if ctx is None:
        return host.text("lesson.embeddings.question", first=2, second=3), ""
    side = ctx.trace.form.sides[0]  # the input's table: the source's, or a decoder-only model's one stream
    pair = repeated_pair(ctx.trace.form.input_tokens(ctx.trace, ctx.run.prompt_len))
    first, second = pair or (2, 3)
    question = host.text("lesson.embeddings.question", first=first, second=second)
    host.chart(ctx.figure(embedding_pipeline, side), key="lesson_pipeline")
    if pair is None:
        return question, not_here(host, host.text("lesson.embeddings.why"))
    token, total = equal_token_rows(ctx.trace, first, second, side)
    return question, host.text("lesson.embeddings.answer", token=token, total=total)


# The lines of the model's own code this step is about (shown beside it; analysis/source.py).
CODE = ((Embeddings.forward, ("token = self.token_table(ids)", "position = self.positional(",
                                  "return self.hook_out(self.dropout(self.norm(token + position)))")),)

STEP = Step("embeddings", "embeddings", r"x_i = E[t_i] + PE_i", show, setup={"src_text": "hello"}, code=CODE)
