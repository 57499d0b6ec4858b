"""The published tables beside ours: what `bench/bench_papers.py --write` measured on the shipped models
(`analysis/papers.json`), as tables with translated headings."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from transformer_viz.analysis.agreement import APPROXIMATIONS, PUBLISHED, REFERENCES
from transformer_viz.analysis.architecture import TOY
from transformer_viz.i18n import text

MEASURED = Path(__file__).resolve().parent.parent / "analysis" / "papers.json"
THEIR_LAYERS = (1, 3, 6)


@functools.cache
def measured() -> dict:
    """The bench's last results, {} when none were written."""
    return json.loads(MEASURED.read_text(encoding="utf-8")) if MEASURED.exists() else {}


def model_label(model: str, lang: str) -> str:
    """A shipped model's name as its task and form: "reverse-gpt" -> "Reverse the letters · Decoder-only (GPT's)"."""
    task, form = next((task, name) for name, architecture in TOY.items() for task in architecture.tasks()
                      if architecture.pretrained_name(task) == model)
    return f"{text(f'task.{task}', lang)} · {text(f'architecture.{form}', lang)}"


def _number(value) -> str:
    return "–" if value is None or value != value else f"{value:.2f}".replace("-", "−")  # NaN != NaN


def agreement_table(model: str, table: dict, lang: str):
    """One model's Spearman table beside Abnar & Zuidema's: a row per (method, reference)."""
    import pandas as pd

    layers = range(1, table["layers"] + 1)
    rows = []
    for reference in REFERENCES:
        for method in APPROXIMATIONS:
            ours, theirs = table["rho"][reference][method], PUBLISHED[reference][method]
            row = {text("papers.method", lang): text(f"papers.{method}", lang),
                   text("papers.against", lang): text(f"attribution.method.{reference}", lang)}
            row.update({text("papers.ours", lang, layer=layer): _number(ours.get(str(layer))) for layer in layers})
            row.update({text("papers.theirs", lang, layer=layer): _number(theirs[layer - 1])
                        for layer in THEIR_LAYERS})
            rows.append(row)
    return pd.DataFrame(rows)


KIND_KEYS = {"encoder_self": "kind.encoder_self", "decoder_self": "kind.decoder_self", "cross": "kind.cross"}


def _points(change: list[float]) -> str:
    """[delta, low, high] as "−12.3 [−15.0, −9.8]" percentage points, starred when the interval excludes 0."""
    delta, low, high = (100 * value for value in change)
    star = "*" if low > 0 or high < 0 else ""
    return f"{delta:+.1f} [{low:+.1f}, {high:+.1f}]{star}".replace("-", "−")


def _site(kind: str, layer: int, lang: str) -> str:
    return f"{text(KIND_KEYS[kind], lang)} · {text('layer', lang, layer=layer + 1)}"


def single_heads_table(results: dict, lang: str):
    """(a): per model, how many single heads change exact match beyond noise, each way, beside Michel et al."""
    import pandas as pd

    published = results["michel_published"]["single"]
    rows = [{text("papers.model", lang): text("papers.michel_wmt", lang),
             text("papers.heads", lang): published["heads"],
             text("papers.worse", lang): published["significant"] - published["better"],
             text("papers.better", lang): published["better"]}]
    for model, table in results["michel"].items():
        lows, highs = zip(*((row["exact"][1], row["exact"][2]) for row in table["single"]), strict=True)
        rows.append({text("papers.model", lang): model_label(model, lang), text("papers.heads", lang): len(lows),
                     text("papers.worse", lang): sum(high < 0 for high in highs),
                     text("papers.better", lang): sum(low > 0 for low in lows)})
    return pd.DataFrame(rows)


def one_head_table(results: dict, lang: str):
    """(b): the change of exact match, in points, when every head of a layer but one is ablated, per model."""
    import pandas as pd

    by_site: dict[tuple[str, int], dict[str, str]] = {}
    for model, table in results["michel"].items():
        for row in table["one_head"]:
            kind, layer, _ = row["kept"]
            by_site.setdefault((kind, layer), {})[model_label(model, lang)] = _points(row["exact"])
    return pd.DataFrame([{text("papers.layer", lang): _site(kind, layer, lang), **changes}
                         for (kind, layer), changes in by_site.items()])


def pruning_table(results: dict, lang: str):
    """(c): exact match after pruning each share of the heads by Michel et al.'s importance order, per model."""
    import pandas as pd

    theirs = "I_h by layer (theirs)"
    curves = {model: table["pruning"][theirs] for model, table in results["michel"].items()}
    fractions = [point["fraction"] for point in next(iter(curves.values()))]
    return pd.DataFrame([{text("papers.pruned", lang): f"{fraction:.0%}",
                          **{model_label(model, lang): f"{curve[i]['exact_match']:.1%}"
                             for model, curve in curves.items()}}
                         for i, fraction in enumerate(fractions)])


def special_tokens_table(results: dict, lang: str):
    """Kobayashi et al.'s check: per model and layer, the share of weight vs of norm on <bos>/<eos>."""
    import pandas as pd

    return pd.DataFrame([{text("papers.model", lang): model_label(model, lang), text("papers.layer", lang): layer + 1,
                          text("papers.weight_share", lang): f"{weight:.0%}",
                          text("papers.norm_share", lang): f"{norm:.0%}"}
                         for model, shares in results["kobayashi"].items()
                         for layer, (weight, norm) in enumerate(shares)])


def papers_tables(lang: str) -> list[tuple[str, object]]:
    """(title, DataFrame) for each measured table; [] before the bench has written any."""
    results = measured()
    tables = [(text("papers.abnar_title", lang, model=model_label(model, lang), inputs=table["inputs"]),
               agreement_table(model, table, lang)) for model, table in results.get("abnar", {}).items()]
    if "kobayashi" in results:
        tables.append((text("papers.kobayashi_title", lang), special_tokens_table(results, lang)))
    if "michel" in results:
        published = results["michel_published"]
        inputs = next(iter(results["michel"].values()))["inputs"]
        tables += [(text("papers.michel_single", lang, inputs=inputs), single_heads_table(results, lang)),
                   (text("papers.michel_one_head", lang, bleu=published["last_cross_one_head"]),
                    one_head_table(results, lang)),
                   (text("papers.michel_pruning", lang, wmt=published["prunable"]["WMT"],
                         bert=published["prunable"]["BERT"]), pruning_table(results, lang))]
    return tables
