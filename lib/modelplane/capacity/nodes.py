"""The free GPUs of each node of a pool, as a histogram, and how workers pack onto them.

Nodes of one pool are interchangeable, so a pool is fully described by how
many of its nodes have 0, 1, ..., ``per_node`` GPUs free. A worker that needs
``g`` GPUs on each of ``k`` nodes takes ``g`` from ``k`` distinct nodes.

Packing rules (deterministic, and exact for one worker shape):

- single-node workers (``k == 1``) go best fit: onto the node with the fewest
  free GPUs that still has ``g``, which keeps whole nodes free for larger
  workers; for identical single-node workers any choice fits the same number;
- multi-node workers take the ``k`` nodes that can still host the most
  ``g``-sized shares (ties: the fewest free GPUs), which is the greedy that
  always fits a set of identical workers whenever any assignment does;
- usage of unknown shape (observed GPUs no ModelReplica explains) fills the
  most-used nodes first, as a bin-packing cluster scheduler would have;
- workers given back (``release``) return to the nodes with the fewest free
  GPUs that can take them: the real pods may not have been packed as this
  model packed them, so freed GPUs are never assumed to sit together.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from modelplane.topology import Footprint


@dataclass(frozen=True)
class NodeFree:
    """How many nodes of a pool have each number of free GPUs.

    Attributes:
        per_node: GPUs a node of the pool has.
        counts: ``counts[f]`` is the number of nodes with exactly ``f`` GPUs free;
            ``len(counts) == per_node + 1``.
        free: Free GPUs over all nodes (derived from ``counts``).
    """

    per_node: int
    counts: tuple[int, ...]
    # Read for every pool of every candidate cluster: computed once, not on each read.
    free: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Derive ``free``."""
        object.__setattr__(self, "free", sum(f * n for f, n in enumerate(self.counts)))

    @classmethod
    def empty(cls, *, nodes: int, per_node: int) -> NodeFree:
        """A pool of ``nodes`` idle nodes with ``per_node`` GPUs each."""
        if nodes < 0 or per_node < 1:
            msg = f"a pool needs nodes >= 0 and per_node >= 1, not {nodes} and {per_node}"
            raise ValueError(msg)
        return cls(per_node=per_node, counts=(0,) * per_node + (nodes,))

    @property
    def nodes(self) -> int:
        """Nodes in the pool."""
        return sum(self.counts)

    @property
    def largest(self) -> int:
        """The most free GPUs any one node has (0 for an empty pool)."""
        return next((f for f in range(self.per_node, -1, -1) if self.counts[f]), 0)

    def max_workers(self, gpus_per_node: int, nodes_per_worker: int) -> int:
        """How many more workers of one shape fit, each on distinct nodes.

        ``W`` workers of ``k`` nodes fit exactly when the nodes' shares
        ``c = free // g`` satisfy ``sum(min(c, W)) >= k * W``.
        """
        if gpus_per_node > self.per_node:
            return 0
        if gpus_per_node < 1:
            msg = f"gpus_per_node must be at least 1, not {gpus_per_node}"
            raise ValueError(msg)
        shares = [(f // gpus_per_node, n) for f, n in enumerate(self.counts) if n and f >= gpus_per_node]
        total = sum(c * n for c, n in shares)
        if nodes_per_worker == 1:
            return total
        low, high = 0, total // nodes_per_worker
        while low < high:
            mid = (low + high + 1) // 2
            if sum(min(c, mid) * n for c, n in shares) >= nodes_per_worker * mid:
                low = mid
            else:
                high = mid - 1
        return low

    def fits(self, role: Footprint) -> bool:
        """Whether every worker of ``role`` fits."""
        return self.max_workers(role.gpus_per_node, role.nodes_per_worker) >= role.workers

    def take(self, role: Footprint) -> NodeFree | None:
        """Place every worker of ``role``; None when they do not all fit."""
        if not self.fits(role):
            return None
        counts = list(self.counts)
        _place(counts, role.gpus_per_node, role.nodes_per_worker, role.workers)
        return NodeFree(self.per_node, tuple(counts))

    def occupy(self, role: Footprint) -> tuple[NodeFree, int]:
        """Account for workers that already exist, whether or not they fit.

        Returns:
            The nodes afterwards and the GPUs the workers hold beyond what the
            nodes had (0 when they fit).
        """
        counts = list(self.counts)
        placed = min(role.workers, self.max_workers(role.gpus_per_node, role.nodes_per_worker))
        _place(counts, role.gpus_per_node, role.nodes_per_worker, placed)
        overflow, left = 0, role.workers - placed
        # Once no node has a GPU free, every further worker is short by all it needs: count those at once
        # (a replica's worker count is the user's number; the loop is bounded by the pool's GPUs).
        while left and any(counts[1:]):
            overflow += _force(counts, role.gpus_per_node, role.nodes_per_worker)
            left -= 1
        overflow += left * role.gpus_per_node * role.nodes_per_worker
        # A worker that did not fit this packing still holds its GPUs somewhere in the pool (the
        # real pods were packed differently): take what it is short by off the other nodes, and
        # only count as overcommitted what the pool cannot have at all.
        return NodeFree(self.per_node, tuple(counts)).use(overflow)

    def occupy_all(self, roles: Iterable[Footprint]) -> tuple[NodeFree, int]:
        """Account for the workers of several existing roles at once (see ``occupy``).

        Workers of identical shape are held together, larger shapes first (first
        fit decreasing), so the result does not depend on the order of ``roles``.

        Returns:
            The nodes afterwards and the GPUs held beyond what the nodes had.
        """
        workers: dict[tuple[int, int], int] = defaultdict(int)
        for role in roles:
            workers[role.gpus_per_node, role.nodes_per_worker] += role.workers
        nodes, overflow = self, 0
        for (g, k), w in sorted(workers.items(), key=lambda i: (-i[0][0] * i[0][1], -i[0][0], i[0][1])):
            nodes, missing = nodes.occupy(Footprint(nodes_per_worker=k, gpus_per_node=g, workers=w))
            overflow += missing
        return nodes, overflow

    def release(self, role: Footprint) -> NodeFree:
        """Give back the GPUs of ``role``'s workers: the approximate inverse of ``take`` and ``occupy``.

        Each worker gives ``gpus_per_node`` GPUs back to ``nodes_per_worker``
        distinct nodes: the nodes with the fewest free GPUs among those that can
        take them back (free <= ``per_node - gpus_per_node``). That is
        conservative: it never gathers free GPUs on one node that the real pods
        may have left on several. A worker with fewer such nodes than it spans
        gives back what fits; nothing ever exceeds ``per_node`` on a node.

        Returns:
            The nodes afterwards (this pool when nothing can be given back).
        """
        g, k = role.gpus_per_node, role.nodes_per_worker
        if g < 1 or k < 1 or g > self.per_node:
            return self
        counts = list(self.counts)
        for _ in range(role.workers):
            chosen: list[int] = []
            for f in range(self.per_node - g + 1):
                chosen.extend([f] * min(counts[f], k - len(chosen)))
                if len(chosen) == k:
                    break
            if not chosen:
                break  # no node can take a share back: neither can it for the workers left
            for f in chosen:
                counts[f] -= 1
                counts[f + g] += 1
        return NodeFree(self.per_node, tuple(counts))

    def use(self, gpus: int) -> tuple[NodeFree, int]:
        """Account for ``gpus`` in use of unknown shape, filling the most-used nodes first.

        Returns:
            The nodes afterwards and the GPUs that did not fit (0 when they did).
        """
        counts = list(self.counts)
        left = gpus
        for f in range(1, self.per_node + 1):
            if not left:
                break
            whole = min(counts[f], left // f)
            counts[f] -= whole
            counts[0] += whole
            left -= whole * f
            if counts[f] and 0 < left < f:
                counts[f] -= 1
                counts[f - left] += 1
                left = 0
        return NodeFree(self.per_node, tuple(counts)), left


def _place(counts: list[int], g: int, k: int, workers: int) -> None:
    """Place ``workers`` workers known to fit, in place."""
    if k == 1:
        # Best fit for identical single-node workers: fill the tightest node, then the next.
        left = workers
        f = g
        while left and f < len(counts):
            if not counts[f]:
                f += 1
                continue
            per = f // g
            whole = min(counts[f], left // per)
            if whole:
                counts[f] -= whole
                counts[f - per * g] += whole
                left -= whole * per
            elif left:
                counts[f] -= 1
                counts[f - left * g] += 1
                left = 0
        return
    order = sorted(range(g, len(counts)), key=lambda f: (-(f // g), f))
    for _ in range(workers):
        chosen: list[int] = []
        for f in order:
            take = min(counts[f], k - len(chosen))
            chosen.extend([f] * take)
            if len(chosen) == k:
                break
        for f in chosen:
            counts[f] -= 1
            counts[f - g] += 1


def _force(counts: list[int], g: int, k: int) -> int:
    """Place one worker that does not fit on the ``k`` emptiest nodes; return the GPUs missing."""
    chosen: list[int] = []
    for f in range(len(counts) - 1, -1, -1):
        take = min(counts[f], k - len(chosen))
        chosen.extend([f] * take)
        if len(chosen) == k:
            break
    missing = g * (k - len(chosen))
    for f in chosen:
        counts[f] -= 1
        counts[max(0, f - g)] += 1
        missing += max(0, g - f)
    return missing
