"""The figures' colour scales under deuteranopia and protanopia, simulated with colorspacious (Machado et al.
2009, at full severity) and compared in CAM02-UCS, where a distance of 1 is about the smallest difference seen.

The sequential scale (attention weights, masks) must stay ordered by lightness and evenly spaced; the diverging
one (signed values: embeddings, scores, B − A, attributions) must still tell a positive value from the same
negative one; the blocked cells' grey must stand apart from every colour of both."""

from __future__ import annotations

import numpy as np
import pytest
from colorspacious import cspace_convert, deltaE
from plotly.colors import get_colorscale, hex_to_rgb, sample_colorscale, unlabel_rgb

from transformer_viz.figures.colours import BLOCKED_GREY, DIVERGING, MASK_COLOURS, SEQUENTIAL

VISIONS = {"typical": None, "deuteranopia": "deuteranomaly", "protanopia": "protanomaly"}


def seen(colours: np.ndarray, vision: str) -> np.ndarray:
    """(n, 3) sRGB in [0, 1] as a person with this colour vision sees them (still sRGB)."""
    if VISIONS[vision] is None:
        return colours
    space = {"name": "sRGB1+CVD", "cvd_type": VISIONS[vision], "severity": 100}
    return np.clip(cspace_convert(colours, space, "sRGB1"), 0, 1)


def scale(name: str, at: np.ndarray) -> np.ndarray:
    """(len(at), 3): the Plotly scale's colours at the positions `at` in [0, 1]."""
    return np.array([unlabel_rgb(c) for c in sample_colorscale(get_colorscale(name), at)]) / 255


def lightness(colours: np.ndarray) -> np.ndarray:
    return cspace_convert(colours, "sRGB1", "CAM02-UCS")[:, 0]


@pytest.mark.parametrize("vision", VISIONS)
def test_the_sequential_scale_grows_lighter_in_even_steps_for_every_colour_vision(vision):
    colours = seen(scale(SEQUENTIAL, np.linspace(0, 1, 21)), vision)
    assert np.all(np.diff(lightness(colours)) > 2), "a larger weight must always look lighter"
    steps = deltaE(colours[1:], colours[:-1], input_space="sRGB1")
    assert steps.max() / steps.min() < 4, f"uneven steps: {np.round(steps, 1)}"


@pytest.mark.parametrize("vision", VISIONS)
def test_the_diverging_scale_tells_a_value_from_its_negative_for_every_colour_vision(vision):
    offsets = np.linspace(0.2, 0.5, 7)  # |value| from 40 % of the largest to the largest
    negative, positive = (seen(scale(DIVERGING, 0.5 + sign * offsets), vision) for sign in (-1, 1))
    apart = deltaE(negative, positive, input_space="sRGB1")
    assert apart.min() > 10 and apart[-1] > 20, f"a value and its negative look alike: {np.round(apart, 1)}"
    for side in (negative, positive):  # the size of a value reads as darkness, on either side
        assert np.all(np.diff(lightness(side)) < -2)


@pytest.mark.parametrize("vision", VISIONS)
@pytest.mark.parametrize("name", [SEQUENTIAL, DIVERGING])
def test_the_blocked_cells_grey_is_no_colour_of_a_scale_for_every_colour_vision(name, vision):
    grey = seen(np.array([hex_to_rgb(BLOCKED_GREY)]) / 255, vision)
    nearest = deltaE(seen(scale(name, np.linspace(0, 1, 101)), vision), grey, input_space="sRGB1").min()
    assert nearest > 8, f"{BLOCKED_GREY} is {nearest:.1f} from a colour of {name}"


@pytest.mark.parametrize("vision", VISIONS)
def test_a_masks_blocked_and_allowed_cells_stand_apart_for_every_colour_vision(vision):
    blocked, allowed = seen(np.array([hex_to_rgb(colour) for _, colour in MASK_COLOURS]) / 255, vision)
    assert deltaE(blocked, allowed, input_space="sRGB1") > 40
