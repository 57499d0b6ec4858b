"""The wheel, installed outside the repository: `transformer-viz` serves the app with its packaged settings. Every
install route (README's commands, the wheel's requirements, CI) keeps PyTorch's CPU build: none fetches a CUDA torch."""

import email
import json
import os
import re
import shutil
import site
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from devtools.browser import EXCEPTION, free_port, new_page, open_app, stop_process, wait_until_serving

ROOT = Path(__file__).resolve().parent.parent
CPU_TORCH = re.compile(r"pip install torch==(\S+) --index-url https://download\.pytorch\.org/whl/cpu")


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
                     "transformer_viz/weights/shipped/reverse.safetensors", "transformer_viz/py.typed",
                     "transformer_viz/app/favicon.svg"):  # the icon the page shows, from the server itself
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


def readme_commands() -> list[list[str]]:
    """README's shell commands (its bash blocks, comments dropped), each split into its `&&` steps."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    lines = [line.split(" #")[0].strip() for block in blocks for line in block.splitlines()]
    return [[step.strip() for step in line.split("&&")] for line in lines if line and not line.startswith("#")]


def readme_torch() -> str:
    """The torch version README's commands install (one for all of them)."""
    versions = {match[1] for steps in readme_commands() for step in steps if (match := CPU_TORCH.fullmatch(step))}
    assert len(versions) == 1, versions
    return versions.pop()


def test_readme_installs_cpu_torch_alone_before_anything_that_needs_torch():
    """A pip install that finds no torch in range takes PyPI's, the CUDA build on Linux (5.9 GB with the wheel)."""
    installs = []
    for steps in readme_commands():
        assert not any("--extra-index-url" in step for step in steps)  # every package asked of both indexes
        torch_first = False
        for step in steps:
            if CPU_TORCH.fullmatch(step):
                torch_first = True
            elif step.startswith("pip install"):
                assert torch_first, f"README's `{step}` runs before CPU torch is installed"
                assert "torch" not in step.split() and "--index-url" not in step, step
                installs.append(step.removeprefix("pip install ").strip())
    # the app, the tests, the package (host it for a class): each route is there and checked
    assert {"-r requirements.txt", "-r requirements-dev.txt", "."} <= set(installs)


def test_every_torch_requirement_keeps_readmes_cpu_torch_and_ci_installs_the_same():
    version = readme_torch()
    requirements = [Requirement(line.split("#")[0]) for line in (ROOT / "requirements.txt").read_text().splitlines()
                    if line.startswith("torch")]
    assert len(requirements) == 1 and requirements[0].specifier.contains(version)
    assert f"python -m pip install --quiet torch=={version}\n" in (ROOT / ".ci" / "run").read_text()


def test_the_wheel_requires_a_torch_that_readmes_cpu_torch_satisfies_and_nothing_of_cuda(wheel):
    archive = zipfile.ZipFile(wheel)
    metadata = email.message_from_bytes(archive.read(next(n for n in archive.namelist() if n.endswith("/METADATA"))))
    requirements = [Requirement(text) for text in metadata.get_all("Requires-Dist")]
    torch = [r for r in requirements if r.name == "torch"]
    assert len(torch) == 1 and torch[0].marker is None and torch[0].specifier.contains(readme_torch())
    assert not [r.name for r in requirements if r.name.startswith(("nvidia", "triton", "cuda"))]
    assert {"hf", "bertviz", "redis"} <= set(metadata.get_all("Provides-Extra"))


def test_installing_the_wheel_after_cpu_torch_fetches_no_other_torch(wheel):
    """pip resolves the wheel's requirements against what is installed here (CPU torch and the rest), with no index
    to fetch from: it would install the wheel alone, and keep this torch."""
    import torch

    done = subprocess.run([sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--no-index", "--quiet",
                           "--report", "-", str(wheel)], capture_output=True, text=True)
    assert done.returncode == 0, f"the wheel's requirements need more than is installed here:\n{done.stderr}"
    installs = {canonicalize_name(item["metadata"]["name"]) for item in json.loads(done.stdout)["install"]}
    assert installs == {"transformer-viz"}, f"besides the wheel pip would fetch {installs} (torch {torch.__version__})"
