"""mem4d beside the 22 Megatron-LM functional-test runs of ../shared/data/measured (RUNS.md): each verbatim
model_config.yaml read by `mem4d estimate --megatron FILE --gpus N --rank last --json` (the world size N from
RUNS.md's summary table; --gpu the card its golden names, GOLDEN_CARD), the last rank's predicted allocated peak
beside the run's `mem-max-allocated-bytes` (the max of its primary golden's series:
torch.cuda.memory_stats()["allocated_bytes.all.peak"] of rank world_size - 1), or mem4d's one-line refusal.

    python benchmarks/published_megatron.py [--json | --tsv] [--out records/published/megatron]

No term of mem4d is set from these figures: they are the references the issue's 10 % is judged against.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # published_table.py beside it, also when a test imports it
import published_table  # noqa: E402  (benchmarks/published_table.py)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MEASURED = ROOT.parent / "shared" / "data" / "measured"
GiB = 2**30
# RUNS.md's "Global conventions": release tests publish no node count (no recipe of Megatron-LM's tests/test_utils/
# recipes, nor its earlier jet_recipes, lists a *_release case at any commit to d98e8a64; their launches came from a
# private repository, .gitlab/stages/03.convergence-tests.yml @ bf7b97888c `local_recipes`). RUNS.md gives the least
# world of the run's grids (lcm of tp*pp*cp and etp*ep*pp; DSv3 proxy 64, Mixtral 8x7B 32); used here (marked assumed)
# but where the run's own log rules it out: after its first step a rank holds at least its bf16 weights, fp32 main
# gradients and Adam states (mem4d's weights, gradients, optimizer and their expert_* twins), so a world at which those
# exceed the golden's smallest `mem-allocated-bytes` did not run. MB-12: 20.6 GiB of them at 64 GPUs (expert data
# parallel 2) against 16.49 GiB logged, 16.2 GiB at 128 (`mem4d estimate --megatron FILE --gpus 64|128 --rank last
# --vocab-size 256000`): the least world left is 128, dp 16 (a lower bound, not the run's stated size).
RELEASE_WORLD = {"deepseekv3_proxy_flex_tp1pp4emp16etp1cp1_release": 64, "mixtral_8x7b_alltoall_tp2pp4ep4_release": 128}
# The pieces of a SentencePiece model a case's --tokenizer-model names (Megatron-Core @ d98e8a64
# tokenizers/text/libraries/sentencepiece_tokenizer.py: vocab_size = get_piece_size(), no special tokens added without
# --special-tokens; build_tokenizer.py vocab_size_with_padding then pads it to make-vocab-size-divisible-by x tp).
# nemotron_2_256k.model is Nemotron-4's tokenizer (shipped as ..._nemotron_2_256k.model in nvidia/Nemotron-4-340B-Base),
# 256,000 pieces: the Nemotron-4 15B Technical Report (arXiv:2402.16819: its 256,000-token SentencePiece vocabulary)
# and transformers 5.25.0 models/nemotron/configuration_nemotron.py (vocab_size 256000, the nemotron-15b configuration).
TOKENIZER_PIECES = {"nemotron_2_256k.model": 256_000}
# The attention a golden's container ran where the file leaves it to Transformer Engine (no --attention-backend, or
# auto). Megatron-LM @ adc69dba2d (the commit of MB-29's goldens): `lts` is NGC PyTorch 24.01 (README.md "lts:
# Long-term support of NGC PyTorch 24.01"; .gitlab/stages/01.build.yml BASE_IMAGE nvcr.io/nvidia/pytorch:24.01-py3),
# whose own Transformer Engine it keeps (docker/Dockerfile.ci.lts installs none; install_source_wheels.sh installs a
# TE wheel for `dev` only). That TE predates v1.3 (tagged 2024-02-02; v1.2.1 2024-01-19), and TE v1.2.1
# pytorch/attention.py DotProductAttention: NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 turns FlashAttention 2 off ("does not
# support deterministic execution"; #585, in v1.3, first kept flash-attn >= 2.4.1) and cuDNN's F16_arbitrary_seqlen
# backend (s > 512) off below sm90 ("Filter: determinism"), leaving UnfusedDotProductAttention on an A100. Assumed, not
# read: the image's flash-attn is a 2.x (a 1.x would stay on).
LTS_A100_DETERMINISTIC = ["--no-flash-attn"]
# The card of a golden's machine, named in the golden file (golden_values_{dev,lts}_dgx_{a100,h100,gb200}.json): the
# estimate's --gpu, whose compute capability sizes Transformer Engine's cuBLAS workspaces (components/overheads.py).
# DGX A100 comes with 40 or 80 GB cards: the same capability 8.0, the 80 GB card taken (assumed). A golden that
# names no machine (`dev`) keeps the default card.
GOLDEN_CARD = {"dgx_a100": "a100-80gb", "dgx_h100": "h100-80gb", "dgx_gb200": "gb200-186gb"}


@dataclass(frozen=True)
class Case:
    """One row of RUNS.md's summary: its id, folder__case file stem, world size (assumed where RUNS.md says '?'),
    and the primary golden file whose series is the measured figure."""

    id: str
    stem: str
    world: int
    world_assumed: bool
    golden: str
    recorded: str = ""  # the commit whose config the golden was recorded with, where RUNS.md saved it (recorded())

    @property
    def config(self) -> Path:
        """The verbatim model_config.yaml: the one RUNS.md saved at the golden's commit where the golden was recorded
        with a config that differs from HEAD's (its CONFIG DRIFT), else HEAD's."""
        at = f".at_{self.recorded}" if self.recorded else ""
        return MEASURED / "megatron" / f"{self.stem}.model_config{at}.yaml"

    def measured_bytes(self) -> int:
        """The max of the primary golden's `mem-max-allocated-bytes` series (the run's cumulative allocated peak)."""
        series = json.loads((MEASURED / "megatron" / f"{self.stem}.mem.json").read_text())[self.golden]
        values = series["mem-max-allocated-bytes"]["values"].values()
        return max(int(v) for v in values if str(v) != "nan")  # iterations not logged are 'nan' in the golden


def recorded(runs: str, case_id: str, stem: str, golden: str, measured: Path = MEASURED) -> str:
    """The 8-digit commit of the config `golden` was recorded with, where RUNS.md's block for the case lists a
    CONFIG DRIFT for that golden and saved `<stem>.model_config.at_<commit>.yaml`; "" otherwise (HEAD's config)."""
    block = runs.split(f"### {case_id} ", 1)[-1].split("\n### ", 1)[0]
    if f"- {golden}: config at the golden's commit differed from HEAD" not in block:
        return ""
    commit = re.search(rf"\| {re.escape(golden)} \(([0-9a-f]{{8}})", block)
    saved = commit and (measured / "megatron" / f"{stem}.model_config.at_{commit.group(1)}.yaml").exists()
    return commit.group(1) if saved else ""


def cases(measured: Path = MEASURED) -> list[Case]:
    """RUNS.md's summary table, one Case per Megatron run with a verbatim config and a memory series."""
    stems = {
        p.name.split(".")[0].split("__", 1)[1]: p.name.split(".")[0] for p in (measured / "megatron").glob("*.mem.json")
    }
    out, runs = [], (measured / "RUNS.md").read_text()
    for line in runs.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not re.fullmatch(r"MB-\d+", cells[0]) or len(cells) < 9:
            continue
        name, world, golden = cells[1], cells[4], cells[6]
        assumed = world == "?"
        out.append(
            Case(
                cells[0],
                stems[name],
                RELEASE_WORLD[name] if assumed else int(world),
                assumed,
                f"golden_values_{golden}.json",
                recorded(runs, cells[0], stems[name], f"golden_values_{golden}.json", measured),
            )
        )
    return out


def tokenizer_pieces(config: Path) -> int | None:
    """The vocabulary size of the SentencePiece model the case's --tokenizer-model names (TOKENIZER_PIECES), if any."""
    from symbolic.readers.argfile import read_args

    model = dict(read_args(config)).get("--tokenizer-model")
    return TOKENIZER_PIECES.get(Path(str(model)).name) if model else None


def card_arguments(case: Case) -> list[str]:
    """--gpu CARD of the machine the case's golden names (GOLDEN_CARD); no flag where it names none."""
    return next((["--gpu", card] for machine, card in GOLDEN_CARD.items() if machine in case.golden), [])


def container_arguments(case: Case) -> list[str]:
    """LTS_A100_DETERMINISTIC where the case's golden ran in the LTS container on an A100, its file sets
    NVTE_ALLOW_NONDETERMINISTIC_ALGO 0 and names no attention backend (or auto); no flags otherwise."""
    import yaml

    from symbolic.readers.argfile import read_args

    if "lts_" not in case.golden or "a100" not in case.golden:
        return []
    env = (yaml.safe_load(case.config.read_text()) or {}).get("ENV_VARS") or {}
    backend = dict(read_args(case.config)).get("--attention-backend", "auto")
    deterministic = str(env.get("NVTE_ALLOW_NONDETERMINISTIC_ALGO", "1")) == "0"
    return LTS_A100_DETERMINISTIC if deterministic and backend == "auto" else []


def estimate(case: Case) -> dict:
    """mem4d's answer for the case: {'allocated_bytes', 'stage', 'components'} or {'refused': the one line}."""
    from symbolic.cli.entry import main

    argv = ["estimate", "--megatron", str(case.config), "--gpus", str(case.world), "--rank", "last", "--json"]
    pieces = tokenizer_pieces(case.config)
    if pieces:
        argv += ["--vocab-size", str(pieces)]
    argv += card_arguments(case) + container_arguments(case)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    if rc != 0:
        line = err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else f"exit {rc}"
        return {"refused": line.replace(str(case.config), case.config.name)}
    report = json.loads(out.getvalue())
    stage = next(s for s in report["stages"] if s["rank"] == report["rank"]["pipeline_rank"])
    return {
        "allocated_bytes": report["rank"]["memory"]["allocated_bytes"],
        "stage": report["rank"]["stage"],
        "config": report["config"],
        "components": {k: v for k, v in stage["bytes"].items() if v},
    }


def rows(measured: Path = MEASURED, ids: list[str] | None = None) -> list[dict]:
    """Every case (those of `ids` alone where given): measured bytes, and mem4d's figure with its error or refusal."""
    out = []
    every = cases(measured)
    for case in published_table.chosen(every, ids, [c.id for c in every]):
        row = {**asdict(case), "measured_bytes": case.measured_bytes(), **estimate(case)}
        out.append(published_table.with_error(row, "allocated_bytes"))
    return out


def tsv(table: list[dict]) -> str:
    def own(r: dict) -> list[str]:
        world = f"{r['world']}{' (assumed)' if r['world_assumed'] else ''}"
        return [r["id"], r["stem"], world, f"{r['measured_bytes'] / GiB:.3f}"]

    return published_table.tsv("id\tcase\tworld\tmeasured_GiB", table, own, "allocated_bytes", 3)


def main() -> int:
    args = published_table.arguments(__doc__)
    if published_table.absent("published_megatron", MEASURED):
        return 2
    published_table.report(rows(ids=args.case), tsv, args.out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
