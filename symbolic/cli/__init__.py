"""`mem4d`: the command line, one module per command; jaxcheck is imported only by compile, verify and sweep."""

from .entry import main

__all__ = ["main"]
