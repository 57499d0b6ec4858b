"""The published tables beside ours: what `bench/bench_papers.py --write` measured on the shipped models
(`analysis/papers.json`), as tables with translated headings."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from transformer_viz.analysis.agreement import APPROXIMATIONS, PUBLISHED, REFERENCES
from transformer_viz.i18n import text

MEASURED = Path(__file__).resolve().parent.parent / "analysis" / "papers.json"
THEIR_LAYERS = (1, 3, 6)


@functools.cache
def measured() -> dict:
    """The bench's last results, {} when none were written."""
    return json.loads(MEASURED.read_text(encoding="utf-8")) if MEASURED.exists() else {}


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


def papers_tables(lang: str) -> list[tuple[str, object]]:
    """(title, DataFrame) for each measured table; [] before the bench has written any."""
    results = measured()
    return [(text("papers.abnar_title", lang, model=model, inputs=table["inputs"]), agreement_table(model, table, lang))
            for model, table in results.get("abnar", {}).items()]
