"""The page's config.json reader (symbolic/web/assets/pyjson.js, reader.js, shape.js, run under node) against the
command's (symbolic/config/hfconfig.py read_noted, web/data.py model_data): over every published config.json
(grids/models/published, and ../shared/data/configs where the reference data is beside the checkout), the hostile files of tests/test_hf_input.py and mutations of the
page's families' published files (each key left out or set to values of every JSON kind, keys added, the text cut
and broken), both give the same ModelShape fields and the same model data (its architecture by its features), or the
same one-line refusal, word for word; a file the page does not read (another model_type, a quantization_config, a
text_config) gets the page's one line naming `mem4d web --model FILE -o site`.

Source of truth: the Python reader. Tolerance: none (the same dict, the same text). Skips only without node."""

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from symbolic.config.errors import ConfigError
from symbolic.config.families import FAMILIES
from symbolic.config.hfconfig import read_noted
from symbolic.config.hfjson import MAX_BYTES
from symbolic.web.data import arch_text, model_data
from symbolic.web.readerdata import PAGE_FAMILIES, reader_data

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "symbolic" / "web" / "assets" / "read"
NODE = shutil.which("node")
SHARED = ROOT.parent / "shared" / "data" / "configs"  # the reference data beside the checkout (test_hf_counts.py's)
PUBLISHED = sorted((ROOT / "grids" / "models" / "published").glob("*.json")) + sorted(SHARED.glob("*.json"))
RUN = """
const fs = require("fs");
const [dir, declPath, casesPath, outPath] = process.argv.slice(-4);
for (const f of ["pyjson.js", "reader.js", "shape.js"]) eval(fs.readFileSync(dir + "/" + f, "utf8"));
const decl = JSON.parse(fs.readFileSync(declPath, "utf8"));
const out = JSON.parse(fs.readFileSync(casesPath, "utf8")).map(([path, b64]) => {
  try {
    const got = MEM4D_READER.readConfig(new Uint8Array(Buffer.from(b64, "base64")), path, decl);
    if (got.outside) return {outside: got.outside};
    return {shape: got.shape, model: MEM4D_SHAPE.modelData(got.shape, path, decl)};
  } catch (err) {
    if (err instanceof PYJSON.Refusal) return {error: err.message};
    return {crash: String(err.stack)};
  }
});
fs.writeFileSync(outPath, JSON.stringify(out));
"""
VALUES = (None, True, False, 0, -1, 1.5, 2.0, "x", "silu", [], [0, 1], {}, {"a": 1}, 2**41, float("inf"))
HOSTILE = (
    '{"model_type": ["llama"], "hidden_size": 64}',
    "[" * 100_000 + "]" * 100_000,
    '{"a": ' * 40 + "1" + "}" * 40,
    '{"hidden_size": ' + "9" * 5000 + "}",
    '{"model_type": "llama", "hidden_size": NaN}',
    '{"hidden_size": 4096, "hidden_size": 8192}',
    "\xff\xfe{}",
    "",
    " ",
    "[1, 2]",
    '{"a": 1,}',
    '{"a" 1}',
    '{"a": 1 "b": 2}',
    '{"a": "\\x"}',
    '{"a": "\\u12"}',
    '{"a": "b\nc"}',
    '{"a": tru}',
    '{"a": -}',
    '{"a": 01}',
    '{"a": 1.}',
    '{"a": 1e}',
    '{} x',
    '\ufeff{}',
    '{"a": [1, 2,]}',
    '{"a": "\\ud83d\\ude00 \\u00e9"}',
    '{"model_type": "gpt9"}',
    '{"model_type": null}',
    '{"model_type": "llama", "kv_lora_rank": 512}',
    '{"model_type": "qwen2", "hidden_size": 4096, "x\'y": 1}',
)


def _mutations(raw: dict) -> list[str]:
    """The file with each key left out or set to each of VALUES, unknown keys added (one and thirteen), cut short."""
    out = [json.dumps({k: v for k, v in raw.items() if k != key}) for key in raw]
    out += [json.dumps(raw | {key: value}) for key in raw for value in VALUES]
    out += [json.dumps(raw | {"x_unknown": 1}), json.dumps(raw | {f"x{i}": i for i in range(13)})]
    text = json.dumps(raw, indent=2)
    return out + [text[:n] for n in range(1, len(text), max(1, len(text) // 12))]


def _cases(tmp: Path) -> list[tuple[str, bytes]]:
    cases = [(str(tmp / "published" / path.name), path.read_bytes()) for path in PUBLISHED]
    cases += [
        (str(tmp / "config.json"), text.encode("latin-1" if i == 6 else "utf-8")) for i, text in enumerate(HOSTILE)
    ]
    cases.append((str(tmp / "big.json"), b" " * (MAX_BYTES + 1)))
    seen = set()
    for path in PUBLISHED:
        raw = json.loads(path.read_text())
        if raw.get("model_type") in PAGE_FAMILIES and raw["model_type"] not in seen:
            seen.add(raw["model_type"])
            cases += [
                (str(tmp / "mutated" / f"{path.stem}-{i}.json"), text.encode())
                for i, text in enumerate(_mutations(raw))
            ]
    return cases


def _python(path: str, data: bytes, models: dict) -> dict:
    """The command's reading of the file; its model data computed once per shape but its name (`models`), the name
    and spec set after."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(data)
    try:
        shape, _ = read_noted(path)
    except ConfigError as err:
        return {"error": str(err)}
    fields = shape.as_dict()
    key = json.dumps(fields | {"name": ""}, sort_keys=True)  # model_data reads the name into name and letters only
    if key not in models:
        models[key] = json.loads(json.dumps(model_data(shape, "") | {"arch": arch_text(shape)}))
    model = models[key]
    return {
        "shape": fields,
        "model": model | {"spec": path, "name": shape.name, "letters": model["letters"] | {"model": shape.name}},
    }


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    if NODE is None:
        pytest.skip("no node on this machine")
    tmp = tmp_path_factory.mktemp("reader")
    cases = _cases(tmp)
    (tmp / "decl.json").write_text(json.dumps(reader_data()))
    (tmp / "cases.json").write_text(json.dumps([[p, base64.b64encode(d).decode()] for p, d in cases]))
    subprocess.run(
        [NODE, "-e", RUN, str(ASSETS), str(tmp / "decl.json"), str(tmp / "cases.json"), str(tmp / "out.json")],
        check=True,
        timeout=120,
    )
    models = {}
    return [
        (path, _python(path, data, models), js)
        for (path, data), js in zip(cases, json.loads((tmp / "out.json").read_text()))
    ]


def test_the_page_reads_as_the_command_reads(compared):
    """Every case: the same shape and model data, or the same refusal; a file outside the page's families in one line
    naming the command that reads it; and enough of each kind that the comparison says something."""
    kinds = {"shape": 0, "error": 0, "outside": 0}
    for path, py, js in compared:
        assert "crash" not in js, (path, js)
        if "outside" in js:
            assert js["outside"].startswith(f"{path}: ") and f"mem4d web --model {path} -o site" in js["outside"]
            assert "\n" not in js["outside"]
        else:
            assert js == py, path
        kinds[next(iter(js))] += 1
    assert kinds["shape"] >= 120 and kinds["error"] >= 1000 and kinds["outside"] >= 20, kinds


def test_the_page_reads_every_published_file_of_its_families(compared):
    """A published file of the page's model_types is read to its shape (not refused, not sent to the command)."""
    published = [(path, js) for path, _, js in compared if "/published/" in path]
    mine = [js for path, js in published if json.loads(Path(path).read_text()).get("model_type") in PAGE_FAMILIES]
    assert len(mine) >= (21 if SHARED.is_dir() else 16) and all("shape" in js for js in mine)


def test_the_ported_predicates_are_the_declared_ones():
    """reader.js holds a predicate for every key the Python tables declare for the page's families, and no other; a
    build for each of its families and a letters function for each that reads its letters under other keys."""
    if NODE is None:
        pytest.skip("no node on this machine")
    decl = reader_data()
    script = (
        "".join((ASSETS / f).read_text() for f in ("pyjson.js", "reader.js"))
        + """
const R = MEM4D_READER;
console.log(JSON.stringify({only: Object.keys(R.ONLY), harmless_values: Object.keys(R.HARMLESS_VALUES),
  values: Object.keys(R.VALUES), builds: Object.keys(R.BUILDS), letters: Object.keys(R.LETTERS),
  family_values: Object.fromEntries(Object.entries(R.FAMILY_VALUES).map(([k, v]) => [k, Object.keys(v)]))}));"""
    )
    got = json.loads(subprocess.run([NODE, "-e", script], capture_output=True, text=True, check=True).stdout)
    for table in ("only", "harmless_values", "values"):
        assert sorted(got[table]) == sorted(decl[table]), table
    assert sorted(got["builds"]) == sorted(PAGE_FAMILIES) == sorted(decl["families"])
    assert all(kind in FAMILIES for kind in PAGE_FAMILIES)
    assert sorted(got["letters"]) == sorted(kind for kind in PAGE_FAMILIES if FAMILIES[kind].letters is not None)
    declared = {kind: sorted(family["values"]) for kind, family in decl["families"].items() if family["values"]}
    assert {kind: sorted(keys) for kind, keys in got["family_values"].items()} == declared
