"""Helpers for the real-browser tests and bench: run `streamlit run` on 127.0.0.1, drive Chromium."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parent.parent
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"


def browser_missing_reason() -> str | None:
    """Why a browser test cannot run here, or None."""
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        return "Chromium is not installed (apt-get install -y chromium chromium-driver)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(script: str = "app.py", extra_args: tuple[str, ...] = ()):
    """Start `streamlit run script` on 127.0.0.1 and yield its URL; stop it by its pid."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", script, "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true", *extra_args],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("streamlit did not start") from None
                time.sleep(0.3)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


@contextlib.contextmanager
def chromium_page(width: int = 1280, height: int = 720):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def wait_for_rerun(page, timeout: float = 60_000) -> None:
    """Wait until Streamlit has started and finished a script run (as Streamlit's own e2e tests do)."""
    page.wait_for_selector(IDLE, timeout=timeout)
    page.wait_for_timeout(150)  # let the frontend apply the last deltas
    page.wait_for_selector(IDLE, timeout=timeout)
