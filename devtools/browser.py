"""Helpers for the real-browser tests and bench: run `streamlit run` on 127.0.0.1, drive Chromium.

A page has settled when no script runs (Streamlit's `[data-testid=stApp]` with
`data-test-script-state=notRunning`, as its own e2e suite waits), no element of an earlier run is left
stale, and no message from the server has arrived for a few animation frames. An action's rerun is
recognised by the messages it brings: an init script counts the server's websocket messages
(`window.__tvMessages`), so `rerun_after` waits for at least one after the action, then for the page to
settle; a rerun too quick for the script state to show `running` is still seen. The init script also
counts finished runs (`window.__tvRuns`, for the bench) and keeps the time of the last input.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parent.parent
APP = "[data-testid=stApp]"
IDLE = f"{APP}[data-test-script-state=notRunning]"
CONNECTED = f"{APP}[data-test-connection-state=CONNECTED]"
EXCEPTION = "[data-testid=stException]"
IS_IDLE = f"() => document.querySelector('{IDLE}') !== null"

# Runs in every document before the app's own scripts: counts the server's websocket messages, the changes to the
# page and finished script runs, and keeps the time stamp of the last pointer/key input (the bench measures from it).
RUN_COUNTER = """(() => {
  window.__tvRuns = 0;
  window.__tvMessages = 0;
  window.__tvSent = 0;
  window.__tvMutations = 0;
  window.__tvInputAt = null;
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', () => { window.__tvMessages += 1; });
    }
    send(data) { window.__tvSent += 1; return super.send(data); }
  };
  const seen = records => {
    for (const r of records) if (r.oldValue === 'running') window.__tvRuns += 1;
  };
  new MutationObserver(seen).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                                                 attributeFilter: ['data-test-script-state']});
  new MutationObserver(records => { window.__tvMutations += records.length; })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  for (const type of ['pointerdown', 'keydown'])
    window.addEventListener(type, e => { window.__tvInputAt = e.timeStamp; }, {capture: true});
})();"""


def browser_missing_reason() -> str | None:
    """Why a browser test cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium chromium-driver)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed (pip install playwright; never `playwright install`)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(script: str = "app.py", extra_args: tuple[str, ...] = (), startup_timeout: float = 60,
                     env: dict[str, str] | None = None, log_path: str | None = None):
    """Start `streamlit run script` on 127.0.0.1 on a free port and yield its URL; stop it by its pid.

    `env`: variables added to this process's environment for the server (e.g. TVIZ_REDIS_URL);
    `log_path`: where the server's output goes (default: nowhere)."""
    port = free_port()
    log = open(log_path or os.devnull, "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", script, "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
         *extra_args],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200

    try:
        wait_until_serving(process, healthy, f"streamlit run {script} on {url}", startup_timeout, interval=0.3)
        yield url
    finally:
        stop_process(process)
        log.close()


def wait_until_serving(process: subprocess.Popen, answers: Callable[[], bool], name: str, timeout: float,
                       interval: float) -> None:
    """Wait until `answers()` (an OSError counts as no) while the server runs; RuntimeError if it exits or
    does not answer within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if answers():
                return
        except OSError:
            pass
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with code {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not answer in {timeout:.0f} s")
        time.sleep(interval)


def stop_process(process: subprocess.Popen) -> None:
    """SIGTERM the server's process group (it was started in its own session), SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@contextlib.contextmanager
def chromium(headless: bool = True, scrollbars: bool = False):
    """The system Chromium driven by Playwright (never a downloaded browser). Playwright hides scrollbars in
    headless mode; with `scrollbars` they take their room, as on a Windows or Linux desktop."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=headless,
                                             ignore_default_args=["--hide-scrollbars"] if scrollbars else None)
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser, width: int = 1280, height: int = 720):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.add_init_script(RUN_COUNTER)
    return page


@contextlib.contextmanager
def chromium_page(width: int = 1280, height: int = 720):
    with chromium() as browser:
        yield new_page(browser, width, height)


def open_app(page, url: str, timeout: float = 90_000, figures: bool = True) -> None:
    """Load a page of the app and wait for its first run to finish (and, with `figures`, every chart to be drawn)."""
    page.goto(url)
    page.wait_for_selector(CONNECTED, state="attached", timeout=timeout)
    page.wait_for_function(f"() => window.__tvRuns > 0 && ({IS_IDLE})()", timeout=timeout)
    if figures:
        page.wait_for_selector(".js-plotly-plot:visible", timeout=timeout)  # not one in a folded expander
        # and every chart: the first one can be drawn while another is still a skeleton loading its code
        page.wait_for_function(f"() => ({FIGURES_DRAWN})() !== null", timeout=timeout)
    wait_for_idle(page, timeout)


# No script runs, no element of an earlier run is left stale (Streamlit marks them data-stale until the run's
# deltas replace or remove them), and neither a server message arrived nor the page changed, for SETTLED_FRAMES
# animation frames in a row: the browser draws a run's messages after they arrive, and a run that starts right
# after one ends (st.rerun, a page switch) breaks the streak and is waited for too.
SETTLED_FRAMES = 3
SETTLED = f"""() => {{
  const now = window.__tvMessages + ':' + window.__tvMutations;
  const quiet = ({IS_IDLE})() && !document.querySelector('[data-stale=true]') && now === window.__tvSettledAt;
  window.__tvSettledAt = now;
  window.__tvSettled = quiet ? (window.__tvSettled || 0) + 1 : 0;
  return window.__tvSettled >= {SETTLED_FRAMES};
}}"""


def wait_for_idle(page, timeout: float = 60_000) -> None:
    """Wait until the app has finished its runs and the browser has drawn their last deltas."""
    page.evaluate("() => { window.__tvSettled = 0; window.__tvSettledAt = null; }")
    page.wait_for_function(SETTLED, timeout=timeout, polling="raf")


# Every st.plotly_chart has drawn its figure, and the figures' sizes and text counts as a string (to compare
# between two looks: Streamlit sizes a chart to its column after the first draw). A chart whose code is
# still loading (the first one a browser shows) is a skeleton for a moment after the run has finished.
FIGURES_DRAWN = """() => {
  if (document.querySelector('[data-testid=stMain] [data-testid=stSkeleton]')) return null;
  const charts = document.querySelectorAll('[data-testid=stPlotlyChart]').length;
  const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
  if (plots.length < charts) return null;
  const sizes = [];
  for (const plot of plots) {
    const svg = plot.querySelector('svg.main-svg');
    if (!svg || !plot._fullLayout) return null;
    const box = svg.getBoundingClientRect();
    sizes.push([Math.round(box.width), Math.round(box.height), plot.querySelectorAll('text').length].join('x'));
  }
  return sizes.join(' ');
}"""


def wait_for_figures(page, timeout: float = 60_000, poll_ms: int = 200) -> None:
    """Wait until every Plotly chart of the page is drawn and has kept its size and texts for one poll."""
    deadline, last = time.monotonic() + timeout / 1000, None
    while True:
        now = page.evaluate(FIGURES_DRAWN)
        if now is not None and now == last:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the figures were still changing after {timeout / 1000:.0f} s: {now}")
        last = now
        page.wait_for_timeout(poll_ms)


def full_page_screenshot(page, path: str) -> None:
    """A screenshot of the whole page. Streamlit scrolls inside its main element, not the document, so the
    viewport is made as tall as that element's content for the shot (and put back afterwards)."""
    size = page.viewport_size
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(height, size["height"])})
    try:
        wait_for_figures(page)
        page.screenshot(path=path, full_page=True)
    finally:
        page.set_viewport_size(size)


# What a keyed widget shows, found by the st-key-<key> class Streamlit gives its container (null: not drawn).
WIDGET_SHOWN = """(key) => {
  const box = document.querySelector(`.st-key-${key}`);
  if (!box) return null;
  const combo = box.querySelector('input[role=combobox]');
  if (combo) return combo.value || combo.placeholder;  // a None choice shows the placeholder
  const radio = box.querySelector('input[type=radio]:checked');
  if (radio) return radio.closest('label').textContent.trim();
  const thumb = box.querySelector('[data-testid=stSliderThumbValue]');
  if (thumb) return thumb.textContent.trim();
  const input = box.querySelector('input');
  return input ? (input.type === 'checkbox' ? String(input.checked) : input.value) : null;
}"""
# Every figure on the page: its title and a hash of its traces' data.
FIGURE_DATA = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => {
  const text = JSON.stringify(p.data.map(t => [t.type, t.name, t.z, t.x, t.y, t.customdata]));
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = (hash * 31 + text.charCodeAt(i)) | 0;
  return [(p.layout.title && p.layout.title.text) || '', hash];
})"""


def widget_shown(page, key: str) -> str | None:
    return page.evaluate(WIDGET_SHOWN, key)


def widgets_shown(page, keys) -> dict[str, str]:
    """What each keyed widget of `keys` drawn on the page shows."""
    shown = {key: widget_shown(page, key) for key in keys}
    return {key: value for key, value in shown.items() if value is not None}


# Where a data point of a chart is on the page, from Plotly's own axes (click targets draw one SVG marker for
# all their points, figures/clicks.py target_marker, so there is no element per point to find).
POINT_POSITION = """([chart, name, point]) => {
  const plot = document.querySelectorAll('.js-plotly-plot')[chart];
  plot.scrollIntoView({block: 'center'});
  const trace = plot._fullData.findIndex(t => t.name === name);
  const axis = id => plot._fullLayout[id.replace(/^([xy])/, '$1axis')];
  const [xaxis, yaxis] = [axis(plot._fullData[trace].xaxis), axis(plot._fullData[trace].yaxis)];
  const at = plot.calcdata[trace][point], box = plot.getBoundingClientRect();
  return [box.left + xaxis._offset + xaxis.c2p(at.x), box.top + yaxis._offset + yaxis.c2p(at.y)];
}"""


def point_position(page, chart: int, trace_name: str, point: int) -> tuple[float, float]:
    """The page coordinates of point `point` of the trace named `trace_name` in the `chart`-th Plotly chart,
    scrolled into view."""
    x, y = page.evaluate(POINT_POSITION, [chart, trace_name, point])
    return x, y


def figure_data(page) -> list[tuple[str, int]]:
    return [tuple(f) for f in page.evaluate(FIGURE_DATA)]


def view_snapshot(page, keys) -> tuple[str, list[tuple[str, int]], dict[str, str]]:
    """Once the page's run has finished: its address, its figures' data and what the widgets of `keys` show."""
    wait_for_idle(page)
    return page.url, figure_data(page), widgets_shown(page, keys)


def snapshot_in_new_context(browser, url: str, figures: list, widgets: dict[str, str], keys,
                            timeout: float = 60_000):
    """`url` opened by a new student (a new browser context: no session), once it draws `figures` and its widgets
    show `widgets` (or `timeout` ms have passed: the caller's assertion then says what differs) -> its
    view_snapshot (of the widgets of `keys`) and exceptions."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = new_page(browser)
    try:
        open_app(page, url, figures=bool(figures))
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_function(f"""([figures, widgets]) => {{
                const shown = {WIDGET_SHOWN};
                return JSON.stringify(({FIGURE_DATA})()) === JSON.stringify(figures)
                    && Object.entries(widgets).every(([key, value]) => shown(key) === value);
            }}""", arg=[[list(f) for f in figures], widgets], timeout=timeout)
        return view_snapshot(page, keys), exceptions(page)
    finally:
        page.context.close()


def open_menu_page(page, title: str, figures: bool = True) -> None:
    """Open a page from the sidebar's page menu and wait for its run (and, with `figures`, a visible chart)."""
    link = page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True)
    heading = "document.querySelector('h1')?.innerText.trim()"
    before = page.evaluate(f"() => {heading}")
    rerun_after(page, link.click, until=f"{heading} && {heading} !== {json.dumps(before)}")
    if figures:
        page.wait_for_selector(".js-plotly-plot:visible", timeout=60_000)  # not one in a folded expander


def slide_to(page, key: str, target: int) -> None:
    """Move the keyed slider to `target` with the arrow keys, as a keyboard user does, and wait for the rerun."""
    thumb = page.locator(f".st-key-{key} input[type=range]")
    steps = target - int(thumb.input_value())

    def press() -> None:
        thumb.focus()
        for _ in range(abs(steps)):
            thumb.press("ArrowRight" if steps > 0 else "ArrowLeft")

    rerun_after(page, press, until=f"document.querySelector('.st-key-{key} input[type=range]').value === '{target}'")


def finished_runs(page) -> int:
    return page.evaluate("() => window.__tvRuns")


def messages(page) -> int:
    return page.evaluate("() => window.__tvMessages")


def rerun_after(page, action: Callable[[], object], until: str | None = None, timeout: float = 60_000) -> None:
    """On a settled page, do `action` (an input that reruns the script) and wait until that rerun's messages have
    arrived and the page has settled again; with `until` (a JavaScript expression), also until it holds."""
    wait_for_idle(page, timeout)
    before = messages(page)
    action()
    condition = f"window.__tvMessages > {before}" + (f" && ({until})" if until else "")
    page.wait_for_function(f"() => {condition}", timeout=timeout, polling="raf")
    wait_for_idle(page, timeout)


def choose_option(page, selectbox, option: str, timeout: float = 10_000) -> None:
    """Pick `option` in a Streamlit selectbox (a react-aria combobox in Streamlit >= 1.5x), as a user does (on a
    settled page: see rerun_after): a click focuses the input, ArrowDown opens its list, a click chooses."""
    combo = selectbox.get_by_role("combobox")
    combo.click()
    if combo.get_attribute("aria-expanded") != "true":
        combo.press("ArrowDown")
    page.get_by_role("listbox").get_by_role("option", name=option, exact=True).click(timeout=timeout)


def exceptions(page) -> list[str]:
    """Texts of the exception boxes on the page (Streamlit shows uncaught errors in them)."""
    return page.locator(EXCEPTION).all_inner_texts()
