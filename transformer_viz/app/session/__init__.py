"""A session's state: the View and its keys, the widgets bound to the link, the page context."""
