"""The jax profile's parameter and AdamW bytes per device == the bytes of jaxcheck's own layout, where ZeRO cannot
split a vector over d*c (symbolic.recipes.jax.vectors): a stacked [p, L/p, width] vector along a tensor-split axis
stays whole unless d*c divides L/p (ZeRO-1) or its width over t (ZeRO-2/3).

Source of truth: jaxcheck's abstract train state on a mesh of simulated CPU devices (jaxcheck.state.build, nothing
compiled): the shard shape of every parameter and AdamW leaf under its sharding, summed; exact to the byte.
"""

import jax
import numpy as np
import pytest

from conftest import skip_if_not_enough_devices
from tiny_shapes import GATED, GDN, tiny
from tiny_shapes import GPT as GPT_LAYER

from symbolic.config.training import Training

GPT = tiny("gpt-vectors", f=192, k=4, L=6, v=128, positions=256, **GPT_LAYER)  # fc1's bias [f] over t
SINKS = tiny("sinks-vectors", L=6, v=128, sinks=True, qk_norm="full")
HYBRID = tiny(
    "hybrid-vectors", L=8, v=128, **GATED, **GDN, lin_v_heads=6, lin_v_dim=16
)  # A_log, dt_bias [n_gv = 6] over t


@pytest.mark.parametrize("shape", [GPT, SINKS, HYBRID], ids=["gpt", "sinks", "hybrid"])
@pytest.mark.parametrize("d,t,p,zero", [(2, 1, 2, 1), (4, 1, 2, 1), (4, 2, 1, 1), (4, 1, 1, 3), (2, 2, 2, 2)])
def test_arguments_match_the_layout_where_zero_cannot_split_a_vector(shape, d, t, p, zero):
    """L/p = 3 (or 6, 4) with d = 2 or 4: ZeRO-1 leaves the vectors whole; ZeRO-2/3 split them where d divides
    their width over t (n_gv / t = 6 / 2 = 3 does not)."""
    from jaxcheck.crosscheck.profile import symbolic_bytes
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import StepSpec
    from jaxcheck.state import build

    if shape.gdn and shape.L_g % p:
        pytest.skip("stages must hold as many Gated DeltaNet layers")
    train = Training(d=d, t=t, p=p, s=64, b=1, gbs=d * p, zero=zero)
    spec = StepSpec(shape, train).check()
    skip_if_not_enough_devices(train.world)
    built = build(spec, make_mesh(train))
    held = 0
    for group in ("params", "optimizer"):
        leaves = jax.tree.leaves(built.abstract[group])
        shardings = jax.tree.leaves(built.shardings[group], is_leaf=lambda x: hasattr(x, "shard_shape"))
        held += sum(int(np.prod(sh.shard_shape(x.shape))) * x.dtype.itemsize for x, sh in zip(leaves, shardings))
    sym = symbolic_bytes(shape, train, spec.opts)
    assert sym["params"] + sym["adam_moments"] + sym["adam_count"] == held
