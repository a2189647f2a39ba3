"""The simulation pauses the cyclic garbage collector and leaves it as it found it, even on an error."""

from __future__ import annotations

import gc
from contextlib import AbstractContextManager, nullcontext

import pytest

from modelplane.preview.collector import paused


@pytest.mark.parametrize("enabled", [True, False], ids=["was enabled", "was disabled"])
@pytest.mark.parametrize("fails", [False, True], ids=["block returns", "block raises"])
def test_the_collector_is_paused_in_the_block_and_restored_after(*, enabled: bool, fails: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        inside = None
        expected: AbstractContextManager[object] = pytest.raises(RuntimeError) if fails else nullcontext()
        with expected, paused():
            inside = gc.isenabled()
            if fails:
                raise RuntimeError
        assert inside is False
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
