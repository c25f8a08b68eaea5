"""Systems as data: a card, its NVLink domain (8 GPUs in a DGX, 72 in an NVL72 rack) and the measured bus bandwidth
(NCCL's busbw, GB/s) of a ring collective and of an all-to-all inside the domain and per GPU across it, each figure
cited from ../shared/data/hardware/COLLECTIVES.md; a custom system from a small TOML file."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

from ..config.errors import ConfigError
from .cards import CARDS, DEFAULT_CARD, Card, card

GTC25 = "NVIDIA GTC25 S72583 slides 12-13 (COLLECTIVES.md 2)"
ME_NET = "stas00/ml-engineering@744d01e1 network/README.md"


@dataclass(frozen=True)
class System:
    """Where a job runs: the card, the NVLink domain's size, and busbw (GB/s) of a ring collective (reduce-scatter,
    all-gather) and an all-to-all inside the domain (nvl_*) and per GPU over the scale-out network (net_*)."""

    name: str
    card_name: str
    domain: int  # GPUs on one NVLink domain
    nvl_ring: float
    nvl_a2a: float
    net_ring: float  # per GPU (one NIC each)
    net_a2a: float  # per GPU
    source: str

    @property
    def card(self) -> Card:
        return card(self.card_name)


_AMPERE = (
    f"nvl ring 234.89: 8x A100 all_reduce 16 GiB ({ME_NET}:1216-1241); nvl a2a 210: NVLink3 ({GTC25}); net "
    f"ring 24: HDR 200G per NIC (nccl#412); net a2a 18 DERIVED: DGX A100 4-node alltoall 24 x 3/4 ({GTC25})"
)
_NDR = (
    "net ring 46: 'For NDR @ 400Gbps you should see 46-48GB/s per NIC' (nccl-tests#290), the lower end; net a2a "
    f"36 DERIVED: DGX H100 4-node alltoall busbw 48 ({GTC25}) x (N-1)/N at N = 4 (nccl-tests#130)"
)
_XDR = (
    "net ring 92 and a2a 72 DERIVED: the NDR figures x 2 for ConnectX-8 at 800 Gb/s per GPU (no measurement in "
    "COLLECTIVES.md)"
)
_HOPPER = (
    f"nvl ring 362.9: 8x H200 reduce_scatter Ring 16 GiB ({ME_NET}:981; NVLink4 as H100); nvl a2a 320: "
    f"NVLink4 (H100) 8 GPUs ({GTC25})"
)
_NVL5_8 = (
    f"nvl ring 682.2: 8x B200 all_reduce ring-only 8 GiB ({ME_NET}:933-941); nvl a2a 640: NVLink5 (B200) "
    f"8 GPUs ({GTC25})"
)
_NVL72 = f"nvl ring 680 and a2a 640: NVLink (GB200 NVL72), 32 GPUs, no SHARP ({GTC25})"

SYSTEMS: dict[str, System] = {
    s.name: s
    for s in (
        System("dgx-a100", "a100-80gb", 8, 234.89, 210, 24, 18, _AMPERE),
        System("dgx-h100", "h100-80gb", 8, 362.9, 320, 46, 36, f"{_HOPPER}; {_NDR}"),
        System("dgx-h200", "h200-141gb", 8, 362.9, 320, 46, 36, f"{_HOPPER}; {_NDR}"),
        System("dgx-b200", "b200-192gb", 8, 682.2, 640, 46, 36, f"{_NVL5_8}; {_NDR}"),
        System("dgx-b300", "b300-288gb", 8, 682.2, 640, 92, 72, f"{_NVL5_8} (B300: same NVLink5, assumed); {_XDR}"),
        System("gb200-nvl72", "gb200-186gb", 72, 680, 640, 46, 36, f"{_NVL72}; {_NDR} (one CX-7 per GPU)"),
        System("gb300-nvl72", "gb300-288gb", 72, 680, 640, 92, 72, f"{_NVL72} (GB300: same NVLink5, assumed); {_XDR}"),
    )
}

DGX_OF_CARD = {
    "a100-40gb": "dgx-a100",
    "a100-80gb": "dgx-a100",
    "h100-80gb": "dgx-h100",
    "h200-141gb": "dgx-h200",
    "b200-192gb": "dgx-b200",
    "b300-288gb": "dgx-b300",
    "gb200-186gb": "gb200-nvl72",
    "gb300-288gb": "gb300-nvl72",
}  # the system a card comes in by default


def system(spec: str) -> System:
    """A shipped system by name, or a TOML file by path ([system] card = ..., domain = ..., and optionally
    nvl_ring, nvl_a2a, net_ring, net_a2a in GB/s; the rest from the card's DGX/NVL72 system)."""
    if spec in SYSTEMS:
        return SYSTEMS[spec]
    path = Path(spec)
    if not spec.endswith(".toml"):
        raise ConfigError(f"unknown system {spec!r}: choose from {', '.join(SYSTEMS)} or give a .toml file")
    try:
        table = tomllib.loads(path.read_text()).get("system")
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"--system {spec}: cannot read it ({err})") from None
    if not isinstance(table, dict) or table.get("card") not in CARDS:
        raise ConfigError(f"--system {spec}: needs a [system] table with card = one of {', '.join(CARDS)}")
    base = SYSTEMS[DGX_OF_CARD[table["card"]]]
    known = {f.name for f in fields(System)} - {"name", "card_name", "source"}
    unknown = sorted(set(table) - known - {"card", "name"})
    if unknown:
        raise ConfigError(
            f"--system {spec}: unknown keys {', '.join(unknown)} (known: card, name, {', '.join(sorted(known))})"
        )
    values = {key: table[key] for key in known if key in table}
    for key, value in values.items():
        if not isinstance(value, (int, float)) or value <= 0 or (key == "domain" and int(value) != value):
            raise ConfigError(
                f"--system {spec}: {key} must be a positive number{' (integer)' if key == 'domain' else ''}, got {value!r}"
            )
    return replace(
        base,
        name=str(table.get("name", path.stem)),
        card_name=table["card"],
        source=f"{spec} (other figures: {base.name}'s)",
        **values,
    )


def default_system(card_name: str | None) -> System:
    """The card's DGX (or NVL72) system; DEFAULT_CARD's (dgx-h100) when no card is named."""
    return SYSTEMS[DGX_OF_CARD[card(card_name or DEFAULT_CARD).name]]
