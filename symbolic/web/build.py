"""Write the static site: index.html, app.js, style.css from assets/, data.js (site_data), read/ (the config.json
reader, assets/read/, and its declarations: loaded when a file is pasted or dropped), one script per model
architecture with its JavaScript estimator per switch combination (jsprint) and formulas (LaTeX, the same
rendering `mem4d formula` prints), and KaTeX copied from npm's package (nothing fetched when the page is viewed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from ..config.errors import ConfigError
from ..config.shapes import ModelShape
from ..config.switches import Switches
from ..estimator.codegen import cache_dir
from .data import Options, arch_id, fp8_class, possible, recipe_training, site_data
from .jsprint import derived_js
from .timejs import time_js

ASSETS = Path(__file__).resolve().parent / "assets"
KATEX = "katex@0.19.1"  # the version vendored into a site (npm install at build time, cached)
FORMULAS = ("all", "defaults", "none")  # which combinations carry their rendered formulas (defaults: each recipe's)


def combo(recipe: str, recompute: str, zero: int, fp8: str) -> str:
    """The page's key of a recipe and switch combination (fp8 as its class: data.fp8_class)."""
    return f"{recipe}-{recompute}-{zero}-{fp8_class(fp8)}"


def _formulas(profile: str, switches: Switches, names: list[str]) -> list[dict]:
    """The components' LaTeX as `mem4d formula --latex` renders it (render.rendered, disk-cached)."""
    from ..render.rendered import rendered

    return [
        {"name": f["name"], "latex": f["latex"]} for f in rendered(profile, switches)["formulas"] if f["name"] in names
    ]


def _time(profile: str, shape: ModelShape, training, times: dict[str, int]) -> str:
    """TIME[i]: the step-time components (timejs) of the combination's Choices, the i-th distinct one of the
    architecture's script (`times`: their sources); null where plan does not rank by them (a recipe but Megatron's
    paper profile, a model the step-time model refuses: cli/plan.py _ranker)."""
    from ..time.choices import Choices
    from ..time.evaluate import refusal

    if profile != "paper" or refusal(shape):
        return "null"
    parts = time_js(Choices.of(shape, training))["parts"]
    source = "[" + ", ".join(f"[{json.dumps(name)}, {json.dumps(args)}, {fn}]" for name, args, fn in parts) + "]"
    return f"TIME[{times.setdefault(source, len(times))}]"


def _entry(profile: str, switches: Switches, tex: str | None, docs: dict[str, int], time: str) -> str:
    """One combination's {components, docs, tex (its formulas' script, or null), main, in_flight, stages, time} as
    JavaScript source; each docstring as DOCS[i], the i-th distinct one of the architecture's script (`docs`)."""
    code = derived_js(profile, switches)
    stages = ", ".join(
        f'{json.dumps(kind)}: {{"outputs": {json.dumps(x["outputs"])}, "fn": {x["source"]}}}'
        for kind, x in code["stages"].items()
    )
    refs = ", ".join(
        f"{json.dumps(name)}: DOCS[{docs.setdefault(json.dumps(doc), len(docs))}]" for name, doc in code["docs"].items()
    )
    return (
        f'{{"components": {json.dumps(code["components"])}, "docs": {{{refs}}}, '
        f'"tex": {json.dumps(tex)},\n"main": {code["main"]},\n"in_flight": {code["in_flight"]},\n'
        f'"stages": {{{stages}}},\n"time": {time}}}'
    )


def _arch_script(shape: ModelShape, data: dict, options: Options, formulas: str, out: Path) -> str:
    """MEM4D.arch[id] = {combo: entry} for every recipe and switch combination some configuration of the controls
    could run this architecture with (data.possible); each combination's formulas in tex/<id>.<combo>.js (loaded when
    shown: a page opens on one architecture's code and one combination's formulas)."""
    entries, docs, times = [], {}, {}
    for recipe, info in data["recipes"].items():
        done = set()
        for recompute, zero, fp8 in ((r, z, f) for r in options.recompute for z in options.zero for f in options.fp8):
            key, tex = combo(recipe, recompute, zero, fp8), None
            if key in done or not possible(
                info["profile"], shape, info["rules"], recompute=recompute, zero=zero, fp8=fp8
            ):
                continue
            done.add(key)
            training = recipe_training(info["profile"], recompute=recompute, zero=zero, fp8=fp8)
            switches = Switches.of(training, shape=shape)
            if formulas == "all" or (
                formulas == "defaults"
                and fp8 == "none"
                and (recompute, zero) == (info["defaults"]["recompute"], info["defaults"]["zero"])
            ):
                tex = f"{arch_id(shape)}.{key}"
                names = derived_js(info["profile"], switches)["components"]
                (out / "tex" / f"{tex}.js").write_text(
                    f"MEM4D.tex[{json.dumps(tex)}] = " + json.dumps(_formulas(info["profile"], switches, names)) + ";\n"
                )
            time = _time(info["profile"], shape, training, times)
            entries.append(f"{json.dumps(key)}: {_entry(info['profile'], switches, tex, docs, time)}")
    return (
        f"(function () {{\nconst DOCS = [{', '.join(docs)}];\nconst TIME = [{', '.join(times)}];\n"
        f"MEM4D.arch[{json.dumps(arch_id(shape))}] = {{\n" + ",\n".join(entries) + "};\n})();\n"
    )


def katex_dir(install: bool = True) -> Path | None:
    """KaTeX's dist folder from npm, installed once into the cache (None: no npm and none cached)."""
    root = cache_dir() / "npm" / KATEX.replace("@", "-")
    dist = root / "node_modules" / "katex" / "dist"
    if not (dist / "katex.min.js").exists() and install and shutil.which("npm"):
        subprocess.run(
            ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(root), KATEX],
            check=False,
            capture_output=True,
            timeout=300,
        )
    return dist if (dist / "katex.min.js").exists() else None


def _vendor_katex(out: Path, install: bool) -> bool:
    """Copy katex.min.js, katex.min.css, its woff2 fonts and licence into out/katex; False where npm gave none."""
    dist = katex_dir(install)
    if dist is None:
        return False
    (out / "katex" / "fonts").mkdir(parents=True, exist_ok=True)
    for name in ("katex.min.js", "katex.min.css"):
        shutil.copyfile(dist / name, out / "katex" / name)
    for font in (dist / "fonts").glob("*.woff2"):
        shutil.copyfile(font, out / "katex" / "fonts" / font.name)
    shutil.copyfile(dist.parent / "LICENSE", out / "katex" / "LICENSE")
    return True


def build(
    out: Path,
    shapes: list[ModelShape],
    options: Options = Options(),
    formulas: str = "all",
    progress=None,
    install: bool = True,
    specs: dict[str, str] | None = None,
) -> dict:
    """Write the site into `out`; return {"files": {path: bytes}, "katex": bool}; `install`: npm may install KaTeX
    (else a cached copy or none: formulas shown as LaTeX source); `specs`: a model's --model argument by its name
    (a config.json's path), for the command lines the page shows."""
    if formulas not in FORMULAS:
        raise ConfigError(f"formulas must be one of {', '.join(FORMULAS)}, got {formulas!r}")
    out.mkdir(parents=True, exist_ok=True)
    for folder in ("arch", "tex", "read"):
        shutil.rmtree(out / folder, ignore_errors=True)  # an earlier build's architectures
        (out / folder).mkdir()
    for asset in sorted(ASSETS.rglob("*.*")):
        shutil.copyfile(asset, out / asset.relative_to(ASSETS))
    data = site_data(shapes, options, specs)
    (out / "read" / "site.js").write_text(
        "MEM4D.reader = "
        + json.dumps(data.pop("reader"))
        + ";\nMEM4D.arch_features = "
        + json.dumps(data.pop("arch_features"))
        + ";\n"
    )
    traced = ",\n".join(
        f'{json.dumps(recipe)}: [\n'
        + ",\n".join(
            f'{{"name": {json.dumps(rule["name"])}, "holds": (x) => {rule["holds"]}, "message": (x) => {rule["message"]}}}'
            for rule in info["rules"]
        )
        + "]"
        for recipe, info in data["recipes"].items()
    )
    (out / "data.js").write_text(
        "window.MEM4D = {arch: {}, tex: {}};\nMEM4D.site = "
        + json.dumps(
            {
                **data,
                "recipes": {
                    recipe: {k: v for k, v in info.items() if k != "rules"} for recipe, info in data["recipes"].items()
                },
            }
        )
        + f";\nMEM4D.rules = {{\n{traced}}};\n"
    )
    seen = {}
    for shape in shapes:
        seen.setdefault(arch_id(shape), shape)
    for n, (key, shape) in enumerate(seen.items()):
        if progress:
            progress(n, len(seen), shape.name)
        (out / "arch" / f"{key}.js").write_text(_arch_script(shape, data, options, formulas, out))
    katex = _vendor_katex(out, install)
    files = {str(path.relative_to(out)): path.stat().st_size for path in sorted(out.rglob("*")) if path.is_file()}
    return {"files": files, "katex": katex}
