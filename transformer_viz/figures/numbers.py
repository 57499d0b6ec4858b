"""Numbers as a student writes them (a true minus sign, short scientific form for mask fills) and colour ranges
centred on 0."""

from __future__ import annotations

import math

import numpy as np

MINUS = "−"  # a true minus sign: "-" is a hyphen


def format_number(value: float, digits: int = 2) -> str:
    """A number as a student writes it, with a true minus sign: -2.345 -> "−2.35", -0.004 -> "0.00".

    Mask fills and other huge values in short scientific form: -1e9 -> "−1e9", -1e4 -> "−1e4",
    -2.5e9 -> "−2.5e9"; -inf -> "−∞".
    """
    if math.isinf(value):
        return f"{MINUS}∞" if value < 0 else "∞"
    if abs(value) >= 1e4:
        mantissa, exponent = f"{value:.3g}".split("e")
        return f"{mantissa}e{int(exponent)}".replace("-", MINUS)
    written = f"{value:.{digits}f}"
    return written.lstrip("-") if float(written) == 0 else written.replace("-", MINUS)


def format_numbers(values, digits: int = 2) -> np.ndarray:
    """`format_number` of every value of an array: an array of str of the same shape (a few times faster than
    formatting numpy scalars one by one)."""
    array = np.asarray(values)
    texts = [format_number(value, digits) for value in array.astype(float).ravel().tolist()]  # Python floats
    return np.array(texts, dtype=str).reshape(array.shape)


def symmetric_limit(*arrays) -> float:
    """The largest |value| over the arrays, for a colour range centred on 0 (1.0 if all are zero)."""
    limit = max((float(np.abs(a).max()) for a in arrays if np.size(a)), default=0.0)
    return limit if limit > 0 else 1.0
