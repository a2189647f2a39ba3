"""Session fixtures: the CLI, its render engine, and every golden case rendered once by ``crossplane render``."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from modelplane.kinds import KINDS
from modelplane.render import goyaml
from modelplane.render.runners import load_runner
from modelplane.repo import composition_path
from tests.conformance.cli import WORKERS, require_binary, require_engine
from tests.golden.cases import Case, cases
from tests.render.crossplane_cli import functions_manifest, run_render, serve_functions


@dataclass(frozen=True)
class Rendered:
    """One golden case's inputs as files, and what ``crossplane render`` printed for them."""

    case: Case
    xr: Path
    composition: Path
    required: Path
    flags: tuple[str, ...]
    proc: subprocess.CompletedProcess[str]


# What every case is rendered with besides its inputs (its fleet as required resources and, for a
# later step of a scheduling scenario, the previous step's composed resources as observed).
RENDER_FLAGS = ("--include-function-results",)


@pytest.fixture(scope="session")
def binary() -> Path:
    return require_binary()


@pytest.fixture(scope="session")
def engine() -> Path:
    return require_engine()


@pytest.fixture(scope="session")
def cli_renders(binary: Path, engine: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rendered]:
    """Every golden case through ``crossplane render``, with every function served over gRPC on a free port."""
    tmp = tmp_path_factory.mktemp("renders")
    fleets: dict[str, Path] = {}
    jobs: list[tuple[Case, Path, Path, Path, tuple[str, ...]]] = []
    for n, case in enumerate(cases()):
        fleet = "".join("---\n" + goyaml.dump_document(d) for d in case.fleet)
        if fleet not in fleets:
            fleets[fleet] = tmp / f"fleet-{len(fleets)}.yaml"
            fleets[fleet].write_text(fleet)
        xr = tmp / f"xr-{n}.yaml"
        xr.write_text(goyaml.dump_document(case.xr))
        flags: tuple[str, ...] = ("--required-resources", str(fleets[fleet]))
        if case.observed:
            # A later step of a scheduling scenario: what the previous step composed.
            observed = tmp / f"observed-{n}.yaml"
            observed.write_text("".join("---\n" + goyaml.dump_document(d) for d in case.observed))
            flags += ("--observed-resources", str(observed))
        jobs.append((case, xr, composition_path(case.xr["kind"]), fleets[fleet], (*flags, *RENDER_FLAGS)))

    runners = {k.function_ref: load_runner(k.function_ref) for k in KINDS}
    with serve_functions(runners) as targets:
        functions = tmp / "functions.yaml"
        functions.write_text(functions_manifest(targets))

        def render(job: tuple[Case, Path, Path, Path, tuple[str, ...]]) -> Rendered:
            case, xr, comp, required, flags = job
            proc = run_render(binary, engine, xr, comp, functions, *flags)
            return Rendered(case, xr, comp, required, flags, proc)

        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            return {r.case.id: r for r in pool.map(render, jobs)}
