"""kafka-python 3.0 as an oracle for our message descriptions.

kafka-python generates its protocol classes from Apache Kafka's JSON message specs, so it is an
independent reading of the same source we describe by hand. For every (API, version,
request/response) that both know:

* the descriptions agree field by field (presence, nullability, tag, type, default);
* a generated value encoded by us decodes in kafka-python to the same fields, and the same
  value built as a kafka-python object and encoded there decodes with us to the same fields;
* both encoders produce the same bytes (both are deterministic: tagged fields in tag order,
  defaults omitted).

Only the intersection of version ranges is tested: kafka-python's JSON may describe versions
newer than Kafka 4.0 (Produce 13, Fetch 18, InitProducerId 6) which we do not serve. The cases
come from ``ALL_APIS``, so an API added there is covered here if kafka-python knows it.
"""

from __future__ import annotations

import importlib
import uuid
import warnings
from typing import Any

import pytest

from protocol.api_keys import ALL_APIS
from protocol.schema import BYTES, RECORDS, UUID, Api, Array, Field, Message, Primitive, Struct
from tests.support.values import (
    ValueGenerator,
    api_versions,
    decode_side,
    defaults_message,
    encode_side,
    fields_of,
    get_field,
    is_present,
    plain,
    same_value,
)

with warnings.catch_warnings():
    # kafka-python 3.0 loads its JSON specs with importlib.resources.read_text, deprecated
    # in Python 3.11; the warning fires once, when the message classes are created at import.
    warnings.simplefilter("ignore", DeprecationWarning)
    for _module in ("admin", "consumer", "metadata", "producer", "sasl"):
        importlib.import_module(f"kafka.protocol.{_module}")
    from kafka.protocol.api_message import ApiMessage  # type: ignore[import-untyped]
    from kafka.protocol.schemas.fields import (  # type: ignore[import-untyped]
        ArrayField,
        SimpleField,
        StructArrayField,
        StructField,
    )
    from kafka.protocol.schemas.fields.codecs import BitField  # type: ignore[import-untyped]

# kafka-python's MetadataResponse.json_patch renames both authorized-operations fields to
# ``authorized_operations`` and decodes them as a set of bit positions (None for Kafka's
# "not requested" value, INT32_MIN, which is bit 31 alone).
ALIASES = {
    "topic_authorized_operations": "authorized_operations",
    "cluster_authorized_operations": "authorized_operations",
}
INT32_MIN = -(2**31)


def _kp_classes() -> dict[tuple[int, str], Any]:
    found: dict[tuple[int, str], Any] = {}
    todo = list(ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        # Versioned wrappers (MetadataRequest[3]) are subclasses too; keep the primary class.
        if getattr(cls, "_class_version", None) is None:
            found[(cls.API_KEY, cls.type)] = cls
    return found


KP_CLASSES = _kp_classes()


def _intersection(api_: Api, kp_cls: Any) -> range:
    # kafka-python encodes from version 0 up, whatever the JSON's validVersions floor: Kafka
    # 4.0 dropped Produce v0-2 from validVersions but still annotates their fields ("Version 1
    # and 2 are the same as version 0") and still advertises them (KAFKA-18659), so they are
    # compared too. The ceiling is the JSON's: newer versions are not ours to serve.
    ours = api_versions(api_)
    return range(max(kp_cls.min_version, ours.start), min(kp_cls.max_version + 1, ours.stop))


COMMON: list[tuple[Api, int, str]] = [
    (api_, version, side)
    for api_ in ALL_APIS.values()
    for side in ("request", "response")
    if (api_.key, side) in KP_CLASSES
    for version in _intersection(api_, KP_CLASSES[(api_.key, side)])
]

# Cases where kafka-python and we disagree and our description is known to be wrong, as
# {case id: reason}; they run as xfail(strict=True) so that a fix is noticed. None known.
KNOWN_WRONG: dict[str, str] = {}


def _case(api_: Api, version: int, side: str) -> Any:
    case_id = f"{api_.name}-v{version}-{side}"
    reason = KNOWN_WRONG.get(case_id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(api_, version, side, id=case_id, marks=marks)


CASES = [_case(*common) for common in COMMON]


# --- walking both descriptions side by side ------------------------------------------


def _kp_field(kp_fields: dict[str, Any], fl: Field) -> Any:
    kf = kp_fields.get(fl.name)
    if kf is None:
        kf = kp_fields.get(ALIASES.get(fl.name, ""))
    return kf


def _kp_present(kf: Any, version: int, flexible: bool) -> bool:
    if not kf.for_version_q(version):
        return False
    return flexible or not kf.tagged_field_q(version)


def _type_shape(t: Any) -> str:
    """Our type as a short string, comparable with ``_kp_shape``."""
    if isinstance(t, Struct):
        return "struct"
    if isinstance(t, Array):
        return "[]struct" if isinstance(t.item, Struct) else f"[]{t.item.name}"
    return str(t.name)


def _kp_shape(kf: Any) -> str:
    if isinstance(kf, StructArrayField):
        return "[]struct"
    if isinstance(kf, StructField):
        return "struct"
    if isinstance(kf, ArrayField):
        return f"[]{_kp_shape(kf.array_of)}"
    assert isinstance(kf, SimpleField)
    return "int32" if kf._type is BitField else str(kf._type_str)


def _kp_subfields(kf: Any) -> dict[str, Any]:
    return dict(kf.fields)


def structure_mismatches(
    fields: tuple[Field, ...],
    kp_fields: dict[str, Any],
    version: int,
    flexible: bool,
    path: str = "",
) -> list[str]:
    problems: list[str] = []
    matched: set[str] = set()
    for fl in fields:
        where = f"{path}{fl.name}"
        ours = is_present(fl, version, flexible)
        kf = _kp_field(kp_fields, fl)
        theirs = kf is not None and _kp_present(kf, version, flexible)
        if kf is not None and theirs:
            matched.add(kf.name)
        if ours != theirs:
            problems.append(f"{where}: present for us {ours}, for kafka-python {theirs}")
            continue
        if not ours:
            continue
        our_null = version in fl.nullable
        if our_null != kf.nullable_for_version_q(version):
            problems.append(f"{where}: nullable for us {our_null}, for kafka-python not")
        our_tag = fl.tag if fl.tag is not None and version in fl.tagged else None
        kp_tag = kf.tag if kf.tagged_field_q(version) else None
        if our_tag != kp_tag:
            problems.append(f"{where}: tag {our_tag} for us, {kp_tag} for kafka-python")
        if _type_shape(fl.type) != _kp_shape(kf):
            problems.append(f"{where}: type {_type_shape(fl.type)} vs {_kp_shape(kf)}")
            continue
        if isinstance(fl.type, Primitive) and fl.type is not RECORDS:
            # kafka-python's records default is b"" where Kafka's generated Java uses null;
            # records are nullable on the wire in every version, so only primitives compare.
            ours_default = _to_kp(fl.type, kf, version, fl.default_value())
            if ours_default != kf.default:
                problems.append(f"{where}: default {ours_default!r} vs {kf.default!r}")
        sub = _struct_of(fl.type)
        if sub is not None:
            problems += structure_mismatches(
                sub.fields, _kp_subfields(kf), version, flexible, f"{where}."
            )
    for name, kf in kp_fields.items():
        if name not in matched and _kp_present(kf, version, flexible):
            problems.append(f"{path}{name}: only kafka-python has it at v{version}")
    return problems


def _struct_of(t: Any) -> Struct | None:
    if isinstance(t, Struct):
        return t
    if isinstance(t, Array) and isinstance(t.item, Struct):
        return t.item
    return None


# --- values: ours -> kafka-python objects, kafka-python objects -> our plain form ----------


def _to_kp(t: Any, kf: Any, version: int, v: Any) -> Any:
    if v is None:
        return None
    sub = _struct_of(t)
    if isinstance(t, Array):
        item_kf = kf if sub is not None else kf.array_of
        return [_to_kp(t.item, item_kf, version, x) for x in v]
    if sub is not None:
        return _kp_struct(sub.fields, _kp_subfields(kf), kf.data_class, version, v)
    if t is UUID:
        data = bytes(v)
        return None if data == bytes(16) else uuid.UUID(bytes=data)
    if kf._type is BitField:
        bits = BitField.from_32_bit_field(v & 0xFFFFFFFF)
        return None if bits == {31} else bits
    if t in (BYTES, RECORDS):
        return bytes(v)
    return v


def _kp_struct(
    fields: tuple[Field, ...], kp_fields: dict[str, Any], data_class: Any, version: int, v: Any
) -> Any:
    values = {}
    for fl in fields:
        if version not in fl.versions:
            continue
        kf = _kp_field(kp_fields, fl)
        item = get_field(v, fl.name, fl.default_value())
        if fl.tag is not None and same_value(item, fl.default_value()):
            # Left unset, kafka-python uses its own default (None for a struct) and, like
            # Kafka, does not write the tagged field.
            continue
        values[kf.name] = _to_kp(fl.type, kf, version, item)
    return data_class(version=version, **values)


def _from_kp(t: Any, kf: Any, version: int, flexible: bool, v: Any, nullable: bool) -> Any:
    sub = _struct_of(t)
    if v is None:
        if isinstance(t, Struct) and not nullable:
            # kafka-python leaves an absent tagged struct as None; ours is the struct of defaults.
            return plain(t.fields, version, flexible, Message())
        if t is UUID:
            return bytes(16)
        if kf is not None and isinstance(kf, SimpleField) and kf._type is BitField:
            return INT32_MIN
        return None
    if isinstance(t, Array):
        item_kf = kf if sub is not None else kf.array_of
        return [_from_kp(t.item, item_kf, version, flexible, x, False) for x in v]
    if sub is not None:
        return kp_plain(sub.fields, _kp_subfields(kf), version, flexible, v)
    if t is UUID:
        return v.bytes
    if isinstance(kf, SimpleField) and kf._type is BitField:
        return BitField.to_32_bit_field(v) - (2**32 if 31 in v else 0)
    if isinstance(v, memoryview | bytearray):
        return bytes(v)
    return v


def kp_plain(
    fields: tuple[Field, ...], kp_fields: dict[str, Any], version: int, flexible: bool, obj: Any
) -> dict[str, Any]:
    """A kafka-python object in the shape ``tests.support.values.plain`` gives our values."""
    out: dict[str, Any] = {}
    for fl in fields:
        if not is_present(fl, version, flexible):
            continue
        kf = _kp_field(kp_fields, fl)
        out[fl.name] = _from_kp(
            fl.type, kf, version, flexible, getattr(obj, kf.name), version in fl.nullable
        )
    if getattr(obj, "unknown_tags", None):
        out["_unknown_tagged_fields"] = obj.unknown_tags
    return out


# --- encode/decode on both sides -----------------------------------------------------------


def _kp_decode(kp_cls: Any, version: int, data: bytes) -> Any:
    # The generic decoder, not ApiMessage.decode: ApiVersionsResponse.decode re-reads any body
    # with a non-zero error code as v0 (Kafka's fallback for UNSUPPORTED_VERSION), which is a
    # client policy, not the format. Also checks that kafka-python consumed every byte.
    flexible = kp_cls.flexible_version_q(version)
    decode_from = kp_cls._struct.compiled_decode_from(
        version, compact=flexible, tagged=flexible, data_class=kp_cls
    )
    obj, pos = decode_from(memoryview(data), 0)
    assert pos == len(data), f"kafka-python read {pos} of {len(data)} bytes"
    obj._header = None  # ApiMessage.decode sets it; encode() reads it
    return obj


def _kp_build(kp_cls: Any, fields: tuple[Field, ...], version: int, value: Any) -> Any:
    return _kp_struct(fields, dict(kp_cls.fields), kp_cls, version, value)


def _samples(api_: Api, version: int, side: str) -> list[Message]:
    fields = fields_of(api_, side)
    flexible = api_.is_flexible(version)
    values = [
        ValueGenerator(f"oracle/{api_.key}/{version}/{side}/{seed}").message(
            fields, version, flexible
        )
        for seed in range(4)
    ]
    return [*values, defaults_message(fields, version, flexible)]


# --- tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("api_", "version", "side"), CASES)
def test_description_matches_kafka_json(api_: Api, version: int, side: str) -> None:
    kp_cls = KP_CLASSES[(api_.key, side)]
    assert kp_cls.flexible_version_q(version) == api_.is_flexible(version)
    problems = structure_mismatches(
        fields_of(api_, side), dict(kp_cls.fields), version, api_.is_flexible(version)
    )
    assert problems == []


@pytest.mark.parametrize(("api_", "version", "side"), CASES)
def test_ours_encoded_decodes_in_kafka_python(api_: Api, version: int, side: str) -> None:
    kp_cls = KP_CLASSES[(api_.key, side)]
    fields = fields_of(api_, side)
    flexible = api_.is_flexible(version)
    for value in _samples(api_, version, side):
        data = encode_side(api_, version, side, value)
        obj = _kp_decode(kp_cls, version, data)
        expected = plain(fields, version, flexible, value)
        assert kp_plain(fields, dict(kp_cls.fields), version, flexible, obj) == expected
        # kafka-python re-encoding what it decoded gives our bytes back.
        assert bytes(obj.encode(version=version)) == data


@pytest.mark.parametrize(("api_", "version", "side"), CASES)
def test_kafka_python_encoded_decodes_with_ours(api_: Api, version: int, side: str) -> None:
    kp_cls = KP_CLASSES[(api_.key, side)]
    fields = fields_of(api_, side)
    flexible = api_.is_flexible(version)
    for value in _samples(api_, version, side):
        kp_data = bytes(_kp_build(kp_cls, fields, version, value).encode(version=version))
        decoded = decode_side(api_, version, side, kp_data)
        assert plain(fields, version, flexible, decoded) == plain(fields, version, flexible, value)
        assert encode_side(api_, version, side, value) == kp_data


def test_oracle_covers_every_api_kafka_python_knows() -> None:
    # Guards the harness itself: an API that kafka-python knows must yield cases.
    covered = {(api_.key, side) for api_, _, side in COMMON}
    for api_ in ALL_APIS.values():
        for side in ("request", "response"):
            if (api_.key, side) in KP_CLASSES:
                assert (api_.key, side) in covered, f"{api_.name} {side}: no common versions"
