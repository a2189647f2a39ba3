"""The preview of a fleet of 100 clusters, 1,000 replicas and 300 services settles, and places and routes all of it.

How long it takes is the benchmark's to say (``make bench``, the preview row); here, that a
fleet of this size previews at all within the test run, and that what it shows is right.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import preview_fleet
from modelplane.preview import command

CLUSTERS, REPLICAS, SERVICES = 100, 1000, 300


def test_synthetic_fleet_of_100_clusters_previews_placed_and_routed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preview_fleet.write(tmp_path, CLUSTERS, REPLICAS, SERVICES)
    code = command.main([str(tmp_path), "--assume-ready", "-o", "json"])
    doc = json.loads(capsys.readouterr().out)
    fleet = doc["fleet"]
    assert (code, doc["exitCode"], doc["findings"], fleet["errors"]) == (0, 0, [], {})
    deployments = fleet["deployments"]
    assert len(deployments) == -(-REPLICAS // preview_fleet.REPLICAS_PER_DEPLOYMENT)
    assert sum(d["desired"] for d in deployments) == REPLICAS
    assert [d["name"] for d in deployments if not d["placed"] == d["ready"] == d["desired"]] == []
    # Every pool holds what the replicas placed there take, and no more than it has.
    placed: dict[tuple[str, str], int] = {}
    for d in deployments:
        for r in d["replicas"]:
            for role in r["roles"]:
                placed[r["cluster"], role["pool"]] = placed.get((r["cluster"], role["pool"]), 0) + role["gpus"]
    assert len(fleet["clusters"]) == CLUSTERS
    for cluster in fleet["clusters"]:
        for pool in cluster["pools"]:
            assert pool["inUse"] == placed.get((cluster["name"], pool["pool"]), 0) <= pool["declared"]
    services = fleet["services"]
    assert len(services) == SERVICES
    assert [s["name"] for s in services if s["routed"]["status"] != "True"] == []
    assert all(len(s["backends"]) == preview_fleet.REPLICAS_PER_DEPLOYMENT for s in services)
