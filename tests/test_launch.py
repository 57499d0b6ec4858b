"""The `transformer-viz` command: it answers --help, a bad option and a bad limit without loading torch or
Streamlit, and a served app downloads no Hugging Face model unless its host allows it."""

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import transformer_viz
from transformer_viz.app import launch
from transformer_viz.app.server.limits import ServerLimits, limits

ROOT = Path(__file__).resolve().parent.parent
# Runs the command as `python -m transformer_viz ARGS` would (the package's __init__ first), then reports how it
# exited and which heavy libraries it had imported by then.
PROBE = """
import json, runpy, sys
sys.argv = ["transformer-viz", *sys.argv[1:]]
try:
    runpy.run_module("transformer_viz", run_name="__main__")
    code = None
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "loaded": [m for m in ("torch", "streamlit", "numpy") if m in sys.modules]}))
"""


def command(*args: str, **variables: str) -> tuple[dict, str]:
    """Run the command in a fresh interpreter: (its exit code and the heavy modules it loaded, its stderr)."""
    environment = {**os.environ, **variables}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, env=environment, capture_output=True,
                          text=True, timeout=120)
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


@pytest.mark.parametrize(("args", "variables", "code", "said"), [
    (("--help",), {}, 0, ""),
    (("--prot", "8501"), {}, 2, "unrecognized arguments: --prot"),
    (("--port", "eighty"), {}, 2, "invalid int value"),
    ((), {"TVIZ_D_MODEL": "lots"}, "transformer-viz: TVIZ_D_MODEL='lots': expected a whole number", ""),
], ids=["help", "bad option", "bad port", "bad limit"])
def test_answers_without_importing_torch_or_streamlit(args, variables, code, said):
    result, stderr = command(*args, **variables)
    assert str(result["code"]).startswith(str(code)) and said in stderr
    assert result["loaded"] == []  # torch alone took 11.6 s of a 20 s --help on a cold disk (issue 24)


def test_help_names_the_options_and_the_served_download_default():
    done = subprocess.run([sys.executable, "-m", "transformer_viz", "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=True)
    for option in ("--host", "--port", "--checkpoints", "TVIZ_HF_DOWNLOADS=1"):
        assert option in done.stdout


@pytest.fixture
def served(monkeypatch):
    """served(**variables): run launch.main() with these TVIZ_* variables up to the point where Streamlit would
    start, and return the limits the server would keep and the arguments Streamlit would get."""
    from streamlit.web import cli

    started = []
    monkeypatch.setattr(cli, "main", lambda args, prog_name: started.append((args, limits())))
    monkeypatch.setattr(launch, "warm_up", lambda url: None)  # no server starts here

    def serve(**variables):
        monkeypatch.delenv("TVIZ_HF_DOWNLOADS", raising=False)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        limits.cache_clear()
        launch.main(["--port", "8600"])
        return started[-1]

    yield serve
    monkeypatch.undo()
    limits.cache_clear()


def test_a_served_app_downloads_no_hugging_face_model_unless_its_host_allows_it(served):
    args, kept = served()
    assert args[:2] == ["run", str(launch.SCRIPT)] and kept.hf_downloads == 0
    assert os.environ["TVIZ_HF_DOWNLOADS"] == "0"  # the server Streamlit starts in this process reads it
    _, kept = served(TVIZ_HF_DOWNLOADS="1")
    assert kept.hf_downloads == 1


def test_streamlit_run_app_py_downloads_only_for_a_browser_on_the_servers_own_computer():
    """`streamlit run app.py` listens on every interface: its default (2) lets a browser on the server's own computer
    download, and no visitor from the network, nor one through a proxy (issue 41, item 9)."""
    from transformer_viz.app.server.models import downloads_allowed

    setting = ServerLimits.from_environment({}).hf_downloads
    assert downloads_allowed(setting, None, None)
    assert not downloads_allowed(setting, "192.168.1.20", None)
    assert not downloads_allowed(setting, None, "203.0.113.5")
    assert downloads_allowed(1, "192.168.1.20", None) and not downloads_allowed(0, None, None)


def test_the_public_names_load_their_modules_on_first_use():
    """`import transformer_viz` loads no torch; each name of __all__ is its module's own object, and the imports
    type checkers read (under TYPE_CHECKING) name the same modules as the table that loads them."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, transformer_viz; print('torch' in sys.modules)"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "False"
    homes = transformer_viz._HOME_OF
    assert set(homes) == set(transformer_viz.__all__) - {"__version__"}
    for public, module in homes.items():
        assert getattr(transformer_viz, public) is getattr(importlib.import_module(module), public)
    tree = ast.parse(Path(transformer_viz.__file__).read_text())
    checked = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    assert {alias.name: node.module for node in checked.body for alias in node.names} == homes
    with pytest.raises(AttributeError, match="no attribute 'Transformers'"):
        transformer_viz.Transformers  # noqa: B018 - a typo still fails


def test_the_served_app_runs_its_home_page_once_before_any_student():
    """`transformer-viz` asks its own server for Streamlit's script health check as soon as it answers: torch, the
    shipped model and the home page's figures are loaded before the first browser connects (none does here)."""
    from devtools.browser import free_port, stop_process

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "transformer_viz", "--host", "127.0.0.1", "--port", str(port)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)  # stop_process stops its process group
    try:
        said = ""
        for line in server.stdout:  # until the warm-up reports (the launcher gives up after WARM_UP_SECONDS)
            said += line
            if "transformer-viz: " in line and ("warmed up" in line or "could not warm up" in line):
                break
        assert "transformer-viz: warmed up: the home page ran once" in said, said
    finally:
        stop_process(server)


def test_the_warm_up_address_follows_the_served_options():
    assert launch.served_url(launch.streamlit_args(["--port", "8600"])) == "http://127.0.0.1:8600"
    assert launch.served_url(launch.streamlit_args(["--host", "10.0.0.5", "--", "--server.port=9000"])) == \
        "http://10.0.0.5:9000"
    assert launch.served_url(launch.streamlit_args(["--host", "0.0.0.0"])) == "http://127.0.0.1:8501"


TRAIN_PROBE = PROBE.replace('"transformer-viz"', '"train"').replace('"transformer_viz"', '"transformer_viz.train"')


@pytest.mark.parametrize(("args", "code", "said"), [(("--help",), 0, "task to train (copy, reverse"),
                                                    (("--task", "copy", "--tsk", "1"), 2, "unrecognized arguments")],
                         ids=["help", "bad option"])
def test_the_training_command_answers_without_importing_torch(args, code, said):
    done = subprocess.run([sys.executable, "-c", TRAIN_PROBE, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] == code and said in done.stdout + done.stderr
    assert result["loaded"] == []  # it took 6.7 s with torch (issue 41)


def test_the_task_names_the_commands_show_are_the_tasks():
    from transformer_viz.config import LM_TASK_NAMES, TASK_NAMES
    from transformer_viz.data.tasks import LM_TASKS, TASKS

    assert (tuple(TASKS), tuple(LM_TASKS)) == (TASK_NAMES, LM_TASK_NAMES)
