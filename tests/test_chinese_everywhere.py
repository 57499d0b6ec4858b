"""In 中文 every page says everything in Chinese: its text, its widgets, its errors and every word of its figures.

A page is read as a student sees it: the text of every element and, for every figure, the words Plotly
draws (titles, axis titles, ticks, annotations, legends, hover text, buttons and slider labels). What may
stay in Latin letters: the tokens (the input and the task's examples), formula symbols and ALLOWED.
"""

import html
import json
import re

import numpy as np
import pytest
from helpers import corrupt_reverse_checkpoint, make_model, random_ids, real_trace
from test_app import PAGES, run_page

from transformer_viz.analysis.walkthrough import head_walkthrough
from transformer_viz.data.tasks import LM_TASKS, TASKS
from transformer_viz.figures.attention import attention_heatmap, attention_lines, head_entropy
from transformer_viz.figures.decoding import attention_by_step, topk_bars
from transformer_viz.figures.embeddings import (
    embedding_heatmap,
    embedding_pipeline,
    position_similarity,
    positional_curves,
    positional_variants,
)
from transformer_viz.figures.grid import attention_grid
from transformer_viz.figures.head import dot_product_figure, walkthrough_figures
from transformer_viz.figures.masks import mask_figures, mask_heatmap, masking_steps
from transformer_viz.figures.overview import architecture_diagram
from transformer_viz.figures.panels import matrix_heatmap
from transformer_viz.figures.training import attention_animation, loss_curve
from transformer_viz.model import encoding_tables
from transformer_viz.model.summary import block_shapes, parameter_counts

# Latin letters a Chinese lesson keeps: symbols of the formulas, the model's settings as the sidebar names
# them, names of methods and libraries, the special tokens, and the name of the other language on its switch.
ALLOWED = ("d_model", "d_head", "d_k", "d_ff", "max_len", "n_heads", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V",
           "b_O", "QKᵀ", "Kᵀ", "softmax", "Softmax", "LayerNorm", "Concat", "ReLU", "pre-LN", "post-LN", "Pre-LN",
           "Post-LN", "sin", "cos", "ln", "BERT", "TensorFlow", "Transformer", "<pad>", "<bos>", "<eos>", "<unk>",
           "English", "BPE", ".npz", ".csv", "HTML", "SVG", "PNG", "Abnar", "Zuidema", "GPT", "RoPE", "Olsson",
           "Spearman", "Kobayashi", "Captum", "Michel", "log", "WMT", "BLEU",
           # Weights as files: their formats and sizes (commands and file names are “quoted”)
           ".safetensors", "safetensors", ".json", ".zip", ".pt", ".pth", ".bin", ".ckpt", "pickle", "PyTorch", "NaN",
           "Python", "MB", "JSON", "float16", "float32", "bfloat16",
           # Hugging Face models: the hub, its families and model names are names
           "Hugging Face", "Hub", "Marian", "BART", "T5", "Helsinki-NLP/opus-mt-en-zh", "pip install",
           "'.[hf]'")
WORD = re.compile(r"[A-Za-z]{2,}")
TAGS = re.compile(r"<style>.*?</style>|<pre\b.*?</pre>|"  # <pre>: code
                  r"</?(?:b|br|i|span|sub|div|extra|p|table|caption|thead|tbody|tr|th|td)\b[^>]*>", re.S)
PLACEHOLDER = re.compile(r"%\{[^}]*\}")
QUOTED = re.compile(r"“[^“”]*”")  # the app quotes tokens so: “le”
# What a figure shows of its JSON: keys whose strings are drawn (names, categories and customdata: see below).
DRAWN = {"text", "hovertext", "hovertemplate", "texttemplate", "ticktext", "label", "prefix"}


def english_words(text: str, tokens=()) -> set[str]:
    """The English words left in `text` once tags, Plotly placeholders, ALLOWED and `tokens` are taken out."""
    text = QUOTED.sub(" ", html.unescape(TAGS.sub(" ", PLACEHOLDER.sub(" ", str(text)))))
    for item in sorted({*ALLOWED, *tokens}, key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z]){re.escape(item)}(?![A-Za-z])", " ", text)
    return set(WORD.findall(text))


def figure_texts(spec: dict) -> list[str]:
    """Every string a Plotly figure (as JSON) draws or shows on hover."""
    found = []

    def collect(node, key=None):
        if isinstance(node, dict):
            for k, v in node.items():
                collect(v, k)
        elif isinstance(node, list):
            for item in node:
                collect(item, key)
        elif isinstance(node, str) and key in DRAWN:
            found.append(node)

    layout = spec.get("layout", {})
    collect(layout)
    traces = [*spec.get("data", []), *(t for frame in spec.get("frames", []) for t in frame.get("data", []))]
    for frame in spec.get("frames", []):
        collect(frame.get("layout", {}))
    for trace in traces:
        collect(trace)
        # Categories are drawn as ticks and named in the hover; customdata only where the hover reads it.
        found += [v for axis in ("x", "y") for v in np.ravel(trace.get(axis) or []) if isinstance(v, str)]
        if "customdata" in trace.get("hovertemplate", ""):
            found += [v for v in np.ravel(np.array(trace.get("customdata", []), dtype=object)) if isinstance(v, str)]
        in_legend = trace.get("showlegend", trace.get("type") != "heatmap") and layout.get("showlegend", True)
        if trace.get("name") and in_legend:
            found.append(trace["name"])
    return found


TEXT_ELEMENTS = {"markdown", "caption", "title", "header", "subheader", "text", "code", "warning", "error",
                 "info", "success", "exception", "text_input", "metric"}


def page_texts(at) -> list[str]:
    """The text of every element of a page (main area and sidebar) as shown, figures' words included."""
    found = []

    def walk(node):
        kind = getattr(node, "type", "")
        if str(getattr(node, "value", "")).startswith("$$"):  # st.latex: symbols, the same in every language
            return
        if kind in TEXT_ELEMENTS and isinstance(getattr(node, "value", None), str):
            found.append(node.value)
        for attr in ("label", "help", "placeholder", "body"):
            value = getattr(node, attr, None)
            if isinstance(value, str):
                found.append(value)
        if kind in ("selectbox", "radio", "multiselect", "select_slider", "pills", "button_group"):
            found.extend(str(option) for option in node.options)
        if kind == "table":
            frame = node.value
            found.extend([*map(str, frame.columns), *map(str, frame.to_numpy().ravel())])
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    for chart in at.get("plotly_chart"):
        found += figure_texts(json.loads(chart.proto.spec))
    return found


def tokens_of(at) -> set[str]:
    """The tokens, shown as they are in any language: the input's words, the task's examples and vocabularies."""
    texts = [at.session_state["src_text"], at.session_state["src_text"][::-1], at.session_state["tgt_text"]]
    for task in (*TASKS.values(), *LM_TASKS.values()):  # a lesson step may show a second task's run too
        texts += [*task.examples, *task.src_vocab.tokens, *task.tgt_vocab.tokens]
    words = {word for text in texts for word in re.findall(r"[A-Za-z']+", text)}
    corpus = at.session_state.get("bpe_corpus", "")
    pieces = {w[i:j] for w in corpus.split() for i in range(len(w)) for j in range(i + 2, len(w) + 1)}  # BPE symbols
    return words | pieces


def assert_chinese(at, context) -> None:
    assert not at.exception, (context, [e.value for e in at.exception])
    tokens = tokens_of(at)
    left = {text: words for text in page_texts(at) if (words := english_words(text, tokens))}
    assert left == {}, context


# Every page, and the choices that draw other figures or other words.
VIEWS = [
    *((page, {}) for page in PAGES),
    *(("attention", {"kind": kind, "value": value}) for kind in ("encoder_self", "decoder_self", "cross")
      for value in ("weights", "masked_scores")),
    ("attention", {"value": "scores", "cell_query": 2, "cell_key": 1, "query": 2}),  # a clicked cell, one query
    ("attention", {"kind": "decoder_self", "cell_query": 3, "cell_key": 4}),  # a blocked cell
    ("masks", {"pad": 9, "kind": "encoder_self"}),
    ("masks", {"pad": 4}),  # already longer: says so
    ("break_it", {"breaks": ["no_look_ahead"]}),  # says why exact match stays
    ("masks", {"kind": "decoder_self", "mask_value": float("-inf")}),
    *(("head", {"kind": kind, "cell_query": 1, "cell_key": 2}) for kind in ("encoder_self", "decoder_self", "cross")),
    ("head", {"d_model": 8, "n_heads": 2, "n_encoder_layers": 1, "n_decoder_layers": 1, "d_ff": 16,
              "weights": "random", "kind": "decoder_self", "cell_query": 0, "cell_key": 3}),
    *(("embeddings", {"positional": positional, "weights": "random", "side": side})
      for positional in ("sinusoidal_concat", "learned", "none") for side in ("src", "tgt")),
    ("embeddings", {"scale_embeddings": True, "embed_norm": True, "weights": "random"}),
    ("overview", {"norm_first": False, "positional": "learned", "embed_norm": True, "scale_embeddings": True,
                  "weights": "random"}),
    ("overview", {"positional": "none", "weights": "random"}),
    ("decoding", {"step": 2}),
    ("decoding", {"tgt_text": "olleh"}),  # teacher forcing: nothing to decode
    ("attention", {"task": "en-zh", "src_text": "the cat eats rice"}),
    ("decoding", {"task": "en-fr", "src_text": "the cat sees the dog"}),
    ("attention", {"n_heads": 8, "weights": "random", "shape_open": True}),  # the sidebar's folded widgets
    ("compare", {"compare_open_a": True, "compare_open_b": True}),
    # Errors the package explains: empty input, too long for the task or for the model, an odd d_model.
    ("attention", {"src_text": ""}),
    ("attention", {"src_text": "x" * 200}),
    ("attention", {"tgt_text": "y" * 200}),
    ("attention", {"src_text": "x" * 40, "max_len": 32, "weights": "random"}),
    ("attention", {"d_model": 63, "n_heads": 1}),
    ("training", {"d_model": 63, "n_heads": 1}),
    ("attention", {"n_heads": 16, "d_model": 40}),  # the sidebar fixes the heads and says so
]


@pytest.mark.parametrize("page, state", VIEWS, ids=[f"{page}-{'-'.join(map(str, state.values()))}"[:60]
                                                     for page, state in VIEWS])
def test_every_page_says_everything_in_chinese(page, state):
    assert_chinese(run_page(page, lang="zh", **state), (page, state))


@pytest.mark.parametrize("page", ["break_it", "compare", "embeddings"])
def test_a_multiple_choice_says_its_placeholder_in_chinese(page):
    """Issue 19: an empty multiselect said Streamlit's own "Choose options" in 中文."""
    at = run_page(page, lang="zh")
    boxes = list(at.multiselect)
    assert boxes and all(box.proto.placeholder == "选择一个或多个" for box in boxes), page


def test_errors_are_explained_in_chinese():
    at = run_page("attention", lang="zh", src_text="x" * 200)
    assert [e.value for e in at.error] == [
        "无法读取这个输入：` 输入有 200 个字符，但「倒序字母」任务最多只读 12 个字符。请缩短一些。 `"]
    at = run_page("attention", lang="zh", d_model=63, n_heads=1)
    assert "d_model 必须是偶数" in at.error[0].value
    at = run_page("attention", lang="zh", src_text="")
    assert "输入是空的：请至少输入一个字符。" in at.error[0].value
    at = run_page("attention", src_text="x" * 200)  # English: the package's own sentence, as before
    assert "The input has 200 characters, but the reverse task reads at most 12 characters." in at.error[0].value


def test_a_corrupt_checkpoint_is_said_in_chinese_without_the_servers_path(tmp_path, monkeypatch):
    with corrupt_reverse_checkpoint(tmp_path, monkeypatch):
        at = run_page("attention", lang="zh")
    (note,) = [c.value for c in at.caption if "无法加载预训练权重" in c.value]
    assert str(tmp_path) not in note and "python -m" not in note  # the server's log has them
    assert english_words(note, set()) == set(), note


def test_a_trained_model_and_its_animation_speak_chinese(monkeypatch):
    import transformer_viz.app.session.words

    # AppTest formats the widgets' values again in the test's thread, where st.session_state is not the app's:
    # there the choices would be labelled in English and no longer found among the Chinese options.
    monkeypatch.setattr(transformer_viz.app.session.words, "lang", lambda: "zh")
    at = run_page("training", lang="zh", n_heads=2, d_model=16, d_ff=32, weights="random", train_steps=100)
    at.button(key="training_start").click().run()
    assert at.session_state["weights"] == "trained"
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    assert specs[1]["layout"]["updatemenus"][0]["buttons"][0]["label"] == "▶ 播放"
    assert_chinese(at, "training, trained")


def test_a_figure_drawn_in_english_is_not_served_in_chinese():
    """Figures are cached for all sessions (figure_cache.figure): the language is part of the key."""
    english = chart_titles(run_page("attention", kind="encoder_self"))
    assert english[:2] == ["Encoder self-attention · weights · 2 layers × 4 heads", "Layer 2 · Head 1"]
    chinese = chart_titles(run_page("attention", lang="zh", kind="encoder_self"))  # another session, same run
    assert chinese[:2] == ["编码器自注意力 · 权重 · 2 层 × 4 个头", "第 2 层 · 第 1 个头"]
    at = run_page("attention", kind="encoder_self")
    at.sidebar.radio(key="lang").set_value("zh").run()  # one session switching
    assert chart_titles(at) == chinese


def chart_titles(at) -> list[str]:
    return [json.loads(chart.proto.spec)["layout"]["title"]["text"] for chart in at.get("plotly_chart")]


def test_the_check_finds_english_in_any_drawn_place():
    """The checker itself: English in a title, a hover, a legend, a tick, a button or a category is found."""
    assert english_words("<b>第 2 层</b> · d_model 64 · softmax(QKᵀ) · &lt;pad&gt;") == set()
    assert english_words("查询 hello “le”", {"hello"}) == set()
    assert english_words("Layer 2 · %{y:.2f} bits") == {"Layer", "bits"}
    spec = {"layout": {"title": {"text": "Heads"}, "updatemenus": [{"buttons": [{"label": "Play"}]}],
                       "xaxis": {"ticktext": ["the"]}},
            "data": [{"type": "bar", "name": "loss", "x": ["Layer 1"], "hovertemplate": "%{customdata}",
                      "customdata": ["step"]},
                     {"type": "heatmap", "name": "cells", "hovertext": [["weight"]]}]}
    words = set().union(*(english_words(text) for text in figure_texts(spec)))
    assert words == {"Heads", "Play", "the", "loss", "Layer", "step", "weight"}


# Every figure builder in Chinese, one by one ------------------------------------------------------------------------

def zh_words(fig) -> dict[str, set[str]]:
    """What is still English in a figure built with lang="zh" ("<pad>" and the helpers' tokens allowed)."""
    tokens = {"the", "cat", "sat", "on", "mat", "le", "chat", "sur", "ab", "cd"}
    texts = figure_texts(json.loads(fig.to_json()))
    return {text: words for text in texts if (words := english_words(text, tokens))}


TRACE = real_trace()


@pytest.mark.parametrize("build", [
    lambda: attention_heatmap(TRACE, "decoder_self", 1, 2, highlight=(2, 1), lang="zh"),
    lambda: attention_heatmap(TRACE, "cross", 0, 0, "masked_scores", lang="zh"),
    lambda: attention_lines(TRACE, "cross", 0, 1, query=2, lang="zh"),
    lambda: attention_lines(TRACE, "encoder_self", 1, 0, lang="zh"),
    lambda: head_entropy(TRACE, "decoder_self", lang="zh"),
    lambda: attention_grid(TRACE, "encoder_self", "scores", highlight=(1, 1), lang="zh"),
    lambda: attention_grid(real_trace(1, 1), "cross", "masked_scores", lang="zh"),
    lambda: masking_steps(TRACE, "decoder_self", 0, 1, lang="zh"),
    *(lambda key=key: mask_figures(TRACE, lang="zh")[key]
      for key in ("source_padding", "target_padding", "look_ahead", "decoder_self")),
    lambda: mask_heatmap(np.tril(np.ones((3, 3), bool)), ["ab", "cd", "ab"], None, "掩码", lang="zh"),
    lambda: embedding_heatmap(np.ones((3, 4)), ["the", "cat", "sat"], "词嵌入", lang="zh"),
    lambda: embedding_pipeline(TRACE, "src", lang="zh"),
    lambda: embedding_pipeline(real_trace().with_tokens(None, None), "tgt", lang="zh"),
    lambda: positional_curves(encoding_tables(8, 8)["sinusoidal"], [0, 1, 5], ["the", "cat"], lang="zh"),
    lambda: positional_curves(np.zeros((5, 4)), [0, 3], positional="none", lang="zh"),
    lambda: positional_curves(np.ones((5, 4)) / 2, [0], positional="learned", lang="zh"),
    lambda: position_similarity(encoding_tables(6, 8)["sinusoidal"], ["the", "cat"], lang="zh"),
    lambda: position_similarity(np.zeros((4, 4)), positional="none", lang="zh"),
    lambda: positional_variants(encoding_tables(12, 8), lang="zh"),
    lambda: topk_bars(np.array([0.1, 0.6, 0.3]), ["<pad>", "le", "chat"], k=2, chosen=0, lang="zh"),
    lambda: topk_bars(np.array([0.1, 0.6, 0.3]), ["<pad>"], k=3, lang="zh"),  # ids without a token
    lambda: attention_by_step([TRACE, TRACE], 1, None, lang="zh"),
    lambda: attention_by_step([TRACE], 0, 1, produced=["le"], lang="zh"),
    lambda: loss_curve([(1, 2.0, 0.1), (2, 1.0, 0.5)], lang="zh"),
    lambda: loss_curve([], lang="zh"),
    lambda: attention_animation([(10, np.eye(2)), (20, np.ones((2, 2)) / 2)], ["le", "chat"], ["the", "cat"],
                                "交叉注意力", lang="zh"),
    lambda: attention_animation([], None, None, "交叉注意力", lang="zh"),
    lambda: matrix_heatmap(np.eye(2), ["the", "cat"], ["0", "1"], "M", blocked=np.eye(2, dtype=bool), lang="zh"),
    *(lambda overrides=overrides: diagram(**overrides) for overrides in (
        {}, {"norm_first": False, "positional": "learned", "embed_norm": True, "scale_embeddings": True},
        {"positional": "none"}, {"positional": "sinusoidal_concat", "n_heads": 1})),
])
def test_every_figure_builder_draws_chinese(build):
    assert zh_words(build()) == {}


def diagram(**overrides):
    model = make_model(**overrides)
    return architecture_diagram(model.config, parameter_counts(model), block_shapes(model.config, 7, 5), lang="zh")


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
@pytest.mark.parametrize("norm_first", [True, False])
def test_inside_one_head_draws_chinese(kind, norm_first):
    model = make_model(d_model=8, n_heads=2, norm_first=norm_first)
    _, trace = model.run_with_trace(random_ids(1, 4, 20), random_ids(1, 3, 22))
    walk = head_walkthrough(model, trace.with_tokens(["the", "cat", "sat", "on"], ["le", "chat", "sur"]), kind, 1, 1)
    figures = [fig for _, fig in walkthrough_figures(walk, cell=(1, 2), lang="zh")]
    for fig in [*figures, dot_product_figure(walk, 0, 2, lang="zh")]:
        assert zh_words(fig) == {}, fig.layout.title.text
    x_titles = [figures[0].layout.title.text, *(a.text for a in figures[0].layout.annotations)]
    assert any(t.startswith("X = LayerNorm(") for t in x_titles) == norm_first  # pre-LN: X is normalised first


def test_the_english_details_repeat_the_packages_own_sentences(tmp_path):
    """English shows str(error); the catalog's English says the same with the error's values, and Chinese
    fills the same blanks, so a sentence cannot drift in one place only. A TranslatableError pickles whole."""
    import pickle

    from transformer_viz import ModelConfig, encode_source, load_pretrained
    from transformer_viz.errors import TranslatableError
    from transformer_viz.i18n import text

    def caught(call) -> TranslatableError:
        with pytest.raises(TranslatableError) as info:
            call()
        return info.value

    reverse, en_fr = TASKS["reverse"], TASKS["en-fr"]
    errors = [caught(lambda: encode_source(reverse, "")), caught(lambda: encode_source(en_fr, " ")),
              caught(lambda: encode_source(reverse, "x" * 200)), caught(lambda: encode_source(en_fr, "a " * 30)),
              caught(lambda: encode_source(reverse, "x" * 40, max_len=32)),
              caught(lambda: ModelConfig(src_vocab_size=9, tgt_vocab_size=9, d_model=63, n_heads=1)),
              caught(lambda: ModelConfig(src_vocab_size=9, tgt_vocab_size=9, d_model=64, n_heads=3)),
              caught(lambda: load_pretrained("nothing", tmp_path))]
    assert len({e.key for e in errors}) == 6
    for error in errors:
        assert text(f"detail.{error.key}", "en", **error.values) == str(error)
        assert text(f"detail.{error.key}", "zh", **error.values) != str(error)
        again = pickle.loads(pickle.dumps(error))
        assert (again.key, again.values, str(again)) == (error.key, error.values, str(error))
