"""The record of one run, shared by the model that writes it and everything that reads it: Trace, names,
kinds, interventions, exports.
"""
