"""The report's symbols and formulas in LaTeX: the glossary with this configuration's values, and the profile's
formulas (paper: every component, the total and each stage as sums of named components; jax: the buffer table and
each phase as the sum of its buffers)."""

from __future__ import annotations

import sympy as sp

from ..config.kinds import KINDS
from ..config.symbols import ALL, BY_NAME, LATEX, MEANING, L_r, Le_r, m_r, r
from ..estimator.estimate import stages_of
from .formulas import formulas
from .tex import align, breakable, expression, inline, mathrm, names, prose, visible
from ..recipes.registry import DEFAULT_PROFILE, JAX_PROFILE

GIB = 2**30
PUBLISHED = [
    r"M &= \left(6 + \frac{12}{d c}\right)\left[\frac{h v}{t} + \frac{2L}{p} h^{2}\left(\frac{1 + k/a + 1.5 f/h}{t}"
    r" + \frac{1}{h}\right)\right]",
    r"&\qquad + \frac{s b h}{t c}\left[\left(12 + \frac{4k}{a} + \frac{8f}{h}\right)L + 8p"
    r" + 4\left(1 + \frac{v}{h}\right)\right]",
]


def published() -> list[str]:
    """The closed form of Fujii et al. 2024 in two lines."""
    return [r"\begin{align*}", " \\\\\n".join(PUBLISHED), r"\end{align*}"]


def glossary(values: dict[str, float], moe: bool = False) -> list[str]:
    """The symbols with this configuration's values; the expert letters (E, k_e, f_e, f_s, L_e, C_f, e, t_e, L_{e,r})
    only for a model with experts, MLA's and multi-token prediction's (q_r, kv_r, d_r, d_v, n_mtp) only for a model
    with either (one of them not 0; d_v alone where the value heads are narrower), the sparse-attention indexer's
    (n_i, d_i, k_i) only for a model with one, the hybrids' letters (Gated DeltaNet, Mamba-2, one-part blocks) only
    for a hybrid, each stage count for a model with that kind, FP8's B_q and B_c only with --fp8, the vision tower's
    (P_v, A_v, n_v) only for a model with one, the sliding-window kind's (L_w, k_w) only for a model with it."""
    from ..config.glossary import EXPERT_LETTERS, HYBRID_LETTERS, INDEXER_LETTERS, MLA_LETTERS, SWA, VISION

    mla = any(values[name] for name in MLA_LETTERS if name != "d_v")  # d_v alone: GQA value heads (MiMo-V2-Flash)
    indexer = values["n_i"] > 0
    hybrid = any(values[name] for name in ("L_g", "L_m", "L_o", "L_n"))

    lines = [
        r"\section*{Symbols}",
        r"\begin{longtable}{@{}l >{\raggedright}p{0.7\linewidth} r@{}}",
        r"symbol & meaning & value here \\ \hline \endhead",
    ]
    for sym in ALL:
        if (
            (moe or sym.name not in EXPERT_LETTERS)
            and (mla or sym.name not in MLA_LETTERS or values[sym.name])
            and (indexer or sym.name not in INDEXER_LETTERS)
            and (hybrid or sym.name not in HYBRID_LETTERS)
            and (values["B_c"] > 0 or sym.name not in ("B_q", "B_c"))
            and (values["P_v"] > 0 or sym.name not in VISION)
            and (values["L_w"] > 0 or sym.name not in SWA)
        ):
            lines.append(f"${LATEX.get(sym, sym.name)}$ & {prose(MEANING[sym])} & {values[sym.name]:,} \\\\")
    stage = (
        (r, L_r, m_r)
        + ((Le_r,) if moe else ())
        + tuple(BY_NAME[name] for name, total in KINDS.items() if name != "Le_r" and values[total] > 0)
    )
    for sym in stage:
        lines.append(f"${LATEX.get(sym, sym.name)}$ & {prose(MEANING[sym])} & per stage \\\\")
    return lines + [r"\end{longtable}"]


def _item(name: str, doc: str, expr: sp.Expr) -> list[str]:
    return [r"\paragraph{" + prose(name) + "} " + prose(doc), align(expression(mathrm(name), expr))]


LAYER_TABLES = {
    "layer": "One layer's activations",
    "moe_layer": "One MoE layer's activations",
    "linear_layer": "One Gated DeltaNet layer's activations",
    "mamba_layer": "One Mamba-2 layer's activations",
}  # the kinds formulas() lists, where present


def _layer_table(items: dict, kind: str = "layer") -> list[str]:
    """One kind's per-layer tensors as a table: name, bytes for one micro batch, what it is (none where the model
    has no layer of that kind)."""
    if kind not in items:
        return []
    tensors = [item for name, item in items.items() if name.startswith(kind + ".")]
    lines = [
        r"\paragraph{" + LAYER_TABLES[kind] + "} " + prose(items[kind].doc) + ": the sum of the tensors below.",
        r"\begin{longtable}{@{}>{\raggedright}p{0.17\linewidth} >{\raggedright}p{0.3\linewidth} "
        r">{\raggedright\arraybackslash}p{0.47\linewidth}@{}}",
        r"tensor & bytes (one micro batch) & what \\ \hline \endhead",
    ]
    for item in tensors:
        lines.append(f"{breakable(item.name.split('.', 1)[1])} & {inline(item.expr)} & {prose(item.doc)} \\\\")
    return lines + [r"\end{longtable}"]


def _same(x: sp.Expr, y: sp.Expr) -> bool:
    """Whether two expressions agree (at two points of distinct letter values, where the printed forms could only
    agree by accident; much faster than simplifying their difference)."""
    for seed in (3, 7):
        point = {sym: sp.Integer(seed + 2 * i) for i, sym in enumerate(ALL)}
        a, b = (float(sp.sympify(e).xreplace(point)) for e in (x, y))
        if abs(a - b) > 1e-12 * max(abs(a), abs(b), 1.0):
            return False
    return True


def paper(module, sw, p: int, profile: str = DEFAULT_PROFILE) -> list[str]:
    """Every component, the total as their sum, the per-layer tensors, and each stage of this p as a sum of named
    components, with the formulas of those that differ from the most loaded GPU's (a recipe's profile alike; the
    published closed form for the paper profile)."""
    items = {item.name: item for item in formulas(profile, sw)}
    parts = module.components(sw)
    lines = [r"\section*{Formulas (bytes per GPU, profile \texttt{" + profile + "})}"]
    if profile == DEFAULT_PROFILE:
        lines += [
            r"\noindent The published closed form of the most loaded GPU (Fujii et al.\ 2024, arXiv 2411.06465), "
            r"which the profile's total equals at $B_{w}, B_{g}, B_{o}, B_{a}, B_{l} = 2, 4, 12, 2, 4$, "
            r"$v_{pp} = 1$, $m \ge p$, without overheads:"
        ] + published()
    else:
        lines.append(r"\noindent " + prose(module.TITLE) + ": every term from the trainer's code, cited in its line.")
    for part in parts:
        lines += _item(part.name, part.doc, part.expr)
    lines.append(r"\paragraph{total} " + prose(items["total"].doc) + ".")
    lines.append(align(names(mathrm("total"), [part.name for part in parts])))
    for kind in LAYER_TABLES:
        lines += _layer_table(items, kind)
    lines.append(r"\subsection*{Pipeline stages}")
    lines.append(
        r"Each stage of this configuration places every tensor where the trainer allocates it. A stage's "
        r"total is the sum of its components; those whose formula differs from the most loaded GPU's above "
        r"are written out."
    )
    main = {part.name: part.expr for part in parts}
    for stage, _ in stages_of(p):
        stage_parts = module.stage_components(sw, stage)
        lines.append(r"\paragraph{" + stage + " stage} " + prose(items[f"{stage}.total"].doc) + ".")
        differ = [part for part in stage_parts if not _same(part.expr, main.get(part.name, sp.Integer(0)))]
        widest = max(visible(mathrm(f"{stage}.{part.name}")) for part in [*stage_parts, *differ])
        lines.append(
            align(
                names(mathrm(f"{stage}.total"), [part.name for part in stage_parts], widest=widest),
                *(expression(mathrm(f"{stage}.{part.name}"), part.expr, widest) for part in differ),
            )
        )
    return lines


# One short head per phase of recipes.jax.buffers.PHASES, in its order: (label in the key, math in the table's head).
_PHASE_HEAD = (
    ("Fe", r"\mathrm{F_e}"),
    ("F", r"\mathrm{F}"),
    ("R", r"\mathrm{R}"),
    ("L", r"\mathrm{L}"),
    ("Lx", r"\mathrm{L_x}"),
    ("Lh", r"\mathrm{L_h}"),
    ("Lm", r"\mathrm{L_m}"),
    ("Ba", r"\mathrm{B_a}"),
    ("Bw", r"\mathrm{B_w}"),
    ("Be", r"\mathrm{B_e}"),
    ("U", r"\mathrm{U}"),
    ("Ug", r"\mathrm{U_g}"),
)


def jax(module, sw, values: dict[str, int]) -> list[str]:
    """The buffer table (per-device shape, bytes per element, phases live, bytes here), each phase as the sum of
    its buffers, temp as the largest phase, the total, the per-layer tensors."""
    from ..recipes.jax.buffers import PHASES, on
    from .table import rows as table_rows

    subs = {BY_NAME[name]: value for name, value in values.items()}
    rows = table_rows(module, sw)
    buffers = module.table(sw)
    assert len(_PHASE_HEAD) == len(PHASES), "a phase of recipes.jax.buffers.PHASES has no head in the buffer table"
    key = ", ".join(f"{head}: {name.replace('_', ' ')}" for (head, _), name in zip(_PHASE_HEAD, PHASES))
    lines = [
        r"\section*{Formulas (bytes per device, profile \texttt{jax})}",
        r"\noindent Every term is a buffer of the compiled step: its per-device shape in the glossary's letters, "
        r"bytes per element, and the phases it is live in (" + key + r"). Arguments and outputs are live "
        r"throughout; XLA packs the temporaries into one heap, as large as the largest phase. Bytes here: at this "
        r"configuration, for the " + f"XLA:{sw.backend.upper()}" + " program.",
        r"{\small\setlength{\tabcolsep}{3pt}\begin{longtable}{@{}>{\raggedright}p{0.16\linewidth} >{\raggedright}p{0.24\linewidth} "
        r">{\raggedright}p{0.1\linewidth} " + " ".join(["c"] * len(PHASES)) + r" r@{}}",
        r"buffer & shape (per device) & bytes/elt & "
        + " & ".join(f"${h}$" for _, h in _PHASE_HEAD)
        + r" & GiB \\ \hline \endhead",
    ]
    for row, buf in zip(rows, buffers):
        doc = prose(row["doc"])
        count = "" if row["count"] == 1 else f"{row['count']} \\times "
        lump = not buf.shape and sp.sympify(buf.width).free_symbols  # bytes of several tensors, not one shape
        if lump:
            shape, width = f"{'$' + count + '$ ' if count else ''}bytes: {inline(buf.width)}", ""
        elif buf.shape:
            shape, width = f"${count}[" + ", ".join(inline(x)[1:-1] for x in buf.shape) + "]$", inline(buf.width)
            if visible(width) > 12:  # an element that is itself a sum of tensors: its bytes go on the line below
                doc, width = doc.rstrip(".") + f". Bytes per element: {width}.", "below"
        else:
            shape, width = (f"${count}$ " if count else "") + "scalar", inline(buf.width)
        cells = [
            breakable(row["name"]) + ("" if row["backend"] == "all" else f" ({row['backend']})"),
            shape,
            width,
            *(r"$\bullet$" if ph in row["phases"] else "" for ph in PHASES),
            f"{float(buf.bytes.xreplace(subs)) / GIB:,.3f}",
        ]
        lines.append(" & ".join(cells) + r" \\*")
        lines.append(
            r"\multicolumn{"
            + str(4 + len(PHASES))
            + r"}{@{}p{0.97\linewidth}@{}}{\quad\footnotesize "
            + doc
            + r"} \\[2pt]"
        )
    lines.append(r"\end{longtable}}")
    temps = on(module.temporaries(sw), sw.backend)
    lines.append(
        r"\paragraph{Phases} Each phase's live temporaries are the sum of the buffers live in it; the heap "
        r"XLA needs (temp) is the largest."
    )
    fixed = module.arguments(sw) + module.outputs(sw)
    widest = max(visible(mathrm(f"phase.{ph}")) for ph in PHASES)
    lines.append(
        align(
            *(
                names(mathrm(f"phase.{ph}"), [row.name for row in temps if ph in row.phases], widest=widest)
                for ph in PHASES
            ),
            names(mathrm("temp"), [f"phase.{ph}" for ph in PHASES], r"\max", widest),
            names(mathrm("total"), [row.name for row in fixed] + ["temp"], widest=widest),
        )
    )
    items = {item.name: item for item in formulas(JAX_PROFILE, sw)}
    return lines + _layer_table(items)


def section(module, profile: str, sw, values: dict[str, int], p: int) -> list[str]:
    """The formulas section of a profile: a buffer table (jax) or components and stages (paper)."""
    return jax(module, sw, values) if hasattr(module, "table") else paper(module, sw, p, profile)
