"""What hostile files cost the server (issue 20, items 1 to 4): `python bench/bench_hostile.py`.

Replays each against the library function the app calls, in this one process, and prints its resident memory
(RSS) before and after, the peak, and the CPU seconds the call took:

1. `hf.load` of a folder holding only the issue's config.json: T5 with 2 x 20,000 layers of width 2
   (skipped without the Hugging Face extra);
2. `Trace.from_npz` of a 0.8 MiB .npz whose one array inflates to 800 MiB, and of one whose .npy header
   claims 10^12 floats;
3. `read_upload` of a 15 MB .zip of 185,000 empty entries;
4. four 150 MB uploads to the upload endpoint of a real `streamlit run app.py` (one session), whose RSS is
   measured before and after, while the session is still open (Streamlit keeps what it took until then);
5. (issue 41) 30 uploads of 16 MiB from one session of one browser, the server's RSS and CPU seconds with the
   session open and 10 s after its websocket closed;
6. (issue 41) a room flood: 60 fresh sessions of one browser address each press Start room, then a teacher from
   another address does; the rooms made, the server's CPU seconds.

`--app OTHER/app.py` runs 5 and 6 against another checkout's app (the same settings), to compare before and after.

Each is refused (a ValueError; HTTP 413); the numbers say how much it cost to say so. The files are written in
a temporary folder, streamed so that building them costs this bench no memory.
"""

from __future__ import annotations

import asyncio
import io
import json
import resource
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # transformer_viz, when run as `python bench/bench_hostile.py`

from transformer_viz import Trace  # noqa: E402
from transformer_viz.weights import hf  # noqa: E402
from transformer_viz.weights.files import read_upload  # noqa: E402

MANY_TINY_LAYERS = {"model_type": "t5", "vocab_size": 8, "d_model": 2, "d_kv": 1, "d_ff": 1, "num_layers": 20000,
                    "num_decoder_layers": 20000, "num_heads": 1, "decoder_start_token_id": 0}


def rss_mib() -> float:
    """This process's resident memory in MiB (Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096 / 2**20


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def replay(what: str, call: Callable[[], object]) -> None:
    """Run `call`, print its outcome, RSS before / after / peak and its CPU seconds."""
    before, start = rss_mib(), time.process_time()
    try:
        call()
        outcome = "loaded"
    except ValueError as error:
        outcome = f"ValueError: {str(error)[:110]}"
    cpu = time.process_time() - start
    print(f"{what}\n  {outcome}\n  RSS {before:.0f} -> {rss_mib():.0f} MiB (peak so far {peak_mib():.0f} MiB), "
          f"CPU {cpu:.2f} s", flush=True)


def inflating_npz(path: Path, mib: int) -> None:
    """A trace file whose one float32 array is `mib` MiB of zeros, deflated (written a MiB at a time)."""
    names = ["x"]
    meta = {"format": "transformer_viz.trace", "version": 1, "config": None, "src_tokens": None,
            "tgt_tokens": None, "intervention": None, "names": names}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        buffer = io.BytesIO()
        np.save(buffer, np.array(json.dumps(meta)))
        archive.writestr("meta.npy", buffer.getvalue())
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                      "shape": (mib * 2**18,)})
        with archive.open("tensor/x.npy", "w", force_zip64=True) as entry:
            entry.write(header.getvalue())
            for _ in range(mib):
                entry.write(bytes(2**20))


def lying_npz(path: Path) -> None:
    """A trace file whose .npy header claims 10^12 float32 values and holds 16 bytes."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)})
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("tensor/x.npy", header.getvalue() + bytes(16))


def many_entries_zip(count: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i in range(count):
            archive.writestr(f"{i:x}", b"")
    return buffer.getvalue()


def main() -> None:
    print(f"start: RSS {rss_mib():.0f} MiB")
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        if hf.missing_reason() is None:
            (folder / "config.json").write_text(json.dumps(MANY_TINY_LAYERS))
            replay("1. hf.load: a config.json of 2 x 20,000 tiny T5 layers",
                   lambda: hf.load(str(folder), max_parameters=int(5e8)))
        else:
            print(f"1. skipped: {hf.missing_reason()}")
        inflating_npz(folder / "inflating.npz", 800)
        size = (folder / "inflating.npz").stat().st_size / 2**10
        replay(f"3. Trace.from_npz: {size:.0f} KiB that inflate to an 800 MiB array",
               lambda: Trace.from_npz(folder / "inflating.npz"))
        lying_npz(folder / "lying.npz")
        replay("3. Trace.from_npz: an .npy header claiming 10^12 floats", lambda: Trace.from_npz(folder / "lying.npz"))
        data = many_entries_zip(185_000)
        replay(f"4. read_upload: a {len(data) / 1e6:.1f} MB .zip of 185,000 empty entries",
               lambda: read_upload([("weights.zip", data)]))
        uploads_to_a_server(folder, [150 * 10**6] * 4)
        app = sys.argv[sys.argv.index("--app") + 1] if "--app" in sys.argv else "app.py"
        uploads_from_one_client(folder, app)
        room_flood(folder, app)


def uploads_to_a_server(workdir: Path, sizes: list[int]) -> None:
    """The upload endpoint of a real server: its statuses, and the server's RSS before and after."""
    from devtools.servers import Servers
    from devtools.servers import rss_mib as server_rss
    from devtools.uploads import upload_statuses

    with Servers(1, False, "app.py", workdir) as servers:
        seen = []
        statuses = asyncio.run(upload_statuses(servers.url, sizes, watch=lambda: seen.append(
            server_rss(servers.app_pids))))
    print(f"2. the upload endpoint: {len(sizes)} uploads of {sizes[0] / 1e6:.0f} MB to one session\n"
          f"  HTTP {', '.join(map(str, statuses))} (413: refused from its Content-Length)\n"
          f"  server RSS {seen[0]:.0f} -> {seen[1]:.0f} MiB (its page drawn -> the uploads done, session open)")


def uploads_from_one_client(workdir: Path, app: str, count: int = 30) -> None:
    """`count` uploads of the largest file the app reads from one session: what the server holds meanwhile and once
    the session's websocket closed (Streamlit keeps a closed session two minutes)."""
    from devtools.servers import Servers, cpu_seconds
    from devtools.servers import rss_mib as server_rss
    from devtools.uploads import open_session, put_file, xsrf_cookie
    from transformer_viz.weights.files import MAX_UPLOAD_BYTES

    async def uploads(url: str, pids: list[int]) -> tuple[list[int], list[float]]:
        cookie = xsrf_cookie(url)
        session = await open_session(url, cookie, forwarded="203.0.113.5")
        seen = [server_rss(pids)]
        statuses = [await asyncio.to_thread(put_file, url, session.session_id, cookie, MAX_UPLOAD_BYTES)
                    for _ in range(count)]
        seen.append(server_rss(pids))
        await session.close()
        await asyncio.sleep(10)  # a measurement's wait, not a test's: what is still held 10 s later
        return statuses, [*seen, server_rss(pids)]

    with Servers(1, False, app, workdir) as servers:
        cpu = cpu_seconds(servers.app_pids)
        statuses, seen = asyncio.run(uploads(servers.url, servers.app_pids))
        cpu = cpu_seconds(servers.app_pids) - cpu
    print(f"5. {count} uploads of {MAX_UPLOAD_BYTES / 2**20:.0f} MiB from one session ({app})\n"
          f"  HTTP 204 x {statuses.count(204)}, 413 x {statuses.count(413)}; server CPU {cpu:.1f} s\n"
          f"  server RSS {seen[0]:.0f} -> {seen[1]:.0f} MiB (the uploads done) -> {seen[2]:.0f} MiB "
          "(10 s after the tab closed)")


def room_flood(workdir: Path, app: str, sessions: int = 60) -> None:
    """Fresh sessions of one browser address (a trusted proxy's X-Forwarded-For) each press Start room; then a
    teacher of another address."""
    from devtools.class_client import Session
    from devtools.servers import Servers, cpu_seconds

    def starts(url: str, address: str) -> bool:
        async def start() -> bool:
            links: list[str] = []
            session = Session(url, timeout=120, headers={"X-Forwarded-For": address}, on_element=lambda kind, el, *_: (
                links.append(el.code_text) if kind == "code" and "room=" in el.code_text else None))
            await session.connect()
            try:
                await session.open("")
                await session.click("room_start")
                return bool(links)
            finally:
                await session.close()
        return asyncio.run(start())

    with Servers(1, False, app, workdir) as servers:
        cpu, begun = cpu_seconds(servers.app_pids), time.perf_counter()
        made = sum(starts(servers.url, "203.0.113.9") for _ in range(sessions))
        seconds, cpu = time.perf_counter() - begun, cpu_seconds(servers.app_pids) - cpu
        teacher = starts(servers.url, "198.51.100.20")
    print(f"6. room flood ({app}): {sessions} fresh sessions of one address pressed Start room in {seconds:.0f} s:\n"
          f"  {made} rooms made; server CPU {cpu:.1f} s; then a teacher of another address: "
          f"{'a room' if teacher else 'no room'}")


if __name__ == "__main__":
    main()
