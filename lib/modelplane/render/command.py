"""``modelplane render``: ``crossplane render`` for Modelplane, without Docker or a cluster.

Usage::

    modelplane render XR [--composition FILE] [--observed-resources PATH]
        [--required-resources PATH ...] [--extra-resources PATH ...]
        [--function-credentials PATH] [--context-files KEY=FILE ...]
        [--context-values KEY=VALUE ...] [-x/--include-full-xr]
        [-r/--include-function-results] [-c/--include-context]

Differences from ``crossplane render XR COMPOSITION FUNCTIONS``: the
Composition is optional (by default ``apis/<plural>/composition.yaml`` of the
repository, found from the working directory or from this package), and there
is no FUNCTIONS argument: every functionRef runs in-process through
``modelplane.render.runners.load_runner``. ``--xrd`` (schema defaults),
``--required-schemas``, ``--function-annotations`` and ``--timeout`` are not
supported. Like the CLI, it prints the YAML stream on stdout and nothing else
(the reconcile's warning events also go to stderr, one line each); an error
(bad input, unknown function, fatal result) goes to stderr as
``modelplane: error: ...`` with exit code 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from modelplane import documents
from modelplane.render import RenderError, RenderInputs, include_full_xr, render, to_yaml
from modelplane.render.runners import configure_cli_logging
from modelplane.repo import CompositionNotFoundError, composition_path

__all__ = ["main"]


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="modelplane render", description=__doc__.split("\n\n")[0])
    p.add_argument("xr", metavar="XR", type=Path, help="YAML file of the composite resource (XR) to render")
    p.add_argument("--composition", type=Path, help="Composition YAML (default: apis/<plural>/composition.yaml)")
    p.add_argument(
        "-o", "--observed-resources", type=Path, help="YAML file or directory of observed composed resources"
    )
    p.add_argument(
        "-e",
        "--required-resources",
        type=Path,
        action="append",
        default=[],
        help="YAML file or directory of required resources",
    )
    p.add_argument(
        "--extra-resources", type=Path, action="append", default=[], help="deprecated name of --required-resources"
    )
    p.add_argument("--function-credentials", type=Path, help="YAML file or directory of Secrets for step credentials")
    p.add_argument(
        "--context-files", action="append", default=[], metavar="KEY=FILE", help="context value from a JSON/YAML file"
    )
    p.add_argument(
        "--context-values", action="append", default=[], metavar="KEY=VALUE", help="context value as JSON/YAML"
    )
    p.add_argument("-x", "--include-full-xr", action="store_true", help="include the input XR's spec and metadata")
    p.add_argument("-r", "--include-function-results", action="store_true", help="include Result objects")
    p.add_argument("-c", "--include-context", action="store_true", help="include the Context object")
    return p


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        msg = f"cannot read {path}: {e.strerror}"
        raise _UsageError(msg) from e


def _load_stream(path: Path) -> list[dict[str, Any]]:
    """Every document of a file, or of every *.yaml/*.yml file of a directory (sorted, not recursive)."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in {".yaml", ".yml"})
        if not files:
            msg = f'no YAML files found in "{path}" (.yaml or .yml)'
            raise _UsageError(msg)
    else:
        files = [path]
    docs: list[dict[str, Any]] = []
    for f in files:
        try:
            docs.extend(documents.load_maps(_read(f)))
        except ValueError as e:
            msg = f"cannot parse {f}: {e}"
            raise _UsageError(msg) from e
    return docs


def _load_one(path: Path) -> dict[str, Any]:
    try:
        return documents.load_one(_read(path))
    except ValueError as e:
        msg = f"cannot parse {path}: {e}"
        raise _UsageError(msg) from e


def _default_composition(xr: dict[str, Any]) -> Path:
    try:
        return composition_path(str(xr.get("kind", "")))
    except CompositionNotFoundError as err:
        msg = f"{err}; pass --composition"
        raise _UsageError(msg) from err


def _pairs(values: Sequence[str], flag: str) -> list[tuple[str, str]]:
    out = []
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key:
            msg = f"{flag}: expected KEY=VALUE, got {v!r}"
            raise _UsageError(msg)
        out.append((key, value))
    return out


def _context(args: argparse.Namespace) -> dict[str, Any]:
    raw: dict[str, str] = {}
    for key, file in _pairs(args.context_files, "--context-files"):
        raw[key] = _read(Path(file))
    # Values take precedence over files, as in crossplane render.
    raw.update(_pairs(args.context_values, "--context-values"))
    ctx: dict[str, Any] = {}
    for key, text in raw.items():
        try:
            ctx[key] = documents.load_value(text)
        except ValueError as e:
            msg = f'cannot unmarshal YAML/JSON for context key "{key}": {e}'
            raise _UsageError(msg) from e
    return ctx


def _inputs(args: argparse.Namespace) -> RenderInputs:
    xr = _load_one(args.xr)
    comp_path = args.composition or _default_composition(xr)
    composition = _load_one(comp_path)
    required: list[dict[str, Any]] = []
    for path in [*args.required_resources, *args.extra_resources]:
        required.extend(_load_stream(path))
    return RenderInputs(
        xr=xr,
        composition=composition,
        observed=_load_stream(args.observed_resources) if args.observed_resources else (),
        required=required,
        context=_context(args),
        credentials=_load_stream(args.function_credentials) if args.function_credentials else (),
    )


def main(argv: list[str]) -> int:
    """Run ``modelplane render`` with ``argv`` (without the program and sub-command names)."""
    args = _parser().parse_args(argv)
    configure_cli_logging()
    try:
        inputs = _inputs(args)
        out = render(inputs)
        if args.include_full_xr:
            out = include_full_xr(out, inputs.xr)
    except _UsageError as e:
        sys.stderr.write(f"modelplane: error: {e}\n")
        return 1
    except RenderError as e:
        sys.stderr.write(f"modelplane: error: cannot render composite resource: {e}\n")
        return 1
    sys.stdout.write(
        to_yaml(out, include_function_results=args.include_function_results, include_context=args.include_context)
    )
    # crossplane render keeps the reconcile's events out of its output unless asked; say the warnings
    # on stderr so that they are never lost.
    for result in out.results:
        if result.get("severity") == "Warning":
            sys.stderr.write(f"Warning {result.get('reason', '')}: {result.get('message', '')}\n")
    return 0
