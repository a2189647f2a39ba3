"""One bounded memo for what a function reads once per distinct content, call after call."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def once(cache: dict[K, V], key: K, read: Callable[[], V], limit: int) -> V:
    """``read()``, or what it gave for ``key`` before; ``cache`` starts again once it holds ``limit`` entries.

    ``key`` must pin everything ``read`` reads (an object's exact bytes, say), and what it gives is
    shared between callers, read and never changed. Starting again, rather than evicting one by one,
    keeps a served function's memory bounded at no cost per hit.
    """
    if key in cache:
        return cache[key]
    if len(cache) >= limit:
        cache.clear()
    found = cache[key] = read()
    return found
