"""The server takes no upload larger than the app accepts (16 MiB), however the app is started: Streamlit's own
limit (200 MB a request by default, kept in memory until the session ends) and nginx's are set to it."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
import tomllib

from devtools.browser import streamlit_server
from devtools.uploads import open_session, put_file_reply, upload_statuses, xsrf_cookie
from transformer_viz.app.launch import SCRIPT
from transformer_viz.weights.files import MAX_UPLOAD_BYTES, MAX_UPLOAD_MB

ROOT = Path(__file__).resolve().parent.parent
SERVER_LIMIT_MB = MAX_UPLOAD_MB + 1  # the file and its multipart wrapping


def upload_limit(config: Path) -> int:
    return tomllib.loads(config.read_text())["server"]["maxUploadSize"]


def test_every_way_the_app_starts_takes_uploads_up_to_what_it_accepts():
    packaged = SCRIPT.parent / ".streamlit" / "config.toml"  # transformer-viz, Docker, compose
    assert upload_limit(packaged) == SERVER_LIMIT_MB
    assert upload_limit(ROOT / ".streamlit" / "config.toml") == SERVER_LIMIT_MB  # streamlit run app.py
    nginx = re.findall(r"client_max_body_size\s+(\w+);", (ROOT / "deploy" / "nginx.conf.template").read_text())
    assert nginx == [f"{SERVER_LIMIT_MB}m"]
    assert '"transformer-viz"' in (ROOT / "Dockerfile").read_text()  # the image starts the packaged settings


@pytest.mark.slow
def test_the_server_refuses_an_upload_request_larger_than_the_app_accepts():
    with streamlit_server() as url:
        largest, beyond = asyncio.run(upload_statuses(url, [MAX_UPLOAD_BYTES, 20 * 2**20]))
    assert largest == 204  # the largest file the app reads
    assert beyond == 413  # refused from its Content-Length, before its body is read


async def _bounded_uploads(url: str) -> dict[str, list[tuple[int, str]]]:
    """Two browsers behind the trusted proxy (loopback): A in two tabs, then B; A's first tab closes."""
    cookie = xsrf_cookie(url)
    tabs = {name: await open_session(url, cookie, forwarded=address)
            for name, address in (("A1", "203.0.113.5"), ("A2", "203.0.113.5"), ("B", "203.0.113.6"))}
    said: dict[str, list[tuple[int, str]]] = {name: [] for name in (*tabs, "A2 after A1 went")}

    async def put(name: str, tab: str) -> tuple[int, str]:
        reply = await asyncio.to_thread(put_file_reply, url, tabs[tab].session_id, cookie, MAX_UPLOAD_BYTES)
        said[name].append(reply)
        return reply

    try:
        for _ in range(3):
            await put("A1", "A1")  # 16, 32, then 48 MiB: past the session's 40
        for _ in range(2):
            await put("A2", "A2")  # the address: 48, then 64 MiB: past its 56
        await put("B", "B")  # another address
        await tabs.pop("A1").close()
        deadline = time.monotonic() + 60  # the server drops A1's files when it sees its websocket close
        while (await put("A2 after A1 went", "A2"))[0] != 204 and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        return said
    finally:
        for tab in tabs.values():
            await tab.close()


@pytest.mark.slow
def test_uploads_held_are_bounded_per_session_and_per_address_and_freed_when_the_tab_closes():
    """30 uploads of 16 MB from one client held 480 MiB, still held 60 s after its websocket closed."""
    env = {"TVIZ_UPLOAD_SESSION_MIB": "40", "TVIZ_UPLOAD_ADDRESS_MIB": "56"}
    with streamlit_server(env=env) as url:
        said = asyncio.run(_bounded_uploads(url))
    statuses = {name: [status for status, _ in replies] for name, replies in said.items()}
    assert statuses["A1"] == [204, 204, 413] and "session holds uploads up to 40 MiB" in said["A1"][-1][1]
    assert statuses["A2"] == [204, 413] and "network holds uploads up to 56 MiB" in said["A2"][-1][1]
    assert statuses["B"] == [204]
    assert statuses["A2 after A1 went"][-1] == 204
