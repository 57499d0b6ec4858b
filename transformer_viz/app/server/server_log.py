"""What the server's log keeps that no page shows: server paths, commands, other sessions' details."""

from __future__ import annotations

import functools
import logging

LOG = logging.getLogger("transformer_viz")


@functools.lru_cache(maxsize=1024)  # each message once (a sidebar drawn for every run would repeat it)
def log_once(message: str) -> None:
    LOG.warning("%s", message)
