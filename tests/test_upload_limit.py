"""The server takes no upload larger than the app accepts (16 MiB), however the app is started: Streamlit's own
limit (200 MB a request by default, kept in memory until the session ends) and nginx's are set to it."""

from __future__ import annotations

import asyncio
import http.client
import re
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlparse

import pytest
import tomllib

from devtools.browser import streamlit_server
from devtools.class_client import Session
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


def xsrf_cookie(url: str) -> str:
    """The XSRF cookie a browser gets from the server (its value is also the token the upload must send)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{url}/_stcore/health", timeout=30) as response:
        response.read()
        cookies = response.headers.get_all("Set-Cookie") or []
    return next(c.split(";", 1)[0].split("=", 1)[1] for c in cookies if c.startswith("_streamlit_xsrf="))


async def upload_statuses(url: str, sizes: list[int]) -> list[int]:
    """The statuses of uploads of these sizes, from a session open in the app (as the browser's uploader sends
    them: the session's id, the XSRF cookie and token)."""
    cookie = xsrf_cookie(url)
    session = Session(url, cookie=f"_streamlit_xsrf={cookie}", timeout=120)
    await session.connect()
    try:
        await session.open("")
        return [await asyncio.to_thread(put_file, url, session.session_id, cookie, size) for size in sizes]
    finally:
        await session.close()


def put_file(url: str, session_id: str, cookie: str, size: int) -> int:
    """PUT one file of `size` bytes to the upload endpoint, as the browser's uploader does; the HTTP status."""
    body = (b'--tv\r\nContent-Disposition: form-data; name="file"; filename="w.safetensors"\r\n'
            b"Content-Type: application/octet-stream\r\n\r\n" + bytes(size) + b"\r\n--tv--\r\n")
    address = urlparse(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=120)
    try:
        connection.request("PUT", f"/_stcore/upload_file/{session_id}/{uuid.uuid4()}", body=body, headers={
            "Content-Type": "multipart/form-data; boundary=tv", "X-Xsrftoken": cookie,
            "Cookie": f"_streamlit_xsrf={cookie}"})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


@pytest.mark.slow
def test_the_server_refuses_an_upload_request_larger_than_the_app_accepts():
    with streamlit_server() as url:
        largest, beyond = asyncio.run(upload_statuses(url, [MAX_UPLOAD_BYTES, 20 * 2**20]))
    assert largest == 204  # the largest file the app reads
    assert beyond == 413  # refused from its Content-Length, before its body is read
