"""The benchmarks of ``make bench`` run, on tiny inputs; their figures are printed, never asserted."""

from __future__ import annotations

from bench import cost, latency, quality, scale, startup
from bench.fleet import FleetSize, request
from modelplane.kinds import BY_KIND


def test_latency_in_process() -> None:
    figures = latency.measure(request(FleetSize(2, 3)), 2, 3, calls=2)
    assert figures.scheduled == "placed 4 of 4"
    assert "2x3: placed 4 of 4" in latency.report([figures])


def test_latency_in_a_child_process() -> None:
    small = [latency.run_configuration(c, o, calls=1) for c in (1, 2) for o in (0, 1)]
    report = latency.report(small)
    assert "clusters, 0 other replicas: 1 -> 2" in report
    assert "other replicas 0 -> 1: at 1 clusters" in report


def test_startup_of_one_function() -> None:
    figures = startup.measure(BY_KIND["ModelDeployment"], runs=1, idle=0.0)
    assert figures.function == "compose-model-deployment"
    assert "compose-model-deployment" in startup.report([figures])


def test_placement_quality() -> None:
    figures = quality.measure(3, seed=7)
    assert figures.scenarios == 3
    assert figures.placed <= figures.step_optimum
    assert "per-step optimum" in quality.report(figures)


def test_cost_optimality() -> None:
    figures = cost.measure(20, seed=3)
    assert figures.scenarios == 20
    assert figures.placed == figures.most  # as many replicas as any placement fits
    assert figures.optimum <= figures.cost  # no placement is cheaper than the cheapest
    assert figures.above_percent <= cost.TARGET
    assert "cost-optimal" in cost.report(figures)


def test_scale_of_every_function_that_reads_the_fleet() -> None:
    figures, served = scale.measure_all(clusters=2, replicas=12, calls=1)
    assert [(f.name, f.function) for f in figures] == [(c.name.format(own=1), c.function) for c in scale.CASES]
    assert all(f.request_bytes > f.response_bytes > 0 for f in figures)
    assert [f.summary.split(":")[0] for f in figures] == ["Scheduled", "Scheduled", "Provisioned", "Routed", "Routed"]
    assert served.summary == "Scheduled: placed 4 of 4"
    # The services route to the fleet's endpoints (a figure of the 503 path would measure nothing).
    assert all(" routes to " in f.summary for f in figures if f.function == "compose-model-service")
    report = scale.report(figures, served)
    assert "largest request" in report
    assert "over gRPC, compose-model-deployment served" in report
