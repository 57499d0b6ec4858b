"""deploy/nginx.conf.template's placement, on Debian's nginx in front of tiny HTTP servers that answer with their
own address: new browsers are spread in turn, a browser stays on its replica, a made-up cookie reaches no other
address, and a browser whose replica is gone is placed anew. (tests/test_proxy.py runs it with the app itself.)"""

import contextlib
import shutil
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.request import Request

import pytest

from devtools.browser import free_port, stop_process
from devtools.servers import NGINX, NO_PROXY, start_nginx

pytestmark = pytest.mark.skipif(shutil.which(NGINX) is None, reason=f"{NGINX} is not installed")


class SaysWhoItIs(BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"127.0.0.1:{self.server.server_address[1]}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


@contextlib.contextmanager
def replicas(count: int):
    """`count` servers on 127.0.0.1, each answering its own "127.0.0.1:PORT"; their addresses."""
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), SaysWhoItIs) for _ in range(count)]
    threads = [threading.Thread(target=server.serve_forever, daemon=True) for server in servers]
    for thread in threads:
        thread.start()
    try:
        yield [f"127.0.0.1:{server.server_address[1]}" for server in servers]
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


@contextlib.contextmanager
def proxy(addresses: list[str], workdir):
    nginx, url = start_nginx(addresses, workdir, workdir / "access.log")
    try:
        yield url
    finally:
        stop_process(nginx)


def visit(url: str, cookie: str | None = None) -> tuple[str, str]:
    """GET url as a browser with `cookie` (the replica cookie's value, if any): (who answered, the cookie set)."""
    headers = {"Cookie": f"tviz_replica={cookie}"} if cookie else {}
    with NO_PROXY.open(Request(f"{url}/attention", headers=headers), timeout=30) as response:
        answered = response.read().decode()
        cookies = response.headers.get_all("Set-Cookie") or []
    placed = next(c.split(";", 1)[0].split("=", 1)[1] for c in cookies if c.startswith("tviz_replica="))
    return answered, placed


def test_new_browsers_are_placed_in_turn_and_told_where(tmp_path):
    with replicas(2) as addresses, proxy(addresses, tmp_path) as url:
        visits = [visit(url) for _ in range(10)]
    assert all(answered == placed for answered, placed in visits)  # the cookie names the replica that answered
    assert Counter(answered for answered, _ in visits) == {addresses[0]: 5, addresses[1]: 5}


def test_a_browser_stays_on_its_replica(tmp_path):
    with replicas(2) as addresses, proxy(addresses, tmp_path) as url:
        for replica in addresses:
            assert {visit(url, cookie=replica) for _ in range(6)} == {(replica, replica)}


def test_a_made_up_cookie_is_placed_on_a_replica_never_sent_where_it_points(tmp_path):
    with replicas(3) as (first, second, stranger), proxy([first, second], tmp_path) as url:
        for cookie in (stranger, "example.com:80", "tviz_app", "127.0.0.1:1"):
            answered, placed = visit(url, cookie=cookie)
            assert answered == placed and answered in (first, second), cookie


def test_a_browser_whose_replica_is_gone_is_placed_anew(tmp_path):
    gone = f"127.0.0.1:{free_port()}"  # a replica nginx knows that no longer answers
    with replicas(1) as (alive,), proxy([gone, alive], tmp_path) as url:
        assert visit(url, cookie=gone) == (alive, alive)
        assert visit(url, cookie=alive) == (alive, alive)
