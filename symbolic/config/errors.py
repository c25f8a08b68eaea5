"""The exceptions of bad input: the CLI turns each into one line and exit 2."""


class ConfigError(ValueError):
    """A configuration violates a constraint; the message is one line naming it."""


class BrokenRule(ConfigError):
    """A configuration breaks a rule of the rule table (symbolic.config.rules); `rule` is its name."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule
