"""Shared checks that a model is refused: by one profile's Training.check, or by each profile's model rules."""

import pytest


def assert_refused(shape, cases, profile: str = "paper") -> None:
    """Each (Training, needle) of `cases` is refused for `shape` by `profile`'s rules: a ConfigError matching needle,
    in one line."""
    from symbolic.config.errors import ConfigError

    for train, needle in cases:
        with pytest.raises(ConfigError, match=needle) as err:
            train.check(shape, profile)
        assert "\n" not in str(err.value)


def assert_profiles_refuse(shape, needles: dict) -> None:
    """For `shape` under Training(s=256, zero=3), each profile of `needles` breaks a rule of the model whose message
    holds that profile's needle."""
    from symbolic.config import rules
    from symbolic.config.training import Training
    from symbolic.recipes.registry import select

    x = rules.letters(Training(s=256, zero=3), shape)
    for profile, needle in needles.items():
        broken = [rule.message(x) for rule in select(profile, model=True) if not rule.holds(x)]
        assert any(needle in message for message in broken), (profile, broken)
