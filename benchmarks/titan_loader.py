"""Import one torchtitan version's model code from a folder holding its `torchtitan/` package without running the
package's `__init__` (which imports its trainer, datasets and tokenizers): the top package is an empty module over
the folder, and the few third-party packages and torchtitan modules off the model's path (data loading, tokenizers,
metrics, tensorboard, config CLI) are stand-ins whose every attribute is a placeholder class. For
benchmarks/titan_versions.py; nothing a model's forward runs is stood in for (a stand-in called there fails loudly)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
import typing
from pathlib import Path

THIRD_PARTY = (
    "torchdata",
    "tokenizers",
    "datasets",
    "tiktoken",
    "blobfile",
    "tensorboard",
    "wandb",
    "fsspec",
    "tyro",
    "torchft",
    "sentencepiece",
    "huggingface_hub",
    "safetensors",
    "transformers",
)
OFF_PATH = (
    "torchtitan.datasets",
    "torchtitan.hf_datasets",
    "torchtitan.components.dataloader",
    "torchtitan.components.validate",
    "torchtitan.components.tokenizer",
    "torchtitan.components.metrics",
    "torch.utils.tensorboard",
    "torchtitan.distributed.minimal_async_ep",
)  # the last: MoE EP kernels (triton)


class _Placeholder(typing._ProtocolMeta):  # a Protocol's metaclass: placeholders can be mixed with torch's Stateful
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder(name, (Anything,), {})


class Anything(metaclass=_Placeholder):
    """A stand-in: constructible, callable and with any attribute (each itself a stand-in)."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self


def _attribute(name: str):
    if name == "__version__":
        return "0.0.0"
    if name.startswith("__"):
        raise AttributeError(name)
    return _Placeholder(name, (Anything,), {})


class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        off = name.split(".")[0] in self.third_party or any(name == m or name.startswith(m + ".") for m in OFF_PATH)
        return importlib.machinery.ModuleSpec(name, self, is_package=True) if off else None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__, module.__getattr__ = [], _attribute
        return module

    def exec_module(self, module):
        pass


def install(root: Path, triton: bool = False) -> None:
    """Make `import torchtitan.…` read root/torchtitan (its __init__ not run), with the stand-ins in place (triton's
    too where `triton`: 9dec370's norms.py imports it for its fused RMSNorm, not the "rmsnorm" the flavours use; a
    stand-in triton makes torch's dynamo think triton is there, so it is left out where the code runs without it)."""
    finder = _StandIns()
    finder.third_party = THIRD_PARTY + (("triton",) if triton else ())
    sys.meta_path.insert(0, finder)
    top = types.ModuleType("torchtitan")
    top.__path__ = [str(root / "torchtitan")]
    sys.modules["torchtitan"] = top
    sys.path.insert(0, str(root))
