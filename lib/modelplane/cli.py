"""The ``modelplane`` command: ``render`` (crossplane render, in-process) and ``preview``."""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence

USAGE = """usage: modelplane <command> [args]

commands:
  render   render one XR through its Composition in-process, like `crossplane render`
  preview  admit and simulate directories of manifests as a fleet: tables, exit codes a CI gates on,
           --explain NAMESPACE/NAME, and plans (--against BASE_DIR, --live); see `modelplane preview --help`
"""


def main(argv: Sequence[str] | None = None) -> None:
    """Dispatch to a subcommand and exit with its code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help"}:
        sys.stdout.write(USAGE)
        sys.exit(0 if args else 2)
    command, rest = args[0], args[1:]
    if command == "render":
        from modelplane.render.command import main as run  # noqa: PLC0415 - load only what runs
    elif command == "preview":
        from modelplane.preview.command import main as run  # noqa: PLC0415 - load only what runs
    else:
        sys.stderr.write(f"modelplane: unknown command {command!r}\n{USAGE}")
        sys.exit(2)
    # A command runs once and exits: the cyclic garbage collector would rescan all a fleet's simulation
    # holds, again and again and once more at the end, to free what exiting frees anyway.
    gc.disable()
    sys.exit(run(rest))


if __name__ == "__main__":  # `python -m modelplane.cli`, as the e2e tier runs it
    main()
