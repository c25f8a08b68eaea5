"""A file of a trainer's command-line arguments, as (flag, value) pairs in order: a YAML mapping of `--flag: value`
(a Megatron-LM functional test's model_config.yaml keeps them under MODEL_ARGS) or a text file of `--flag value`
arguments as a launch script holds them (`\\` line continuations and `#` comments allowed)."""

from __future__ import annotations

import shlex
from pathlib import Path

from ..config.errors import ConfigError

MAX_BYTES = 2**20  # the largest argument file read (a functional test's is about 4 KB)
# a functional test's model_config.yaml beside MODEL_ARGS: the harness's settings (tests/functional_tests in
# Megatron-LM @ d98e8a64): environment, test kind, launcher, repeats, the metrics compared; none is an argument
HARNESS_KEYS = (
    "ENV_VARS",
    "TEST_TYPE",
    "LAUNCHER",
    "N_REPEATS",
    "METRICS",
    "BASE_MODEL",
    "MODE",
    "THROUGHPUT_TEST_PARAMS",
    "CKPT_RESUME",
    "ALLOW_NONDETERMINISTIC_ALGO",
)


def _text(path: Path) -> str:
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such file (expected Megatron-LM arguments: a YAML mapping or --flag value text)"
        ) from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_BYTES // 2**20} MiB: not an argument file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: cannot read: not UTF-8 text (byte {err.start})") from None


def _yaml(path: Path, text: str):
    """The YAML document, every mapping free of repeated keys (PyYAML would keep the last one silently)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader, node):
        keys = [loader.construct_object(key) for key, _ in node.value]
        repeated = sorted({str(k) for k in keys if keys.count(k) > 1})
        if repeated:
            raise ConfigError(
                f"{path}: {', '.join(repeated)} given twice (line {node.start_mark.line + 1}): "
                "YAML readers differ on which one wins"
            )
        return loader.construct_mapping(node)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return yaml.load(text, Loader=Loader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}: malformed YAML{where}: {getattr(err, 'problem', None) or err}") from None


def _from_mapping(path: Path, data: dict) -> list[tuple[str, object]]:
    if "MODEL_ARGS" in data:
        other = [str(key) for key in data if key != "MODEL_ARGS" and key not in HARNESS_KEYS]
        if other:
            raise ConfigError(f"{path}: keys beside MODEL_ARGS that are no functional-test setting: {', '.join(other)}")
        data = data["MODEL_ARGS"]
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: MODEL_ARGS must be a mapping of --flag: value")
    bad = [str(key) for key in data if not (isinstance(key, str) and key.startswith("--"))]
    if bad:
        raise ConfigError(f"{path}: keys that are no --flag: {', '.join(bad[:8])}")
    return list(data.items())


def _from_text(path: Path, text: str) -> list[tuple[str, object]]:
    """`--flag v v ...` groups; a flag with no value is a switch (True)."""
    try:
        tokens = shlex.split(text.replace("\\\n", " "), comments=True)
    except ValueError as err:
        raise ConfigError(f"{path}: malformed arguments: {err}") from None
    if tokens and not tokens[0].startswith("--"):
        raise ConfigError(f"{path}: {tokens[0]!r} is no --flag: give the trainer's arguments alone")
    out: list[tuple[str, object]] = []
    for token in tokens:
        if token.startswith("--"):
            flag, eq, value = token.partition("=")
            out.append((flag, [value] if eq else []))
        else:
            out[-1][1].append(token)
    return [(flag, True if not values else values) for flag, values in out]


def read_args(path: str | Path) -> list[tuple[str, object]]:
    """The (flag, value) pairs of an argument file, in order: a YAML value as YAML types it, a text flag's values as
    a list of strings (True for a bare switch)."""
    path = Path(path)
    text = _text(path)
    if path.suffix.lower() in (".yaml", ".yml"):
        data = _yaml(path, text)
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a YAML mapping of --flag: value (or MODEL_ARGS holding one)")
        return _from_mapping(path, data)
    return _from_text(path, text)
