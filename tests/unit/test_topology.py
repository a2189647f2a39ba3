from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.topology import Footprint, Role, TopologyError, footprint, replica_footprint
from tests.unit.fleet import Shape, deployment


@pytest.mark.parametrize(
    ("kwargs", "want"),
    [
        pytest.param({"tensor": 1}, Footprint(1, 1, 1), id="single-gpu"),
        pytest.param({"tensor": 4}, Footprint(1, 4, 1), id="tp4"),
        pytest.param({"tensor": 8, "pipeline": 2}, Footprint(2, 8, 1), id="tp8-pp2-two-nodes"),
        pytest.param({"tensor": 2, "data": 4, "data_local": 2}, Footprint(2, 4, 1), id="dp4-two-ranks-per-node"),
        pytest.param({"tensor": 1, "data": 8, "data_local": 8}, Footprint(1, 8, 1), id="dp8-on-one-node"),
        pytest.param({"tensor": 2, "pipeline": 3, "workers": 5}, Footprint(3, 2, 5), id="five-workers"),
    ],
)
def test_footprint(kwargs: dict[str, int], want: Footprint) -> None:
    assert footprint(**kwargs) == want  # type: ignore[arg-type]  # the table's keywords are footprint's


def test_footprint_totals() -> None:
    got = footprint(tensor=8, pipeline=2, workers=3)
    assert (got.gpus_per_worker, got.total_gpus, got.node_slots) == (16, 48, 6)


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        pytest.param({"tensor": 1, "data": 3, "data_local": 2}, "spec.workers.topology.data", "multiple", id="data"),
        pytest.param({"tensor": 0}, "spec.workers.topology.tensor", "at least 1", id="tensor-zero"),
        pytest.param({"tensor": 1, "data_local": 0}, "spec.workers.topology.dataLocal", "at least 1", id="local-0"),
        pytest.param({"tensor": 1, "workers": 0}, "spec.workers.topology.count", "at least 1", id="no-workers"),
    ],
)
def test_footprint_refuses(kwargs: dict[str, int], field: str, message: str) -> None:
    with pytest.raises(TopologyError) as caught:
        footprint(**kwargs, field="spec.workers.topology")
    assert caught.value.problem.field == field
    assert message in caught.value.problem.message


def test_replica_footprint_unified() -> None:
    spec = deployment(shape=Shape(tensor=8, pipeline=2, count=2)).spec
    assert spec is not None
    got = replica_footprint(spec)
    assert got.roles == ((Role.UNIFIED, Footprint(2, 8, 2)),)
    assert (got.total_gpus, got.node_slots) == (32, 4)
    assert got.of(Role.PREFILL) is None


def test_replica_footprint_disaggregated() -> None:
    spec = deployment(prefill=Shape(count=5), decode=Shape(tensor=2, count=3)).spec
    assert spec is not None
    got = replica_footprint(spec)
    assert got.roles == ((Role.PREFILL, Footprint(1, 1, 5)), (Role.DECODE, Footprint(1, 2, 3)))
    assert got.total_gpus == 11
    assert got.of(Role.DECODE) == Footprint(1, 2, 3)


def test_replica_footprint_names_the_role_field() -> None:
    spec = deployment(prefill=Shape(), decode=Shape(data=3, data_local=2)).spec
    assert spec is not None
    with pytest.raises(TopologyError, match=r"spec\.decode\.workers\.topology\.data"):
        replica_footprint(spec)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"workers": None}, id="no-shape"),
        pytest.param({"prefill": "same"}, id="both-shapes"),
    ],
)
def test_replica_footprint_needs_exactly_one_shape(change: dict[str, object]) -> None:
    spec = deployment().spec
    assert spec is not None
    prefill = deployment(prefill=Shape(), decode=Shape()).spec
    assert prefill is not None
    update = {k: (prefill.prefill if v == "same" else v) for k, v in change.items()}
    with pytest.raises(TopologyError, match="exactly one serving shape"):
        replica_footprint(spec.model_copy(update=update))


@given(
    tensor=st.integers(1, 16),
    pipeline=st.integers(1, 8),
    local=st.integers(1, 8),
    factor=st.integers(1, 8),
    workers=st.integers(1, 10),
)
def test_footprint_covers_every_rank(tensor: int, pipeline: int, local: int, factor: int, workers: int) -> None:
    data = local * factor
    got = footprint(tensor=tensor, pipeline=pipeline, data=data, data_local=local, workers=workers)
    # Every rank of tensor x pipeline x data has exactly one GPU.
    assert got.gpus_per_worker == tensor * pipeline * data
    assert got.total_gpus == workers * tensor * pipeline * data
    assert got.node_slots * got.gpus_per_node == got.total_gpus
