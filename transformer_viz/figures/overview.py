"""The whole model at a glance: the paper's Figure 1 drawn with Plotly shapes, live shapes and counts.

The blocks and their order come from `overview_blocks`; this module lays them out in two
columns with the residual lines, the memory route, the heads, the positional encoding glyph
and the output head. Near-transparent markers over the blocks carry the app page to open
(`customdata`), read back from a Streamlit selection by `diagram_selection`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from transformer_viz.figures.clicks import CLICK_OPACITY, target_marker
from transformer_viz.figures.colours import SEQUENTIAL
from transformer_viz.figures.fit import GAP_PX, LINE_SPACING, MIN_FONT_PX, at_least, shown_text, wrapped
from transformer_viz.figures.look import FONT
from transformer_viz.figures.overview_blocks import (
    ROW,
    THIN,
    Row,
    column_rows,
    join,
    layer_rows,
    params,
)
from transformer_viz.i18n import text
from transformer_viz.trace.form import form_of

PAGES = ("embeddings", "attention", "masks", "head", "decoding")

# (fill, border) per kind of block, close to the paper's colours.
STYLES = {
    "tokens": ("#eef0f2", "#6c757d"), "embed": ("#fadbd8", "#c0392b"), "attn": ("#fde3c4", "#d35400"),
    "ffn": ("#d6eaf8", "#2471a3"), "norm": ("#fcf3cf", "#b7950b"), "linear": ("#e8daef", "#7d3c98"),
    "softmax": ("#d5f5e3", "#1e8449"), "probs": ("#ffffff", "#1e8449"), "frame": ("#f6f7f9", "#adb5bd"),
}
INK = "#1f2933"
GAP = 0.17  # vertical gap between blocks (data units)
WIDTH, SIDE = 4.2, 1.3  # column width, room beside a column for N× and the positional encoding
ENC_X0 = SIDE
DEC_X0 = ENC_X0 + WIDTH + 1.6
UNIT_PX, MAX_HEIGHT = 62, 720  # pixels per data unit in a ~860 px wide column; never taller than a projector
# Larger text than a screen's (presenter mode): the diagram fits a 790 px column at this scale, a block's detail has
# lines of its own, wrapped to the block, the block as tall as its lines; room to the left for the text beside it.
ROOMY_UNIT_PX, ROOMY_LEFT = 54, 0.5
BOLD = 1.1  # a bold label is about this much wider than `text_em` says


class Canvas:
    """Collects shapes, annotations and click targets in data units (y grows upwards)."""

    def __init__(self, lang: str = "en", min_font: int = MIN_FONT_PX) -> None:
        self.lang = lang  # of every word drawn
        self.min_font = min_font  # no text smaller
        self.roomy = min_font > MIN_FONT_PX
        self.shapes: list[dict] = []
        self.annotations: list[dict] = []
        self.targets: list[tuple[float, float, str | None, str]] = []

    def rect(self, name, x0, y0, x1, y1, style, radius=0.08, dash=None, width=1.6) -> None:
        fill, line = STYLES[style]
        r = min(radius, (x1 - x0) / 2, (y1 - y0) / 2)
        path = (f"M{x0 + r},{y0} L{x1 - r},{y0} Q{x1},{y0} {x1},{y0 + r} L{x1},{y1 - r} Q{x1},{y1} {x1 - r},{y1} "
                f"L{x0 + r},{y1} Q{x0},{y1} {x0},{y1 - r} L{x0},{y0 + r} Q{x0},{y0} {x0 + r},{y0} Z")
        self.shapes.append(dict(type="path", path=path, fillcolor=fill, line=dict(color=line, width=width, dash=dash),
                                layer="below", name=name))

    def circle(self, name, cx, cy, r, fill="#ffffff", line="#555555") -> None:
        self.shapes.append(dict(type="circle", x0=cx - r, y0=cy - r, x1=cx + r, y1=cy + r, fillcolor=fill,
                                line=dict(color=line, width=1.6), layer="below", name=name))

    def path(self, points, colour="#555555", width=1.6, dash=None) -> None:
        d = "M" + " L".join(f"{x},{y}" for x, y in points)
        self.shapes.append(dict(type="path", path=d, line=dict(color=colour, width=width, dash=dash), layer="below"))

    def arrow(self, x0, y0, x1, y1, colour="#555555") -> None:
        self.annotations.append(dict(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                                     showarrow=True, arrowhead=2, arrowsize=1.1, arrowwidth=1.6, arrowcolor=colour))

    def text(self, x, y, text, size=13, colour=INK, anchor="center", **extra) -> None:
        self.annotations.append(dict(x=x, y=y, xref="x", yref="y", text=text, showarrow=False, xanchor=anchor,
                                     font=dict(size=at_least(size, self.min_font), color=colour,
                                               family=FONT["family"]), **extra))

    def px(self, size: int) -> int:
        """A font size for a span inside a text: never under min_font."""
        return at_least(size, self.min_font)

    def target(self, x0, x1, y, page, hover) -> None:
        """Invisible hover / click points along a block's centre line, about every 0.3 units."""
        n = max(1, round((x1 - x0) / 0.3))
        self.targets += [(x0 + (i + 0.5) * (x1 - x0) / n, y, page, hover) for i in range(n)]

    def block(self, row: Row, x0: float, y0: float, x1: float) -> None:
        y1, cy = y0 + row.height, y0 + row.height / 2
        hover = f"<b>{row.label}</b><br>{row.hover}" + (f"<br>{row.detail}" if row.detail else "")
        if row.page:
            page = text(f"page.{row.page}", self.lang)
            hover += f"<br><i>{text('diagram.open', self.lang, page=page)}</i>"
        if row.add:
            self.circle(row.key, (x0 + x1) / 2, cy, row.height / 2)
            self.text((x0 + x1) / 2, cy, "<b>+</b>", size=16)
            self.target((x0 + x1) / 2 - 0.15, (x0 + x1) / 2 + 0.15, cy, row.page, hover)
            return
        self.rect(row.key, x0, y0, x1, y1, row.style)
        text_x1 = x1 - (head_strip(row.heads) if row.heads else 0.0)
        detail = f"<span style='font-size:{self.px(12 if row.height >= ROW else 11)}px'>{row.detail}</span>"
        stacked = row.height >= ROW or self.roomy
        words = f"<b>{row.label}</b>" + (("<br>" if stacked else "  ") + detail if row.detail else "")
        self.text((x0 + text_x1) / 2, cy, words, size=14 if row.height >= ROW else 13)
        self.target(x0, text_x1, cy, row.page, hover)
        if row.heads:
            self.heads(row, text_x1, cy)

    def heads(self, row: Row, x0: float, cy: float) -> None:
        """One small coloured square per head (at most 8, in two rows), each opening the 'Inside one head' page."""
        shown, per_row = head_grid(row.heads)
        colours = sample_colorscale(SEQUENTIAL, list(np.linspace(0.15, 0.9, shown)))
        for h in range(shown):
            line, col = divmod(h, per_row)
            hx = x0 + 0.06 + col * HEAD_STEP
            hy = cy if shown == per_row else cy + (0.11 if line == 0 else -0.11)
            self.shapes.append(dict(type="rect", x0=hx, y0=hy - 0.085, x1=hx + 0.17, y1=hy + 0.085,
                                    name=f"{row.key}.head{h}", fillcolor=colours[h],
                                    line=dict(color="#ffffff", width=1)))
            self.targets.append((hx + 0.085, hy, "head", "<b>" + text(
                "diagram.head", self.lang, block=row.label, head=h + 1, heads=row.heads) + "</b><br>"
                + text("diagram.open_head", self.lang)))


HEAD_STEP = 0.22


def fitted(row: Row, width: float, min_font: int) -> Row:
    """With text larger than a screen's: the row's label and detail wrapped to its block (`width` units wide, the
    head squares left out) at ROOMY_UNIT_PX, and the row as tall as its lines. Unchanged on a screen."""
    if min_font <= MIN_FONT_PX or row.add:
        return row
    room = (width - (head_strip(row.heads) if row.heads else 0.0)) * ROOMY_UNIT_PX - 2 * GAP_PX
    label = wrapped(row.label, room / BOLD, min_font)
    detail = wrapped(row.detail, room, min_font) if row.detail else ""
    lines = len(shown_text(label)) + (len(shown_text(detail)) if detail else 0)
    return replace(row, label=label, detail=detail,
                   height=max(row.height, (lines * min_font * LINE_SPACING + 2 * GAP_PX) / ROOMY_UNIT_PX))


def head_grid(n_heads: int) -> tuple[int, int]:
    """(squares drawn, squares per row): up to 8 heads, two rows from 3 heads on."""
    shown = min(n_heads, 8)
    return shown, shown if shown <= 2 else math.ceil(shown / 2)


def head_strip(n_heads: int) -> float:
    """Width taken by the head squares at the right of an attention box."""
    return 0.12 + HEAD_STEP * head_grid(n_heads)[1]


def stack_column(canvas: Canvas, config, counts, shapes, side: str) -> dict[str, float]:
    """Draw one column bottom to top; returns the y of its output and of its cross-attention (decoder)."""
    stack = "encoder" if side == "src" else "decoder"
    x0 = ENC_X0 if side == "src" else DEC_X0
    x1, cx = x0 + WIDTH, x0 + WIDTH / 2
    outside = -1 if side == "src" else 1  # N×, positional encoding and residual lines go on the outer side
    lang = canvas.lang
    before = [fitted(row, WIDTH, canvas.min_font) for row in column_rows(config, counts, shapes, side, lang)]
    layer, residuals = layer_rows(config, counts, shapes, stack, lang)
    layer = [fitted(row, WIDTH, canvas.min_font) for row in layer]
    y, centres, spots = 0.15, {}, {}
    previous_top = None
    for part, rows in (("before", before), ("layer", layer)):
        if part == "layer":
            frame_y0 = y
            y += 0.2
        for row in rows:
            if previous_top is not None:
                canvas.arrow(cx, previous_top, cx, y)
            canvas.block(row, x0, y, x1)
            centres[row.key] = y + row.height / 2
            spots[row.key] = (y, y + row.height)
            previous_top = y + row.height
            y = previous_top + GAP
    frame_y1 = y + 0.03
    fx0, fx1 = x0 - 0.32, x1 + 0.32
    canvas.rect(f"{stack}.frame", fx0, frame_y0, fx1, frame_y1, "frame", radius=0.18, dash="dot")
    canvas.shapes.insert(0, canvas.shapes.pop())  # the frame behind its blocks
    n_layers = config.n_encoder_layers if side == "src" else config.n_decoder_layers
    layer_key = f"{stack}.layers.0"
    side_x = fx0 - 0.06 if side == "src" else fx1 + 0.06
    canvas.text(side_x, (frame_y0 + frame_y1) / 2, f"<b style='font-size:26px'>{n_layers}×</b><br>"
                + text(f"diagram.{stack}_layer", lang)
                + (f"<br><span style='font-size:{canvas.px(11)}px'>"
                   f"{text('diagram.params_each', lang, n=counts[layer_key])}</span>" if layer_key in counts else ""),
                anchor="right" if side == "src" else "left", size=13)
    # Residual connections: from the branch point below a sublayer round to its add.
    for start, end in residuals:
        lane = (x0 - 0.2) if side == "src" else (x1 + 0.2)
        y_branch = spots[layer[start].key][0] - GAP / 2
        y_add = centres[layer[end].key]
        edge = (cx - THIN / 2 if side == "src" else cx + THIN / 2) if layer[end].add else (x0 if side == "src" else x1)
        canvas.path([(cx, y_branch), (lane, y_branch), (lane, y_add)], colour="#7a7a7a")
        canvas.arrow(lane, y_add, edge, y_add, colour="#7a7a7a")
    # Positional encoding beside the ⊕ of the embeddings; rotary embeddings beside the self-attention they turn.
    gx = cx + outside * (WIDTH / 2 + 0.72)
    if config.positional == "rotary":
        add_y = centres[f"{stack}.self_attn"]
        if form_of(config).one_stream:  # the free side, where an encoder would stand (the "N× layer" label is outside)
            outside, gx = -1, cx - WIDTH / 2 - 1.0
        elif side == "tgt":  # beyond the decoder's "N× layer" label, under the softmax
            gx = cx + WIDTH / 2 + 1.9
        positional_glyph(canvas, side, gx, add_y, config, counts)
        canvas.arrow(gx - outside * 0.3, add_y, cx + outside * WIDTH / 2, add_y)
    else:
        add_y = centres[f"{side}.add_position"]
        positional_glyph(canvas, side, gx, add_y, config, counts)
        canvas.arrow(gx - outside * 0.3, add_y, cx + outside * THIN / 2, add_y)
    if config.norm_first:
        canvas.arrow(cx, frame_y1, cx, frame_y1 + GAP)
        final = fitted(Row(f"{stack}.final_norm", "norm", text("diagram.final_norm", lang),
                           params(counts, f"{stack}.norm", lang), THIN, hover=text("diagram.final_norm.hover", lang)),
                       WIDTH, canvas.min_font)
        canvas.block(final, x0, frame_y1 + GAP, x1)
        top = frame_y1 + GAP + final.height
    else:
        top = frame_y1
        canvas.path([(cx, previous_top), (cx, frame_y1)])
    return {"top": top, "cross": centres.get("decoder.cross_attn", 0.0), "cx": cx}


def positional_glyph(canvas: Canvas, side: str, gx: float, gy: float, config, counts) -> None:
    """The paper's ~ circle for a sinusoidal encoding; a grid for a learned table; a crossed circle for none."""
    r = 0.3
    canvas.circle(f"{side}.positional", gx, gy, r, fill="#ffffff", line="#c0392b")
    kind = config.positional
    if kind.startswith("sinusoidal"):
        xs = np.linspace(-0.8, 0.8, 25)
        canvas.path([(gx + x * r, gy + 0.45 * r * math.sin(x * math.pi * 1.25)) for x in xs], colour="#c0392b", width=2)
    elif kind == "rotary":  # an arc with its arrowhead: each pair of q's and k's dimensions turned
        arc = np.linspace(0.25 * math.pi, 1.85 * math.pi, 25)
        canvas.path([(gx + 0.6 * r * math.cos(a), gy + 0.6 * r * math.sin(a)) for a in arc], colour="#c0392b", width=2)
        tip = (gx + 0.6 * r * math.cos(arc[-1]), gy + 0.6 * r * math.sin(arc[-1]))
        canvas.path([(tip[0] - 0.09, tip[1] - 0.02), tip, (tip[0] - 0.02, tip[1] + 0.09)], colour="#c0392b", width=2)
    elif kind == "learned":
        for i in range(3):
            for j in range(3):
                cx, cy = gx + (i - 1) * 0.14, gy + (j - 1) * 0.14
                canvas.shapes.append(dict(type="rect", x0=cx - 0.055, x1=cx + 0.055, y0=cy - 0.055, y1=cy + 0.055,
                                          fillcolor="#e6a09a" if (i + j) % 2 else "#f5d0cc", line=dict(width=0)))
    else:
        canvas.path([(gx - 0.7 * r, gy - 0.7 * r), (gx + 0.7 * r, gy + 0.7 * r)], colour="#b00020", width=2.5)
    lang = canvas.lang
    name = text(f"diagram.positional.{kind}", lang, params=params(counts, f"{side}_embed.positional", lang))
    if kind == "none":
        name = f"<span style='color:#b00020'>{name}</span>"
    canvas.text(gx, gy - r - 0.05, f"{text('diagram.positional', lang)}<br>{name}", size=11, yanchor="top")
    canvas.target(gx - 0.3, gx + 0.3, gy, "embeddings", text("diagram.positional.hover", lang, kind=text(
        f"encoding.{kind}", lang)) + "<br>" + text("diagram.open", lang, page=text("page.embeddings", lang)))


def architecture_diagram(config, counts: Mapping[str, int], shapes: Mapping[str, str], *,
                         min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """The encoder-decoder picture (a decoder-only model's: the decoder alone) for `config`, labelled with `counts`
    (parameter_counts) and `shapes` (block_shapes).

    Shape names ("encoder.norm1", "decoder.cross_attn", ...) let tests read the block order; `lang` is
    the language of every word drawn. No text under `min_font`: above the screen's, the blocks grow to hold it
    (`fitted`) and the diagram may be taller than MAX_HEIGHT.
    """
    canvas = Canvas(lang, min_font)
    if form_of(config).one_stream:  # GPT's form: the decoder's column alone, no encoder and no memory
        dec = stack_column(canvas, config, counts, shapes, "tgt")
    else:
        dec = encoder_and_decoder(canvas, config, counts, shapes)
    # Output head: linear above the decoder, softmax beside it, the probabilities below the softmax.
    y0, x1 = dec["top"] + 0.35, DEC_X0 + WIDTH
    canvas.arrow(dec["cx"], dec["top"], dec["cx"], y0)
    linear = fitted(Row("output_proj", "linear", text("diagram.linear", lang), join(shapes.get("logits", ""),
                        params(counts, "output_proj", lang)), page="decoding",
                        hover=text("diagram.linear.hover", lang)), WIDTH, min_font)
    canvas.block(linear, DEC_X0, y0, x1)
    canvas.arrow(x1, y0 + linear.height / 2, x1 + 0.45, y0 + linear.height / 2)
    softmax = Row("softmax", "softmax", "Softmax", height=linear.height, page="decoding",
                  hover=text("diagram.softmax.hover", lang))
    canvas.block(softmax, x1 + 0.45, y0, x1 + 2.45)
    probabilities = fitted(Row("probabilities", "probs", text("diagram.probabilities", lang),
                               text("diagram.next_token", lang, shape=shapes.get("probabilities", "")),
                               page="decoding", hover=text("diagram.probabilities.hover", lang)), 2.0, min_font)
    probs_y0 = y0 - probabilities.height - 0.4
    canvas.arrow(x1 + 1.45, y0, x1 + 1.45, probs_y0 + probabilities.height)
    canvas.block(probabilities, x1 + 0.45, probs_y0, x1 + 2.45)
    width_units, height_units = x1 + 2.5, y0 + linear.height + 0.1
    norm_text = text("diagram.pre_ln" if config.norm_first else "diagram.post_ln", lang)
    title = text("diagram.title" + form_of(config).words, lang)
    canvas.text(0.05, height_units - 0.05, f"<b style='font-size:20px'>{title}</b><br>"
                + text("diagram.sizes", lang, total=counts.get("total", 0), d_model=config.d_model,
                        heads=config.n_heads, d_head=config.d_head)
                + f"<br>{norm_text}<br><i>{text('diagram.click', lang)}</i>", anchor="left", yanchor="top",
                align="left")
    fig = go.Figure(hover_targets(canvas.targets))
    unit_px = ROOMY_UNIT_PX if canvas.roomy else min(UNIT_PX, (MAX_HEIGHT - 10) / height_units)
    left = -ROOMY_LEFT if canvas.roomy else 0.0
    fig.update_layout(
        shapes=canvas.shapes, annotations=canvas.annotations, template="none",
        font=dict(FONT, size=at_least(FONT["size"], min_font)),
        height=round(height_units * unit_px) + 10, margin=dict(l=5, r=5, t=5, b=5), showlegend=False,
        hovermode="closest", dragmode=False, plot_bgcolor="#ffffff", paper_bgcolor="#ffffff",
        hoverlabel=dict(font_size=14, align="left"),
    )
    fig.update_xaxes(visible=False, range=[left, width_units], fixedrange=True)
    fig.update_yaxes(visible=False, range=[0, height_units], fixedrange=True, scaleanchor="x", scaleratio=1)
    return fig


def encoder_and_decoder(canvas: Canvas, config, counts, shapes) -> dict[str, float]:
    """Both columns, and the memory: the encoder's output becomes the keys and values of every cross-attention.
    Returns the decoder's column (stack_column)."""
    enc = stack_column(canvas, config, counts, shapes, "src")
    dec = stack_column(canvas, config, counts, shapes, "tgt")
    lane_x, route_y, lang = ENC_X0 + WIDTH + 0.8, enc["top"] + 0.4, canvas.lang
    canvas.path([(enc["cx"], enc["top"]), (enc["cx"], route_y), (lane_x, route_y), (lane_x, dec["cross"])],
                colour="#d35400", width=2.2)
    canvas.arrow(lane_x, dec["cross"], DEC_X0, dec["cross"], colour="#d35400")
    canvas.text(enc["cx"] + 0.12, route_y - 0.04, f"<b>{text('diagram.memory', lang)}</b> {shapes.get('memory', '')}",
                size=12, colour="#a04000", anchor="left", yanchor="top")
    canvas.text((lane_x + DEC_X0) / 2, dec["cross"] + 0.04, "<b>K, V</b>", size=12, colour="#a04000", yanchor="bottom")
    return dec


def hover_targets(targets) -> list[go.Scatter]:
    """Clickable points (customdata = page key) and hover-only points for blocks without a page."""
    traces = []
    for clickable in (True, False):
        chosen = [t for t in targets if (t[2] is not None) == clickable]
        if not chosen:
            continue
        xs, ys, pages, texts = zip(*chosen, strict=True)
        traces.append(go.Scatter(
            x=xs, y=ys, mode="markers", hovertext=texts, hoverinfo="text", name="blocks" if clickable else "info",
            customdata=list(pages) if clickable else None,
            marker=target_marker(20),
            selected=dict(marker=dict(opacity=CLICK_OPACITY)), unselected=dict(marker=dict(opacity=CLICK_OPACITY)),
        ))
    return traces


def diagram_selection(event) -> str | None:
    """The page key of the clicked block in a Streamlit plotly selection event, or None."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError, AttributeError):
        return None
    for point in points or []:
        data = point.get("customdata") if isinstance(point, Mapping) else None
        if isinstance(data, (list, tuple)):
            data = data[0] if data else None
        if data in PAGES:
            return data
    return None
