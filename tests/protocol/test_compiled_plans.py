"""The codec's compiled plans (protocol.codec ``_compile``): straight-line code per struct,
with runs of fixed-size fields read and written by one struct each (issue 19).

What the loop over fields did, they must do: the same bytes, the same values, a DecodeError
for a run cut anywhere, the defaults of absent and missing fields (fresh lists each time),
and Kafka's bool rule (any byte but 0 is true). The recorded Kafka exchanges and golden
frames elsewhere check every API; these pin the cases a run or a default could get wrong.
"""

from __future__ import annotations

import struct

import pytest

from protocol.codec import decode, encode
from protocol.primitives import DecodeError, Reader
from protocol.schema import (
    BOOL,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UINT32,
    Message,
    array,
    f,
)

# A run of every fixed-size type, a string between two runs, a field absent before v1,
# an array absent before v2, and a tagged field in flexible versions.
FIELDS = (
    f("a", INT8),
    f("b", INT16),
    f("c", UINT16),
    f("d", INT32),
    f("e", UINT32),
    f("g", INT64),
    f("h", FLOAT64),
    f("i", BOOL),
    f("name", STRING),
    f("j", INT32),
    f("k", INT64, "1+", default=-1),
    f("items", array(f("x", INT32), f("y", INT16)), "2+"),
    f("t", INT32, "2+", tag=0, tagged="2+", default=-7),
)
VALUES = dict(a=-2, b=-300, c=65000, d=-70000, e=4_000_000_000, g=-(2**40), h=2.5, i=True)
RUN = struct.Struct(">bhHiIqd?")


def test_a_run_of_fixed_fields_is_the_bytes_of_each_field_in_order() -> None:
    value = Message(**VALUES, name="n", j=9, k=11, items=[Message(x=1, y=2)])
    data = encode(FIELDS, 1, False, value)
    expected = RUN.pack(*VALUES.values()) + b"\x00\x01n" + struct.pack(">iq", 9, 11)
    assert data == expected
    decoded = decode(FIELDS, 1, False, Reader(data))
    assert decoded == Message(**VALUES, name="n", j=9, k=11, items=[], t=-7)


@pytest.mark.parametrize("version, flexible", [(0, False), (1, False), (2, True)])
def test_every_cut_of_the_message_raises_decode_error(version: int, flexible: bool) -> None:
    value = Message(**VALUES, name="n", j=9, k=11, items=[Message(x=1, y=2)], t=5)
    data = encode(FIELDS, version, flexible, value)
    assert decode(FIELDS, version, flexible, Reader(data)).j == 9
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            decode(FIELDS, version, flexible, Reader(data[:cut]))


def test_absent_and_missing_fields_take_their_defaults_and_lists_are_fresh() -> None:
    data = encode(FIELDS, 0, False, Message())
    # Missing fields encode as their defaults.
    assert data == RUN.pack(0, 0, 0, 0, 0, 0, 0.0, False) + b"\x00\x00" + struct.pack(">i", 0)
    first = decode(FIELDS, 0, False, Reader(data))
    second = decode(FIELDS, 0, False, Reader(data))
    # Absent at v0: k's declared default, an empty list, the tagged field's default.
    assert (first.k, first.items, first.t, first.name) == (-1, [], -7, "")
    first.items.append(1)
    assert second.items == []


def test_a_bool_is_true_for_any_byte_but_zero_and_written_as_one() -> None:
    data = bytearray(encode(FIELDS, 0, False, Message(**VALUES, name="", j=0)))
    data[RUN.size - 1] = 2
    assert decode(FIELDS, 0, False, Reader(bytes(data))).i is True
    again = encode(FIELDS, 0, False, Message(**{**VALUES, "i": 5}, name="", j=0))
    assert again[RUN.size - 1] == 1


def test_tagged_fields_after_the_runs_round_trip() -> None:
    value = Message(**VALUES, name="x", j=1, k=2, items=[Message(x=3, y=4)], t=42)
    data = encode(FIELDS, 2, True, value)
    decoded = decode(FIELDS, 2, True, Reader(data))
    assert decoded == value
    # At its default the tagged field is not written: one byte (an empty tag buffer) less
    # than with it.
    plain = encode(FIELDS, 2, True, Message(**VALUES, name="x", j=1, k=2, items=[], t=-7))
    assert plain.endswith(b"\x00")
    assert decode(FIELDS, 2, True, Reader(plain)).t == -7


def test_an_out_of_range_value_is_refused_when_encoding() -> None:
    with pytest.raises(struct.error):
        encode(FIELDS, 0, False, Message(**{**VALUES, "b": 1 << 20}, name="", j=0))
