"""Rewrite every golden render file (``make goldens``); review the diff before committing."""

from __future__ import annotations

import sys

from modelplane.render.runners import configure_cli_logging
from tests.golden.cases import GOLDEN, cases, render_case


def main() -> int:
    """Write each case's golden file and delete files no case produces."""
    configure_cli_logging()
    wanted = set()
    for case in cases():
        case.golden.parent.mkdir(parents=True, exist_ok=True)
        case.golden.write_text(render_case(case))
        wanted.add(case.golden)
    stale = [p for p in GOLDEN.rglob("*.yaml") if p not in wanted]
    for path in stale:
        path.unlink()
    sys.stdout.write(f"wrote {len(wanted)} golden file(s) under {GOLDEN}, removed {len(stale)} stale\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
