"""The glossary: one positive sympy Symbol per letter of Fujii et al. (arXiv 2411.06465).

Names are plain identifiers so that lambdified estimators take them as keyword
arguments; ``LATEX`` maps the few that render differently.
"""
import sympy as sp

# model shape
s = sp.Symbol("s", positive=True)  # sequence length
b = sp.Symbol("b", positive=True)  # micro batch size
h = sp.Symbol("h", positive=True)  # hidden size
f = sp.Symbol("f", positive=True)  # SwiGLU intermediate size
a = sp.Symbol("a", positive=True)  # attention heads
k = sp.Symbol("k", positive=True)  # KV heads (GQA); k = a is multi-head attention
L = sp.Symbol("L", positive=True)  # transformer layers
v = sp.Symbol("v", positive=True)  # vocabulary size

# parallel sizes
d = sp.Symbol("d", positive=True)  # data-parallel size
t = sp.Symbol("t", positive=True)  # tensor-parallel size (sequence parallel shares it)
p = sp.Symbol("p", positive=True)  # pipeline-parallel size
c = sp.Symbol("c", positive=True)  # context-parallel size

# schedule
m = sp.Symbol("m", positive=True)  # micro batches per step = gbs / (b*d)
vpp = sp.Symbol("vpp", positive=True)  # virtual pipeline stages per rank (interleaved 1F1B)

# byte widths
B_w = sp.Symbol("B_w", positive=True)  # bytes per weight (bf16: 2)
B_g = sp.Symbol("B_g", positive=True)  # bytes per gradient (fp32 main grads: 4)
B_o = sp.Symbol("B_o", positive=True)  # optimizer bytes per parameter (fp32 master + Adam m, v: 12)
B_a = sp.Symbol("B_a", positive=True)  # bytes per activation element (bf16: 2)

SHAPE = (s, b, h, f, a, k, L, v)
PARALLEL = (d, t, p, c)
SCHEDULE = (m, vpp)
BYTES = (B_w, B_g, B_o, B_a)
ALL = SHAPE + PARALLEL + SCHEDULE + BYTES
BY_NAME = {sym.name: sym for sym in ALL}

LATEX = {vpp: r"v_{pp}", B_w: r"B_{w}", B_g: r"B_{g}", B_o: r"B_{o}", B_a: r"B_{a}"}

MEANING = {
    s: "sequence length",
    b: "micro batch size",
    h: "hidden size",
    f: "SwiGLU intermediate size",
    a: "attention heads",
    k: "key/value heads (GQA)",
    L: "transformer layers",
    v: "vocabulary size",
    d: "data-parallel size",
    t: "tensor-parallel size (sequence parallel shares it)",
    p: "pipeline-parallel size",
    c: "context-parallel size",
    m: "micro batches per step, gbs / (b d)",
    vpp: "virtual pipeline stages per rank",
    B_w: "bytes per weight",
    B_g: "bytes per gradient",
    B_o: "optimizer bytes per parameter",
    B_a: "bytes per activation element",
}
