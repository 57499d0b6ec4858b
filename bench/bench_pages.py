"""Page switches and first pages in a real Chromium (issue 23): `python bench/bench_pages.py`.

Every page. On a warm server (`streamlit run app.py`), a click on each page's link in the sidebar's menu
(transformer_viz/app/frame/navigation.py PAGES, in a shuffled order each round), timed in the page's own clock
from the click's `pointerdown` to the first animation frame in which the app is idle, nothing is stale or a
skeleton, every Plotly chart has drawn its SVG and the page's heading and charts have the signature learned in a
warm-up visit (bench/bench_ui.py's SIGNATURE: titles, trace types, first z values of every chart, read from what
Plotly processed). The yardstick: bench/minimal_pages_app.py, two pages of one 32×32 heatmap each, whose switches
are interleaved with the app's (one after every few app clicks). "server": the arrival of the last websocket
frame before the drawn frame − the click; "client": the rest; "busy": the main thread's long tasks (> 50 ms) in
between; "fig JSON": the `plotly_chart` specs the switch delivered (a chart seen before comes as a cache reference
of Streamlit's message cache, which forgets a message after two runs that did not use it); "svg": the SVG elements
of the page's charts. Arrivals are noted by a TCP relay between browser and server (Relay; put in the page's
clock by the frame the click sent), not by the page's `message` events as bench_ui does: those (and Chromium's
DevTools records of frames) wait for the main thread, late while it draws, which puts drawing on the server's side.
`--before OTHER/app.py`: another checkout's pages in a tab of their own, their clicks taking turns with the app's
in the same rounds (a before/after pair that the machine's noise hits alike); and its first pages, taking turns too.

First page. A new student: a fresh browser context (no session, no cache) opens `/`, timed in its clock from
the navigation's start (`performance.now()` counts from it) to the first chart drawn, and to the whole page
settled (every chart drawn, the app idle); "1st msg" is the first websocket frame's arrival (the HTML and
Streamlit's JavaScript are loaded by then), "last msg" the last one's before the first chart, "busy" the long
tasks until the first chart. Measured for `streamlit run app.py`, for the packaged `transformer-viz` and for the
yardstick app (what Streamlit's own first page costs), all three servers up: cold (the first session after the
server answers its health check) and warm (after one session was served), one context after another, the
servers taking turns.

Before measuring, the bench waits (up to --quiet-wait minutes) until the 1-minute load average is below 1.5,
and it prints the CPU that other processes took during the run (the machine's busy time minus this process tree).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the app and devtools/, when run as `python bench/bench_pages.py`
sys.path.insert(0, str(ROOT / "bench"))

from bench_ui import SIGNATURE, WS_HOOK, app_texts, chart_bytes, pct, record_frames  # noqa: E402
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402

from devtools.browser import (  # noqa: E402
    EXCEPTION,
    IDLE,
    RUN_COUNTER,
    chromium,
    exceptions,
    free_port,
    new_page,
    open_app,
    open_menu_page,
    stop_process,
    streamlit_server,
    wait_for_figures,
    wait_for_idle,
    wait_until_serving,
)
from devtools.servers import cpu_seconds, health, machine_busy_seconds  # noqa: E402
from transformer_viz.app.frame.navigation import HOME, PAGES  # noqa: E402

PAGE_SIGNATURE = f"() => (document.querySelector('h1')?.innerText.trim() || '') + '\\n' + ({SIGNATURE})()"
# Every chart drawn, nothing stale or loading, the app idle: the frame that shows the whole target page.
ALL_DRAWN = f"""() => {{
  const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
  return !!document.querySelector('{IDLE}') && !document.querySelector('[data-stale=true]')
    && !document.querySelector('[data-testid=stMain] [data-testid=stSkeleton]')
    && plots.every(p => p._fullLayout && p.querySelector('svg.main-svg'))
    && plots.length >= document.querySelectorAll('[data-testid=stPlotlyChart]').length;
}}"""
ARM = f"""([expected]) => {{
  window.__tvDone = null; window.__tvInputAt = null; window.__tvFrames = []; window.__tvLong = [];
  const drawn = {ALL_DRAWN}, signature = {PAGE_SIGNATURE};
  const tick = () => {{
    if (document.querySelector('{EXCEPTION}')) {{
      window.__tvDone = -1;
      return;
    }}
    if (window.__tvInputAt !== null && drawn() && signature() === expected) {{
      window.__tvDone = performance.now();
      return;
    }}
    requestAnimationFrame(tick);
  }};
  requestAnimationFrame(tick);
}}"""
# In a new student's page, from the document's start: the time of the first chart drawn.
FIRST_CHART = """(() => {
  const tick = () => {
    const plot = document.querySelector('.js-plotly-plot');
    if (plot && plot._fullLayout && plot.querySelector('svg.main-svg')) {
      window.__tvFirstChart = performance.now();
      return;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})();"""


SEND_HOOK = """(() => {
  window.__tvSent = [];
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (...args) {
    window.__tvSent.push(performance.now());
    return send.apply(this, args);
  };
})();"""
SVG_ELEMENTS = "() => document.querySelectorAll('.js-plotly-plot svg *').length"


class Relay:
    """A TCP relay in front of a server that notes when the websocket's bytes pass it (this process's clock, ms).

    The page's own clocks cannot tell when a frame arrived: its `message` events, and Chromium's DevTools
    records of websocket frames as well, happen on the page's main thread, late while it draws."""

    def __init__(self, url: str) -> None:
        address = urlparse(url)
        self.upstream = (address.hostname, address.port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.sent: list[float] = []  # client -> server websocket chunks
        self.received: list[float] = []  # server -> client
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):  # the listener closed
            while True:
                client, _ = self.listener.accept()
                server = socket.create_connection(self.upstream)
                for sock in (client, server):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                stream = {"websocket": False}
                threading.Thread(target=self._pipe, args=(client, server, stream, self.sent), daemon=True).start()
                threading.Thread(target=self._pipe, args=(server, client, stream, self.received),
                                 daemon=True).start()

    @staticmethod
    def _pipe(source, sink, stream: dict, times: list[float]) -> None:
        """Copy bytes until either side closes; note the time of each websocket chunk after the handshake that
        starts with a data frame (not a ping, pong or close: first byte 0x88-0x8A)."""
        first = True
        with contextlib.suppress(OSError), source, sink:
            while chunk := source.recv(1 << 16):
                now = time.perf_counter() * 1000
                if first and chunk.startswith(b"GET /_stcore/stream"):
                    stream["websocket"] = True
                elif stream["websocket"] and not first and not 0x88 <= chunk[0] <= 0x8A:
                    times.append(now)
                first = False
                sink.sendall(chunk)

    def clear(self, page) -> None:
        self.sent.clear()
        self.received.clear()
        page.evaluate("() => { window.__tvSent = []; }")

    def arrivals(self, page) -> list[float]:
        """The chunks received since `clear`, in the page's clock: the page's first `send` call and its bytes
        passing the relay are the same moment (to well under a millisecond) in both clocks."""
        sent = page.evaluate("() => window.__tvSent")
        if not sent or not self.sent:
            return []
        offset = self.sent[0] - sent[0]
        return [t - offset for t in self.received]

    def close(self) -> None:
        self.listener.close()


@dataclass
class Tab:
    """One browser page on one server, and what its websocket brought."""

    page: object
    relay: Relay
    frames: list = field(default_factory=list)
    known_specs: dict[str, int] = field(default_factory=dict)
    current: str = ""


@dataclass
class Target:
    """A page of the menu, and its switches measured."""

    name: str
    title: str
    tab: Tab
    side: str = ""  # "before" for another checkout's page (--before)
    signature: str = ""
    latency: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    client_ms: list[float] = field(default_factory=list)
    busy_ms: list[float] = field(default_factory=list)
    spec: list[int] = field(default_factory=list)
    charts: list[int] = field(default_factory=list)
    sent: list[tuple[int, int]] = field(default_factory=list)  # (charts delivered, of them cache references)
    svg: int = 0


def open_tab(browser, url: str) -> Tab:
    page = new_page(browser)
    page.add_init_script(WS_HOOK)
    page.add_init_script(SEND_HOOK)
    tab = Tab(page, Relay(url))
    tab.page.on("websocket", record_frames(tab))
    open_app(tab.page, tab.relay.url, figures=False)
    return tab


def learn(target: Target) -> None:
    """Open the target page from the menu, wait until all its charts are drawn, keep its signature."""
    page = target.tab.page
    open_menu_page(page, target.title, figures=False)
    wait_for_figures(page)
    wait_for_idle(page)
    errors = exceptions(page)
    if errors:
        raise RuntimeError(f"{target.name}: the page shows an exception: {errors[0][:300]}")
    target.signature = page.evaluate(PAGE_SIGNATURE)
    target.svg = page.evaluate(SVG_ELEMENTS)
    target.tab.current = target.name
    chart_bytes(target.tab, target.tab.frames)  # learn the hashes of the charts sent so far
    target.tab.frames.clear()


def switch(target: Target, record: bool = True) -> None:
    """Click the target's menu link and wait for its page drawn; record the times and bytes."""
    tab = target.tab
    page = tab.page
    wait_for_idle(page)
    page.evaluate(ARM, [target.signature])
    tab.frames.clear()
    tab.relay.clear(page)
    page.get_by_test_id("stSidebarNav").get_by_text(target.title, exact=True).click()
    try:
        page.wait_for_function("() => window.__tvDone !== null", timeout=120_000, polling=100)
        if page.evaluate("() => window.__tvDone") < 0:
            raise RuntimeError(f"{target.name} (from {tab.current}): the page shows an exception: "
                               f"{exceptions(page)[0][:300]}")
    except PlaywrightTimeout:
        now = page.evaluate(PAGE_SIGNATURE)
        raise RuntimeError(f"{target.name}: never drew its learned charts; now:\n{now[:600]}\n"
                           f"expected:\n{target.signature[:600]}") from None
    wait_for_idle(page)
    t0, t1, long_tasks = page.evaluate("() => [window.__tvInputAt, window.__tvDone, window.__tvLong]")
    tab.current = target.name
    spec, sent, refs = chart_bytes(tab, tab.frames)
    if not record:
        return
    last = max((t for t in tab.relay.arrivals(page) if t <= t1), default=t0)
    target.latency.append(t1 - t0)
    target.server_ms.append(last - t0)
    target.client_ms.append(t1 - last)
    target.busy_ms.append(sum(max(0.0, min(s + d, t1) - max(s, t0)) for s, d in long_tasks))
    target.spec.append(spec)
    target.sent.append((sent, refs))
    target.charts.append(page.evaluate("() => document.querySelectorAll('.js-plotly-plot').length"))


def schedule(page_sets: list[list[Target]], yard: list[Target], rng: random.Random, every: int) -> list[Target]:
    """One round: every page of each set (one tab's) once in a random order (never first the page its tab
    shows), the sets' clicks taking turns, a yardstick switch after every `every` of them (the yardstick's tab
    alternates between its two pages)."""
    orders = []
    for pages in page_sets:
        order = rng.sample(pages, len(pages))
        if order[0].name == pages[0].tab.current:
            order[0], order[-1] = order[-1], order[0]
        orders.append(order)
    out, turn = [], 0
    for i, target in enumerate((target for turns in zip(*orders, strict=True) for target in turns), 1):
        out.append(target)
        if i % every == 0:
            out.append(yard[turn % 2])
            turn += 1
    return out


def learning_order(pages: list[Target]) -> list[Target]:
    """The menu's pages from the second on, back to the home page shown first. A new session's first switch
    between Decoding and "Is attention an explanation?" (either way) shows StreamlitValueBelowMinError
    (choose_step's slider): the two are learnt apart, before the switches."""
    order = pages[1:] + pages[:1]
    if {"attribution", "decoding"} <= {t.name for t in pages}:
        at = order.index(next(t for t in pages if t.name == "attribution"))
        order[at], order[at + 1] = order[at + 1], order[at]
    return order


def every_page(browser, clicks: int, every: int, seed: int, only: list[str] | None = None,
               before: str | None = None) -> tuple[list[Target], list[Target], list[Target]]:
    """(the app's pages, `before`'s pages (another checkout's app.py, its clicks taking turns with the app's; []
    without it), the yardstick's two pages), each with its switches measured."""
    texts = app_texts()
    with contextlib.ExitStack() as servers:
        app_url, yard_url = (servers.enter_context(streamlit_server(script))
                             for script in ("app.py", "bench/minimal_pages_app.py"))
        app_tab, yard_tab = open_tab(browser, app_url), open_tab(browser, yard_url)
        tabs = [(app_tab, "")]
        if before:
            tabs.append((open_tab(browser, servers.enter_context(streamlit_server(before))), "before"))
        sets = [[Target(name, texts[f"nav.{name}"], tab, side) for name in PAGES if not only or name in (*only, HOME)]
                for tab, side in tabs]
        yard = [Target("yard:scores", "Scores", yard_tab), Target("yard:weights", "Weights", yard_tab)]
        started = time.monotonic()
        for target in [*(t for pages in sets for t in learning_order(pages)), *yard]:
            learn(target)
        for target in [*(t for pages in sets for t in pages[1:] + pages[:1]), *yard]:  # warm, check signatures
            switch(target, record=False)
        print(f"  every page: learned and warmed in {time.monotonic() - started:.0f} s", flush=True)
        rng = random.Random(seed)
        for round_ in range(clicks):
            for target in schedule(sets, yard if yard_tab.current == "yard:weights" else yard[::-1], rng, every):
                switch(target)
            if round_ % 5 == 4:
                print(f"  round {round_ + 1}/{clicks} ({time.monotonic() - started:.0f} s, "
                      f"load {os.getloadavg()[0]:.1f})", flush=True)
        for tab in [app_tab, yard_tab, *(tab for tab, _ in tabs[1:])]:
            tab.relay.close()
    return sets[0], sets[1] if before else [], yard


def report_pages(app: list[Target], before: list[Target], yard: list[Target]) -> None:
    base = [ms for target in yard for ms in target.latency]
    base50 = pct(base, 50)
    print(f"\n{'page':<30} {'n':>3} {'p50 ms':>7} {'p90 ms':>7} {'×yard p50':>9} {'server p50':>10} "
          f"{'client p50':>10} {'busy p50':>8} {'charts':>6} {'svg':>6} {'fig JSON':>9} {'sent (refs)':>11}")
    for t in [*app, *before, *yard]:
        p50 = pct(t.latency, 50)
        verdict = "" if t in yard else ("  ok" if p50 / base50 <= 1.5 else "  OVER 1.5×")
        label = f"{t.side}: {t.title}" if t.side else t.title
        print(f"{label[:30]:<30} {len(t.latency):>3} {p50:7.0f} {pct(t.latency, 90):7.0f} {p50 / base50:9.2f} "
              f"{pct(t.server_ms, 50):10.0f} {pct(t.client_ms, 50):10.0f} {pct(t.busy_ms, 50):8.0f} "
              f"{pct(t.charts, 50):6.0f} {t.svg:6} {pct(t.spec, 50) / 1000:6.0f} kB "
              f"{pct([n for n, _ in t.sent], 50):6.0f} ({pct([r for _, r in t.sent], 50):.0f}){verdict}")
    print(f"{'yardstick (both pages)':<30} {len(base):>3} {base50:7.0f} {pct(base, 90):7.0f}")
    for old, new in zip(before, app, strict=False):
        print(f"before → after, {new.title}: p50 {pct(old.latency, 50):.0f} → {pct(new.latency, 50):.0f} ms "
              f"({pct(old.latency, 50) / base50:.2f}× → {pct(new.latency, 50) / base50:.2f}×)")


@contextlib.contextmanager
def packaged_server():
    """`transformer-viz --host 127.0.0.1 --port <free>` (the installed command, else `python -m transformer_viz`),
    once it has warmed up (its launcher runs the home page once as soon as the server answers: what a class's
    server has done before the first student arrives)."""
    port = free_port()
    command = [shutil.which("transformer-viz")] if shutil.which("transformer-viz") else [
        sys.executable, "-m", "transformer_viz"]
    process = subprocess.Popen([*command, "--host", "127.0.0.1", "--port", str(port), "--",
                                "--browser.gatherUsageStats", "false"],
                               cwd="/tmp", stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    warmed = threading.Event()

    def read_output() -> None:  # drained to the end, so that the server never blocks on a full pipe
        for line in process.stdout:
            if "transformer-viz: " in line and "warm" in line:
                print(f"  {line.strip()}", flush=True)
                warmed.set()

    threading.Thread(target=read_output, daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, lambda: health(url), f"transformer-viz on {url}", 90, 0.3)
        warmed.wait(180)
        yield url
    finally:
        stop_process(process)


def first_page(browser, relay: Relay) -> dict[str, float]:
    """A new student opens the relay's address: ms from the navigation's start (the page's clock) to the first
    websocket frame, the last frame before the first chart, the first chart drawn, the whole page drawn; the long
    tasks till the first chart."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        for script in (RUN_COUNTER, WS_HOOK, SEND_HOOK, FIRST_CHART):
            page.add_init_script(script)
        relay.sent.clear()
        relay.received.clear()
        page.goto(relay.url)
        page.wait_for_function("() => window.__tvFirstChart !== undefined", timeout=180_000, polling=100)
        whole = page.wait_for_function(f"() => window.__tvRuns > 0 && ({ALL_DRAWN})() && performance.now()",
                                       timeout=180_000, polling="raf").json_value()
        first_chart, long_tasks = page.evaluate("() => [window.__tvFirstChart, window.__tvLong]")
        arrivals = relay.arrivals(page)
        return {"1st msg": arrivals[0], "last msg": max(t for t in arrivals if t <= first_chart),
                "first chart": first_chart, "whole page": whole,
                "busy": sum(max(0.0, min(s + d, first_chart) - s) for s, d in long_tasks if s < first_chart)}
    finally:
        context.close()


FIRST_COMMANDS = {"streamlit run app.py": lambda: streamlit_server("app.py", startup_timeout=90),
                  "transformer-viz": packaged_server,
                  "yardstick app": lambda: streamlit_server("bench/minimal_pages_app.py")}


def first_pages(browser, starts: int, warm: int, before: str | None = None) -> dict[str, dict[str, list[dict]]]:
    """Cold: the first session of each server (started `starts` times, at least once); warm: `warm` sessions per
    server after the first start's, the servers taking turns (`before`: another checkout's app.py among them)."""
    commands = FIRST_COMMANDS | ({"before: streamlit run": lambda: streamlit_server(before, startup_timeout=90)}
                                 if before else {})
    results = {name: {"cold": [], "warm": []} for name in commands}
    for start in range(max(starts, 1)):
        with contextlib.ExitStack() as stack:
            relays = {name: Relay(stack.enter_context(server())) for name, server in commands.items()}
            for name, relay in relays.items():
                stack.callback(relay.close)
                if start < starts:
                    results[name]["cold"].append(first_page(browser, relay))
                    print(f"  {name}: cold first chart {results[name]['cold'][-1]['first chart']:.0f} ms", flush=True)
            for _ in range(warm if start == 0 else 0):
                for name, relay in relays.items():
                    results[name]["warm"].append(first_page(browser, relay))
    return results


def report_first(results) -> None:
    print(f"\n{'command':<22} {'when':<5} {'n':>3} {'1st msg p50':>11} {'last msg p50':>12} "
          f"{'first chart p50':>15} {'p90':>6} {'busy p50':>8} {'whole page p50':>14}   (ms from navigation start)")
    for name, runs in results.items():
        for when, samples in filter(lambda run: run[1], runs.items()):
            col = {key: [s[key] for s in samples] for key in samples[0]}
            print(f"{name:<22} {when:<5} {len(samples):>3} {pct(col['1st msg'], 50):11.0f} "
                  f"{pct(col['last msg'], 50):12.0f} {pct(col['first chart'], 50):15.0f} "
                  f"{pct(col['first chart'], 90):6.0f} {pct(col['busy'], 50):8.0f} {pct(col['whole page'], 50):14.0f}")


def wait_for_quiet(minutes: float, threshold: float = 1.5) -> None:
    deadline, told = time.monotonic() + minutes * 60, 0.0
    while os.getloadavg()[0] >= threshold and time.monotonic() < deadline:
        if time.monotonic() >= told:
            print(f"  waiting for a quiet machine: load {os.getloadavg()[0]:.2f}", flush=True)
            told = time.monotonic() + 60
        time.sleep(5)
    print(f"load before measuring: {os.getloadavg()[0]:.2f} (1 min), {os.getloadavg()[1]:.2f} (5 min)", flush=True)


def own_cpu() -> float:
    """CPU seconds of this process, its live descendants (Chromium, servers) and its children already reaped."""
    times = os.times()
    return cpu_seconds([os.getpid()]) + times.children_user + times.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clicks", type=int, default=20, help="measured clicks per page (rounds)")
    parser.add_argument("--every", type=int, default=3, help="a yardstick switch after every N app clicks")
    parser.add_argument("--fresh", type=int, default=10, help="warm fresh contexts per command")
    parser.add_argument("--starts", type=int, default=1, help="server starts (cold first pages) per command")
    parser.add_argument("--quiet-wait", type=float, default=25, help="minutes to wait for load < 1.5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip", choices=("pages", "first"), help="leave one part out")
    parser.add_argument("--pages", help="only these pages (ids, comma-separated; the home page always)")
    parser.add_argument("--before", metavar="APP",
                        help="another checkout's app.py: its page switches and first pages interleaved")
    args = parser.parse_args()
    sys.setswitchinterval(0.0005)  # the relay's threads note a chunk's time without waiting for the GIL long
    wait_for_quiet(args.quiet_wait)
    started, busy, ours = time.monotonic(), machine_busy_seconds(), own_cpu()
    with chromium() as browser:
        if args.skip != "pages":
            only = args.pages.split(",") if args.pages else None
            report_pages(*every_page(browser, args.clicks, args.every, args.seed, only, args.before))
        if args.skip != "first":
            first = first_pages(browser, args.starts, args.fresh, args.before)
        others = (machine_busy_seconds() - busy) - (own_cpu() - ours)
    if args.skip != "first":
        report_first(first)
    wall = time.monotonic() - started
    print(f"\n{wall:.0f} s in all; load at the end {os.getloadavg()[0]:.2f} (1 min); other processes than this "
          f"bench's took about {max(others, 0) / wall:.2f} cores on average (of {os.cpu_count()})")


if __name__ == "__main__":
    main()
