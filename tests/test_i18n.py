"""The words (transformer_viz/i18n): one catalog per language, one lookup; every key in every language, with the
same blanks; every key the code asks for exists, and every key is asked for somewhere (pages and figures alike)."""

import ast
import re
from pathlib import Path
from string import Formatter

import pytest
from test_floors import MODULES, imported

from transformer_viz.errors import TranslatableError
from transformer_viz.i18n import CATALOGS, LANGUAGE_NAMES, LANGUAGES, text, translatable_error

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {path: path.read_text() for path in [*(ROOT / "transformer_viz").rglob("*.py"), ROOT / "app.py"]
           if "i18n" not in path.relative_to(ROOT).parts}
ENGLISH, CHINESE = CATALOGS["en"], CATALOGS["zh"]
# Keys a language may leave out (shown in English there): none today. Add one only for a word that is the same
# in every language and would otherwise be copied (a name, a formula).
ENGLISH_ONLY: set[str] = set()
# Keys whose blanks differ by design: where the head walkthrough's X comes from, in English as the trace names it
# ("decoder.layers.0.resid_mid", "norm1(...)"), in Chinese in words with the layer counted from 1.
OWN_BLANKS = {"source.norm", "source.resid_mid", "source.resid_post"}
KEY = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_-]+)+|[a-z][a-z0-9_]*")
KEY_LIKE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_-]+)+")  # a dotted key, as a method's argument must look
KEY_PART = re.compile(r"[a-z0-9_.-]*")  # what the written parts of a built key may hold


def blanks(sentence: str) -> set[str]:
    return {name for _, name, _, _ in Formatter().parse(sentence) if name}


def test_every_language_has_every_key():
    assert set(LANGUAGES) == set(LANGUAGE_NAMES) == {"en", "zh"}
    assert set(ENGLISH) >= ENGLISH_ONLY
    for catalog in CATALOGS.values():
        assert sorted(set(ENGLISH) - ENGLISH_ONLY - set(catalog)) == []
        assert sorted(set(catalog) - set(ENGLISH)) == []
        assert all(isinstance(sentence, str) and sentence for sentence in catalog.values())
    assert all(KEY.fullmatch(key) for key in ENGLISH), [key for key in ENGLISH if not KEY.fullmatch(key)]


def test_every_language_fills_the_same_blanks():
    for catalog in CATALOGS.values():
        assert {k: blanks(v) for k, v in catalog.items() if k not in OWN_BLANKS} == \
            {k: blanks(ENGLISH[k]) for k in catalog if k not in OWN_BLANKS}
    assert all(blanks(CHINESE[key]) != blanks(ENGLISH[key]) for key in OWN_BLANKS)  # the list stays exact


def test_the_lookup_falls_back_to_english_and_names_what_it_does_not_know(monkeypatch):
    assert text("attention.large", "en", layer=2, head=3) == "Layer 2, head 3"
    assert text("attention.large", "zh", layer=2, head=3) == "第 2 层，第 3 个头"
    assert text("attention.large") == "Layer {layer}, head {head}"  # without values, the sentence as written
    monkeypatch.delitem(CHINESE, "attention.large")
    assert text("attention.large", "zh", layer=2, head=3) == "Layer 2, head 3"
    with pytest.raises(KeyError, match="no_such_key"):
        text("no_such_key", "zh")
    with pytest.raises(ValueError, match="'en', 'zh'"):
        text("attention.large", "fr")


def test_a_translatable_error_says_its_catalog_sentence():
    error = translatable_error("upload.too_big", file="w.zip", size=20, limit=16)
    assert isinstance(error, TranslatableError) and (error.key, error.values) == ("upload.too_big", {
        "file": "w.zip", "size": 20, "limit": 16})
    assert str(error) == text("detail.upload.too_big", file="w.zip", size=20, limit=16) == \
        "w.zip is 20 MB; at most 16 MB can be uploaded."


def test_the_words_import_nothing_of_the_package_but_its_errors():
    for module in MODULES:
        if module.startswith("transformer_viz.i18n"):
            assert {m for m in imported(module) if not m.startswith("transformer_viz.i18n")} <= {
                "transformer_viz.errors", "transformer_viz.errors.TranslatableError"}, module


def key_pattern(node: ast.AST) -> re.Pattern | None:
    """The keys an f-string can make (f"kind.{kind}" -> kind\\..*), or a sum ("dot.title" + ... -> dot\\.title.*);
    None when it does not make a key (it starts otherwise, or it is a sentence)."""
    if isinstance(node, ast.JoinedStr):
        values = node.values
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.left, ast.Constant):
        values = [node.left, node.right]
    else:
        return None
    first = values[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)
            and re.match(r"[a-z][a-z0-9_]*[._]", first.value)):
        return None
    if any(isinstance(v, ast.Constant) and not KEY_PART.fullmatch(v.value) for v in values):
        return None
    return re.compile("".join(re.escape(v.value) if isinstance(v, ast.Constant) else ".*" for v in values))


def wrappers(tree: ast.AST) -> dict[str, str]:
    """Local shorthands such as `def walk_text(key, **values): return text(f"walk.{key}", lang, **values)`, by
    name: the prefix they put before the key they are given."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.args.args:
            first = node.args.args[0].arg
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "text" and call.args and \
                        isinstance(call.args[0], ast.JoinedStr):
                    values = call.args[0].values
                    if len(values) == 2 and isinstance(values[0], ast.Constant) and \
                            getattr(values[1].value, "id", None) == first:
                        found[node.name] = values[0].value
    return found


def asked_keys() -> tuple[set[str], list[re.Pattern], list[str]]:
    """The keys the code asks for by name, the patterns of those it builds, and what it asks for that is no key
    (file:line)."""
    named, patterns, wrong = set(), [], []
    for path, source in SOURCES.items():
        tree = ast.parse(source)
        shorthands = wrappers(tree)
        for node in ast.walk(tree):
            if (pattern := key_pattern(node)) is not None:
                patterns.append(pattern)
            if not (isinstance(node, ast.Call) and node.args):
                continue
            func, first = node.func, node.args[0]
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name == "particular":  # the key and its model's own variants
                base = key_pattern(first) if isinstance(first, ast.JoinedStr) else re.compile(re.escape(first.value))
                patterns.append(re.compile(base.pattern + "(_[a-z_]+)?"))
                if isinstance(first, ast.Constant) and first.value not in ENGLISH:
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}: {first.value}")
            if name not in ("text", "tr", *shorthands):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                if isinstance(func, ast.Attribute) and not KEY_LIKE.fullmatch(first.value):
                    continue  # a method of that name (a diagram's canvas.text) with something else
                key = shorthands.get(name, "") + first.value
                named.add(key)
                if key not in ENGLISH:
                    wrong.append(f"{where}: {key}")
            elif isinstance(first, ast.JoinedStr | ast.BinOp):
                pattern = key_pattern(first)
                if pattern is not None and not any(pattern.fullmatch(key) for key in ENGLISH):
                    wrong.append(f"{where}: {pattern.pattern}")
    return named, patterns, wrong


def test_every_key_the_code_asks_for_is_in_the_catalogs():
    named, patterns, wrong = asked_keys()
    assert len(named) > 400 and len(patterns) > 40
    assert wrong == []


def test_every_key_of_the_catalogs_is_asked_for():
    """By name (a string literal anywhere in the package: a page's tr("..."), a figure's text("...", lang), a key
    handed on as data) or built (an f-string such as f"kind.{kind}" whose pattern matches it)."""
    everything = "\n".join(SOURCES.values())
    _, patterns, _ = asked_keys()
    unused = [key for key in ENGLISH if f'"{key}"' not in everything and f"'{key}'" not in everything
              and not any(pattern.fullmatch(key) for pattern in patterns)]
    assert unused == []
