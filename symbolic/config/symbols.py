"""One positive sympy Symbol per letter of the glossary (glossary.py), importable by its name."""
import sympy as sp

from . import glossary

BY_NAME = {name: sp.Symbol(name, positive=True) for name in glossary.NAMES}  # plain names: lambdify keywords

s, b, h, f, a, k, L, v = (BY_NAME[name] for name in glossary.SHAPE)
d, t, p, c = (BY_NAME[name] for name in glossary.PARALLEL)
m, vpp = (BY_NAME[name] for name in glossary.SCHEDULE)
B_w, B_g, B_o, B_a = (BY_NAME[name] for name in glossary.BYTES)
ALL = tuple(BY_NAME.values())

LATEX = {BY_NAME[name]: tex for name, tex in glossary.LATEX.items()}
MEANING = {BY_NAME[name]: meaning for name, meaning in glossary.MEANING.items()}
