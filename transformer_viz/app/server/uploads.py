"""Uploaded files bounded per session and per browser address, and freed when the browser goes.

Streamlit keeps every file a session uploads in memory (`MemoryUploadedFileManager`) until the session is closed,
and keeps a disconnected session for two minutes in case its browser comes back: 30 uploads of 16 MB from one
client held 480 MiB, still held 60 s after its websocket closed. `bound_uploads` (once per server) makes the
server refuse, with HTTP 413, a file that would take one session past `upload_session_mib` or the sessions of one
browser address (server/addresses.py) past `upload_address_mib`, and drops a session's files as its websocket
closes (the app reads an upload in the uploader's callback, at once).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from starlette.exceptions import HTTPException

from transformer_viz.app.server.addresses import browser_address

MIB = 2**20


class UploadBounds:
    """The upload manager's `add_file` checked against the bounds; `address_of(session_id)` names its browser."""

    def __init__(self, manager, address_of: Callable[[str], str | None], per_session: int, per_address: int):
        self.manager, self.address_of = manager, address_of
        self.per_session, self.per_address = per_session, per_address
        self.lock = threading.Lock()
        self.add_file = manager.add_file  # Streamlit's own

    def held(self, session_ids: Iterable[str], but: str | None = None) -> int:
        """The bytes these sessions hold, less the file `but` (one about to be replaced)."""
        storage = self.manager.file_storage
        return sum(len(f.data) for sid in session_ids for f in storage.get(sid, {}).values() if f.file_id != but)

    def checked_add_file(self, session_id: str, file) -> None:
        """Streamlit's add_file, unless the file takes its session or its address past a bound (HTTP 413)."""
        with self.lock:
            size, address = len(file.data), self.address_of(session_id)
            if self.held([session_id], but=file.file_id) + size > self.per_session:
                raise HTTPException(413, f"This session holds uploads up to {self.per_session // MIB} MiB at once.")
            neighbours = [sid for sid in list(self.manager.file_storage) if self.address_of(sid) == address]
            if self.held({*neighbours, session_id}, but=file.file_id) + size > self.per_address:
                raise HTTPException(413, f"This network holds uploads up to {self.per_address // MIB} MiB at once.")
            self.add_file(session_id=session_id, file=file)


def bound_uploads(runtime, per_session_mib: int, per_address_mib: int) -> UploadBounds | None:
    """Bound the uploads of this running Streamlit `runtime` and free a session's files when its browser goes;
    None where it has no memory upload manager (AppTest) or was bounded already."""
    manager = getattr(runtime, "uploaded_file_mgr", None)
    if not hasattr(manager, "file_storage") or isinstance(getattr(manager, "bounds", None), UploadBounds):
        return None

    def address_of(session_id: str) -> str | None:
        client = runtime.get_client(session_id)
        context = getattr(client, "client_context", None)
        if context is None:  # a session whose browser went: its own, not anybody's address
            return f"session {session_id}"
        forwarded = next((value for key, value in context.headers if key.lower() == "x-forwarded-for"), None)
        return browser_address(context.remote_ip, forwarded)

    bounds = UploadBounds(manager, address_of, per_session_mib * MIB, per_address_mib * MIB)
    manager.bounds, manager.add_file = bounds, bounds.checked_add_file
    disconnect = runtime.disconnect_session

    def disconnect_and_free(session_id: str, **options) -> None:
        disconnect(session_id, **options)
        if runtime.get_client(session_id) is None:  # it went (not a stale client of a session that came back)
            manager.remove_session_files(session_id)

    runtime.disconnect_session = disconnect_and_free
    return bounds
