"""The command of the scripts that list what torch's autograd saves of a model's module (olmo2_saved.py,
vision_saved.py): one JSON line per variant, printed and, with -o, written to a file; and the saved-tensor hook and
the versions those lines carry."""

from __future__ import annotations

import argparse
import importlib.util
import json
from typing import Callable, Iterable


def main(doc: str, saved: Callable[[str], dict] | None, variants: Iterable[str]) -> None:
    """Parse -o, refuse in one line without torch and transformers (or where `saved` is None), list each variant's
    line."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    if saved is None or not all(importlib.util.find_spec(name) for name in ("torch", "transformers")):
        raise SystemExit("needs torch and transformers (pip install torch transformers): not installed here")
    lines = [json.dumps(saved(variant)) for variant in variants]
    if args.output:
        with open(args.output, "w") as out:
            out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


class SavedBytes:
    """A saved-tensor hook's pack: the bytes of each storage autograd keeps, by dtype, counting a storage once and none
    that holds a parameter or buffer (`held`: their storages' data pointers)."""

    def __init__(self, held: set[int]):
        self.held, self.seen, self.by_dtype = held, set(), {}

    def __call__(self, x):
        ptr = x.untyped_storage().data_ptr()
        if ptr not in self.held and ptr not in self.seen:
            self.seen.add(ptr)
            self.by_dtype[str(x.dtype)] = self.by_dtype.get(str(x.dtype), 0) + x.untyped_storage().nbytes()
        return x


def versions() -> dict:
    """The versions of torch and transformers a line is measured with."""
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__}


def kept(forward: Callable, held: Iterable) -> tuple:
    """forward()'s output, and the bytes autograd keeps by dtype for it and the backward of its sum (in fp32): each
    storage once, none of held's (parameters, buffers)."""
    import torch

    pack = SavedBytes({x.untyped_storage().data_ptr() for x in held})
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        out = forward()
    out.float().sum().backward()
    return out, pack.by_dtype
