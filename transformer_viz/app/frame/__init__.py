"""What surrounds every page: the sidebar, navigation, presenter mode, the link and the take-home view."""
