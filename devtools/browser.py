"""Helpers for the real-browser tests and bench: run `streamlit run` on 127.0.0.1, drive Chromium.

Reruns are awaited the way Streamlit's own e2e suite does (`[data-testid=stApp]` with
`data-test-script-state=notRunning`), plus a guard that suite gets from a fixed initial
sleep: right after an input the app is still `notRunning` (the rerun has not started), so
`rerun_after` also waits until a run has *finished* since the action. An init script
counts finished runs (attribute changes away from `running`, seen by a MutationObserver)
in `window.__tvRuns`.
"""

from __future__ import annotations

import contextlib
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

# Runs in every document before the app's own scripts: counts finished script runs and keeps
# the time stamp of the last pointer/key input (the bench measures from it).
RUN_COUNTER = """(() => {
  window.__tvRuns = 0;
  window.__tvInputAt = null;
  const seen = records => {
    for (const r of records) if (r.oldValue === 'running') window.__tvRuns += 1;
  };
  new MutationObserver(seen).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                                                 attributeFilter: ['data-test-script-state']});
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
def chromium(headless: bool = True):
    """The system Chromium driven by Playwright (never a downloaded browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=headless)
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
    """Load a page of the app and wait for its first run to finish (and, with `figures`, a chart to be drawn)."""
    page.goto(url)
    page.wait_for_selector(CONNECTED, state="attached", timeout=timeout)
    page.wait_for_function(f"() => window.__tvRuns > 0 && ({IS_IDLE})()", timeout=timeout)
    if figures:
        page.wait_for_selector(".js-plotly-plot:visible", timeout=timeout)  # not one in a folded expander
    wait_for_idle(page, timeout)


def wait_for_idle(page, timeout: float = 60_000, settle_ms: int = 100) -> None:
    """Wait for `notRunning`, give the frontend a moment to apply the last deltas, and check again."""
    page.wait_for_selector(IDLE, state="attached", timeout=timeout)
    page.wait_for_timeout(settle_ms)
    page.wait_for_selector(IDLE, state="attached", timeout=timeout)


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


def finished_runs(page) -> int:
    return page.evaluate("() => window.__tvRuns")


def rerun_after(page, action: Callable[[], object], until: str | None = None, timeout: float = 60_000) -> None:
    """Do `action` (an input that reruns the script) and wait until that rerun has finished.

    `until` is an optional JavaScript expression that must also hold (e.g. the new figure is drawn);
    it must be false before the action. With it, a rerun so short that the frontend never showed
    `running` is still recognised.
    """
    before = finished_runs(page)
    action()
    started = f"window.__tvRuns > {before}"
    condition = f"({started}) && ({IS_IDLE})()"
    if until:
        condition = f"({started} || ({until})) && ({IS_IDLE})() && ({until})"
    page.wait_for_function(f"() => {condition}", timeout=timeout, polling="raf")
    wait_for_idle(page, timeout)



def choose_option(page, selectbox, option: str, timeout: float = 10_000) -> None:
    """Pick `option` in a Streamlit selectbox (a react-aria combobox in Streamlit >= 1.5x).

    The first click on the input only focuses it; ArrowDown opens the list reliably.
    """
    combo = selectbox.get_by_role("combobox")
    listbox = page.get_by_role("listbox")
    for _attempt in range(3):
        combo.click()
        if combo.get_attribute("aria-expanded") != "true":
            combo.press("ArrowDown")
        try:
            listbox.first.wait_for(state="visible", timeout=timeout / 3)
            break
        except Exception:  # the list did not open: try again
            page.keyboard.press("Escape")
    listbox.get_by_role("option", name=option, exact=True).click(timeout=timeout)


def click_until_shown(page, button, shown, timeout: float = 60_000) -> None:
    """Click `button` until the locator `shown` appears: once more if the first click leaves no trace at all (no
    exception on the page). Seen for the class room's Start button in ~1 of 6 CI runs, never reproduced on its own;
    its cause is not found. A button that never works still fails, as does one that raises."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    button.click()
    try:
        shown.wait_for(timeout=20_000)
        return
    except PlaywrightTimeout:
        if exceptions(page):
            raise
    button.click()
    shown.wait_for(timeout=timeout)


def exceptions(page) -> list[str]:
    """Texts of the exception boxes on the page (Streamlit shows uncaught errors in them)."""
    return page.locator(EXCEPTION).all_inner_texts()
