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
# The floors inside app/, lowest first, by the same rule: the server (shared by every session) knows no session, a
# session's view and widgets know no frame around the page, rooms know no page and pages sit on top of them all.
APP_FLOORS = {
    "server": 0,
    "session": 1,
    "frame": 2,
    "rooms": 3,
    "pages": 4,
}
APP_TOP = 5  # app's own __init__, main.py, launch.py and serve/: they put the app together


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def floor(module: str) -> int:
    parts = module.split(".")
    return TOP if len(parts) == 1 or parts[1] == "__main__" else FLOORS[parts[1]]


def app_floor(module: str) -> int:
    parts = module.split(".")
    return APP_TOP if len(parts) == 2 or parts[2] in ("main", "launch", "serve") else APP_FLOORS[parts[2]]


def in_app(module: str) -> bool:
    return module.startswith("transformer_viz.app.")


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


def test_every_module_of_app_sits_on_an_inner_floor():
    for module in filter(in_app, MODULES):
        app_floor(module)  # a KeyError names a folder of app/ outside its floors


def test_imports_only_point_down():
    upward = [f"{module} (floor {floor(module)}) imports {other} (floor {floor(other)})"
              for module in MODULES for other in imported(module) if floor(other) > floor(module)]
    assert not upward, "\n".join(upward)


def test_imports_only_point_down_inside_app():
    upward = [f"{module} (app floor {app_floor(module)}) imports {other} (app floor {app_floor(other)})"
              for module in filter(in_app, MODULES) for other in imported(module)
              if in_app(other) and app_floor(other) > app_floor(module)]
    assert not upward, "\n".join(upward)


def assert_no_circle(graph: dict[str, set[str]]) -> None:
    done, path = set(), []

    def visit(node):
        if node in path:
            raise AssertionError("import circle: " + " -> ".join([*path[path.index(node):], node]))
        if node in done:
            return
        path.append(node)
        for other in sorted(graph[node]):
            if other.startswith(node + "."):
                continue  # a package importing its own submodule is not a circle
            visit(other)
        path.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)


def test_no_import_circle():
    assert_no_circle({module: imported(module) for module in MODULES})


def test_no_import_circle_among_app_floors():
    """Folder by folder (server, session, ...): whatever order the table gives them, none leans on another that
    leans back on it."""
    def folder(module: str) -> str:
        return module.split(".")[2]

    graph = {folder(module): set() for module in filter(in_app, MODULES)}
    for module in filter(in_app, MODULES):
        graph[folder(module)] |= {folder(other) for other in imported(module)
                                  if in_app(other) and folder(other) != folder(module)}
    assert_no_circle(graph)


PROBE = """
import json, os, sys
import torch, numpy  # allowed everywhere: load once, then import each module in a fresh child
results = {}
for preload, modules in json.loads(sys.argv[1]):  # each group's preloads add to the ones before
    for library in preload:  # a library the next modules may load: loaded once, here, not in each child
        __import__(library)
    for module in modules:
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
    """Imported alone in a fresh interpreter (a child forked from one that loaded only the libraries the module's
    floor may load): no Streamlit outside app/, no Plotly below figures/."""
    modules = sorted(m for m in MODULES if not m.endswith("__main__") and not m.startswith("transformer_viz.app.serve"))
    groups = [([], [m for m in modules if floor(m) < FLOORS["figures"]]),
              (["plotly"], [m for m in modules if FLOORS["figures"] <= floor(m) < FLOORS["app"]]),
              (["streamlit"], [m for m in modules if floor(m) >= FLOORS["app"]])]
    result = subprocess.run([sys.executable, "-c", PROBE, json.dumps(groups)], capture_output=True, text=True,
                            check=True, cwd=ROOT)
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
