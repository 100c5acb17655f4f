"""One generic codec for every described message.

``encode(api.request, version, flexible, value)`` / ``decode(...)`` build, once per
(description, version, flexible) and then cache, a plan: per struct, an encoder and a
decoder compiled to straight-line Python (``_compile``) that call the fields' own codecs
(closures) in order, with runs of fixed-size fields packed by one struct each. Fields
absent at a version decode to their defaults, so handlers never need per-version branches
just to read a field.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any

from protocol import primitives as p
from protocol.primitives import DecodeError, Reader, write_uvarint
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

Encoder = Callable[[bytearray, Any], None]
Decoder = Callable[[Reader], Any]

_MISSING: Any = object()


def _get(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return value.get(name, _MISSING)
    return getattr(value, name, _MISSING)


def _get_or(value: Any, name: str, _default: Any) -> Any:
    """_get in dict.get's shape (the default is always _MISSING)."""
    return _get(value, name)


# --- primitives -----------------------------------------------------------------------


def _fixed(st: Any, read: Callable[[Reader], Any]) -> tuple[Encoder, Decoder]:
    pack = st.pack

    def enc(out: bytearray, v: Any) -> None:
        out += pack(v)

    return enc, read


def _enc_bool(out: bytearray, v: Any) -> None:
    out.append(1 if v else 0)


def _enc_uuid(out: bytearray, v: Any) -> None:
    data = bytes(v) if v is not None else p.ZERO_UUID
    if len(data) != 16:
        raise ValueError("a uuid is 16 bytes")
    out += data


def _length_codec(
    flexible: bool,
) -> tuple[Callable[[bytearray, int], None], Callable[[Reader], int]]:
    """Length prefix for strings (int16 / uvarint+1); -1 means null."""
    if flexible:

        def wlen(out: bytearray, n: int) -> None:
            write_uvarint(out, n + 1)

        def rlen(r: Reader) -> int:
            return r.uvarint() - 1

        return wlen, rlen

    def wlen16(out: bytearray, n: int) -> None:
        out += p.INT16.pack(n)

    return wlen16, Reader.int16


def _bytes_length_codec(
    flexible: bool,
) -> tuple[Callable[[bytearray, int], None], Callable[[Reader], int]]:
    """Length prefix for bytes, records and arrays (int32 / uvarint+1); -1 means null."""
    if flexible:
        return _length_codec(True)

    def wlen32(out: bytearray, n: int) -> None:
        out += p.INT32.pack(n)

    return wlen32, Reader.int32


def _sized(
    lengths: tuple[Callable[[bytearray, int], None], Callable[[Reader], int]],
    nullable: bool,
    name: str,
    what: str,
    to_wire: Callable[[Any], Any],
    from_wire: Callable[[Reader, int], Any],
    max_len: int | None = None,
) -> tuple[Encoder, Decoder]:
    """A length-prefixed value (string, bytes, records); a negative length means null."""
    wlen, rlen = lengths

    def enc(out: bytearray, v: Any) -> None:
        if v is None:
            if not nullable:
                raise ValueError(f"{name} is not nullable at this version")
            wlen(out, -1)
            return
        data = to_wire(v)
        wlen(out, len(data))
        out += data

    def dec(r: Reader) -> Any:
        n = rlen(r)
        if n < 0:
            # Kafka's generated readers take ANY negative length of a nullable field as
            # null, and refuse one only for a non-nullable field.
            if nullable:
                return None
            raise DecodeError(f"{name}: non-nullable {what} serialized as null (length {n})")
        if max_len is not None and n > max_len:
            raise DecodeError(f"{name}: {what} length {n} exceeds {max_len}")
        return from_wire(r, n)

    return enc, dec


def _utf8(v: str) -> bytes:
    return v.encode("utf-8")


def _same(v: Any) -> Any:
    return v


def _view(r: Reader, n: int) -> memoryview:
    return r.take(n)


def _copy(r: Reader, n: int) -> bytes:
    return bytes(r.take(n))


class Deferred:
    """Records the connection writes itself (e.g. with sendfile) instead of copying them
    into the encoded message. Only records fields accept one."""

    def __len__(self) -> int:
        raise NotImplementedError

    def read(self) -> bytes:
        """The bytes themselves, for encoders that cannot defer them."""
        raise NotImplementedError


class Encoded(bytes):
    """A message body encoded already (a handler's cached answer): encode_parts puts these
    bytes behind the head as they are."""


class _Parts(bytearray):
    """Encoder output that remembers where deferred records go."""

    # One is made per answer: no __init__ of its own (bytearray's is C); the list comes
    # with the first deferred part.
    deferred: list[tuple[int, Deferred]] | None = None


def _records(flexible: bool, name: str) -> tuple[Encoder, Decoder]:
    wlen, _ = _bytes_length_codec(flexible)
    enc_bytes, dec = _sized(_bytes_length_codec(flexible), True, name, "bytes", _same, _view)

    def enc(out: bytearray, v: Any) -> None:
        if not isinstance(v, Deferred):
            enc_bytes(out, v)
            return
        wlen(out, len(v))
        if isinstance(out, _Parts):
            if out.deferred is None:
                out.deferred = []
            out.deferred.append((len(out), v))
        else:
            out += v.read()

    return enc, dec


# Kafka's generated readers refuse a string longer than 0x7fff bytes ("string field ... had
# invalid length"), which only a compact (uvarint) length can express.
_MAX_STRING = 0x7FFF


def _string(flexible: bool, nullable: bool, name: str) -> tuple[Encoder, Decoder]:
    return _sized(
        _length_codec(flexible), nullable, name, "string", _utf8, Reader.string_of, _MAX_STRING
    )


def _bytes(flexible: bool, nullable: bool, name: str, zero_copy: bool) -> tuple[Encoder, Decoder]:
    return _sized(
        _bytes_length_codec(flexible),
        nullable,
        name,
        "bytes",
        _same,
        _view if zero_copy else _copy,
    )


def _primitive(t: Primitive, flexible: bool, nullable: bool, name: str) -> tuple[Encoder, Decoder]:
    if t is INT8:
        return _fixed(p.INT8, Reader.int8)
    if t is INT16:
        return _fixed(p.INT16, Reader.int16)
    if t is UINT16:
        return _fixed(p.UINT16, Reader.uint16)
    if t is INT32:
        return _fixed(p.INT32, Reader.int32)
    if t is UINT32:
        return _fixed(p.UINT32, Reader.uint32)
    if t is INT64:
        return _fixed(p.INT64, Reader.int64)
    if t is FLOAT64:
        return _fixed(p.FLOAT64, Reader.float64)
    if t is BOOL:
        return _enc_bool, Reader.bool
    if t is UUID:
        return _enc_uuid, Reader.uuid
    if t is STRING:
        return _string(flexible, nullable, name)
    if t is BYTES:
        return _bytes(flexible, nullable, name, zero_copy=False)
    if t is RECORDS:
        # Records are always nullable on the wire; decoded as a view into the frame, and
        # encoded from bytes or a Deferred the connection sends without copying.
        return _records(flexible, name)
    raise TypeError(f"unknown primitive {t!r}")


# --- arrays, structs, tagged fields -----------------------------------------------------


def _array(
    item: Type, version: int, flexible: bool, nullable: bool, name: str
) -> tuple[Encoder, Decoder]:
    enc_item, dec_item = _type_codec(item, version, flexible, False, name)
    wlen, rlen = _bytes_length_codec(flexible)

    def enc(out: bytearray, v: Any) -> None:
        if v is None:
            if not nullable:
                raise ValueError(f"{name} is not nullable at this version")
            wlen(out, -1)
            return
        wlen(out, len(v))
        for x in v:
            enc_item(out, x)

    def dec(r: Reader) -> Any:
        n = rlen(r)
        if n < 0:
            if nullable:
                return None
            raise DecodeError(f"{name}: non-nullable array serialized as null (length {n})")
        # Every element takes at least one byte: a count beyond the bytes left is a lie,
        # caught before building a huge list.
        if n > r.remaining:
            raise DecodeError(f"{name}: array of {n} in {r.remaining} bytes")
        r.spend_elements(n, name)
        return [dec_item(r) for _ in range(n)]

    return enc, dec


def _type_codec(
    t: Type, version: int, flexible: bool, nullable: bool, name: str
) -> tuple[Encoder, Decoder]:
    if isinstance(t, Primitive):
        return _primitive(t, flexible, nullable, name)
    if isinstance(t, Array):
        return _array(t.item, version, flexible, nullable, name)
    if isinstance(t, Struct):
        plan = _plan(t.fields, version, flexible)
        if not nullable:
            return plan
        enc_s, dec_s = plan

        # Nullable struct fields carry an int8 presence marker (-1 = null, 1 = present).
        def enc(out: bytearray, v: Any) -> None:
            if v is None:
                out.append(0xFF)
            else:
                out.append(1)
                enc_s(out, v)

        def dec(r: Reader) -> Any:
            return None if r.int8() < 0 else dec_s(r)

        return enc, dec
    raise TypeError(f"unknown type {t!r}")


_PLANS: dict[tuple[int, int, bool], tuple[Encoder, Decoder]] = {}


def _plan(fields: tuple[Field, ...], version: int, flexible: bool) -> tuple[Encoder, Decoder]:
    key = (id(fields), version, flexible)
    cached = _PLANS.get(key)
    if cached is not None:
        return cached
    regular: list[tuple[Field, Encoder, Decoder]] = []
    tagged: list[tuple[Field, Encoder, Decoder]] = []
    absent: list[Field] = []
    for fl in fields:
        if version not in fl.versions:
            absent.append(fl)
            continue
        enc, dec = _type_codec(fl.type, version, flexible, version in fl.nullable, fl.name)
        if fl.tag is not None:
            if flexible and version in fl.tagged:
                tagged.append((fl, enc, dec))
            else:
                absent.append(fl)
        else:
            regular.append((fl, enc, dec))
    tagged.sort(key=lambda t: t[0].tag or 0)
    by_tag = {fl.tag: (fl, dec) for fl, _, dec in tagged}

    def encode_tagged(out: bytearray, get: Callable[[str, Any], Any]) -> None:
        present: list[tuple[int, bytes]] = []
        for fl, enc, _ in tagged:
            v = get(fl.name, _MISSING)
            # Kafka writes a tagged field only when it differs from its default.
            if v is _MISSING or v == fl.default_value():
                continue
            buf = bytearray()
            enc(buf, v)
            present.append((fl.tag or 0, bytes(buf)))
        unknown = get("_unknown_tagged_fields", _MISSING)
        if unknown is not _MISSING and unknown:
            present.extend(unknown)
            present.sort(key=lambda t: t[0])
        write_uvarint(out, len(present))
        for tag, data in present:
            write_uvarint(out, tag)
            write_uvarint(out, len(data))
            out += data

    def decode_tagged(r: Reader, values: dict[str, Any]) -> None:
        for fl, _, _ in tagged:
            values[fl.name] = fl.default_value()
        count = r.uvarint()
        # Each tagged field costs a Python step like an array element does, and is
        # bounded by the same budget (Reader.max_elements).
        if count:
            r.spend_elements(count, "tagged fields")
        unknown: list[tuple[int, bytes]] = []
        # As Kafka's generated readers: tags in any order (a repeated one overwrites),
        # unknown tags skipped by their size (kept here for re-encoding), and a known
        # tag read from the stream itself, its size not checked against what it took.
        for _ in range(count):
            tag = r.uvarint()
            size = r.uvarint()
            known = by_tag.get(tag)
            if known is None:
                unknown.append((tag, bytes(r.take(size))))
                continue
            fl, dec = known
            values[fl.name] = dec(r)
        if unknown:
            values["_unknown_tagged_fields"] = unknown

    plan = _compile(
        regular,
        absent,
        [fl for fl, _, _ in tagged],
        encode_tagged if flexible else None,
        decode_tagged,
    )
    _PLANS[key] = plan
    return plan


# Fixed-size primitives next to each other are read and written with one struct call.
_FIXED_FORMATS = {
    id(BOOL): "?",
    id(INT8): "b",
    id(INT16): "h",
    id(UINT16): "H",
    id(INT32): "i",
    id(UINT32): "I",
    id(INT64): "q",
    id(FLOAT64): "d",
}
_CONSTANT_TYPES = (int, float, str, bytes, bool, type(None))


def _compile(
    regular: list[tuple[Field, Encoder, Decoder]],
    absent: list[Field],
    tagged: list[Field],
    encode_tagged: Callable[[bytearray, Callable[[str, Any], Any]], None] | None,
    decode_tagged: Callable[[Reader, dict[str, Any]], None],
) -> tuple[Encoder, Decoder]:
    """A struct's encoder and decoder as straight-line Python, compiled once per plan.

    The same steps as a loop over the fields would take (issue 19: the loop, its tuple
    unpacking and a call per fixed-size field were a quarter of a 1-record Produce's decode
    and encode), with runs of fixed-size fields packed and unpacked by one struct each. Only
    names made here reach the source: field names go in as string literals (repr).
    """
    env: dict[str, Any] = {
        "_MISSING": _MISSING,
        "_get_or": _get_or,
        "_partial": functools.partial,
        "Message": Message,
        "_new": Message.__new__,
        "DecodeError": DecodeError,
        "_encode_tagged": encode_tagged,
        "_decode_tagged": decode_tagged,
    }
    # Runs: ("one", field, enc, dec) or ("fixed", [fields]).
    runs: list[tuple[str, Any]] = []
    for fl, enc, dec in regular:
        fixed = isinstance(fl.type, Primitive) and id(fl.type) in _FIXED_FORMATS
        if fixed and runs and runs[-1][0] == "fixed":
            runs[-1][1].append(fl)
        elif fixed:
            runs.append(("fixed", [fl]))
        else:
            runs.append(("one", (fl, enc, dec)))

    def default_expr(fl: Field, n: int, prefix: str) -> str:
        value = fl.default_value()
        if type(value) in _CONSTANT_TYPES:
            env[f"{prefix}{n}"] = value
            return f"{prefix}{n}"
        env[f"{prefix}f{n}"] = fl.default_value
        return f"{prefix}f{n}()"

    dec_lines = ["def decode(r):"]
    enc_lines = [
        "def encode(out, value):",
        # A Message's fields are its __dict__ (read directly: getattr on a missing one goes
        # through Message.__getattr__ and an exception); dicts as they are.
        "    kind = type(value)",
        "    if kind is Message:",
        "        get = value.__dict__.get",
        "    elif kind is dict:",
        "        get = value.get",
        "    else:",
        "        get = _partial(_get_or, value)",
    ]
    names: list[tuple[str, str]] = []  # (field name, local holding its value)
    n = 0
    for kind, item in runs:
        if kind == "one":
            fl, enc, dec = item
            env[f"d{n}"], env[f"e{n}"] = dec, enc
            dec_lines.append(f"    v{n} = d{n}(r)")
            names.append((fl.name, f"v{n}"))
            dflt = default_expr(fl, n, "k")
            enc_lines.append(f"    x = get({fl.name!r}, _MISSING)")
            enc_lines.append(f"    e{n}(out, {dflt} if x is _MISSING else x)")
            n += 1
            continue
        group: list[Field] = item
        st = struct.Struct(">" + "".join(_FIXED_FORMATS[id(fl.type)] for fl in group))
        env[f"s{n}"] = st
        first = n
        locals_ = []
        for fl in group:
            names.append((fl.name, f"v{n}"))
            locals_.append(f"v{n}")
            n += 1
        targets = ", ".join(locals_) + ("," if len(locals_) == 1 else "")
        dec_lines += [
            "    pos = r.pos",
            f"    if r.end - pos < {st.size}:",
            f'        raise DecodeError(f"need {st.size} bytes at {{pos}}, have {{r.end - pos}}")',
            f"    {targets} = s{first}.unpack_from(r.buf, pos)",
            f"    r.pos = pos + {st.size}",
        ]
        packed = []
        for i, fl in enumerate(group):
            dflt = default_expr(fl, first + i, "k")
            enc_lines.append(f"    x{i} = get({fl.name!r}, _MISSING)")
            packed.append(f"{dflt} if x{i} is _MISSING else x{i}")
        enc_lines.append(f"    out += s{first}.pack({', '.join(packed)})")
    entries = [f"{name!r}: {local}" for name, local in names]
    for i, fl in enumerate(absent):
        entries.append(f"{fl.name!r}: {default_expr(fl, i, 'a')}")
    for i, fl in enumerate(tagged):
        entries.append(f"{fl.name!r}: {default_expr(fl, i, 't')}")
    dec_lines.append("    values = {" + ", ".join(entries) + "}")
    if encode_tagged is not None:
        # Nearly every tag buffer is empty (one zero byte): read and written here.
        dec_lines += [
            "    pos = r.pos",
            "    if pos < r.end and r.buf[pos] == 0:",
            "        r.pos = pos + 1",
            "    else:",
            "        _decode_tagged(r, values)",
        ]
        if tagged:
            enc_lines.append("    _encode_tagged(out, get)")
        else:
            enc_lines += [
                "    if get('_unknown_tagged_fields', None):",
                "        _encode_tagged(out, get)",
                "    else:",
                "        out.append(0)",
            ]
    dec_lines += [
        "    message = _new(Message)",
        "    message.__dict__ = values  # what Message(**values) does, without the keywords",
        "    return message",
    ]
    exec(
        compile("\n".join(dec_lines) + "\n" + "\n".join(enc_lines) + "\n", "<codec plan>", "exec"),
        env,
    )
    return env["encode"], env["decode"]


# --- public API ------------------------------------------------------------------------


def encode(fields: tuple[Field, ...], version: int, flexible: bool, value: Any) -> bytes:
    out = bytearray()
    _plan(fields, version, flexible)[0](out, value)
    return bytes(out)


def encode_parts(
    fields: tuple[Field, ...], version: int, flexible: bool, value: Any, head: bytes = b""
) -> list[bytes | bytearray | Deferred]:
    """The encoded message as parts: byte strings, and Deferred records in their places.
    ``head``: bytes the first part starts with (a frame's length and response header, so
    the answer is not copied once more behind them)."""
    out = _Parts(head)
    if isinstance(value, Encoded):
        out += value
        return [out]
    _plan(fields, version, flexible)[0](out, value)
    if not out.deferred:
        return [out]
    parts: list[bytes | bytearray | Deferred] = []
    last = 0
    for pos, deferred in out.deferred:
        parts.append(out[last:pos])
        parts.append(deferred)
        last = pos
    parts.append(out[last:])
    return parts


def encode_into(
    out: bytearray, fields: tuple[Field, ...], version: int, flexible: bool, value: Any
) -> None:
    _plan(fields, version, flexible)[0](out, value)


def decode(
    fields: tuple[Field, ...], version: int, flexible: bool, reader: Reader, *, exact: bool = True
) -> Message:
    """Decode one message; with ``exact`` the reader must then be exhausted."""
    try:
        msg: Message = _plan(fields, version, flexible)[1](reader)
    except DecodeError:
        raise
    except (ValueError, IndexError) as exc:
        raise DecodeError(str(exc)) from None
    if exact and reader.remaining:
        raise DecodeError(f"{reader.remaining} bytes left after the message")
    return msg


def encode_request(api_: Api, version: int, value: Any) -> bytes:
    return encode(api_.request, version, api_.is_flexible(version), value)


def encode_response(api_: Api, version: int, value: Any) -> bytes:
    return encode(api_.response, version, api_.is_flexible(version), value)


def decode_request(api_: Api, version: int, data: bytes | memoryview) -> Message:
    return decode(api_.request, version, api_.is_flexible(version), Reader(data))


def decode_response(api_: Api, version: int, data: bytes | memoryview) -> Message:
    return decode(api_.response, version, api_.is_flexible(version), Reader(data))
