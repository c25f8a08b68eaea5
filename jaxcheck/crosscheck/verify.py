"""Symbolic vs XLA vs measured: the `jax` profile's components next to XLA's memory analysis of the same step,
group by group (argument, output - alias, temp) and in total."""

from __future__ import annotations

from symbolic.config.shapes import ModelShape
from symbolic.config.shape_json import shape_json
from symbolic.config.training import Training

from ..spec import JaxOptions, StepSpec
from ..card import AS_WRITTEN_BYTES
from .profile import rel, symbolic_bytes


def _row(name: str, sym: int, xla: int | None, group: str) -> dict:
    return {
        "name": name,
        "group": group,
        "symbolic": int(sym),
        "xla": None if xla is None else int(xla),
        "rel_error": rel(sym, xla),
    }


def compare(sym: dict[str, int], xla: dict, arguments: dict[str, int]) -> list[dict]:
    """Rows component | symbolic | XLA: arguments per pytree (exact, from the shardings), output - alias (loss and
    tuple table), each temp (no XLA figure of its own), then the group sums (symbolic.recipes.jax.profile.group_of)."""
    from symbolic.recipes.jax.profile import group_of

    names = [n for n in sym if n != "total"]
    rows = [
        _row("params", sym["params"], arguments["params"], "argument"),
        _row("optimizer", sym["adam_moments"] + sym["adam_count"], arguments["optimizer"], "argument"),
        _row("batch", sym["batch"], arguments["batch"], "argument"),
    ]
    outs = [n for n in names if group_of(n) == "output"]
    rows += [
        _row(n, sym[n], xla["output_bytes"] - xla["alias_bytes"] if len(outs) == 1 else None, "output") for n in outs
    ]
    rows += [_row(n, sym[n], None, "temp") for n in names if group_of(n) == "temp"]
    group_sum = lambda g: sum(sym[n] for n in names if group_of(n) == g)
    rows += [
        _row("argument", group_sum("argument"), xla["argument_bytes"], "sum"),
        _row("output - alias", group_sum("output"), xla["output_bytes"] - xla["alias_bytes"], "sum"),
        _row("temp", group_sum("temp"), xla["temp_bytes"], "sum"),
        _row("total", sym["total"], xla["total_bytes"], "sum"),
    ]
    return rows


def verify(
    shape: ModelShape,
    training: Training,
    opts: JaxOptions = JaxOptions(),
    *,
    target=None,
    explain: bool = False,
    measure: bool = False,
    phases: bool = False,
) -> dict:
    """Compile jaxcheck's train step for this config for the target (default: the CLI's default GPU card) and compare
    with the `jax` profile of that backend. A GPU target compiles the program as written: its device memory is
    raised to jaxcheck.card.AS_WRITTEN_BYTES so that XLA:GPU's rematerialization pass changes nothing. Returns the
    `mem4d verify --json` object; raises ConfigError (one line) for invalid configs, anything else is a compile failure.
    phases: the same compile also dumps its HLO, and the object gains "phases" (explain.phases of that compile).
    """
    from ..backend import start
    from ..targets import DEFAULT, load

    target = target or load(DEFAULT)
    spec = StepSpec(shape, training, opts).check()
    programs = spec.stages()
    if len(programs) > 1:
        return _largest(
            [
                (
                    ranks,
                    one,
                    verify(one.shape, one.train, opts, target=target, explain=explain, measure=measure, phases=phases),
                )
                for ranks, one in programs
            ],
            shape.name,
        )
    spec = programs[0][1]  # an even split spelled out by --stage-layers: the even one
    shape, training = spec.shape, spec.train
    sym = symbolic_bytes(shape, training, opts, "gpu" if target.is_gpu else "cpu")
    compiled_for = target.with_memory(AS_WRITTEN_BYTES)  # the program as written
    devices, real = start(compiled_for, training.world)  # imports jax quietly: before any module that imports it
    from ..mesh import make_mesh

    mesh = make_mesh(training, devices)
    report, windows = _compile(spec, mesh, target, phases)
    measured = None
    if measure and real:
        from ..measure import measure as run_measure

        measured = run_measure(spec)
    details = None
    if explain:
        from .explain import explain as run_explain

        details = run_explain(spec, mesh, report.xla, "gpu" if target.is_gpu else "cpu")
    return {
        "model": shape.name,
        "param_count": report.param_count,
        "config": spec.as_json(widths=True),
        "target": target_json(target, compiled_for),
        "shape": shape_json(shape),
        "mesh": report.mesh,
        "symbolic": sym,
        "xla": report.xla,
        "arguments": report.arguments,
        "measured": measured,
        "components": compare(sym, report.xla, report.arguments),
        "rel_error_total": rel(sym["total"], report.xla["total_bytes"]),
        "compile_seconds": round(report.compile_seconds, 3),
        "explain": details,
    } | ({"phases": windows} if phases else {})


def _compile(spec: StepSpec, mesh, target, phases: bool):
    """Compile the step on the mesh for the target: XLA's report, and with `phases` the phases of the same compile
    (its HLO dumped to a temporary folder and read by explain.phases; None without)."""
    from ..compile import FAST_CPU, compile_step

    if not phases:
        report, _, _ = compile_step(spec, mesh, compiler_options=None if target.is_gpu else FAST_CPU)
        return report, None
    import tempfile

    from .explain import dump_options, phases as read_phases

    backend = "gpu" if target.is_gpu else "cpu"
    with tempfile.TemporaryDirectory(prefix="mem4d-dump-") as directory:
        report, _, _ = compile_step(spec, mesh, compiler_options=dump_options(backend, directory))
        return report, read_phases(spec, mesh, backend, dumped=directory)


def _largest(results: list[tuple[tuple[int, ...], StepSpec, dict]], model: str) -> dict:
    """The object of the program whose XLA total is largest (the pipeline's peak device), with each program's ranks,
    a stage's layers (dense, MoE) and the totals under "stages" (jaxcheck.stages: one program per stage kind)."""
    from ..stages import stage_holds

    stages = [
        {
            "ranks": list(ranks),
            **stage_holds(spec.shape, spec.train.p),
            "symbolic_total": out["symbolic"]["total"],
            "xla_total": out["xla"]["total_bytes"],
            "rel_error_total": out["rel_error_total"],
            "compile_seconds": out["compile_seconds"],
        }
        for ranks, spec, out in results
    ]
    _, _, worst = max(results, key=lambda item: item[2]["xla"]["total_bytes"])
    return {**worst, "model": model, "stage_model": worst["model"], "stages": stages}


def target_json(target, compiled_for) -> dict:
    """What the program was compiled for: the card, its memory, and the memory it posed with (verify: as written)."""
    return {
        "name": target.name,
        "platform": "gpu" if target.is_gpu else "cpu",
        "description": target.description,
        "memory_bytes": target.memory_bytes,
        "compiled_with_memory_bytes": compiled_for.memory_bytes,
    }
