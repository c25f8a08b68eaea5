"""config.json model families, one module per family or family group; importing the package registers them all, in
the order below (the order messages list them in). A new family is one module here, its line below, its test rows."""

from . import llama  # noqa: F401  (each module registers its model_types with registry.family)
from . import qwen  # noqa: F401
from . import mixtral  # noqa: F401
from . import phimoe  # noqa: F401
from . import qwen_moe  # noqa: F401
from . import olmoe  # noqa: F401
from . import deepseek  # noqa: F401
from . import dsa  # noqa: F401
from . import gpt2  # noqa: F401
from . import phi  # noqa: F401
from . import llama4  # noqa: F401
from . import gemma  # noqa: F401
from . import gemma4  # noqa: F401
from . import gpt_oss  # noqa: F401
from . import minimax  # noqa: F401
from . import qwen_next  # noqa: F401
from . import nemotron_h  # noqa: F401
from . import mimo_v2  # noqa: F401
from . import nemotron_nas  # noqa: F401
from .registry import FAMILIES, family

SUPPORTED = ", ".join(FAMILIES)  # for messages

__all__ = ["FAMILIES", "SUPPORTED", "family"]
