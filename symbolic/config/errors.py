"""The exceptions the CLI turns into one line: bad input (exit 2) and a step XLA cannot compile (exit 3)."""


class ConfigError(ValueError):
    """A configuration violates a constraint; the message is one line naming it."""


class BrokenRule(ConfigError):
    """A configuration breaks a rule of the rule table (symbolic.config.rules); `rule` is its name."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


class CompileFailed(RuntimeError):
    """XLA refused to compile a valid configuration's step (its own error, e.g. XLA:GPU's "Couldn't find output tile
    sizes"); the message is one line naming the configuration and XLA's first line. Exit 3; `sweep` records it."""
