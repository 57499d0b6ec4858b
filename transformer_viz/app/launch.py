"""`transformer-viz` / `python -m transformer_viz`: start the app with its packaged Streamlit settings.

    transformer-viz                          # http://localhost:8501, Streamlit's defaults for the address
    transformer-viz --host 127.0.0.1 --port 8600 --checkpoints ~/my_weights
    transformer-viz -- --server.maxUploadSize 5   # anything after -- goes to `streamlit run` as is

Arguments and limits are checked before torch or Streamlit is imported (about 12 s on a cold disk): `--help`, a
bad option or a bad TVIZ_* value answers at once (`python bench/bench_cli.py` prints how fast).
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import urllib.request
from pathlib import Path

SCRIPT = Path(__file__).with_name("serve") / "streamlit_app.py"  # its .streamlit/config.toml comes along
# What a served app does unless its host says otherwise (a variable already set wins). Downloads from the Hugging
# Face Hub are for someone running the app on their own machine (`streamlit run app.py` keeps them on): on a server,
# any student who ticks "Allow downloading" would make it fetch up to ~2 GB.
SERVED_DEFAULTS = {"TVIZ_HF_DOWNLOADS": "0"}
# Streamlit's script health check runs the app's script once in a session of the server's own: the launcher asks
# for it as soon as the server answers, so that the first student finds torch imported, the shipped model loaded
# and the home page's figures in the shared cache (bench/bench_pages.py: a cold first page took 7.3-7.9 s, a warm
# one 3.1 s). deploy/nginx.conf.template keeps the check's address from the outside.
WARM_UP = "/_stcore/script-health-check"
WARM_UP_SECONDS = 600  # the longest the launcher waits for the server to answer, then for the run
# The server is on this machine: never through an http_proxy a school's network may set in the environment.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
EPILOG = ("The server's limits are TVIZ_* environment variables (README, \"Host it for a class\"). Served this way, "
          "the app downloads no Hugging Face model unless TVIZ_HF_DOWNLOADS=1.")


def streamlit_args(argv: list[str] | None = None) -> list[str]:
    """The `streamlit run` command line for these arguments; sets the checkpoint folders in the environment."""
    parser = argparse.ArgumentParser(prog="transformer-viz", description=__doc__.split("\n\n")[0], epilog=EPILOG)
    parser.add_argument("--host", help="address to listen on (Streamlit's default: every interface)")
    parser.add_argument("--port", type=int, default=8501, help="port to listen on (default 8501)")
    parser.add_argument("--checkpoints", action="append", default=[], metavar="DIR",
                        help="a folder of <name>.safetensors + <name>.json checkpoints to list beside the shipped "
                             "ones (repeatable; also $TVIZ_CHECKPOINTS)")
    parser.add_argument("streamlit", nargs=argparse.REMAINDER, help="after --: more `streamlit run` options")
    args = parser.parse_args(argv)
    if args.checkpoints:
        from transformer_viz.weights.pretrained import CHECKPOINTS_ENV  # imports torch: only once parsing is done

        folders = [str(Path(folder).expanduser().resolve()) for folder in args.checkpoints]
        os.environ[CHECKPOINTS_ENV] = os.pathsep.join(filter(None, [*folders, os.environ.get(CHECKPOINTS_ENV)]))
    extra = args.streamlit[1:] if args.streamlit[:1] == ["--"] else args.streamlit
    command = ["run", str(SCRIPT), "--server.port", str(args.port), "--server.scriptHealthCheckEnabled", "true"]
    if args.host:
        command += ["--server.address", args.host]
    return command + extra


def main(argv: list[str] | None = None) -> None:
    """Run Streamlit in this process (it exits when the server stops); a bad TVIZ_* limit stops it first."""
    args = streamlit_args(argv)
    for variable, value in SERVED_DEFAULTS.items():
        os.environ.setdefault(variable, value)
    from transformer_viz.app.server.limits import limits  # the config's floor only: no torch yet

    try:
        limits()  # read from the environment once, before Streamlit starts (the server keeps them)
    except ValueError as error:
        raise SystemExit(f"transformer-viz: {error}") from None
    from streamlit.web import cli

    threading.Thread(target=warm_up, args=(served_url(args),), name="warm-up", daemon=True).start()
    cli.main(args=args, prog_name="transformer-viz")


def served_url(args: list[str]) -> str:
    """The server's address on this machine, from the `streamlit run` arguments (the last value of an option wins,
    as in Streamlit's own parsing)."""
    options = {}
    for i, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        if name.startswith("--"):
            options[name] = value if equals else (args[i + 1] if i + 1 < len(args) else "")
    host = options.get("--server.address", "127.0.0.1")
    host = "127.0.0.1" if host in ("", "0.0.0.0") else "[::1]" if host == "::" else host
    return f"http://{host}:{options.get('--server.port', '8501')}"


def warm_up(url: str, seconds: float = WARM_UP_SECONDS) -> bool:
    """Once the server at `url` answers its health check, have it run the app once (WARM_UP); False if it never
    answered or the run failed (the first student then pays for the start-up, as without this)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with DIRECT.open(f"{url}/_stcore/health", timeout=5):
                break
        except OSError:
            time.sleep(0.25)
    else:
        print("  transformer-viz: could not warm up: the server did not answer", flush=True)
        return False
    started = time.monotonic()
    try:
        with DIRECT.open(f"{url}{WARM_UP}", timeout=max(deadline - time.monotonic(), 1)) as answer:
            ran = answer.status == 200
    except OSError:
        ran = False
    print(f"  transformer-viz: {'warmed up' if ran else 'could not warm up'}: the home page ran once in "
          f"{time.monotonic() - started:.1f} s, before any student", flush=True)
    return ran
