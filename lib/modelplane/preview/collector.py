"""Keep Python's cyclic garbage collector from rescanning a simulation's heap, again and again.

A fleet's simulation holds a large heap of long-lived objects (every XR's state, its last
render, the conversions remembered) and allocates fast: the collector's full collections
rescan that whole heap over and over, a sixth of a 100-cluster fleet's CPU, and more as the
fleet grows. What they would free is the little cyclic garbage renders leave behind (event
loop tasks, exceptions caught); reference counting frees everything else at once, and the
collector, enabled again when the simulation ends, frees the rest (a 100-cluster fleet's peak
memory is the same either way).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """Disable the cyclic garbage collector while the block runs; enable it again if it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
