"""The server's limits: one place (TVIZ_* variables), checked when read, behind the sidebar's ranges."""

import os
import subprocess
import sys

import pytest

from transformer_viz.app.launch import SCRIPT, streamlit_args
from transformer_viz.app.server.limits import LIMITS, ServerLimits, usable_cores
from transformer_viz.app.session import state


def test_the_defaults_are_a_class_server_and_the_sidebar_offers_exactly_them():
    limits = ServerLimits.from_environment({})
    assert (limits.d_model, limits.heads, limits.layers, limits.d_ff, limits.input_tokens) == (256, 16, 6, 512, 64)
    assert limits.trainings_at_once == usable_cores() >= 1 and limits.training_processes == 1
    assert state.D_MODEL_RANGE[1] == LIMITS.d_model and LIMITS.heads == state.MAX_HEADS
    assert state.LAYER_RANGE[1] == LIMITS.layers and max(state.D_FF_CHOICES) == LIMITS.d_ff
    assert max(state.MAX_LEN_CHOICES) == LIMITS.input_tokens


def test_each_limit_comes_from_its_variable():
    limits = ServerLimits.from_environment({"TVIZ_D_MODEL": "128", "TVIZ_TRAININGS_AT_ONCE": "3",
                                            "TVIZ_TRAINING_BUDGET": "1e10", "TVIZ_LAYERS": " 4 "})
    assert (limits.d_model, limits.trainings_at_once, limits.training_budget, limits.layers) == (128, 3, 1e10, 4)


@pytest.mark.parametrize(("variable", "text"), [("TVIZ_D_MODEL", "lots"), ("TVIZ_D_MODEL", "100000"),
                                                ("TVIZ_HEADS", "2"), ("TVIZ_LAYERS", "1.5"),
                                                ("TVIZ_TRAININGS_AT_ONCE", "-1"), ("TVIZ_TRAINING_BUDGET", "nan"),
                                                ("TVIZ_RUN_CACHE_MIB", "1e9"), ("TVIZ_TRAINING_PROCESSES", "2")])
def test_a_value_out_of_range_names_its_variable_and_the_range(variable, text):
    with pytest.raises(ValueError, match=f"{variable}=.*expected .* from"):
        ServerLimits.from_environment({variable: text})


def test_a_sidebar_under_lower_limits_offers_less():
    code = ("from transformer_viz.app.session import state; "
            "print(state.D_MODEL_RANGE, state.MAX_HEADS, state.LAYER_RANGE, state.D_FF_CHOICES, state.MAX_LEN_CHOICES)")
    environment = {**os.environ, "TVIZ_D_MODEL": "64", "TVIZ_HEADS": "4", "TVIZ_LAYERS": "2", "TVIZ_D_FF": "128",
                   "TVIZ_INPUT_TOKENS": "32"}
    out = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(2, 64) 4 (1, 2) (16, 32, 64, 128) (0, 16, 24, 32)"


def test_the_command_runs_the_packaged_script_with_its_settings_beside_it(monkeypatch):
    monkeypatch.delenv("TVIZ_CHECKPOINTS", raising=False)
    args = streamlit_args(["--host", "127.0.0.1", "--port", "8600", "--checkpoints", "/tmp/w", "--",
                           "--server.maxUploadSize", "5"])
    assert args == ["run", str(SCRIPT), "--server.port", "8600", "--server.address", "127.0.0.1",
                    "--server.maxUploadSize", "5"]
    assert os.environ["TVIZ_CHECKPOINTS"] == "/tmp/w"
    assert (SCRIPT.parent / ".streamlit" / "config.toml").is_file()
    assert sorted(p.name for p in SCRIPT.parent.glob("*.py")) == ["streamlit_app.py"]  # alone on sys.path


def test_the_command_refuses_a_bad_limit_before_starting():
    environment = {**os.environ, "TVIZ_HEADS": "many"}
    out = subprocess.run([sys.executable, "-m", "transformer_viz", "--port", "1"], env=environment,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "TVIZ_HEADS='many'" in out.stderr and "Traceback" not in out.stderr
