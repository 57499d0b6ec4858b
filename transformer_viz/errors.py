"""A ValueError an app can say in its own language: the sentence has a stable key and the values it names.

The package writes its sentences in English (`str(error)`); an app that speaks another language looks up
"detail.<key>" in the catalogs of transformer_viz.i18n and fills in `error.values`. `i18n.translatable_error`
makes one whose English sentence is that catalog entry too.
"""

from __future__ import annotations


class TranslatableError(ValueError):
    """A ValueError whose English sentence is `str(error)`, named by `key`, with the `values` it names."""

    def __init__(self, key: str, message: str, **values) -> None:
        super().__init__(message)
        self.key = key
        self.values = values

    def __reduce__(self):  # ValueError pickles its args only; this one needs its key too
        return type(self), (self.key, str(self)), {"values": self.values}
