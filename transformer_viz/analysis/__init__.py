"""What is computed from a model and its trace for the views: runs of a task's text,
one head's walkthrough, measures across layers.
"""
