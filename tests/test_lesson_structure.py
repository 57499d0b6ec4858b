"""What every lesson step may rely on, checked over all of them: the explorer page it opens exists, and what it
asks of its host is in the `Host` protocol (which the Lesson page implements)."""

import ast
import inspect
from pathlib import Path

import pytest

from transformer_viz.app.frame.navigation import PAGES
from transformer_viz.app.pages.lesson import StreamlitHost
from transformer_viz.lessons import STEPS
from transformer_viz.lessons.step import Host

LESSONS = Path(inspect.getfile(Host)).parent


@pytest.mark.parametrize("step", STEPS, ids=[step.name for step in STEPS])
def test_a_steps_explorer_page_exists(step):
    """"Open this in the explorer" switches to `step.page`: a name the navigation lacks would do nothing."""
    assert step.page in PAGES, f"step {step.name} opens {step.page!r}, which is no page ({', '.join(PAGES)})"


def host_attributes(path: Path) -> set[str]:
    """Every `host.<name>` (and `<column>.<name>` of the host's columns) a step's module reads."""
    tree, columns = ast.parse(path.read_text()), set()
    for node in ast.walk(tree):  # names bound to host.columns(...): the host's columns are hosts too
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                getattr(node.value.func, "attr", None) == "columns":
            for target in node.targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                columns |= {name.id for name in names if isinstance(name, ast.Name)}
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id in {"host", *columns}}


def declared(protocol) -> set[str]:
    return set(protocol.__annotations__) | {name for name, _ in inspect.getmembers(protocol, inspect.isfunction)}


@pytest.mark.parametrize("path", sorted(LESSONS.glob("*.py")), ids=lambda path: path.name)
def test_a_step_asks_its_host_only_what_host_declares(path):
    missing = host_attributes(path) - declared(Host)
    assert not missing, f"{path.name} uses host.{', host.'.join(sorted(missing))}, which Host does not declare"


def test_the_lesson_page_implements_all_of_host():
    missing = {name for name in declared(Host) if not hasattr(StreamlitHost, name)
               and name not in ("lang", "revealed", "min_font")}  # set per instance, in __init__
    assert not missing, missing
