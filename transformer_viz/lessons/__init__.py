"""The lesson a teacher runs without preparation: one module per step, in the order of STEPS.

A step sets the view for the point it makes, explains it with a formula and live figures, asks a question to
predict and reveals the answer computed from the model; what answers the question (a number, a highlighted head,
the next word) is drawn only once the answer is revealed (`Host.revealed`). Adding a step: write its module here
(see step.py), add it to STEPS, and write its `lesson.<name>.*` sentences in both catalogs (i18n/).
"""

from transformer_viz.lessons import (
    cross,
    decoding,
    embeddings,
    explanation,
    gpt,
    heads,
    induction,
    masks,
    positions,
    scaling,
    tokens,
    training,
)

STEPS = tuple(module.STEP for module in (tokens, embeddings, positions, scaling, masks, heads, cross, decoding,
                                         training, gpt, induction, explanation))
