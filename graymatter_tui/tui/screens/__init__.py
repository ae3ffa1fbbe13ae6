"""Screens and the tab panes of the main screen, one file each."""
