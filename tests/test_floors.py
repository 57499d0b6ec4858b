"""The house shows the architecture: each folder is a floor, imports only point down, and no module imports
a library its floor must not use (DESIGN.md, "Floors")."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "transformer_viz"

# Lowest first; a module may import its own floor and any floor below it.
FLOORS = {
    "config": 0, "errors": 0, "i18n": 0,
    "trace": 1, "data": 1,
    "model": 2,
    "analysis": 3,
    "weights": 4,
    "train": 5,
    "figures": 6,
    "lessons": 7,
    "app": 8,
}
TOP = 9  # the package's own __init__ (the public API) and __main__


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def floor(module: str) -> int:
    parts = module.split(".")
    return TOP if len(parts) == 1 or parts[1] == "__main__" else FLOORS[parts[1]]


def imported(module: str) -> set[str]:
    """The package's modules that `module` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{module}: the package's imports are absolute"
            base = node.module
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name in MODULES and name != module}


def test_every_module_sits_on_a_floor():
    for module in MODULES:
        floor(module)  # a KeyError names a folder outside the house


def test_imports_only_point_down():
    upward = [f"{module} (floor {floor(module)}) imports {other} (floor {floor(other)})"
              for module in MODULES for other in imported(module) if floor(other) > floor(module)]
    assert not upward, "\n".join(upward)


def test_no_import_circle():
    graph = {module: imported(module) for module in MODULES}
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError("import circle: " + " -> ".join([*path[path.index(module):], module]))
        if module in done:
            return
        path.append(module)
        for other in graph[module]:
            if other.startswith(module + "."):
                continue  # a package importing its own submodule is not a circle
            visit(other)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


PROBE = """
import json, os, sys
import torch, numpy  # allowed everywhere: load once, then import each module in a fresh child
results = {}
for module in sys.argv[1:]:
    read, write = os.pipe()
    if os.fork() == 0:
        os.close(read)
        import importlib
        importlib.import_module(module)
        os.write(write, json.dumps([name for name in ("streamlit", "plotly") if name in sys.modules]).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        results[module] = json.loads(pipe.read() or '["failed to import"]')
    os.wait()
print(json.dumps(results))
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="uses os.fork")
def test_each_module_alone_loads_only_its_floors_libraries():
    """Imported alone in a fresh interpreter: no Streamlit outside app/, no Plotly below figures/."""
    modules = sorted(m for m in MODULES if not m.endswith("__main__") and not m.startswith("transformer_viz.app.serve"))
    result = subprocess.run([sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, check=True,
                            cwd=ROOT)
    loaded = json.loads(result.stdout)
    assert len(loaded) == len(modules) > 60
    wrong = []
    for module, libraries in loaded.items():
        if floor(module) < FLOORS["figures"] and "plotly" in libraries:
            wrong.append(f"{module} loads plotly")
        if floor(module) < FLOORS["app"] and "streamlit" in libraries:
            wrong.append(f"{module} loads streamlit")
        if "failed to import" in libraries:
            wrong.append(f"{module} does not import alone")
    assert not wrong, "\n".join(wrong)
