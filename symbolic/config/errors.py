"""One exception type for every bad-input case; the CLI turns it into one line and exit 2."""


class ConfigError(ValueError):
    """A configuration violates a constraint; the message is one line naming it."""
