"""The bench's synthetic fleet is what a ModelDeployment reads, and its fleet figures run; nothing timed is asserted."""

from __future__ import annotations

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from bench import scale
from bench.fleet import (
    DEPLOYMENT,
    NAMESPACE,
    DeploymentFleet,
    FleetSize,
    deployment_fleet_clusters,
    fleet_deployment,
    fleet_request,
    other_replicas,
    own_part,
    own_replicas,
    request,
    shared_part,
)
from compose_model_deployment.fleet import FleetReader
from modelplane.capacity import DeploymentKey


def _names(req: fnv1.RunFunctionRequest, required: str) -> list[str]:
    return [resource.struct_to_dict(i.resource)["metadata"]["name"] for i in req.required_resources[required].items]


def test_a_deployment_requires_only_its_own_replicas() -> None:
    size = FleetSize(clusters=3, others=20)
    req = request(size)
    assert _names(req, "replicas") == [r["metadata"]["name"] for r in own_replicas(size)]
    assert _names(req, "clusters") == ["c0000", "c0001", "c0002"]
    assert _names(req, "classes") == ["h100", "h200"]


def test_the_clusters_publish_what_every_replica_holds() -> None:
    size = FleetSize(clusters=3, others=20)
    fleet = FleetReader().read(request(size), DeploymentKey(NAMESPACE, DEPLOYMENT))
    held: dict[tuple[str, str], int] = {}
    for r in [*other_replicas(size), *own_replicas(size)]:
        pool = (r["spec"]["inferenceClusterRef"]["name"], r["spec"]["poolName"])
        assert f"{NAMESPACE}/{r['metadata']['name']}" in fleet.view.pools[pool].counted
        held[pool] = held.get(pool, 0) + r["status"]["gpus"]["total"]
    for key, state in fleet.view.pools.items():
        other_work = 8 if key[0] == "c0000" else 0  # every third cluster runs KAI, which reports 8 GPUs more
        assert state.free.free == 64 - held.get(key, 0) - other_work


def test_a_resync_request_is_the_shared_part_and_its_own() -> None:
    fleet = DeploymentFleet(clusters=3, deployments=2, per=3)
    shared = shared_part(deployment_fleet_clusters(fleet)).SerializeToString()
    own = own_part(*fleet_deployment(fleet, 1)).SerializeToString()
    assert fnv1.RunFunctionRequest.FromString(shared + own) == fleet_request(fleet, 1)


def test_the_fleet_of_deployments() -> None:
    one, whole = scale.measure_fleet(clusters=3, replicas=30, calls=1)
    assert one.summary == "Scheduled: placed 10 of 10"
    assert whole.deployments == 3
    assert whole.scheduled == {"Scheduled: placed 10 of 10": 3}
    report = scale.report_fleet(one, whole)
    assert "request" in report
    assert "full resync, each of the 3 deployments called once" in report
