"""The server's connections sent without Nagle's delay (TCP_NODELAY).

Streamlit 1.67 binds its listening socket itself (`socket.socket(family)`, so with protocol 0), and asyncio sets
TCP_NODELAY only on accepted sockets whose protocol is IPPROTO_TCP (`asyncio.base_events._set_nodelay`). Every
connection then runs Nagle's algorithm: a small write that follows one not yet acknowledged (a response's body after
its headers, a websocket message after another) waits for the browser's acknowledgement, which the browser delays
by ~40 ms. Each of a first page's ~60 small static files took 44 ms instead of 1 over one connection.

On Linux a socket accepted from a listening socket inherits its TCP_NODELAY, so setting it on the listening socket
once covers every later connection; the connections accepted before (the first browser's, when the server was
started by `streamlit run app.py` and not warmed up by `transformer-viz`) get it directly.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path

LOG = logging.getLogger(__name__)
FD_FOLDERS = (Path("/proc/self/fd"), Path("/dev/fd"))  # Linux, then macOS and the BSDs


def serve_without_delay() -> int:
    """Set TCP_NODELAY on this process's listening TCP sockets and on the connections accepted on their ports;
    the number of sockets changed (0 where the process's descriptors or a socket's listening state cannot be read)."""
    if not hasattr(socket, "SO_ACCEPTCONN"):
        LOG.info("TCP_NODELAY: this platform cannot tell a listening socket; the server's sockets stay as they are")
        return 0
    changed = 0
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(sock) for sock in _tcp_sockets()]
        listening = [sock for sock in sockets if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)]
        ports = {_local_port(sock) for sock in listening} - {None}  # a socket that cannot say its port: none
        for sock in sockets:
            if _local_port(sock) in ports and not sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                changed += 1
    LOG.info("TCP_NODELAY set on %d of the server's sockets (ports %s)", changed, sorted(ports))
    return changed


def _tcp_sockets() -> Iterator[socket.socket]:
    """A duplicate of each IPv4 / IPv6 stream socket this process holds (closing one leaves the original open)."""
    folder = next((folder for folder in FD_FOLDERS if folder.is_dir()), None)
    for name in os.listdir(folder) if folder else ():
        try:
            duplicate = os.dup(int(name))
        except (OSError, ValueError):  # closed meanwhile, or the listing's own descriptor
            continue
        try:
            sock = socket.socket(fileno=duplicate)  # reads the family and type from the descriptor
        except OSError:  # not a socket
            os.close(duplicate)
            continue
        if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
            yield sock
        else:
            sock.close()


def _local_port(sock: socket.socket) -> int | None:
    try:
        return sock.getsockname()[1]
    except OSError:
        return None
