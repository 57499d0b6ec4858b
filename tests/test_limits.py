"""The server's limits: one place (TVIZ_* variables), checked when read, behind the sidebar's ranges."""

import os
import subprocess
import sys

import pytest

from transformer_viz.app.launch import SCRIPT, streamlit_args
from transformer_viz.app.server import state
from transformer_viz.app.server.limits import ServerLimits, limits, usable_cores
from transformer_viz.app.server.state import View


@pytest.fixture
def environment(monkeypatch):
    """environment(TVIZ_D_MODEL="64", ...) sets variables for one test and has limits() read them (after the test:
    read again as they were)."""

    def set_variables(**variables):
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        limits.cache_clear()

    yield set_variables
    monkeypatch.undo()
    limits.cache_clear()


def test_the_defaults_are_a_class_server_and_the_sidebar_offers_exactly_them():
    defaults = ServerLimits.from_environment({})
    assert (defaults.d_model, defaults.heads, defaults.layers, defaults.d_ff, defaults.input_tokens) == (
        256, 16, 6, 512, 64)
    assert defaults.trainings_at_once == usable_cores() >= 1 and defaults.training_processes == 1
    assert state.d_model_range()[1] == limits().d_model and state.layer_range()[1] == limits().layers
    assert max(state.d_ff_choices()) == limits().d_ff and max(state.max_len_choices()) == limits().input_tokens


def test_each_limit_comes_from_its_variable():
    read = ServerLimits.from_environment({"TVIZ_D_MODEL": "128", "TVIZ_TRAININGS_AT_ONCE": "3",
                                          "TVIZ_TRAINING_BUDGET": "1e10", "TVIZ_LAYERS": " 4 "})
    assert (read.d_model, read.trainings_at_once, read.training_budget, read.layers) == (128, 3, 1e10, 4)


@pytest.mark.parametrize(("variable", "text"), [("TVIZ_D_MODEL", "lots"), ("TVIZ_D_MODEL", "100000"),
                                                ("TVIZ_HEADS", "2"), ("TVIZ_LAYERS", "1.5"),
                                                ("TVIZ_TRAININGS_AT_ONCE", "-1"), ("TVIZ_TRAINING_BUDGET", "nan"),
                                                ("TVIZ_RUN_CACHE_MIB", "1e9"), ("TVIZ_TRAINING_PROCESSES", "2")])
def test_a_value_out_of_range_names_its_variable_and_the_range(variable, text):
    with pytest.raises(ValueError, match=f"{variable}=.*expected .* from"):
        ServerLimits.from_environment({variable: text})


def test_a_server_under_lower_limits_offers_and_builds_less(environment):
    from transformer_viz.app.server import models

    bigger = View(n_heads=8, d_model=128, n_encoder_layers=4, d_ff=256, max_len=48)
    assert not bigger.beyond_limits()
    environment(TVIZ_D_MODEL="64", TVIZ_HEADS="4", TVIZ_LAYERS="2", TVIZ_D_FF="128", TVIZ_INPUT_TOKENS="32",
                TVIZ_RUN_CACHE_MIB="64")
    assert (state.d_model_range(), limits().heads, state.layer_range()) == ((2, 64), 4, (1, 2))
    assert (state.d_ff_choices(), state.max_len_choices()) == ((16, 32, 64, 128), (0, 16, 24, 32))
    assert bigger.beyond_limits() == ["d_model", "n_heads", "n_encoder_layers", "d_ff", "max_len"]
    assert models.run_cache_bytes() == 64 * 2**20


def test_the_command_runs_the_packaged_script_with_its_settings_beside_it(monkeypatch):
    monkeypatch.delenv("TVIZ_CHECKPOINTS", raising=False)
    args = streamlit_args(["--host", "127.0.0.1", "--port", "8600", "--checkpoints", "/tmp/w", "--",
                           "--server.maxUploadSize", "5"])
    assert args == ["run", str(SCRIPT), "--server.port", "8600", "--server.scriptHealthCheckEnabled", "true",
                    "--server.address", "127.0.0.1", "--server.maxUploadSize", "5"]  # the check: its warm-up
    assert os.environ["TVIZ_CHECKPOINTS"] == "/tmp/w"
    assert (SCRIPT.parent / ".streamlit" / "config.toml").is_file()
    assert sorted(p.name for p in SCRIPT.parent.glob("*.py")) == ["streamlit_app.py"]  # alone on sys.path


def test_the_command_refuses_a_bad_limit_before_starting():
    environment = {**os.environ, "TVIZ_HEADS": "many"}
    out = subprocess.run([sys.executable, "-m", "transformer_viz", "--port", "1"], env=environment,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "TVIZ_HEADS='many'" in out.stderr and "Traceback" not in out.stderr
