"""The published tables beside ours, as the page shows them from what bench/bench_papers.py --write measured."""

from __future__ import annotations

from transformer_viz.analysis.agreement import PUBLISHED
from transformer_viz.figures.papers import measured, model_label, papers_tables


def test_every_measured_table_is_shown_with_the_published_numbers_beside_ours():
    tables = dict(papers_tables("en"))
    abnar = tables["Abnar & Zuidema (2020), Spearman's ρ · English → French · Encoder-decoder (the paper's) · 200 "
                   "fresh inputs"]
    flow_vs_blank_out = abnar.iloc[2]
    assert flow_vs_blank_out["method"] == "flow" and flow_vs_blank_out["compared with"] == "Leave one out"
    assert flow_vs_blank_out["Abnar & Zuidema, L6"] == f"{PUBLISHED['leave_one_out']['flow'][5]:.2f}"
    ours = measured()["abnar"]["en-fr"]["rho"]["leave_one_out"]["flow"]["2"]
    assert flow_vs_blank_out["ours, L2"] == f"{ours:.2f}"
    assert len(tables) == 3 + 1 + 3  # three models' Spearman tables, Kobayashi's check, Michel's three


def test_a_head_counts_as_significant_when_its_interval_excludes_zero():
    single = next(table for title, table in papers_tables("en") if title.startswith("Michel et al. (2019)"))
    reverse = single[single["model"] == model_label("reverse", "en")].iloc[0]
    rows = measured()["michel"]["reverse"]["single"]
    assert reverse["worse beyond noise"] == sum(row["exact"][2] < 0 for row in rows)
    assert reverse["better beyond noise"] == sum(row["exact"][1] > 0 for row in rows)


def test_the_models_are_named_by_their_task_and_form_in_each_language():
    assert model_label("reverse-gpt", "en") == "Reverse the letters · Decoder-only (GPT's)"
    assert model_label("en-fr", "zh") == "英语 → 法语 · 编码器-解码器（论文）"
