"""No branch on the kind of model outside its homes: the model floor, the config and the one-stream task format
that define it, the Form, and the four Architectures. Everywhere else asks `architecture_of(model)` or
`trace.form` (DESIGN.md, "One model interface"), so a new kind of model needs no edit across the pages."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "transformer_viz"
HOMES = ("model/", "config.py", "data/tasks/lm.py", "trace/form.py", "analysis/architecture.py",
         "weights/architectures.py", "weights/hf.py", "weights/hf_causal.py", "weights/hf_causal_views.py", "i18n/")
MODEL_CLASSES = {"Transformer", "DecoderOnlyTransformer", "HFModel", "HFCausalModel"}
FORM_NAMES = {"encoder_decoder", "decoder_only"}


def checked(path: Path) -> bool:
    relative = path.relative_to(PACKAGE).as_posix()
    return not any(relative == home or relative.startswith(home) for home in HOMES)


def names_in(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, ast.Name | ast.Attribute)}


def branches(source: str) -> list[tuple[int, str]]:
    """(line, what) of each test of the kind of model: isinstance against a model class, a comparison with an
    architecture's name, or the old `decoder_only` flag."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2 \
                and names_in(node.args[1]) & MODEL_CLASSES:
            found.append((node.lineno, "isinstance against a model class"))
        elif isinstance(node, ast.Compare) and any(isinstance(c, ast.Constant) and c.value in FORM_NAMES
                                                   for c in [node.left, *node.comparators]):
            found.append((node.lineno, "a comparison with an architecture's name"))
        elif isinstance(node, ast.Attribute) and node.attr == "decoder_only":
            found.append((node.lineno, "the decoder_only flag"))
    return found


SOURCES = sorted(path for path in PACKAGE.rglob("*.py") if checked(path))


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: path.relative_to(PACKAGE).as_posix())
def test_no_branch_on_the_kind_of_model_outside_its_homes(path):
    found = branches(path.read_text())
    assert not found, "\n".join(f"{path.relative_to(ROOT)}:{line}: {what}" for line, what in found)


def test_the_check_finds_each_kind_of_branch():
    source = ('if isinstance(m, Transformer | DecoderOnlyTransformer): pass\n'
              'if config.architecture == "decoder_only": pass\n'
              'x = 1 if trace.decoder_only else 2\n')
    assert [line for line, _ in branches(source)] == [1, 2, 3]
