"""What a ModelShape's layers are, read off its fields (a mixin of ModelShape, as counts.ParameterCounts is): its MoE,
Gated DeltaNet, Mamba-2 and one-part layers, their counts (L_e, L_g, L_m, L_o, L_n), and whether even pipeline
stages hold alike layers."""

from __future__ import annotations

import numpy as np


class LayerKinds:
    """The layer kinds of a ModelShape: properties over its E, L, dense_layers, linear_layers, mamba_layers,
    mixerless_layers and mlpless_layers fields."""

    @property
    def moe(self) -> bool:
        """Whether the model has routed experts."""
        return self.E > 0

    @property
    def L_e(self) -> int:
        """MoE layers: every layer of an MoE model but its dense_layers; 0 for a dense model."""
        return self.L - len(self.dense_layers) if self.moe else 0

    def is_moe_layer(self, i: int) -> bool:
        """Whether layer i (0-based) has routed experts."""
        return self.moe and i not in self.dense_layers

    @property
    def dense_period(self) -> int:
        """n such that the dense layers of an MoE model are the first k of every n layers (n | L, 0 < k < n: one
        pipeline stage's layers when L/p = n); L for a model of one kind; 0 when no n does."""
        dense = set(self.dense_layers) if self.moe else set()
        k = next((i for i in range(self.L) if i not in dense), self.L)
        later = sorted(i for i in dense if i >= k)
        n = later[0] if later else self.L
        ok = self.L % n == 0 and dense == {i for i in range(self.L) if i % n < k}
        return n if ok else 0

    def stages_alike(self, p):
        """Whether each of p even pipeline stages holds the same layers, its dense ones first (a model of one kind:
        always): what one stacked program builds; p an int or a numpy array of them."""
        return (self.L_e in (0, self.L)) | (self.L == p * self.dense_period)

    @property
    def gdn(self) -> bool:
        """Whether some layers are Gated DeltaNet layers (a hybrid)."""
        return bool(self.linear_layers)

    def linear_alike(self, p):
        """Whether each of p even pipeline stages holds as many Gated DeltaNet layers (a model without them: always):
        what one stacked jaxcheck program builds; p an int or a numpy array of them."""

        def one(p: int) -> bool:
            n = self.L // p
            return not self.gdn or (
                self.L % p == 0
                and len({sum(1 for i in self.linear_layers if q * n <= i < (q + 1) * n) for q in range(p)}) == 1
            )

        return np.vectorize(one, otypes=[bool])(p) if np.ndim(p) else one(int(p))

    @property
    def L_g(self) -> int:
        """Gated DeltaNet layers; 0 without them."""
        return len(self.linear_layers)

    @property
    def mamba(self) -> bool:
        """Whether some layers are Mamba-2 layers."""
        return bool(self.mamba_layers)

    @property
    def blocks(self) -> bool:
        """Whether some layers hold a token mixer or an MLP alone (Nemotron-H's blocks)."""
        return bool(self.mixerless_layers or self.mlpless_layers)

    @property
    def L_m(self) -> int:
        """Mamba-2 layers; 0 without them."""
        return len(self.mamba_layers)

    @property
    def L_o(self) -> int:
        """Layers of an MLP alone (no token mixer)."""
        return len(self.mixerless_layers)

    @property
    def L_n(self) -> int:
        """Layers of a token mixer alone (no MLP)."""
        return len(self.mlpless_layers)
