"""Which clusters keep a copy of a cache, as a table: placement, replicas, and copies never dropped while in use."""

from __future__ import annotations

import pytest

from modelplane.modelcache.targets import Kept, Placement, Targets, User, targets

_ALL = frozenset({"east", "west", "lab"})


@pytest.mark.parametrize(
    ("placement", "selected", "users", "unreadable", "observed", "want"),
    [
        pytest.param(Placement.FOLLOW, [], [], [], set(), Targets((), (), ()), id="nothing-selected-nothing-used"),
        pytest.param(
            Placement.FOLLOW,
            ["east"],
            [User("r-0", "west")],
            [],
            set(),
            Targets(("east", "west"), (), ()),
            id="follow-adds-replica-clusters",
        ),
        pytest.param(
            Placement.STATIC,
            ["east"],
            [User("r-0", "west")],
            [],
            {"west"},
            Targets(("east",), (Kept("west", "west", "kept: replica r-0 mounts it"),), ()),
            id="static-keeps-a-mounted-copy-off-the-selector",
        ),
        pytest.param(
            Placement.STATIC,
            ["east"],
            [],
            ["r-9"],
            {"west"},
            Targets(
                ("east",), (Kept("west", "west", "kept: ModelReplica r-9 cannot be read, so it may mount it"),), ()
            ),
            id="an-unreadable-replica-keeps-every-copy",
        ),
        pytest.param(
            Placement.STATIC, ["east"], [], [], {"west", "east"}, Targets(("east",), (), ("west",)), id="unused-removed"
        ),
        pytest.param(
            Placement.STATIC,
            [],
            [],
            [],
            {"gone"},
            Targets((), (Kept("gone", "gone", "kept: InferenceCluster gone is not listed or cannot be read"),), ()),
            id="a-cluster-not-listed-keeps-its-copy",
        ),
    ],
)
def test_targets(
    placement: Placement,
    selected: list[str],
    users: list[User],
    unreadable: list[str],
    observed: set[str],
    want: Targets,
) -> None:
    assert targets(placement, selected, users, unreadable, observed, _ALL) == want
