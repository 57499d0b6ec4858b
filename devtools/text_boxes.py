"""Where the text of the rendered Plotly figures sits, and what collides: for the presenter-mode browser test.

`FIGURE_TEXTS` runs in the page and returns, per `.js-plotly-plot`, its title, its SVG box and the
corners of every visible text element (tick labels, titles, annotations, cell texts, legend texts)
in CSS pixels of the viewport. The rest is plain geometry on those corners, testable without a
browser: rotated labels are compared as the rotated rectangles they are (separating axes), not
as their upright bounding boxes, which would overlap for any two neighbouring 45° labels.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

TOLERANCE_PX = 1.5  # text boxes include the font's ascent and descent: lines set tight touch by a pixel
MIN_FONT_PX = 9.5  # smaller text is unreadable from the back of a classroom

# Corners of each text element: getBBox() (its own user space, all tspans) through getScreenCTM().
FIGURE_TEXTS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((plot, index) => {
  const svg = plot.querySelector('svg.main-svg');
  const box = svg ? svg.getBoundingClientRect() : plot.getBoundingClientRect();
  const layout = plot._fullLayout || plot.layout || {};
  const titleText = (layout.title && layout.title.text) || '';
  const texts = [];
  for (const root of plot.querySelectorAll('svg.main-svg')) {
    for (const el of root.querySelectorAll('text')) {
      const text = el.textContent.trim();
      if (!text || el.closest('.hoverlayer')) continue;
      let hidden = false;
      for (let node = el; node && node !== root; node = node.parentNode) {
        const style = getComputedStyle(node);
        if (style.display === 'none' || style.visibility === 'hidden' || parseFloat(style.opacity) === 0) {
          hidden = true;
          break;
        }
      }
      if (hidden) continue;
      const b = el.getBBox();
      if (b.width === 0 || b.height === 0) continue;
      const m = el.getScreenCTM();
      const corners = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
        .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
      const group = el.closest('g[class]');
      texts.push({text, corners, font: parseFloat(getComputedStyle(el).fontSize),
                  role: (el.getAttribute('class') || (group && group.getAttribute('class')) || '').split(' ')[0]});
    }
  }
  return {index, title: titleText, box: [box.left, box.top, box.right, box.bottom], texts};
})"""

# Whether the page scrolls sideways, how wide the viewport is (CSS px), and the page's own texts that are cut
# off or too small: a formula wider than its column (KaTeX hides the rest) or under 12 px, a label shortened
# to "…" (a button's; not one hidden from the eye for a screen reader), a block whose content scrolls sideways
# out of sight (a row of pills).
PAGE_WIDTH = """() => {
  const main = document.querySelector('[data-testid=stMain]') || document.body;
  const clipped = [];
  for (const el of main.querySelectorAll('.katex-display')) {  // scrolls inside: its struts overhang by 2 px
    const tex = el.querySelector('annotation')?.textContent.trim().slice(0, 40) || '';
    if (el.scrollWidth > el.clientWidth + 4) clipped.push(['cut off', 'formula', tex]);
    const font = parseFloat(getComputedStyle(el.querySelector('.katex') || el).fontSize);
    if (!(font >= 12)) clipped.push(['too small', `formula at ${font} px`, tex]);
  }
  for (const el of main.querySelectorAll('p, span, div')) {
    const style = getComputedStyle(el), text = el.textContent.trim();
    if (!text || el.scrollWidth <= el.clientWidth + 2 || el.closest('.js-plotly-plot, .katex-display')) continue;
    if (el.getBoundingClientRect().width <= 1) continue;  // visually hidden, read only by a screen reader
    if (style.textOverflow === 'ellipsis') clipped.push(['cut off', 'label', text.slice(0, 40)]);
    else if (['auto', 'scroll', 'hidden'].includes(style.overflowX) && el.clientWidth > 40)
      clipped.push(['cut off', 'scrolls sideways', text.slice(0, 40)]);  // e.g. a row of pills
  }
  return {viewport: document.documentElement.clientWidth, scroll: document.documentElement.scrollWidth, clipped};
}"""


@dataclass(frozen=True)
class Text:
    text: str
    corners: tuple[tuple[float, float], ...]  # four corners, CSS px of the viewport
    font: float
    role: str

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        xs, ys = [x for x, _ in self.corners], [y for _, y in self.corners]
        return min(xs), min(ys), max(xs), max(ys)


@dataclass(frozen=True)
class Figure:
    index: int
    title: str
    box: tuple[float, float, float, float]  # left, top, right, bottom of the figure's SVG
    texts: tuple[Text, ...]

    @classmethod
    def from_page(cls, raw: dict) -> Figure:
        texts = tuple(Text(t["text"], tuple(map(tuple, t["corners"])), t["font"], role_name(t["role"]))
                      for t in raw["texts"])
        return cls(raw["index"], plain(raw["title"]), tuple(raw["box"]), texts)

    @property
    def name(self) -> str:
        """"#2 Layer 1 · Head 3": the figure's place on the page (two figures may share a title) and its title."""
        return f"#{self.index + 1} {self.title}".rstrip()


@dataclass(frozen=True)
class Problem:
    figure: str
    kind: str  # "overlap", "cut off", "too small", "too wide"
    detail: str


def plain(text: str) -> str:
    """Title text without its markup, short enough for a table."""
    text = re.sub(r"<[^>]+>", " ", text or "").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "…"


ROLES = {"heatmap-label": "cell", "gtitle": "title", "gtitle-subtitle": "subtitle", "annotation-text": "annotation",
         "legendtext": "legend", "bartext": "bar text", "textpoint": "point text"}


def role_name(css_class: str) -> str:
    """What a text is, from Plotly's class for it: "xtick" -> "x tick", "ycb1a2b3ctitle" -> "colour bar title"."""
    if re.fullmatch(r"[xy]cb[0-9a-f]+(tick|title)", css_class):
        return "colour bar " + ("tick" if css_class.endswith("tick") else "title")
    if match := re.fullmatch(r"([xy]\d*)(tick|title)", css_class):
        return f"{match[1]} {match[2]}"
    return ROLES.get(css_class, css_class or "text")


def overlap_depth(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]]) -> float:
    """How far two convex polygons (corner lists) overlap, in px: the smallest push along any edge normal
    that separates them (0 when they do not touch)."""
    depth = float("inf")
    for polygon in (a, b):
        for (x0, y0), (x1, y1) in zip(polygon, [*polygon[1:], polygon[0]], strict=True):
            nx, ny = y0 - y1, x1 - x0
            length = (nx * nx + ny * ny) ** 0.5
            if length == 0:
                continue
            nx, ny = nx / length, ny / length
            pa = [x * nx + y * ny for x, y in a]
            pb = [x * nx + y * ny for x, y in b]
            push = min(max(pa), max(pb)) - max(min(pa), min(pb))
            if push <= 0:
                return 0.0
            depth = min(depth, push)
    return 0.0 if depth == float("inf") else depth


def same_drawing(a: Text, b: Text) -> bool:
    """Plotly draws a few texts twice at one place on purpose (e.g. a label and its measuring copy)."""
    return a.text == b.text and all(abs(p - q) < 0.5 for p, q in zip(a.bounds, b.bounds, strict=True))


def figure_problems(figure: Figure, tolerance: float = TOLERANCE_PX, min_font: float = MIN_FONT_PX) -> list[Problem]:
    """Texts that overlap one another, stick out of the figure or are too small to read."""
    problems = []
    left, top, right, bottom = figure.box
    texts = sorted(figure.texts, key=lambda text: text.bounds)  # left to right: the pairs below stop early
    for i, a in enumerate(texts):
        x0, y0, x1, y1 = a.bounds
        out = max(left - x0, top - y0, x1 - right, y1 - bottom)
        if out > tolerance:
            problems.append(Problem(figure.name, "cut off", f"“{a.text}” ({a.role}) by {out:.0f} px"))
        if a.font < min_font:
            problems.append(Problem(figure.name, "too small", f"“{a.text}” ({a.role}) at {a.font:g} px"))
        for b in texts[i + 1:]:
            bx0, by0, _, by1 = b.bounds
            if bx0 >= x1 - tolerance:
                break  # this one and all after it start right of a
            if by0 >= y1 - tolerance or by1 <= y0 + tolerance or same_drawing(a, b):
                continue
            depth = overlap_depth(a.corners, b.corners)
            if depth > tolerance:
                problems.append(Problem(figure.name, "overlap",
                                        f"“{a.text}” ({a.role}) × “{b.text}” ({b.role}) by {depth:.0f} px"))
    return problems


def page_problems(raw_figures: list[dict], page_width: dict, tolerance: float = TOLERANCE_PX) -> list[Problem]:
    """Every problem of one page: per figure, and the page or a figure wider than the viewport."""
    figures = [Figure.from_page(raw) for raw in raw_figures]
    problems = [p for figure in figures for p in figure_problems(figure, tolerance)]
    viewport = page_width["viewport"]
    for figure in figures:
        if figure.box[2] > viewport + tolerance or figure.box[0] < -tolerance:
            problems.append(Problem(figure.name, "too wide",
                                    f"spans {figure.box[0]:.0f}–{figure.box[2]:.0f} px of a {viewport} px viewport"))
    if page_width["scroll"] > viewport + tolerance:
        problems.append(Problem("(page)", "too wide", f"scrolls sideways: {page_width['scroll']} px wide"
                                                       f" in a {viewport} px viewport"))
    problems += [Problem(f"(page: {what})", kind, f"“{text}”") for kind, what, text in page_width.get("clipped", [])]
    return problems


def problem_table(rows: Sequence[tuple[str, Problem]], per_figure: int = 4) -> str:
    """(where, problem) rows as a fixed-width table, for a failing test's message; beyond `per_figure` rows
    of one kind in one figure, only how many more there are."""
    if not rows:
        return "no problem"
    header = ("where", "figure", "kind", "texts")
    lines, counts = [header], Counter((where, p.figure, p.kind) for where, p in rows)
    shown: Counter = Counter()
    for where, p in rows:
        group = (where, p.figure, p.kind)
        shown[group] += 1
        if shown[group] <= per_figure:
            lines.append((where, p.figure, p.kind, p.detail))
        elif shown[group] == per_figure + 1:
            lines.append((where, p.figure, p.kind, f"… and {counts[group] - per_figure} more"))
    widths = [max(len(line[c]) for line in lines) for c in range(3)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line[:3], widths, strict=True)) + "  " + line[3]
                     for line in lines)
