"""Tokens and tasks: vocabularies, byte-pair encoding, the toy tasks and the small parallel corpora."""
