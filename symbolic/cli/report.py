"""`mem4d report`: one configuration as a document for a design review (PDF through pdflatex, or the .tex and a
folder of figures): its verdict, per-stage bars and tables, optionally a cluster's plan and a sweep's cross-check
with XLA, the symbols and the profile's formulas."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..config.errors import ConfigError
from . import estimate as estimate_cli
from ..flags.files import add_megatron_arg, add_trainer_args, apply_files
from ..flags.values import positive_int
from ..render.files import replaced
from . import steptime
from .args import check_output_file

PDFLATEX_SECONDS = 180


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        default="report.pdf",
        metavar="FILE",
        help="report.pdf (built with pdflatex) or report.tex (the source and a folder of figures "
        "next to it) (default: %(default)s)",
    )
    estimate_cli.add_arguments(parser, files=False)  # the model, training, profile and memory flags of `mem4d estimate`
    g = parser.add_argument_group(
        "a run as its trainer holds it (with --gpus: its world size, and the plan of that cluster)"
    )
    add_megatron_arg(g)
    add_trainer_args(g)
    for action in parser._actions:  # argparse keeps no public handle on an added option's help
        if action.dest == "json":
            action.help = "print what was written as one JSON object"
    g = parser.add_argument_group("plan (a cluster's feasible region and best configurations, at --seq and --gbs)")
    g.add_argument("--plan", action="store_true", help="add the plan of a cluster of --gpus GPUs")
    g.add_argument("--gpus", type=positive_int, metavar="N", help="GPUs of the cluster (with --plan)")
    g.add_argument(
        "--gpus-per-node",
        type=positive_int,
        default=8,
        metavar="G",
        help="GPUs per node, for the ranking proxy (default: %(default)s)",
    )
    g.add_argument(
        "--top", type=positive_int, default=10, metavar="K", help="configurations listed (default: %(default)s)"
    )
    parser.add_argument(
        "--from",
        dest="results",
        metavar="RESULTS.jsonl",
        help="add the cross-check with XLA from `mem4d sweep` records",
    )


def read_records(path: str) -> list[dict]:
    """The sweep records of a JSONL file (README: the sweep's schema); one-line ConfigError when it holds none."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"--from {path}: cannot read it ({getattr(err, 'strerror', None) or err})") from None
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise ConfigError(f"--from {path}: line {number} is not JSON (expected `mem4d sweep` records)") from None
        if not isinstance(record, dict) or not {"key", "status", "result"} <= record.keys():
            raise ConfigError(f"--from {path}: line {number} is not a `mem4d sweep` record (key, status, result)")
        records.append(record)
    if not any(r["status"] == "ok" for r in records):
        raise ConfigError(f"--from {path}: no configuration compiled (no record with status ok)")
    return records


def _plan(args, shape, training, gpu: int, threshold: float):
    """`mem4d plan` of --gpus GPUs at the configuration's sequence length, global batch and switches, and the system
    the step-time model ranked it on (None: ranked by the proxy, for what the model does not state)."""
    from ..plan.enumerate import Cluster
    from ..plan.proxy import Hardware
    from ..plan.ranking import StepTime
    from ..plan.search import search
    from ..time.evaluate import refusal

    from ..config.precision import FIELDS

    cluster = Cluster(
        shape,
        gpus=args.gpus,
        s=training.s,
        gbs=training.global_batch,
        sp=training.sp,
        flash_attn=training.flash_attn,
        moe_capacity=training.moe_capacity,
        fp8=training.fp8,
        fp8_param_gather=training.fp8_param_gather,
        precision=tuple((name, getattr(training, name)) for name in FIELDS),
    )
    hw = Hardware(gpus_per_node=args.gpus_per_node)
    if args.profile == "paper" and refusal(shape) is None:  # as `mem4d plan` ranks: by the step-time model
        hw = StepTime(steptime.chosen_system(args), hw)
    result = search(cluster, threshold * gpu, profile=args.profile, hw=hw)
    if result.evaluated == 0:
        raise ConfigError(
            f"--plan: no valid 4D configuration of {shape.name} on {args.gpus} GPUs with s={args.seq}, "
            f"gbs={cluster.gbs} (`mem4d plan` lists the rule each one breaks)"
        )
    return result, getattr(hw, "system", None)


def build(args, records: list[dict] | None, folder: Path, stem: str, shape=None) -> tuple[str, list[Path]]:
    """The .tex source and its figures, written into folder/<stem>-figures; `shape`: --megatron's model (else
    --model's)."""
    from ..estimator.estimate import estimate
    from ..render import figures, sections, steptime_tex, sweepfigures
    from ..render.report import document
    from ..flags.training import model_from_args

    gpu, threshold = args.gpu_mem, args.threshold
    overrides = estimate_cli.parse_overrides(args.overhead)
    shape = shape or model_from_args(args)
    training, _ = estimate_cli.chosen_training(args, shape)
    result = estimate(shape, training, args.profile, overheads=args.overheads, overrides=overrides)
    time = steptime.block(args, shape, training)
    plan, ranked_on = _plan(args, shape, training, gpu, threshold) if args.plan else (None, None)
    figs = folder / f"{stem}-figures"
    figs.mkdir(exist_ok=True)
    rel = lambda path: f"{stem}-figures/{path.name}"
    made = [figures.stage_bars(result, gpu, threshold, figs / "stages.pdf")]
    plan_tex = None
    if plan is not None:
        from ..plan.plot import plot

        heat = figs / "plan.pdf"
        plot(plan, str(heat))
        made.append(heat)
        plan_tex = sections.plan(plan, gpu, threshold, rel(heat), args.top, ranked_on)
    check_tex = None
    if records is not None:
        from jaxcheck.crosscheck.report import latest, summarize  # plain Python over JSON: no jax

        ok = [r for r in latest(records) if r["status"] == "ok"]
        made += [
            sweepfigures.scatter(ok, figs / "crosscheck-scatter.pdf", width=4.0),
            sweepfigures.errors(ok, figs / "crosscheck-errors.pdf"),
        ]
        targets = sorted({(r["result"].get("target") or {}).get("name", "cpu") for r in ok})
        check_tex = sections.crosscheck(summarize(records), args.results, targets, rel(made[-2]), rel(made[-1]))
    tex = document(
        result,
        gpu,
        threshold,
        figures={"stages": rel(made[0])},
        plan=plan_tex,
        crosscheck=check_tex,
        steptime=steptime_tex.section(time, shape, training),
    )
    return tex, made


def _pdflatex(folder: Path, stem: str) -> None:
    """Two passes (longtable settles its column widths on the second); one-line ConfigError with TeX's first error."""
    for _ in range(2):
        try:
            run = subprocess.run(
                ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"{stem}.tex"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=PDFLATEX_SECONDS,
            )
        except subprocess.TimeoutExpired:
            raise ConfigError(f"pdflatex ran past {PDFLATEX_SECONDS} s") from None
        if run.returncode != 0:
            first = next((line for line in run.stdout.splitlines() if line.startswith("!")), "see its log")
            raise ConfigError(f"pdflatex failed: {first}")


def run(args: argparse.Namespace) -> int:
    output = Path(args.output)
    check_output_file(args.output, "-o/--output", ("pdf", "tex"))
    if args.plan and args.gpus is None:
        raise ConfigError("--plan needs --gpus N (the cluster's GPUs)")
    args.plan = args.plan or args.gpus is not None
    records = read_records(args.results) if args.results else None  # a bad file: one line before any work
    reader = next((name for name in ("megatron", "torchtitan", "deepspeed") if getattr(args, name)), None)
    shape, notes = apply_files(args) if reader or args.override else (None, [])
    args.profile = estimate_cli.profile_from_args(args)  # after a file's --recipe
    said = {reader: {"file": getattr(args, reader), "overridden": notes}} if reader else {}
    for note in notes:
        print(f"{getattr(args, reader)}: {note}", file=sys.stderr)
    stem = output.stem
    pdflatex = shutil.which("pdflatex")
    if output.suffix == ".tex" or pdflatex is None:
        tex, made = build(args, records, output.parent, stem, shape)
        source = output.with_suffix(".tex")
        _write(source, tex)
        figs = f"{source.parent / (stem + '-figures')}/"
        if output.suffix == ".pdf":
            print(
                f"mem4d report: error: pdflatex not found: wrote {source} and {figs} ({len(made)} figures); build the "
                f"PDF with `cd {source.parent} && pdflatex {source.name} && pdflatex {source.name}` "
                f"(apt-get install texlive-latex-base)",
                file=sys.stderr,
            )
            return 2
        _say(
            args,
            {"tex": str(source), "figures": [str(p) for p in made], **said},
            f"wrote {source} and {figs} ({len(made)} figures); build with `pdflatex {source.name}` twice",
        )
        return 0
    with tempfile.TemporaryDirectory(prefix="mem4d-report-") as tmp:
        folder = Path(tmp)
        tex, made = build(args, records, folder, stem, shape)
        _write(folder / f"{stem}.tex", tex)
        _pdflatex(folder, stem)
        with open(folder / f"{stem}.pdf", "rb") as pdf, replaced(output, "wb") as handle:
            shutil.copyfileobj(pdf, handle)
    _say(args, {"pdf": str(output), **said}, f"wrote {output}")
    return 0


def _write(path: Path, text: str) -> None:
    """`text` to `path`, whole or not at all (render.files.replaced)."""
    with replaced(path, encoding="utf-8") as handle:
        handle.write(text)


def _say(args, record: dict, line: str) -> None:
    if args.json:
        print(json.dumps(record))
    else:
        print(line, file=sys.stderr)
