"""`transformer-viz` / `python -m transformer_viz`: start the app with its packaged Streamlit settings.

    transformer-viz                          # http://localhost:8501, Streamlit's defaults for the address
    transformer-viz --host 127.0.0.1 --port 8600 --checkpoints ~/my_weights
    transformer-viz -- --server.maxUploadSize 5   # anything after -- goes to `streamlit run` as is
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from transformer_viz.weights.pretrained import CHECKPOINTS_ENV  # extra checkpoint folders, os.pathsep-separated

SCRIPT = Path(__file__).with_name("serve") / "streamlit_app.py"  # its .streamlit/config.toml comes along


def streamlit_args(argv: list[str] | None = None) -> list[str]:
    """The `streamlit run` command line for these arguments; sets the checkpoint folders in the environment."""
    parser = argparse.ArgumentParser(prog="transformer-viz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", help="address to listen on (Streamlit's default: every interface)")
    parser.add_argument("--port", type=int, default=8501, help="port to listen on (default 8501)")
    parser.add_argument("--checkpoints", action="append", default=[], metavar="DIR",
                        help="a folder of <name>.safetensors + <name>.json checkpoints to list beside the shipped "
                             "ones (repeatable; also $TVIZ_CHECKPOINTS)")
    parser.add_argument("streamlit", nargs=argparse.REMAINDER, help="after --: more `streamlit run` options")
    args = parser.parse_args(argv)
    if args.checkpoints:
        folders = [str(Path(folder).expanduser().resolve()) for folder in args.checkpoints]
        os.environ[CHECKPOINTS_ENV] = os.pathsep.join(filter(None, [*folders, os.environ.get(CHECKPOINTS_ENV)]))
    extra = args.streamlit[1:] if args.streamlit[:1] == ["--"] else args.streamlit
    command = ["run", str(SCRIPT), "--server.port", str(args.port)]
    if args.host:
        command += ["--server.address", args.host]
    return command + extra


def main(argv: list[str] | None = None) -> None:
    """Run Streamlit in this process (it exits when the server stops); a bad TVIZ_* limit stops it first."""
    from streamlit.web import cli

    args = streamlit_args(argv)
    try:
        from transformer_viz.app.server.limits import limits

        limits()  # read from the environment once, before Streamlit starts (the server keeps them)
    except ValueError as error:
        raise SystemExit(f"transformer-viz: {error}") from None
    cli.main(args=args, prog_name="transformer-viz")
