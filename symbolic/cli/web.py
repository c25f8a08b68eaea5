"""`mem4d web`: write the estimator as a static page (symbolic/web), or serve one for a quick look."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from ..config.errors import ConfigError
from .args import check_output_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--out", metavar="DIR", help="write the site into DIR (index.html and its assets)")
    parser.add_argument(
        "--model",
        action="append",
        default=None,
        metavar="NAME|config.json",
        help="a model the page offers (repeatable: a preset or a config.json); default: every preset",
    )
    parser.add_argument(
        "--formulas",
        choices=("all", "defaults", "none"),
        default="all",
        help="which switch combinations carry their formulas (rendered once, cached): all, each recipe's default one, or none",
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="serve the site (DIR, else a fresh temporary build) with Python's http.server on localhost",
    )
    parser.add_argument("--port", type=int, default=8000, help="--serve's port on localhost")


def run(args: argparse.Namespace) -> int:
    from ..config.hfconfig import resolve_model
    from ..config.shapes import PRESETS
    from ..web.build import build

    if args.out is None and not args.serve:
        raise ConfigError("give -o DIR (write the site) or --serve (serve it)")
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port must be from 1 to 65535, got {args.port}")
    if args.out is not None:
        check_output_dir(args.out, "-o")
    specs = {resolve_model(spec).name: spec for spec in args.model or ()}
    shapes = [resolve_model(spec) for spec in args.model] if args.model else list(PRESETS.values())
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="mem4d-web-"))
    start = time.perf_counter()
    result = build(
        out,
        shapes,
        formulas=args.formulas,
        specs=specs,
        progress=lambda n, of, name: print(f"  architecture {n + 1}/{of} ({name})", file=sys.stderr),
    )
    js = {name: size for name, size in result["files"].items() if name.endswith(".js")}
    base = sum(
        size for name, size in js.items() if not name.startswith(("arch/", "tex/", "read/"))
    )  # read/: on a paste
    most = (
        base
        + max((size for name, size in js.items() if name.startswith("arch/")), default=0)
        + max((size for name, size in js.items() if name.startswith("tex/")), default=0)
    )
    print(
        f"wrote {out}/index.html: {len(shapes)} model{'s' * (len(shapes) != 1)}, {len(result['files'])} files, {sum(js.values()) / 2**20:.2f} "
        f"MiB of JavaScript in all, at most {most / 2**10:,.0f} KiB loaded at once, in "
        f"{time.perf_counter() - start:.1f} s" + ("" if result["katex"] else " (no npm: formulas shown as LaTeX text)")
    )
    if args.serve:
        _serve(out, args.port)
    return 0


def _serve(root: Path, port: int) -> None:
    """Serve root at http://localhost:port/ until interrupted."""
    import functools
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as err:
        raise ConfigError(f"--port {port}: cannot listen ({err.strerror})") from None
    print(f"serving http://localhost:{port}/ (Ctrl-C stops)", flush=True)
    with server:
        server.serve_forever()
