"""Step 7, cross-attention: the decoder's row that writes a word looks at the source word it translates."""

from __future__ import annotations

from dataclasses import replace

from transformer_viz.data.tasks import TASKS
from transformer_viz.figures.attention import attention_lines
from transformer_viz.lessons.question import TOKEN, Question, token_choices, unasked
from transformer_viz.lessons.step import Host, Step, held_back, layer_head, not_here, within
from transformer_viz.model.layers import DecoderLayer
from transformer_viz.trace.names import attention_name
from transformer_viz.trace.record import Trace

FRENCH = TASKS["en-fr"].examples[0]  # "the black cat sees the small dog"
CHINESE = TASKS["en-zh"].examples[0]  # "he ate an apple at school yesterday"
TARGET, ZH_TARGET = "noir", "昨天"


def strongest_key(trace: Trace, kind: str, layer: int, head: int, query: int) -> int:
    """The key position query `query` gives the largest weight to."""
    return int(trace[attention_name(kind, layer, "weights")][0, head, query].argmax())


def writer_row(run, target: str) -> int | None:
    """The decoder row that writes `target` (row i reads target position i and predicts position i + 1)."""
    written = run.output_tokens if not run.teacher_forced else run.trace.tgt_tokens[1:]
    return written.index(target) if target in written else None


def show(host: Host) -> Question:
    ctx = host.page()
    if ctx is None:
        return unasked(host.text("lesson.cross.question", layer="?", head="?", target=TARGET), "")
    layer, head = layer_head(ctx, "cross")
    question = host.text("lesson.cross.question", layer=layer + 1, head=head + 1, target=TARGET)
    row = writer_row(ctx.run, TARGET)
    lines = host.slot()  # where the row that writes the target looks is the question: its lines come with the answer
    lines.chart(ctx.figure(attention_lines, "cross", layer, head, hidden=row), key="lesson_lines")
    zh_run = host.run_of(replace(ctx.view, task="en-zh", src_text=CHINESE, tgt_text="", weights="pretrained"))
    chinese = held_back(host, host.text("lesson.cross.held_back"))
    if row is None or zh_run is None or ZH_TARGET not in zh_run.output_tokens:
        return not_here(host, question, host.text("lesson.cross.why", target=TARGET))
    key = strongest_key(ctx.trace, "cross", layer, head, row)
    asked_row = ctx.trace[attention_name("cross", layer, "weights")][0, head, row].numpy()  # (src_len,)

    def reveal(host: Host) -> str:
        lines.again().chart(ctx.figure(attention_lines, "cross", layer, head, query=row), key="lesson_lines_answer")
        zh_layer, zh_head = within(layer, zh_run.trace.n_layers("cross")), within(head, zh_run.trace.config.n_heads)
        zh_row = zh_run.output_tokens.index(ZH_TARGET)
        zh_key = strongest_key(zh_run.trace, "cross", zh_layer, zh_head, zh_row)
        here = chinese.again()
        here.caption(host.text("lesson.cross.zh", text=host.literal(CHINESE)))
        here.chart(attention_lines(zh_run.trace, "cross", zh_layer, zh_head, query=zh_row, min_font=host.min_font,
                                   lang=host.lang), key="lesson_lines_zh")
        return host.text(
            "lesson.cross.answer", word=ctx.trace.src_tokens[key], row=row, row_token=ctx.trace.tgt_tokens[row],
            zh_target=ZH_TARGET, zh_word=zh_run.trace.src_tokens[zh_key], zh_key=zh_key, zh_at=zh_row,
            zh_before=zh_run.output_tokens[zh_row - 1] if zh_row else "<bos>")

    # What a reader would see of the answer: the row's weights, and its strongest key with its weight as hovers say it
    seen = f"{ctx.trace.src_tokens[key]} {asked_row[key]:.2f}"
    return Question(question, TOKEN, reveal, truth=str(key),
                    choices=token_choices(ctx.trace.src_tokens, host.literal), tells=(asked_row, seen))


# The lines of the model's own code this step is about (shown beside it; analysis/source.py).
CODE = ((DecoderLayer.forward, ("x = self.hook_resid_cross(",)),)

STEP = Step(
    "cross", "attention",
    r"\mathrm{softmax}\!\left(\frac{Q_{\mathrm{dec}}K_{\mathrm{enc}}^{\top}}{\sqrt{d_k}}\right)V_{\mathrm{enc}}",
    show, setup={"task": "en-fr", "src_text": FRENCH, "kind": "cross", "head": 1},
    code=CODE, needs=("cross",),
)
