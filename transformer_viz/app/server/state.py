"""Every session-state key of the app, the view (all a user can select) and the model a user trained.

No Streamlit here. A view field's name is also its widget's key and its query parameter in the
link (session/link.py writes a view as ids), so the address bar always shows what the widgets show,
and opening it restores them. On the server's floor, the lowest of app/: the server resolves a View and keeps a
session's TrainedModel, and every floor above reads these keys.
"""

from __future__ import annotations

import math
import secrets
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from transformer_viz.analysis.architecture import toy_architecture
from transformer_viz.app.server.limits import limits
from transformer_viz.config import ModelConfig
from transformer_viz.data.tasks import Task, get_task
from transformer_viz.trace.names import ATTENTION_KINDS

# The view's fields, one key each (widget key = session-state key = query parameter).
LANG, TASK, WEIGHTS = "lang", "task", "weights"  # weights: "pretrained", "random", "trained", "checkpoint:<name>"
ARCHITECTURE = "architecture"  # "encoder_decoder" (the paper's) or "decoder_only" (GPT's)
SOURCE, HF_MODEL = "source", "hf_model"  # "toy" (a task's model) or "hf" (a Hugging Face model: folder or name)
D_MODEL, N_HEADS, N_ENCODER_LAYERS, N_DECODER_LAYERS, D_FF, MAX_LEN = (
    "d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff", "max_len")
POSITIONAL, NORM_FIRST, SCALE_EMBEDDINGS, EMBED_NORM, MASK_VALUE, SEED = (
    "positional", "norm_first", "scale_embeddings", "embed_norm", "mask_value", "seed")
SRC_TEXT, TGT_TEXT = "src_text", "tgt_text"
KIND, LAYER, HEAD, VALUE = "kind", "layer", "head", "value"  # shared by Attention, Masks, Inside one head, Decoding
QUERY = "query"  # Attention: the query whose lines are drawn (None: all)
PAD, MASK_KIND = "pad", "mask_kind"  # Masks: pad the batch to this length; the attention whose masking is shown
CELL_QUERY, CELL_KEY = "cell_query", "cell_key"  # Inside one head: the cell followed through every step
STEP = "step"  # Decoding: the step shown (1 = the first token written)
STEP_COUNT = "_step_count"  # Decoding: how many steps its slider offered when last drawn
OUTPUT = "output"  # Is attention an explanation?: the output token explained (1 = the first written)
OUTPUT_COUNT = "_output_count"  # how many output tokens its slider offered when last drawn
TEMPERATURE, TOP_K, TOP_P, SAMPLE_SEED = "temperature", "top_k", "top_p", "sample_seed"  # Decoding: sampling
STACK = "stack"  # Inside the layers: the encoder's or the decoder's
SIDE, DIMS = "side", "dims"  # Embeddings: source or target; the encoding dimensions drawn as curves
TRAIN_STEPS, TRAIN_LR, TRAIN_BATCH = "train_steps", "train_lr", "train_batch"  # Training: the next run's settings
TRAIN_FROM = "train_from"  # Training: "fresh" (random weights) or "current" (the weights shown)
LESSON_STEP, PRESENT = "lesson_step", "present"  # the lesson's step (from 1); presenter mode
BPE_CORPUS, BPE_MERGES = "bpe_corpus", "bpe_merges"  # the lesson's BPE learner: its corpus and merges shown
BREAKS, ABLATE, ABLATION = "breaks", "ablate", "ablation"  # Break it: switches off, heads ablated, zero or mean
A_WEIGHTS, A_VARIANT, A_BREAKS, A_ABLATE = "a_weights", "a_variant", "a_breaks", "a_ablate"  # Compare: model A
B_WEIGHTS, B_VARIANT, B_BREAKS, B_ABLATE = "b_weights", "b_variant", "b_breaks", "b_ablate"  # and model B

# Keys that are not part of the view.
TRAINED = "_trained"  # the TrainedModel of this session
TRAINING_JOB = "_training_job"  # (TrainingJob, task name) of this session's last training, until kept
WEIGHTS_LOST = "_weights_lost"  # the trained weights a shape change could not keep (said once)
PENDING_WEIGHTS = "_pending_weights"  # a weights choice to apply before the sidebar is drawn (after training)
GOTO = "_goto"  # a page a click asked to open at the start of the next run
PENDING_VIEW = "_pending_view"  # view values to set at the start of the next run, before any widget
LESSON_SET_UP = "_lesson_set_up"  # the lesson step whose setup this session has applied
LINK_ASKED = "_link_asked"  # the query parameters the session was opened with
LINK_REJECTED = "_link_rejected"  # the ones the app could not use
HF_DOWNLOAD = "_hf_download"  # this session allows a Hugging Face model to be downloaded (never in a link)
EXAMPLE = "_example"  # the example pills: a one-shot choice copied into the source text
CHOICE_LABELS = "_choice_labels"  # {field: {language: {label: option}}} of the translated choices as last drawn
CHOICES_SHOWN = "_choices_shown"  # {field: option} each translated choice showed when last drawn
# Charts whose selections the pages read, and the Training page's controls.
GRID_CHART, HEAD_CHART, DIAGRAM_CHART = "attention_grid", "attention_head", "overview_diagram"
VIEW_FIGURES = "_view_figures"  # the figures drawn by this run, by chart key: the view to download
TRAINING_START, TRAINING_STOP = "training_start", "training_stop"
LESSON_PREVIOUS, LESSON_NEXT, LESSON_TRAIN = "lesson_previous", "lesson_next", "lesson_train"
LESSON_QUESTION = "lesson_question"  # the box of the step's question, its answer and its reveal
LESSON_ACTIONS = "lesson_actions"  # the step's buttons beside its question: open it, set it up again
LESSON_ENCODER_DECODER = "lesson_encoder_decoder"  # a step about cross-attention, opened on an encoder-decoder
PRESENT_EXIT = "present_exit"
NARROW_NOTICE = "narrow_notice"  # the notice shown while the main column is narrower than the figures need
BREAK_RANK, BREAK_CHEAT = "break_rank", "break_cheat"
WEIGHTS_DOWNLOAD, WEIGHTS_UPLOAD = "weights_download", "weights_upload"  # Training: weights as files
UPLOAD_NOTICE = "_upload_notice"  # what became of the last upload: (catalog key, values), shown once
SHOWN = "_shown_{}"  # a button's result stays shown for the session once pressed
LESSON_REVEAL = "lesson_reveal_{}"  # one per step: a new step opens with its answer hidden
SHAPE_OPEN = "shape_open"  # the sidebar's shape and variants, opened (its widgets drawn only then)
COMPARE_OPEN = "compare_open_{}"  # Compare: side A's or B's choices, opened
HEAD_OPEN = "head_open_{}"  # Inside one head: a folded d_model-wide step, opened (its chart drawn only then)

# Class rooms (app/rooms/): a teacher shares the page and view, the students follow.
ROOM = "room"  # the query parameter of a student's link (/?room=K7QX…, the link code); not a view field
TEACH = "teach"  # the query parameter of the teacher's own link (the teacher code); not a view field
OWNER = "_owner"  # this session's name for the room store (one room per session)
JOIN_TRIES = "_join_tries"  # time.monotonic() of this session's recent joins by short code
PAGE = "_page"  # the URL path of the page of this session's last full run (what a teacher shares)
TEACHING = "_teaching"  # the Teaching of this session: the room it leads
JOINED = "_joined"  # the Joined room of this session: the room it follows, or left to explore
ROOM_NOTICE = "_room_notice"  # (catalog key, values) of a message about the room, shown once
ROOM_DOWN = "_room_down"  # True while the room's store does not answer (said above the page)
ROOM_NEWS = "_room_news"  # (catalog key, values, page) of what became of the room, said above that page
FULL_RUN = "_full_run"  # True while a full run of the app is drawing (a fragment's own run: False)
ROOM_CODE = "room_code"  # the code typed into the Join form
ROOM_LESSON = "_room_lesson"  # a following student: the room's lesson moments at the last look (RoomState.lesson)
ASKED = "_asked"  # the lesson questions this session was asked: {key: Question}, oldest first (the exit ticket's)
MY_ANSWERS = "_my_answers"  # this session's answers: {question key: answer as kept}
ANSWER = "answer_{}"  # the answer widget of a question (by its key)
ANSWERS_CSV, TICKET_REVEAL = "answers_csv", "ticket_reveal"  # the teacher's download; the exit ticket's reveal
ROOM_FORM, ROOM_JOIN, ROOM_START, ROOM_END, ROOM_LEAVE, ROOM_REJOIN, ROOM_SHOW = (
    "room_form", "room_join", "room_start", "room_end", "room_leave", "room_rejoin", "room_show")
ROOM_DISMISS = "room_dismiss"  # the button under the room's news above the page
ROOM_BANNERS = "room_banners"  # the container above the page's title: the room's news, or that it cannot be reached

SOURCES = ("toy", "hf")
WEIGHT_CHOICES = ("pretrained", "random", "trained")
KINDS = tuple(ATTENTION_KINDS)
MASK_VALUES = (-1e9, -1e4, -math.inf)
SHAPE_FIELDS = (ARCHITECTURE, D_MODEL, N_HEADS, N_ENCODER_LAYERS, N_DECODER_LAYERS, D_FF, MAX_LEN, POSITIONAL,
                NORM_FIRST, SCALE_EMBEDDINGS, EMBED_NORM, MASK_VALUE)


# What a class server builds (limits(), set by the server's environment): the sidebar offers exactly this (heads:
# up to limits().heads), and the model service refuses anything else. Read at each use, so they follow limits().
def d_model_range() -> tuple[int, int]:
    return 2, limits().d_model


def layer_range() -> tuple[int, int]:
    return 1, limits().layers


def d_ff_choices() -> tuple[int, ...]:
    return tuple(d for d in (16, 32, 64, 128, 256, 512, 1024, 2048) if d <= limits().d_ff)


def max_len_choices() -> tuple[int, ...]:
    return tuple(n for n in (0, 16, 24, 32, 48, 64) if n <= limits().input_tokens)  # 0: the task's own


# The Decoding page's sampling sliders: temperature (0: greedy), top-k (0: all), top-p (1: all), the draws' seed.
SAMPLING_RANGES = {TEMPERATURE: (0.0, 10.0), TOP_K: (0, 20), TOP_P: (0.05, 1.0), SAMPLE_SEED: (0, 9999)}


@dataclass(frozen=True)
class View:
    """What is on screen. The shape's defaults are ModelConfig's, the shipped pretrained models' shape; layers and
    heads count from 0."""

    lang: str = "en"
    source: str = "toy"
    hf_model: str = ""
    task: str = "reverse"
    weights: str = "pretrained"
    architecture: str = "encoder_decoder"
    d_model: int = ModelConfig.d_model
    n_heads: int = ModelConfig.n_heads
    n_encoder_layers: int = ModelConfig.n_encoder_layers
    n_decoder_layers: int = ModelConfig.n_decoder_layers
    d_ff: int = ModelConfig.d_ff
    max_len: int = 0  # 0: the task's own (its longest text + 1); more lets a fresh model read longer text
    positional: str = ModelConfig.positional
    norm_first: bool = ModelConfig.norm_first
    scale_embeddings: bool = ModelConfig.scale_embeddings
    embed_norm: bool = ModelConfig.embed_norm
    mask_value: float = ModelConfig.mask_value
    seed: int = 0
    src_text: str = ""
    tgt_text: str = ""
    kind: str = "cross"  # where a trained model's pattern is plainest: alignment
    layer: int = 1  # the last layer of the shipped models (the widgets keep it inside smaller ones)
    head: int = 0
    value: str = "weights"
    query: int | None = None
    pad: int = 8  # a padded batch: padding and look-ahead differ from look-ahead alone
    mask_kind: str = "decoder_self"  # where both masks act
    cell_query: int | None = None  # None: no cell chosen (Inside one head then follows cell 0, 0)
    cell_key: int | None = None
    step: int = 0  # 0: the last step (the slider counts from 1)
    output: int = 0  # 0: the page's own choice, a token worth explaining (the slider counts from 1)
    temperature: float = 0.0  # 0: greedy decoding (the other sampling settings unused)
    top_k: int = 0  # 0: every token may be drawn
    top_p: float = 1.0  # 1: every token may be drawn
    sample_seed: int = 0
    side: str = "src"
    stack: str = "decoder"
    dims: tuple[int, ...] = ()  # (): a few telling dimensions
    train_steps: int = 800
    train_lr: float | None = None  # None: the task's own
    train_batch: int | None = None  # None: the task's own
    train_from: str = "fresh"
    lesson_step: int = 1
    present: bool = False
    bpe_corpus: str = " ".join(["yes"] * 7 + ["highest"] * 3 + ["high"] * 9)  # seed 003's worked example
    bpe_merges: int = 5
    breaks: tuple[str, ...] = ()  # "no_positions", "no_scale", "no_look_ahead"
    ablate: tuple[str, ...] = ()  # heads as "kind-layer-head", counted from 1
    ablation: str = "zero"
    a_weights: str = "pretrained"
    a_variant: str = "same"  # a shape variant: "same", "one_head", "eight_heads", "no_positional", "post_ln"
    a_breaks: tuple[str, ...] = ()
    a_ablate: tuple[str, ...] = ()
    b_weights: str = "random"  # trained against untrained, to begin with
    b_variant: str = "same"
    b_breaks: tuple[str, ...] = ()
    b_ablate: tuple[str, ...] = ()

    def beyond_limits(self) -> list[str]:
        """The shape settings outside what a class server builds (empty when the shape is allowed)."""
        (least_d_model, most_d_model), (least_layers, most_layers) = d_model_range(), layer_range()
        allowed = {D_MODEL: least_d_model <= self.d_model <= most_d_model,
                   N_HEADS: 1 <= self.n_heads <= limits().heads,
                   N_ENCODER_LAYERS: least_layers <= self.n_encoder_layers <= most_layers,
                   N_DECODER_LAYERS: least_layers <= self.n_decoder_layers <= most_layers,
                   D_FF: self.d_ff in d_ff_choices(), MAX_LEN: self.max_len in max_len_choices()}
        return [field for field, ok in allowed.items() if not ok]

    def sampling_settings(self) -> tuple[float, int, float, int] | None:
        """(temperature, top_k, top_p, seed) the run decodes with, None for greedy: as the Decoding page's sliders
        show them, a setting outside its slider's range (a link, a room) giving way to its default."""
        def shown(field: str):
            value, (low, high) = getattr(self, field), SAMPLING_RANGES[field]
            return value if type(value) is type(low) and low <= value <= high else getattr(View, field)

        temperature = shown(TEMPERATURE)
        return None if temperature == 0 else (temperature, shown(TOP_K), shown(TOP_P), shown(SAMPLE_SEED))

    def model_config(self) -> ModelConfig:
        """The model this view asks for: its task's own config (vocabularies, pad id, max_len, dropout; a
        decoder-only model's one vocabulary) in the view's shape and variants; max_len 0 is the task's own. Raises
        ValueError for a model that cannot exist or cannot read the task (KeyError for an unknown task)."""
        architecture = toy_architecture(self.architecture)  # ValueError naming the known ones
        task = get_task(self.task)
        own = architecture.task_config(task)
        config = replace(own, d_model=self.d_model, n_heads=self.n_heads, n_encoder_layers=self.n_encoder_layers,
                         n_decoder_layers=self.n_decoder_layers, d_ff=self.d_ff, max_len=self.max_len or own.max_len,
                         positional=self.positional, norm_first=self.norm_first,
                         scale_embeddings=self.scale_embeddings, embed_norm=self.embed_norm,
                         mask_value=self.mask_value)
        architecture.check_fits(task, config)
        return config


def tasks_for(architecture: str) -> dict[str, Task]:
    """The tasks a model of `architecture` learns: every task; a decoder-only model also the one-stream ones."""
    return dict(toy_architecture(architecture).tasks())


VIEW_FIELDS = tuple(f.name for f in fields(View))
# Widgets whose labels depend on the language: a language switch writes their values again so that
# the widget and the link show them in the new language.
TRANSLATED_FIELDS = (SOURCE, TASK, WEIGHTS, ARCHITECTURE, TRAIN_FROM, MAX_LEN, POSITIONAL, NORM_FIRST, KIND,
                     MASK_KIND, VALUE, QUERY, CELL_QUERY, CELL_KEY, SIDE, STACK, BREAKS, ABLATE, ABLATION, A_WEIGHTS,
                     A_VARIANT, A_BREAKS, A_ABLATE, B_WEIGHTS, B_VARIANT, B_BREAKS, B_ABLATE)
VIEW_TYPES = typing.get_type_hints(View)  # field -> its type (str, int | None, tuple[int, ...], ...)


def _has_type(value, hint) -> bool:
    """Whether a JSON value can be the value of a field annotated `hint` (a tuple field's value is a list)."""
    if hint is bool or hint is str:
        return type(value) is hint
    if hint is int:
        return type(value) is int
    if hint is float:
        return type(value) in (int, float)
    if hint is type(None):
        return value is None
    if typing.get_origin(hint) is tuple:  # tuple[int, ...] or tuple[str, ...]
        item = typing.get_args(hint)[0]
        return isinstance(value, list | tuple) and all(type(v) is item for v in value)
    return any(_has_type(value, option) for option in typing.get_args(hint))  # int | None


def checked_view(values: Mapping[str, object]) -> dict[str, object]:
    """View values received from elsewhere (a class room), as session state holds them: only view fields, each
    of its field's type, the shape within what a class server builds. Raises ValueError naming what is not."""
    unknown = sorted(set(values) - set(VIEW_FIELDS))
    wrong = [f for f in VIEW_FIELDS if f in values and not _has_type(values[f], VIEW_TYPES[f])]
    if unknown or wrong:
        raise ValueError(f"not view fields: {unknown}; not of their field's type: {wrong}")
    checked = {f: list(v) if isinstance(v, tuple) else v for f, v in values.items()}
    beyond = View(**{f: tuple(v) if isinstance(v, list) else v for f, v in checked.items()}).beyond_limits()
    if beyond:
        raise ValueError(f"beyond what a class server builds: {beyond}")
    return checked


@dataclass(frozen=True, eq=False)
class TrainedModel:
    """A copy of a model trained (or uploaded) in this session on one task; never shared with other sessions."""

    model: object  # a Transformer (kept untyped: no torch import here)
    id: str
    task: str
    steps: int
    history: tuple[tuple[int, float, float], ...]  # (step, loss, accuracy)
    snapshots: tuple = ()  # AttentionSnapshot of the probe input, oldest first
    exact_match: float | None = None  # on fresh inputs, measured when training finished
    seconds: float | None = None
    finished: bool = False  # False while training or after Stop
    uploaded: str = ""  # the name of the checkpoint it was uploaded as ("": trained in this session)


@dataclass(frozen=True)
class Teaching:
    """The room this session leads and what it shared last (a page's own reruns share that page again)."""

    code: str
    link_code: str  # the students' link and QR code carry it
    teacher_code: str  # the teacher's own link carries it (it reclaims the room)
    page: str = ""  # the URL path of the page shared last
    view: dict[str, object] = field(default_factory=dict)  # the view values shared last (as JSON reads them)
    version: int = 0  # the room's version after that (0: nothing shared yet)
    heard: float = 0.0  # time.monotonic() of the store's last sign of this teacher (a publish or a heartbeat)


@dataclass(frozen=True)
class Joined:
    """The room this session joined as a student."""

    code: str
    link_code: str  # what the student's link carries
    following: bool = True  # False: the student left to explore on their own (and may rejoin)
    seen: int = 0  # the room version whose page and view were opened last (0: none yet)
    switched: int = 0  # the room version whose page this session last switched to
    confirmed: int = 0  # the room version whose page was drawn once more after the catch-up (follow_teacher)
    away: int = 0  # whole minutes the teacher had been away at the last look (0: here)
    student: str = field(default_factory=lambda: secrets.token_hex(6))  # this student's random number in the room:
    #                                                                      their answers are kept under it
