"""Uploads as the browser's file uploader sends them: a PUT to Streamlit's upload endpoint of a live session,
with the XSRF cookie and token (tests/test_upload_limit.py, bench/bench_hostile.py)."""

from __future__ import annotations

import asyncio
import http.client
import urllib.request
import uuid
from urllib.parse import urlparse

from devtools.class_client import Session

CHUNK = 2**20  # a body is streamed: a 150 MB upload costs the sender no memory


def xsrf_cookie(url: str) -> str:
    """The XSRF cookie a browser gets from the server (its value is also the token an upload must send)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{url}/_stcore/health", timeout=30) as response:
        response.read()
        cookies = response.headers.get_all("Set-Cookie") or []
    return next(c.split(";", 1)[0].split("=", 1)[1] for c in cookies if c.startswith("_streamlit_xsrf="))


def put_file(url: str, session_id: str, cookie: str, size: int) -> int:
    """PUT one file of `size` zero bytes to the upload endpoint; the HTTP status (0: the server hung up)."""
    return put_file_reply(url, session_id, cookie, size)[0]


def put_file_reply(url: str, session_id: str, cookie: str, size: int) -> tuple[int, str]:
    """put_file's status and the text of the server's answer."""
    head = (b'--tv\r\nContent-Disposition: form-data; name="file"; filename="w.safetensors"\r\n'
            b"Content-Type: application/octet-stream\r\n\r\n")
    tail = b"\r\n--tv--\r\n"

    def body():
        yield head
        for start in range(0, size, CHUNK):
            yield bytes(min(CHUNK, size - start))
        yield tail

    address = urlparse(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=120)
    try:
        connection.request("PUT", f"/_stcore/upload_file/{session_id}/{uuid.uuid4()}", body=body(), headers={
            "Content-Type": "multipart/form-data; boundary=tv", "X-Xsrftoken": cookie,
            "Cookie": f"_streamlit_xsrf={cookie}", "Content-Length": str(len(head) + size + len(tail))})
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    except (ConnectionError, http.client.HTTPException):  # refused while the body was still being sent
        return 0, ""
    finally:
        connection.close()


async def open_session(url: str, cookie: str, forwarded: str | None = None) -> Session:
    """A session with the app's home page drawn, its websocket open; `forwarded`: the X-Forwarded-For its
    handshake carries (the browser a trusted proxy names)."""
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    session = Session(url, cookie=f"_streamlit_xsrf={cookie}", timeout=120, headers=headers)
    await session.connect()
    await session.open("")
    return session


async def upload_statuses(url: str, sizes: list[int], watch=None) -> list[int]:
    """The statuses of uploads of these sizes from one session open in the app (kept open meanwhile);
    `watch()`, if given, is called once the session's page is drawn and again after the uploads (the session
    still open: Streamlit keeps what it took until the session ends), e.g. to measure the server."""
    cookie = xsrf_cookie(url)
    session = await open_session(url, cookie)
    try:
        if watch is not None:
            watch()
        statuses = [await asyncio.to_thread(put_file, url, session.session_id, cookie, size) for size in sizes]
        if watch is not None:
            watch()
        return statuses
    finally:
        await session.close()
