"""Every user-visible sentence of the app, in one catalog per language.

Pages call t("key", **values); a missing translation falls back to English, so a
new language can be added here without touching any page.
"""

from __future__ import annotations

from transformer_viz.app.text_break import BREAK_EN, BREAK_ZH
from transformer_viz.app.text_lesson import LESSON_EN, LESSON_ZH
from transformer_viz.app.text_rooms import ROOMS_CHINESE, ROOMS_ENGLISH
from transformer_viz.app.text_weights import WEIGHTS_CHINESE, WEIGHTS_ENGLISH
from transformer_viz.app.text_zh import CHINESE as APP_CHINESE
from transformer_viz.weights.hf import SENTENCES as HF_SENTENCES

ENGLISH = {
    # App frame and sidebar
    "task.copy": "Copy the letters",
    "task.reverse": "Reverse the letters",
    "task.sort": "Sort the letters",
    "task.rotate": "Rotate by two",
    "task.en-fr": "English → French",
    "task.en-zh": "English → Chinese",
    "attention.cell_query": "Cell: query",
    "decoding.one_step": "The model wrote <eos> first: there is one step to show.",
    "error.link_weights": "Weights trained on the Training page live only in the session that trained them; this link shows the weights named above instead.",
    "attention.no_cell": "— (click a cell)",
    "training.too_long": "This run would take more than about two minutes of the class server: choose fewer steps, a smaller batch or a smaller model.",
    "training.waiting": "Waiting in line: {place} of the class's trainings before yours. This server trains {n} at a time; yours starts by itself.",
    "training.limits": "This server trains {n} models at a time (the others wait in line), each on one core, up to {steps} steps. Stop ends a run after its current step and keeps what it learned.",
    "error.link_limits": "This server builds models up to d_model {d_model}, {heads} heads, {layers} layers per stack, d_ff {d_ff} and {tokens} tokens.",
    "nav.overview": "Overview",
    "nav.embeddings": "Embeddings and positions",
    "nav.attention": "Attention",
    "nav.masks": "Masks",
    "nav.head": "Inside one head",
    "nav.decoding": "Decoding",
    "nav.training": "Training",
    "side.language": "Language",
    "side.model": "Model",
    "side.source": "Model source",
    "source.toy": "toy model",
    "source.hf": "Hugging Face model",
    "side.hf_model": "Hugging Face model: a local folder or a name",
    "side.hf_download": "Allow downloading it from the Hub",
    "side.hf_download_help": "Off: only a folder on this server or a model already in its Hugging Face cache is "
                             "loaded. On: a name not found here is downloaded (hundreds of MB for a translation "
                             "model).",
    "side.hf_no_downloads": "This server loads only the models already on it (TVIZ_HF_DOWNLOADS=0).",
    "side.hf_help": "A Marian, BART or T5 encoder-decoder, e.g. Helsinki-NLP/opus-mt-en-zh. Its own tokenizer "
                    "splits the input into subword pieces; the shape is the model's own.",
    "side.hf_missing": "Hugging Face models need the extra: pip install 'transformer_viz[hf]'.",
    **{f"detail.hf.{kind}": sentence for kind, sentence in HF_SENTENCES.items()},
    "banner.hf": "Hugging Face model {name} ({family}): {layers} + {decoder_layers} layers × {heads} heads, "
                 "d_model {d_model}, its own weights and tokenizer.",
    "banner.hf_t5": "T5 scores are q·k without the division by √d_k (it is folded into the weights), plus a learned "
                    "relative position bias in self-attention.",
    "embeddings.no_positions": "This model adds no positional encoding to its embeddings: like T5, it learns a "
                               "bias for each relative distance (in buckets) and adds it to every self-attention "
                               "score. Its scores on the Attention page include that bias.",
    "hf.toy_only": "This page works on the toy models: it trains, changes or compares their weights. Choose "
                   "\"toy model\" as the model source in the sidebar to use it.",
    "side.task": "Task",
    "side.weights": "Weights",
    "weights.pretrained": "pretrained (ships with the app)",
    "weights.random": "random (untrained)",
    "weights.trained": "trained by you on the Training page",
    "side.weights_lost": "This shape cannot hold the {weights} weights (their matrices have another size), so the model is now random. Mask value and the switches of Break it keep the weights.",
    "side.shape": "Shape and variants",
    "side.d_model": "d_model (width of every token vector)",
    "side.n_heads": "heads (only divisors of d_model)",
    "side.n_encoder_layers": "encoder layers",
    "side.n_decoder_layers": "decoder layers",
    "side.d_ff": "d_ff (feed-forward width)",
    "side.max_len": "max_len (longest sequence the model reads)",
    "side.max_len_task": "the task's",
    "side.positional": "positional encoding",
    "positional.sinusoidal": "sinusoidal (paper, interleaved sin/cos)",
    "positional.sinusoidal_concat": "sinusoidal, [sin | cos] halves (TensorFlow)",
    "positional.learned": "learned table (BERT)",
    "positional.none": "none (attention sees a bag of tokens)",
    "side.norm_first": "LayerNorm placement",
    "norm.pre": "pre-LN: x + f(norm(x))",
    "norm.post": "post-LN: norm(x + f(x)) (paper)",
    "side.scale_embeddings": "scale token embeddings by √d_model",
    "side.embed_norm": "LayerNorm on the embedding sum",
    "side.mask_value": "fill value for blocked scores",
    "side.seed": "seed for random weights",
    "side.reset": "Back to the pretrained model",
    "side.heads_fixed": "{heads} heads cannot split d_model = {d_model} evenly (each head gets d_model / heads "
                        "dimensions): using {fitting} heads.",
    "side.input": "Input",
    "side.src_text": "Source text",
    "side.tgt_text": "Target text for teacher forcing (leave empty to decode greedily)",
    "side.examples": "Examples",
    "side.link_help": "Copy the address bar: it restores this model, input and selection.",
    "banner.random": "Random weights — train it on the Training page or go back to a pretrained model.",
    "banner.trained": "Weights you trained on the Training page for the {task} task ({steps} steps).",
    "banner.pretrained": "Pretrained on the {task} task: {metric}.",
    "banner.metric": "{exact:.1%} exact match on held-out inputs",
    "error.config": "This model cannot be built: {message}",
    "error.input": "This input cannot be read: {message}",
    "error.link": "Some settings in the link could not be used and were reset: {names}.",
    "error.checkpoint": "The pretrained weights could not be loaded ({message}). Showing random weights instead.",
    "warn.unknown": "Not in this model's vocabulary, shown as <unk>: {tokens}",
    "tokens.source": "Source tokens",
    "tokens.target": "Decoder input tokens",
    "tokens.output": "Model output",
    # Details of errors (ui.error_text): English shows the package's own sentence, which these repeat with the
    # values the error carries; "checkpoint.bad" stands for several sentences about a corrupt file.
    "detail.text.empty": "The {side} is empty: type at least one {unit}.",
    "detail.text.too_long_for_task": "The {side} has {count} {units}, but the {task} task reads at most {limit} "
                                     "{limit_units}. Please shorten it.",
    "detail.text.too_long_for_model": "The {side} has {count} {units}, but this model (max_len {max_len}) reads at "
                                      "most {limit} {limit_units}. Please shorten it.",
    "detail.config.heads": "d_model = {d_model} cannot be split evenly into n_heads = {n_heads} heads: each head "
                           "gets d_model / n_heads dimensions, so n_heads must divide d_model (for d_model = "
                           "{d_model} try one of {divisors}).",
    "detail.config.odd_d_model": "The sinusoidal positional encoding pairs every sine with a cosine, so d_model must "
                                 "be even, got d_model = {d_model}. Pick an even d_model or a learned encoding.",
    "detail.checkpoint.missing": "There is no pretrained model called {name!r} in {folder} (available: {available}). "
                                 "Train one with: {command}",
    "detail.checkpoint.bad": "The file {file} of the pretrained model {name!r} is corrupt or does not fit its task. "
                             "Retrain it with: {command}",
    "detail.server.task": "unknown task {task!r}; known: {known}",
    "detail.server.beyond": "{names} beyond what this server builds (see the sidebar's ranges)",
    "detail.word.input": "input",
    "detail.word.target": "target",
    "detail.word.character": "character",
    "detail.word.characters": "characters",
    "detail.word.word": "word",
    "detail.word.words": "words",
    # Overview
    "overview.title": "Overview: the whole model at a glance",
    "overview.intro": (
        "An encoder-decoder Transformer reads the source sentence with the **encoder** and writes the answer one "
        "token at a time with the **decoder**. Every box below shows the live shape of the tensor it produces and "
        "its number of parameters. Click a box to open the page that looks inside it."
    ),
    "overview.open": "Open the page for this block",
    "overview.total": "Total parameters",
    # Embeddings
    "embeddings.title": "Embeddings and positions",
    "embeddings.intro": (
        "Each token id selects one row of a learned table: its **token embedding**, a vector of d_model numbers. "
        "Attention by itself cannot tell word order: swap two tokens and their outputs just swap. So a "
        "**positional encoding** — one vector per position — is added to each token embedding. The sum is "
        "what enters the first layer."
    ),
    "embeddings.side": "Show the",
    "embeddings.pipeline": "Token embedding + position = input of layer 1",
    "embeddings.curves": "A few dimensions over positions",
    "embeddings.curves_help": (
        "Each pair of dimensions is a sine and a cosine of the same frequency. Low dimensions turn fast, high "
        "dimensions slowly, like the hands of a clock: together they give every position a unique pattern, and "
        "a fixed offset k is the same rotation at every position."
    ),
    "embeddings.curves_help_learned": (
        "This model learns its position vectors like its token embeddings: a table with one row per position, "
        "no formula. Trained, nearby positions often end up alike; random, they are noise."
    ),
    "embeddings.curves_help_none": (
        "This model adds no positional encoding: every position gets zeros. Attention then sees a bag of tokens: "
        "swap two of them and their outputs just swap."
    ),
    "embeddings.dims": "Dimensions to draw",
    "embeddings.similarity": "How alike are two positions?",
    "embeddings.similarity_help": (
        "Cosine similarity of the positional vectors: near the diagonal positions look alike, far apart they "
        "differ. That is what lets attention learn 'look one to the left'."
    ),
    "embeddings.variants": "The variants side by side",
    "embeddings.variants_help": (
        "The paper interleaves sin and cos; TensorFlow puts all sines first, then all cosines, and its frequencies "
        "differ slightly too: their logarithms step down by ln(10⁴)/(d/2 − 1) per pair, not ln(10⁴)/(d/2), so "
        "its slowest one is exactly 1/10⁴. One tutorial doubles the exponent by mistake (4i/d instead of 2i/d), "
        "so its frequencies are wrong: compare."
    ),
    # Attention
    "attention.title": "Attention",
    "attention.intro": (
        "Each query token asks every key token how relevant it is: score = q·k / √d_k. A softmax turns each row "
        "of scores into weights that sum to 1, and the output is the weighted sum of the values. Every head "
        "does this with its own projections, so different heads can look for different things."
    ),
    "attention.kind": "Which attention",
    "kind.encoder_self.help": "Source tokens look at source tokens; only padding is hidden.",
    "kind.decoder_self.help": "Target tokens look at earlier target tokens only: the future is masked.",
    "kind.cross.help": "Each target position looks at the source sentence: this is where alignment appears. A row is labelled with the token the decoder reads there (<bos> first) and writes the next one, so the row of “le” looks at the source word of the token after “le”.",
    "attention.value": "Draw",
    "value.weights": "weights (after softmax)",
    "value.scores": "scaled scores q·k/√d_k",
    "value.masked_scores": "masked scores",
    "attention.grid_help": (
        "Rows are layers, columns are heads, one colour scale shared by all tiles: 0 to 1 for weights, symmetric "
        "around 0 for scores. Hover a cell for the query, the key, the weight and the scaled score. Click a tile (or use the selectors) to open that head large."
    ),
    "attention.layer": "Layer",
    "attention.head": "Head",
    "attention.large": "Layer {layer}, head {head}",
    "attention.lines": "Line view: who looks at whom",
    "attention.query": "Query",
    "attention.key": "Key",
    "attention.all_queries": "all",
    "attention.cell": "Click a cell of the heatmap (or choose it above) to see how its weight is computed, below.",
    "attention.cell_title": "Query {query} → key {key}",
    "attention.entropy": "How focused is each head?",
    "attention.entropy_help": (
        "Entropy in bits: 0 means a head puts all its weight on one key; the dashed line is what spreading evenly "
        "over all allowed keys would give."
    ),
    "cell.dot": "q·k",
    "cell.scale": "÷ √d_k (d_k = {d_head})",
    "cell.scale_folded": "÷ 1 (√d_k is folded into W_Q)",
    "cell.bias": "+ relative position bias",
    "cell.score": "score",
    "cell.mask": "mask (✓ = may attend)",
    "cell.weight_short": "weight",
    "cell.weight": "weight (softmax of the row)",
    "cell.row": "The whole row of query {query}: the softmax turns these masked scores into weights that sum to 1.",
    "cell.masked_score": "masked score",
    # Masks
    "masks.title": "Masks",
    "masks.intro": (
        "A mask says which keys each query may use (here True = may attend). The **padding mask** hides the "
        "<pad> tokens that fill short sentences up to the batch length. The **look-ahead mask** hides the future "
        "in the decoder, so that training with the whole target at once cannot cheat. The decoder combines both. "
        "With no target text, the decoder reads the model's own answer, as a training batch would hold it."
    ),
    "masks.pad_help": (
        "In a batch, shorter sentences are filled with <pad> up to the longest one. Pad this input to see the "
        "padding mask at work (0 = no padding). The answer does not change: no query ever looks at a <pad>."
    ),
    "masks.steps": "What the mask does to one head",
    "masks.steps_help": (
        "Blocked scores are replaced by a large negative number ({value}). After the softmax, e^(that) is 0, so "
        "blocked keys get exactly zero weight and the other weights still sum to 1."
    ),
    "masks.pad_to": "Pad the input to length (as in a batch)",
    # Inside one head
    "head.title": "Inside one head",
    "head.intro": (
        "Scaled dot-product attention for one head, with the model's real numbers. Pick a small model "
        "(e.g. d_model 8, 2 heads) to read every value."
    ),
    "head.intro_hf": "Scaled dot-product attention for one head, with the model's real numbers, recomputed from the "
                     "layer's input and the model's own projection weights and checked against its run.",
    "head.wide": "{step} (matrices {d_model} dimensions wide: open to see them)",
    "head.small": "Use a small model (d_model 8, 2 heads, 1 layer)",
    "head.step.x": "The input X: one row per token (after LayerNorm in a pre-LN model).",
    "head.step.projections": "Three learned matrices turn X into queries, keys and values for this head.",
    "head.step.qk": "Every query is compared with every key by a dot product.",
    "head.step.scale": "Divide by √d_k so the scores do not grow with the head size and saturate the softmax.",
    "head.step.scale_t5": "T5 does not divide by √d_k (its W_Q was initialised smaller instead); in self-attention it "
                          "adds a learned bias B for each distance from query to key: this is where its word order "
                          "enters.",
    "head.step.mask": "Blocked scores are replaced by the mask value (masked_fill), so the softmax gives them weight 0.",
    "head.step.softmax": "Softmax turns each row into weights that sum to 1.",
    "head.step.weighted_sum": "Each output row is the weighted sum of the value rows.",
    "head.step.concat": "The outputs of all heads are put side by side…",
    "head.step.output": "…and mixed by the output projection W_O.",
    "head.dot": "Where one score comes from",
    # Decoding
    "decoding.title": "Decoding, one token at a time",
    "decoding.intro": (
        "At inference the decoder starts from <bos>, predicts the most likely next token, appends it, and runs "
        "again, until it predicts <eos>. Move the slider to replay the steps."
    ),
    "decoding.step": "Step",
    "decoding.chosen": "Step {step}: the decoder has read {prefix} and chooses {token}.",
    "decoding.topk": "Next-token probabilities",
    "decoding.self": "Decoder self-attention so far",
    "decoding.cross": "Where each step looked in the source",
    "decoding.cross_full": "Cross-attention of every position so far",
    "decoding.teacher_forced": "A target text is set, so there is nothing to decode: clear it in the sidebar.",
    # Training
    "training.title": "Training",
    "training.intro": (
        "Train a model on its toy task and watch the loss fall and the attention take shape (a few hundred "
        "steps of the default model take seconds to a minute, depending on how busy the server is). Training uses teacher forcing: the decoder is given the correct previous tokens and "
        "learns to predict the next one."
    ),
    "training.steps": "Training steps",
    "training.lr": "Learning rate",
    "training.batch": "Batch size",
    "training.start": "Train",
    "training.from": "Start from",
    "training.from_fresh": "a fresh model (random weights)",
    "training.from_current": "the weights shown now",
    "training.stop": "Stop",
    "training.progress": "Step {step} / {total} · loss {loss:.3f} · accuracy {accuracy:.1%}",
    "training.done": "Trained {steps} steps in {seconds:.1f} s. The other pages now show your trained model.",
    "training.curve": "Loss and accuracy",
    "training.animation": "Attention taking shape",
    "training.animation_title": "Cross-attention, last decoder layer (mean of heads)",
    "training.eval": "Exact match on fresh inputs: {exact:.1%}",
    "training.none": "Nothing trained yet in this session.",
}

ENGLISH |= LESSON_EN | BREAK_EN | ROOMS_ENGLISH | WEIGHTS_ENGLISH
CHINESE = APP_CHINESE | LESSON_ZH | BREAK_ZH | ROOMS_CHINESE | WEIGHTS_CHINESE
CATALOGS = {"en": ENGLISH, "zh": CHINESE}
LANGUAGE_NAMES = {"en": "English", "zh": "中文"}


def t(key: str, lang: str = "en", /, **values) -> str:
    """The text for key in lang (English when missing), with {placeholders} filled in."""
    text = CATALOGS.get(lang, ENGLISH).get(key) or ENGLISH[key]
    return text.format(**values) if values else text
