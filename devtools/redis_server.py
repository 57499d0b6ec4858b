"""A throw-away Debian `redis-server` on 127.0.0.1 for the room tests, stopped by its pid: no files written, or
an append-only file in a given folder (as deploy/compose.yaml keeps rooms across a restart)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from pathlib import Path

from devtools.browser import free_port, stop_process, wait_until_serving

REDIS_SERVER = "redis-server"


def redis_missing_reason() -> str | None:
    """Why no Redis test can run here, or None."""
    if shutil.which(REDIS_SERVER) is None:
        return "redis-server is not installed (apt-get install -y redis-server)"
    return None


@contextlib.contextmanager
def redis_server(startup_timeout: float = 20, port: int | None = None, data_dir: Path | None = None):
    """Start redis-server on 127.0.0.1 (a free port, or `port`) and yield its redis:// URL. Without `data_dir`
    nothing is kept; with it, every write goes to an append-only file there, read again by the next start."""
    import redis

    port = port or free_port()
    persistence = ["--appendonly", "no"] if data_dir is None else [
        "--appendonly", "yes", "--appendfsync", "always", "--dir", str(data_dir)]
    process = subprocess.Popen(
        [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(port), "--save", "", *persistence,
         "--protected-mode", "yes", "--loglevel", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1)

        def answers() -> bool:
            try:
                return client.ping()
            except redis.ConnectionError:
                return False

        wait_until_serving(process, answers, f"redis-server on {url}", startup_timeout, interval=0.05)
        client.close()
        yield url
    finally:
        stop_process(process)
