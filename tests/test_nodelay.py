"""serve_without_delay: a server socket bound as Streamlit binds it, and its connections, send without Nagle's delay."""

import asyncio
import socket
import sys

import pytest

from transformer_viz.app.server.nodelay import serve_without_delay

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux: accepted sockets inherit TCP_NODELAY")


def nodelay(sock) -> bool:
    return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


def streamlit_like_listener() -> socket.socket:
    """A listening socket made as Streamlit 1.67's starlette_server._bind_socket makes it: protocol 0."""
    listener = socket.socket(family=socket.AF_INET)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    return listener


def accepted_by_asyncio(listener: socket.socket, fix_before_second: bool) -> tuple[bool, bool]:
    """Whether asyncio's transports of two connections accepted by an asyncio server on `listener` send without
    delay; with `fix_before_second`, serve_without_delay runs between the two."""
    async def connections() -> tuple[bool, bool]:
        accepted = asyncio.Queue()
        server = await asyncio.get_running_loop().create_server(lambda: _Recorder(accepted), sock=listener)
        shown = []
        async with server:
            for second in (False, True):
                if second and fix_before_second:
                    serve_without_delay()
                _, writer = await asyncio.open_connection(*listener.getsockname())
                transport = await asyncio.wait_for(accepted.get(), timeout=60)
                shown.append(nodelay(transport.get_extra_info("socket")))
                writer.close()
        return shown[0], shown[1]

    return asyncio.run(connections())


class _Recorder(asyncio.Protocol):
    def __init__(self, accepted: asyncio.Queue):
        self.accepted = accepted

    def connection_made(self, transport):
        self.accepted.put_nowait(transport)


def test_asyncio_leaves_nagle_on_for_connections_to_a_socket_bound_with_protocol_0():
    with streamlit_like_listener() as listener:
        assert accepted_by_asyncio(listener, fix_before_second=False) == (False, False)


def test_after_serve_without_delay_new_connections_send_without_delay():
    with streamlit_like_listener() as listener:
        assert accepted_by_asyncio(listener, fix_before_second=True) == (False, True)


def test_connections_accepted_before_get_it_and_this_process_own_outgoing_ones_are_left_alone():
    with streamlit_like_listener() as listener, socket.create_connection(listener.getsockname()) as outgoing:
        listener.setblocking(True)
        accepted, _ = listener.accept()
        with accepted:
            assert not nodelay(accepted)
            assert serve_without_delay() >= 2  # the listening socket and the connection accepted on its port
            assert nodelay(listener) and nodelay(accepted)
            assert not nodelay(outgoing)  # its local port is not a listening one


def test_a_platform_that_cannot_tell_a_listening_socket_changes_nothing(monkeypatch):
    monkeypatch.delattr(socket, "SO_ACCEPTCONN")
    with streamlit_like_listener() as listener:
        assert serve_without_delay() == 0
        assert not nodelay(listener)
