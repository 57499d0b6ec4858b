"""The server's C allocator setting (app/server/allocator.py)."""

import platform

from transformer_viz.app.server.allocator import keep_freed_memory_mapped


def test_a_glibc_server_keeps_freed_trace_memory_and_another_c_library_is_left_alone():
    assert keep_freed_memory_mapped() == (platform.libc_ver()[0] == "glibc")
