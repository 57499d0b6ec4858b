"""The server takes no upload larger than the app accepts (16 MiB), however the app is started: Streamlit's own
limit (200 MB a request by default, kept in memory until the session ends) and nginx's are set to it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import tomllib

from devtools.browser import streamlit_server
from devtools.uploads import upload_statuses
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
