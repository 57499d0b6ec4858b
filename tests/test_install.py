"""The wheel, installed outside the repository: `transformer-viz` serves the app with its packaged settings."""

import os
import shutil
import site
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from devtools.browser import EXCEPTION, free_port, new_page, open_app, stop_process, wait_until_serving

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of what it is made of (setuptools writes build/ beside its sources)."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "transformer_viz", source / "transformer_viz",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
                    str(out), str(source)], check=True, capture_output=True)
    return next(out.glob("transformer_viz-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A virtual environment holding the wheel; its dependencies come from this interpreter's site-packages, listed
    after its own (a .pth file: `--system-site-packages` would reach the base Python's, not this venv's)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    purelib = subprocess.run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "tviz_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], check=True,
                   capture_output=True)
    return venv


def test_the_wheel_holds_the_app_its_settings_weights_and_license(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for expected in ("transformer_viz/app/main.py", "transformer_viz/app/serve/streamlit_app.py",
                     "transformer_viz/app/serve/.streamlit/config.toml", "transformer_viz/weights/shipped/reverse.json",
                     "transformer_viz/weights/shipped/reverse.safetensors", "transformer_viz/py.typed"):
        assert expected in names, expected
    assert any(name.endswith("licenses/LICENSE") for name in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "transformer-viz = transformer_viz.app.launch:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_the_installed_command_serves_the_app_from_anywhere(installed, tmp_path, browser):
    python = installed / "bin" / "python"
    where = subprocess.run([python, "-c", "import transformer_viz; print(transformer_viz.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    assert Path(where).is_relative_to(installed)  # the wheel's copy, not this checkout
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    server = subprocess.Popen([installed / "bin" / "transformer-viz", "--host", "127.0.0.1", "--port", str(port)],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environment,
                              start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200

    try:
        wait_until_serving(server, healthy, "transformer-viz", timeout=90, interval=0.3)
        page = new_page(browser)
        open_app(page, f"{url}/attention")
        assert page.locator(EXCEPTION).count() == 0
        assert page.get_by_text("Cross-attention (decoder → encoder)").count() > 0
        # The packaged theme (primaryColor #3b528b) fills the chosen language's radio: its settings were read.
        colours = page.locator("[data-testid=stRadio] label", has_text="English").first.evaluate(
            "label => [...label.querySelectorAll('div')].map(d => getComputedStyle(d).backgroundColor)")
        assert "rgb(59, 82, 139)" in colours
        page.close()
    finally:
        stop_process(server)
    assert f"URL: {url}" in server.stdout.read().decode()
