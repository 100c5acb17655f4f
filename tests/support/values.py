"""Example values for described messages, and a plain form to compare them by.

``ValueGenerator`` walks a message description (protocol.schema) at one version and builds a
``Message`` holding a deterministic pseudo-random, NON-default value for every field present
at that version: ints anywhere in their type's range (boundaries included), strings with
non-ASCII characters, None where the field is nullable at that version, arrays of 0-3
elements, nested structs, tagged fields always different from their default (Kafka omits a
tagged field equal to its default, so a default tagged value would test nothing), uuids of
16 bytes, records as bytes. It knows nothing about any particular API, so every API added to
``protocol.api_keys.ALL_APIS`` is covered by the tests that use it.

``plain`` turns a value (generated or decoded) into dicts, lists and bytes restricted to the
fields present at a version, so two values can be compared with ``==``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from protocol.codec import decode_request, decode_response, encode_request, encode_response
from protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UINT16,
    UINT32,
    UUID,
    Api,
    Array,
    Field,
    Message,
    Primitive,
    Struct,
    Type,
)

INT_RANGES: dict[Primitive, tuple[int, int]] = {
    INT8: (-(2**7), 2**7 - 1),
    INT16: (-(2**15), 2**15 - 1),
    UINT16: (0, 2**16 - 1),
    INT32: (-(2**31), 2**31 - 1),
    UINT32: (0, 2**32 - 1),
    INT64: (-(2**63), 2**63 - 1),
}

# One- to four-byte UTF-8 sequences: a length bug that counts characters instead of bytes,
# or a codec other than UTF-8, shows up as a mismatch.
_ALPHABET = "abcxyzABCXYZ019._- éüß€日本語ка🚀𝄞"

_MISSING: Any = object()


def is_present(fl: Field, version: int, flexible: bool) -> bool:
    """Whether ``fl`` is on the wire at ``version`` (tagged fields only in flexible versions)."""
    if version not in fl.versions:
        return False
    if fl.tag is not None:
        return flexible and version in fl.tagged
    return True


def present_fields(fields: tuple[Field, ...], version: int, flexible: bool) -> list[Field]:
    return [fl for fl in fields if is_present(fl, version, flexible)]


def fields_of(api_: Api, side: str) -> tuple[Field, ...]:
    """``side`` is "request" or "response"."""
    if side == "request":
        return api_.request
    if side == "response":
        return api_.response
    raise ValueError(side)


def api_versions(api_: Api) -> range:
    return range(api_.versions.low, api_.versions.high + 1)


def get_field(value: Any, name: str, default: Any = _MISSING) -> Any:
    if isinstance(value, dict):
        return value.get(name, default)
    if isinstance(value, Message):
        return value.get(name, default)
    return getattr(value, name, default)


class ValueGenerator:
    """Deterministic pseudo-random values; the same seed always gives the same message."""

    def __init__(
        self,
        seed: int | str,
        *,
        null_rate: float = 0.25,
        empty_rate: float = 0.15,
        max_items: int = 3,
    ) -> None:
        self.rng = random.Random(seed)
        self.null_rate = null_rate
        self.empty_rate = empty_rate
        self.max_items = max_items

    def message(self, fields: tuple[Field, ...], version: int, flexible: bool) -> Message:
        values = {
            fl.name: self.field_value(fl, version, flexible)
            for fl in present_fields(fields, version, flexible)
        }
        return Message(**values)

    def field_value(self, fl: Field, version: int, flexible: bool) -> Any:
        default = fl.default_value()
        tagged = fl.tag is not None
        nullable = version in fl.nullable
        # A tagged field equal to its default is not written at all; None is only worth
        # generating where it is a non-default value.
        if nullable and (not tagged or default is not None) and self.rng.random() < self.null_rate:
            return None
        plain_default = _plain_any(default)
        for _ in range(50):
            value = self.of_type(fl.type, version, flexible, non_empty=tagged)
            if _plain_any(value) != plain_default:
                return value
        raise AssertionError(f"could not generate a non-default value for {fl.name}")

    def of_type(self, t: Type, version: int, flexible: bool, *, non_empty: bool = False) -> Any:
        if isinstance(t, Struct):
            return self.message(t.fields, version, flexible)
        if isinstance(t, Array):
            low = 1 if non_empty or self.rng.random() >= self.empty_rate else 0
            count = self.rng.randint(low, max(low, self.max_items))
            return [self.of_type(t.item, version, flexible) for _ in range(count)]
        assert isinstance(t, Primitive), t
        return self.primitive(t)

    def primitive(self, t: Primitive) -> Any:
        rng = self.rng
        if t in INT_RANGES:
            lo, hi = INT_RANGES[t]
            roll = rng.random()
            if roll < 0.15:
                return lo
            if roll < 0.3:
                return hi
            if roll < 0.4:
                return -1 if lo < 0 else 1
            return rng.randint(lo, hi)
        if t is BOOL:
            return rng.random() < 0.5
        if t is FLOAT64:
            return rng.choice([-1.5, 0.1, 1e300, -2.5e-300, rng.uniform(-1e9, 1e9)])
        if t is STRING:
            return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 10)))
        if t is BYTES:
            return rng.randbytes(rng.randint(1, 12))
        if t is RECORDS:
            return rng.randbytes(rng.randint(1, 40))
        if t is UUID:
            data = rng.randbytes(16)
            return data if any(data) else b"\x01" * 16
        raise TypeError(f"no generator for {t!r}")


def defaults_message(fields: tuple[Field, ...], version: int, flexible: bool) -> Message:
    """Every field present at ``version`` set to its default."""
    return Message(
        **{fl.name: fl.default_value() for fl in present_fields(fields, version, flexible)}
    )


def plain(fields: tuple[Field, ...], version: int, flexible: bool, value: Any) -> dict[str, Any]:
    """Present fields only, missing ones as their defaults, views as bytes, structs as dicts.

    Keys the description does not know (e.g. ``_unknown_tagged_fields`` from the decoder) are
    kept, so a comparison notices them.
    """
    out: dict[str, Any] = {}
    known = set()
    for fl in fields:
        known.add(fl.name)
        if not is_present(fl, version, flexible):
            continue
        v = get_field(value, fl.name)
        if v is _MISSING:
            v = fl.default_value()
        out[fl.name] = plain_value(fl.type, version, flexible, v)
    if isinstance(value, Message | dict):
        items = value.to_dict() if isinstance(value, Message) else value
        for name, v in items.items():
            if name not in known:
                out[name] = _plain_any(v)
    return out


def plain_value(t: Type, version: int, flexible: bool, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(t, Struct):
        return plain(t.fields, version, flexible, v)
    if isinstance(t, Array):
        return [plain_value(t.item, version, flexible, x) for x in v]
    return _plain_any(v)


def same_value(a: Any, b: Any) -> bool:
    """Equal once views are bytes and Messages are dicts (a decoded and a built value)."""
    return bool(_plain_any(a) == _plain_any(b))


def _plain_any(v: Any) -> Any:
    if isinstance(v, memoryview | bytearray):
        return bytes(v)
    if isinstance(v, Message):
        return _plain_any(v.to_dict())
    if isinstance(v, dict):
        return {k: _plain_any(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain_any(x) for x in v]
    return v


def absent_mismatches(
    fields: tuple[Field, ...], version: int, flexible: bool, value: Any, path: str = ""
) -> list[str]:
    """Paths of fields absent at ``version`` whose decoded value is not their default."""
    problems: list[str] = []
    for fl in fields:
        v = get_field(value, fl.name)
        where = f"{path}{fl.name}"
        if v is _MISSING:
            problems.append(f"{where}: missing from the decoded message")
            continue
        if not is_present(fl, version, flexible):
            if _plain_any(v) != _plain_any(fl.default_value()):
                problems.append(f"{where}: {v!r} instead of default {fl.default_value()!r}")
            continue
        for sub_path, sub in _nested(fl.type, v, where):
            assert isinstance(sub[0], Struct)
            problems += absent_mismatches(sub[0].fields, version, flexible, sub[1], sub_path)
    return problems


def _nested(t: Type, v: Any, where: str) -> Iterator[tuple[str, tuple[Struct, Any]]]:
    if v is None:
        return
    if isinstance(t, Struct):
        yield f"{where}.", (t, v)
    elif isinstance(t, Array) and isinstance(t.item, Struct):
        for i, x in enumerate(v):
            yield f"{where}[{i}].", (t.item, x)


def non_default_paths(
    fields: tuple[Field, ...], version: int, flexible: bool, value: Any, path: str = ""
) -> set[str]:
    """Field paths (``topics[].name``) that hold a non-default value somewhere in ``value``."""
    seen: set[str] = set()
    for fl in present_fields(fields, version, flexible):
        v = get_field(value, fl.name)
        if v is _MISSING:
            continue
        where = f"{path}{fl.name}"
        if _plain_any(v) != _plain_any(fl.default_value()):
            seen.add(where)
        t = fl.type
        if v is None:
            continue
        if isinstance(t, Struct):
            seen |= non_default_paths(t.fields, version, flexible, v, where + ".")
        elif isinstance(t, Array) and isinstance(t.item, Struct):
            for x in v:
                seen |= non_default_paths(t.item.fields, version, flexible, x, where + "[].")
    return seen


def all_paths(fields: tuple[Field, ...], version: int, flexible: bool, path: str = "") -> set[str]:
    """Every field path present at ``version``, as ``non_default_paths`` spells them."""
    out: set[str] = set()
    for fl in present_fields(fields, version, flexible):
        where = f"{path}{fl.name}"
        out.add(where)
        t = fl.type
        if isinstance(t, Struct):
            out |= all_paths(t.fields, version, flexible, where + ".")
        elif isinstance(t, Array) and isinstance(t.item, Struct):
            out |= all_paths(t.item.fields, version, flexible, where + "[].")
    return out


def encode_side(api_: Api, version: int, side: str, value: object) -> bytes:
    """``value`` encoded by protocol.codec as the ``side`` ("request" or "response") body."""
    if side == "request":
        return encode_request(api_, version, value)
    return encode_response(api_, version, value)


def decode_side(api_: Api, version: int, side: str, data: bytes) -> Message:
    """A ``side`` ("request" or "response") body decoded by protocol.codec."""
    if side == "request":
        return decode_request(api_, version, data)
    return decode_response(api_, version, data)
