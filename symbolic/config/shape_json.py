"""A ModelShape as the "shape" object of --json outputs: only what differs from the defaults, read back with them."""

from __future__ import annotations

from .shapes import ModelShape
from .vision import of_json

REQUIRED = ("name", "h", "f", "a", "k", "L", "v")  # the fields without a default: in every "shape" object
RENAMED = {"lin_conv": "conv_width"}  # an older record's field name -> today's (K_c, renamed in issue 49)


def shape_json(shape: ModelShape) -> dict:
    """The name and the letters h f a k L v, then only the fields whose value differs from what a shape given none of
    them gets (head_dim where not h // a), in ModelShape's order, tuples as lists: a new field with a default changes
    no output."""
    plain = ModelShape(*(getattr(shape, key) for key in REQUIRED)).as_dict()
    return {key: value for key, value in shape.as_dict().items() if key in REQUIRED or value != plain.get(key)}


def shape_from_json(shape: dict) -> ModelShape:
    """The ModelShape of a --json "shape" (shape_json's, or an older record's with every field under its name then,
    RENAMED): absent keys take their defaults."""
    fields = {RENAMED.get(key, key): value for key, value in shape.items()}
    if isinstance(fields.get("vision"), dict):  # a multimodal checkpoint's tower, as its as_dict wrote it
        fields["vision"] = of_json(fields["vision"])
    return ModelShape(**fields)
