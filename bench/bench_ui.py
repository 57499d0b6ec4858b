"""Control change → redrawn figures in a real Chromium: `python bench/bench_ui.py`.

Cases, all measured in the same run with the same kind of control: the widget labelled
"Draw" (the Attention page's choice of weights or raw scores), switched back and forth
between two values that draw different numbers, so that every change really redraws.
Whatever the app uses for it (a radio or a selectbox), the minimal app draws the same kind.

  a        the app's Attention page at the default view, "Draw": weights ↔ raw scores
  b        the same page's encoder self-attention at 6 encoder layers × 8 heads × 32 tokens:
           a fresh `reverse` model with max_len 32 reading 31 letters + <eos> (the view comes
           from the URL's query parameters, which the app's widgets are bound to)
  g        the Attention page of the decoder-only model (reverse-gpt) at the default view, "Draw" as in a
  c        bench/minimal_app.py: one 32×32 heatmap and one "Draw" control (the yardstick)
  a-gc,    a and b against a second server started with `--runner.postScriptGC true` (Streamlit's default; the
  b-gc     app's .streamlit/config.toml turns the full collection after every rerun off)
  a-before, b-before, g-before
           with `--before OTHER/app.py`: a, b and g on a server of another checkout (e.g. `git worktree add
           ../before HEAD~1`), in the same interleaved rounds, so that a change's effect is not lost in the
           machine's drift between two runs; the report ends with before → after per case

Method. Every page gets an init script (tests/browser.py and WS_HOOK below) that records,
in the page's own clock (performance.now / Event.timeStamp):
  * the time stamp of the `pointerdown` of the click that picks the new value (t0),
  * every websocket message the app receives (time, bytes),
  * after each click, a requestAnimationFrame loop checks every frame whether the app is
    idle (`[data-testid=stApp][data-test-script-state=notRunning]`) AND the signature of
    every Plotly chart on the page (title, trace types/names, the first z values, read from
    the charts' `_fullLayout`/`_fullData`, i.e. after Plotly processed the new spec)
    equals the signature of the target state, learned once per case in a warm-up toggle.
    Plotly draws heatmaps synchronously inside Plotly.react, so the first animation frame
    in which this holds is the frame that paints the new figures (t1).
Latency = t1 − t0. "1st msg" = first websocket message after t0 − t0 (the rerun request's
round trip and the start of the script); "server" = last websocket message before t1 − t0
(script run, figure building, serialization, the post-script GC, transport); "client" =
t1 − that message (the part of protobuf decoding, React and Plotly not hidden behind the
server's time); "busy" = the browser main thread's long tasks (> 50 ms, PerformanceObserver
"longtask") between t0 and t1, a lower bound of the client's own work. The rounds of the cases are
interleaved so that load on the (shared, noisy) machine hits every case alike.

Bytes. Playwright's `page.on("websocket")` hands over every frame; each is a ForwardMsg
protobuf, parsed here. "fig JSON" is the sum of `plotly_chart.spec` sizes of the charts a
rerun delivers — what the server built and serialized (`plotly.io.to_json`) for that
rerun. Streamlit's message cache sends an already-seen chart as a `ref_hash` (its spec is
known from the first time it was sent in full); "wire" is what really went over the
websocket. The bench also builds the Attention page's figures in Python with the
project's builders and prints the build and `to_json` time and size of each, including a
6 × 8 × 32-token trace.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the app and devtools/, when run as `python bench/bench_ui.py`

from devtools.browser import (  # noqa: E402
    IDLE,
    IS_IDLE,
    choose_option,
    chromium,
    exceptions,
    finished_runs,
    new_page,
    open_app,
    streamlit_server,
    wait_for_idle,
)

WS_HOOK = """(() => {
  window.__tvFrames = [];
  window.__tvLong = [];
  try {
    new PerformanceObserver(list => {
      for (const e of list.getEntries()) window.__tvLong.push([e.startTime, e.duration]);
    }).observe({type: 'longtask'});
  } catch (e) { /* no long-task timing here */ }
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', e => {
        const d = e.data;
        window.__tvFrames.push([performance.now(), d.byteLength ?? d.size ?? d.length ?? 0]);
      });
    }
  };
})();"""

SIGNATURE = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => {
  const layout = gd._fullLayout || {}, data = gd._fullData || [];
  const head = z => !z || !z.length ? '' : Array.from(z[0] && z[0].length !== undefined ? z[0].slice(0, 3)
                                                                                        : z.slice(0, 3)).join(',');
  const title = layout.title && layout.title.text;
  return [title, ...data.map(t => [t.type, t.name, t.z ? t.z.length : '', head(t.z),
                                   t.colorbar && t.colorbar.title && t.colorbar.title.text].join('|'))].join(';');
}).join('\\n')"""

ARM = f"""([expected]) => {{
  window.__tvDone = null;
  window.__tvInputAt = null;
  window.__tvFrames = [];
  window.__tvLong = [];
  const signature = {SIGNATURE};
  const tick = now => {{
    if (window.__tvInputAt !== null && document.querySelector('{IDLE}') && signature() === expected) {{
      window.__tvDone = performance.now();
      return;
    }}
    requestAnimationFrame(tick);
  }};
  requestAnimationFrame(tick);
}}"""


@dataclass
class Case:
    name: str
    server: str
    path: str
    control: str  # the label of the widget that is switched
    options: tuple[str, str]
    note: str = ""
    page: object = None
    state: int = 0  # index of the selected option
    signatures: dict[int, str] = field(default_factory=dict)
    frames: list[bytes] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    first_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    client_ms: list[float] = field(default_factory=list)
    busy_ms: list[float] = field(default_factory=list)
    wire: list[int] = field(default_factory=list)
    spec: list[int] = field(default_factory=list)
    charts: list[int] = field(default_factory=list)
    refs: list[int] = field(default_factory=list)
    known_specs: dict[str, int] = field(default_factory=dict)


LONG_TEXT = "thequickbrownfoxjumpsoverthelaz"  # 31 letters + <eos> = 32 source tokens


def app_texts() -> dict[str, str]:
    from transformer_viz.i18n import CATALOGS

    return CATALOGS["en"]


CONTROLS = ("stRadio", "stSelectbox", "stSegmentedControl", "stButtonGroup", "stSelectSlider")


def control(page, label: str):
    """The widget whose label is exactly `label` (a radio, selectbox, segmented control...)."""
    named = page.get_by_test_id("stWidgetLabel").filter(has_text=re.compile(rf"^\s*{re.escape(label)}\s*$"))
    return page.locator(", ".join(f"[data-testid={kind}]" for kind in CONTROLS)).filter(has=named).first


def control_kind(page, label: str) -> str:
    """"radio" or "selectbox" (what bench/minimal_app.py can draw) for the widget labelled `label`."""
    kind = control(page, label).get_attribute("data-testid", timeout=30_000)
    return "selectbox" if kind == "stSelectbox" else "radio"


def set_control(page, label: str, option: str) -> None:
    widget = control(page, label)
    if widget.get_attribute("data-testid", timeout=30_000) == "stSelectbox":
        choose_option(page, widget, option)
    else:
        widget.get_by_text(option, exact=True).click()


def record_frames(case: Case):
    def on_socket(socket):
        socket.on("framereceived", lambda payload: case.frames.append(payload))
    return on_socket


def chart_bytes(case: Case, frames: list[bytes]) -> tuple[int, int, int]:
    """(spec bytes delivered, charts, charts sent as cache references) of one rerun's frames."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    spec = charts = refs = 0
    for payload in frames:
        if isinstance(payload, str):
            continue
        msg = ForwardMsg()
        try:
            msg.ParseFromString(payload)
        except Exception:  # not a ForwardMsg: ignore
            continue
        kind = msg.WhichOneof("type")
        if kind == "ref_hash" and msg.ref_hash in case.known_specs:
            spec, charts, refs = spec + case.known_specs[msg.ref_hash], charts + 1, refs + 1
        elif (kind == "delta" and msg.delta.WhichOneof("type") == "new_element"
              and msg.delta.new_element.WhichOneof("type") == "plotly_chart"):
            size = len(msg.delta.new_element.plotly_chart.spec.encode())
            case.known_specs[msg.hash] = size
            spec, charts = spec + size, charts + 1
    return spec, charts, refs


def open_case(browser, case: Case, urls: dict[str, str]) -> None:
    case.page = page = new_page(browser)
    page.add_init_script(WS_HOOK)
    page.on("websocket", record_frames(case))
    open_app(page, urls[case.server] + case.path)
    errors = exceptions(page)
    if errors:
        raise RuntimeError(f"{case.name}: the page shows an exception: {errors[0][:500]}")
    # Learn what the page looks like in both states (and check that a change really redraws).
    case.signatures[0] = page.evaluate(SIGNATURE)
    for target, compare in ((1, "!=="), (0, "===")):
        set_control(page, case.control, case.options[target])
        # Until the charts differ from the first state's (then are back to it): a run too short to show `running`
        # is not counted in __tvRuns. The checks below say what is wrong when they never do.
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_function(f"first => ({SIGNATURE})() {compare} first && ({IS_IDLE})()",
                                   arg=case.signatures[0], timeout=180_000)
        wait_for_idle(page)
        case.signatures.setdefault(target, page.evaluate(SIGNATURE))
    if case.signatures[0] == case.signatures[1]:
        raise RuntimeError(f"{case.name}: switching {case.control!r} does not change any chart")
    if page.evaluate(SIGNATURE) != case.signatures[0]:
        raise RuntimeError(f"{case.name}: the page does not come back to the same charts")
    chart_bytes(case, case.frames)  # learn the hashes of the charts sent so far
    for _ in range(2):  # warm up the measured path (caches, JIT), not recorded
        change(case, record=False)


def change(case: Case, record: bool = True) -> None:
    page, target = case.page, 1 - case.state
    before = finished_runs(page)
    page.evaluate(ARM, [case.signatures[target]])
    case.frames.clear()
    set_control(page, case.control, case.options[target])
    page.wait_for_function("() => window.__tvDone !== null", timeout=180_000, polling=50)
    with contextlib.suppress(Exception):  # a run too short to show `running` is not counted
        page.wait_for_function(f"() => window.__tvRuns > {before}", timeout=2_000)
    wait_for_idle(page)
    t0, t1, frames, long_tasks = page.evaluate(
        "() => [window.__tvInputAt, window.__tvDone, window.__tvFrames, window.__tvLong]")
    case.state = target
    if not record:
        chart_bytes(case, case.frames)
        return
    before_done = [t for t, _ in frames if t <= t1]
    last = max(before_done, default=t0)
    case.latency.append(t1 - t0)
    case.first_ms.append(min(before_done, default=t0) - t0)
    case.server_ms.append(last - t0)
    case.client_ms.append(t1 - last)
    case.busy_ms.append(sum(max(0.0, min(start + length, t1) - max(start, t0)) for start, length in long_tasks))
    case.wire.append(sum(n for _, n in frames))
    spec, charts, refs = chart_bytes(case, case.frames)
    case.spec.append(spec)
    case.charts.append(charts)
    case.refs.append(refs)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def figure_costs() -> list[str]:
    """Build the Attention page's figures in Python: build time, to_json time and size of each."""
    import plotly.io
    import torch

    from transformer_viz import Transformer
    from transformer_viz.analysis.inference import run_text
    from transformer_viz.app.server.state import View
    from transformer_viz.data.tasks import TASKS
    from transformer_viz.figures.attention import attention_heatmap, attention_lines, head_entropy
    from transformer_viz.figures.grid import attention_grid

    def traced(view, src):
        torch.manual_seed(0)
        model = Transformer(view.model_config()).eval()
        return run_text(model, TASKS[view.task], src).trace

    view = View()
    big = replace(view, task="reverse", n_encoder_layers=6, n_heads=8, max_len=32)
    setups = [  # (label, trace, kind, layer): a at the app's default view, the others encoder self-attention
        ("a: default view, random weights", traced(view, TASKS[view.task].examples[0]), view.kind, view.layer),
        ("b: 6x8x32, reverse, max_len 32", traced(big, LONG_TEXT), "encoder_self", 0),
    ]
    lines = []
    for label, trace, kind, layer in setups:
        builders = {"grid": lambda tr, v, kind=kind: attention_grid(tr, kind, v),
                    "head": lambda tr, v, kind=kind, layer=layer: attention_heatmap(tr, kind, layer, 0, v),
                    "lines": lambda tr, v, kind=kind, layer=layer: attention_lines(tr, kind, layer, 0),
                    "entropy": lambda tr, v, kind=kind: head_entropy(tr, kind)}
        parts, total_bytes, total_ms = [], 0, 0.0
        for name, build in builders.items():
            try:
                times, jsons = [], []
                for _ in range(3):
                    start = time.perf_counter()
                    fig = build(trace, "scores")
                    built = time.perf_counter()
                    spec = plotly.io.to_json(fig, validate=False)
                    times.append(((built - start) * 1000, (time.perf_counter() - built) * 1000))
                    jsons.append(len(spec.encode()))
                build_ms, json_ms = min(t[0] for t in times), min(t[1] for t in times)
                total_bytes += jsons[-1]
                total_ms += build_ms + json_ms
                parts.append(f"{name} {jsons[-1] / 1000:.0f} kB {build_ms:.0f}+{json_ms:.0f} ms")
            except Exception as error:  # a builder's signature changed: say so, keep going
                parts.append(f"{name} n/a ({type(error).__name__})")
        lines.append(f"  {label:<44} {total_bytes / 1000:6.0f} kB, {total_ms:4.0f} ms build+to_json | "
                     + "; ".join(parts))
    return lines


def report(cases: list[Case], baseline: str, budgets: dict[str, float]) -> None:
    base = next(c for c in cases if c.name == baseline)
    base50, base95 = pct(base.latency, 50), pct(base.latency, 95)
    print(f"\n{'case':<8} {'n':>3} {'p50 ms':>7} {'p95 ms':>7} {'×min p50':>8} {'×min p95':>8} "
          f"{'1st msg p50':>11} {'server p50':>10} {'client p50':>10} {'busy p50':>8} "
          f"{'fig JSON/rerun':>14} {'wire/rerun':>10} {'charts (refs)':>13}")
    for c in cases:
        p50, p95 = pct(c.latency, 50), pct(c.latency, 95)
        budget = budgets.get(c.name.split("-")[0])
        verdict = "" if budget is None or c.name == baseline else (
            f"  budget ≤ {budget}×: {'ok' if p50 / base50 <= budget else 'OVER'}")
        print(f"{c.name:<8} {len(c.latency):>3} {p50:7.0f} {p95:7.0f} {p50 / base50:8.2f} {p95 / base95:8.2f} "
              f"{pct(c.first_ms, 50):11.0f} {pct(c.server_ms, 50):10.0f} {pct(c.client_ms, 50):10.0f} "
              f"{pct(c.busy_ms, 50):8.0f} "
              f"{np.median(c.spec) / 1000:11.0f} kB "
              f"{np.median(c.wire) / 1000:7.0f} kB {np.median(c.charts):6.0f} ({np.median(c.refs):.0f}){verdict}")
    print()
    for name in ("a", "b", "g"):
        after = next((c for c in cases if c.name == name), None)
        before = next((c for c in cases if c.name == f"{name}-before"), None)
        if after is not None and before is not None:
            print(f"before → after, case {name}: p50 {pct(before.latency, 50):.0f} → {pct(after.latency, 50):.0f} ms "
                  f"({pct(before.latency, 50) / base50:.2f}× → {pct(after.latency, 50) / base50:.2f}×), "
                  f"server p50 {pct(before.server_ms, 50):.0f} → {pct(after.server_ms, 50):.0f} ms, "
                  f"client p50 {pct(before.client_ms, 50):.0f} → {pct(after.client_ms, 50):.0f} ms")
    for name in ("a", "b"):
        on = next((c for c in cases if c.name == name), None)
        off = next((c for c in cases if c.name == f"{name}-gc"), None)  # on: as configured (false)
        if on is None or off is None:
            continue
        d50 = pct(off.latency, 50) - pct(on.latency, 50)
        d95 = pct(off.latency, 95) - pct(on.latency, 95)
        better = "postScriptGC true" if d50 < 0 else "postScriptGC false (as configured)"
        print(f"postScriptGC, case {name}: false p50/p95 {pct(on.latency, 50):.0f}/{pct(on.latency, 95):.0f} ms, "
              f"true {pct(off.latency, 50):.0f}/{pct(off.latency, 95):.0f} ms (Δ p50 {d50:+.0f} ms, "
              f"Δ p95 {d95:+.0f} ms; server p50 Δ {pct(off.server_ms, 50) - pct(on.server_ms, 50):+.0f} ms) "
              f"→ faster: {better}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=24, help="measured control changes per case (≥ 20)")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds the changes are split into")
    parser.add_argument("--no-gc-compare", action="store_true", help="skip the postScriptGC true server")
    parser.add_argument("--app", default="app.py", help="the app script to measure (e.g. a variant of app.py)")
    parser.add_argument("--no-figures", action="store_true", help="skip the Python figure-build table")
    parser.add_argument("--before", metavar="APP", help="another checkout's app.py: its a, b and g interleaved")
    args = parser.parse_args()

    texts = app_texts()
    draw, options = texts["attention.value"], (texts["value.weights"], texts["value.scores"])
    # A link as the app writes it: ids (layers count from 1).
    big = "/attention?" + urlencode({"task": "reverse", "weights": "random",
                                     "n_encoder_layers": 6, "n_heads": 8, "max_len": 32, "src_text": LONG_TEXT,
                                     "kind": "encoder_self", "layer": 1})
    print(f"input for b: task 'reverse', max_len 32, {len(LONG_TEXT) + 1} source tokens with <eos>")
    shipped = ROOT / "transformer_viz" / "weights" / "shipped"
    checkpoints = sorted(path.stem for path in shipped.glob("*.safetensors"))
    print(f"pretrained checkpoints: {', '.join(checkpoints) or 'none (the app falls back to random weights)'}"
          " (loading one calls gc.freeze() in app/server/models.py: start-up objects in no collection)")
    gpt = "/attention?" + urlencode({"architecture": "decoder_only"})  # the shipped reverse-gpt, the default view
    cases = [Case("a", "app", "/attention", draw, options), Case("b", "app", big, draw, options),
             Case("g", "app", gpt, draw, options), Case("c", "minimal", "/", "Draw", ("weights", "scores"))]
    servers = {"app": (args.app, ()), "minimal": ("bench/minimal_app.py", ())}
    if not args.no_gc_compare:
        servers["app-gc"] = (args.app, ("--runner.postScriptGC", "true"))
        cases += [Case("a-gc", "app-gc", "/attention", draw, options),
                  Case("b-gc", "app-gc", big, draw, options)]

    if args.before:
        servers["before"] = (str(Path(args.before).resolve()), ())
        cases += [Case(f"{case.name}-before", "before", case.path, case.control, case.options)
                  for case in cases[:3]]  # a, b, g (fresh lists: dataclasses.replace would share them)
    started, widget = time.monotonic(), "?"
    with contextlib.ExitStack() as stack:
        urls = {name: stack.enter_context(streamlit_server(script, extra)) for name, (script, extra) in
                servers.items()}
        browser = stack.enter_context(chromium())
        for case in cases:
            if case.server == "minimal":  # the same kind of control as the app's
                widget = control_kind(cases[0].page, draw)
                case.path = "/?" + urlencode({"control": widget})
            open_case(browser, case, urls)
            print(f"  {case.name}: ready ({time.monotonic() - started:.0f} s)", flush=True)
        per_round = -(-args.changes // args.rounds)
        for round_ in range(args.rounds):
            for case in cases:
                for _ in range(per_round):
                    change(case)
            print(f"  round {round_ + 1}/{args.rounds} done ({time.monotonic() - started:.0f} s)", flush=True)
    print(f"\nControl change ({widget} {draw!r}) → redrawn figures, Chromium 1280×720, "
          f"{per_round * args.rounds} changes per case, {time.monotonic() - started:.0f} s in all")
    report(cases, "c", {"a": 1.5, "b": 3.0, "g": 1.5})
    if not args.no_figures:
        print("\nThe Attention page's figures built in Python (min of 3; 'scores'):")
        print("\n".join(figure_costs()))


if __name__ == "__main__":
    main()
