"""Protobuf messages written as bytes: a message's bytes are its fields' one after another.

A field of a message (or a string) is its tag, its length and its bytes; a map entry is a
message of its key (field 1) and its value (field 2). So a message holding objects already
serialized (``structs.to_wire``) is written by joining them, and parsed once where it is read.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FIELD_1", "FIELD_2", "length_delimited", "state"]

# The tags of the length-delimited fields written here: field 1 and field 2.
FIELD_1 = b"\x0a"
FIELD_2 = b"\x12"


def length_delimited(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited protobuf field: its tag, its length as a varint, its bytes."""
    n, length = len(payload), bytearray()
    while n >= 0x80:  # seven bits a byte, the high bit says more follow
        length.append((n & 0x7F) | 0x80)
        n >>= 7
    length.append(n)
    return tag + bytes(length) + payload


def state(composite: bytes, resources: Iterable[tuple[str, bytes]]) -> bytes:
    """The bytes of a ``State`` whose composite and resources (by name) hold these Structs' bytes.

    ``State.composite`` is field 1, ``State.resources`` (a map of ``Resource``) field 2, and
    ``Resource.resource`` field 1.
    """
    parts = [length_delimited(FIELD_1, length_delimited(FIELD_1, composite))]
    for name, resource in resources:
        entry = length_delimited(FIELD_1, name.encode()) + length_delimited(
            FIELD_2, length_delimited(FIELD_1, resource)
        )
        parts.append(length_delimited(FIELD_2, entry))
    return b"".join(parts)
