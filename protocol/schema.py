"""The vocabulary to describe a Kafka message once for all of its versions.

A message is a tuple of ``Field``s. Each field names the versions it exists in, the versions
in which it may be null, and (for flexible versions) an optional tag. This mirrors Apache
Kafka's JSON message specs (clients/src/main/resources/common/message/*.json) so a
description can be checked against them line by line; field names are Kafka's, snake_cased.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

INF = 0x7FFF


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; ``Versions.parse("3+")``, ``"0-9"``, ``"none"``."""

    low: int
    high: int

    @classmethod
    def parse(cls, spec: str | None) -> Versions:
        if spec is None or spec == "none":
            return NO_VERSIONS
        if spec.endswith("+"):
            return cls(int(spec[:-1]), INF)
        if "-" in spec:
            lo, hi = spec.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(spec), int(spec))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high


NO_VERSIONS = Versions(1, 0)


class Type:
    """Base for field types. Primitive types are the module-level singletons below."""

    name: str = "?"

    def __repr__(self) -> str:
        return self.name


class Primitive(Type):
    def __init__(self, name: str, default: Any) -> None:
        self.name = name
        self.default = default


BOOL = Primitive("bool", False)
INT8 = Primitive("int8", 0)
INT16 = Primitive("int16", 0)
UINT16 = Primitive("uint16", 0)
INT32 = Primitive("int32", 0)
UINT32 = Primitive("uint32", 0)
INT64 = Primitive("int64", 0)
FLOAT64 = Primitive("float64", 0.0)
STRING = Primitive("string", "")
BYTES = Primitive("bytes", b"")
UUID = Primitive("uuid", b"\x00" * 16)
# A RecordBatch blob: encoded like nullable bytes, decoded as a zero-copy memoryview.
RECORDS = Primitive("records", None)


class Struct(Type):
    """A nested structure (Kafka's struct-typed field or array element)."""

    def __init__(self, *fields: Field, name: str = "struct") -> None:
        self.fields = fields
        self.name = name


class Array(Type):
    def __init__(self, item: Type | tuple[Field, ...]) -> None:
        self.item: Type = Struct(*item) if isinstance(item, tuple) else item
        self.name = f"[]{self.item.name}"


def array(*fields: Field) -> Array:
    """An array of structs: ``array(field(...), field(...))``."""
    return Array(Struct(*fields))


_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: Type
    versions: Versions
    nullable: Versions = NO_VERSIONS
    tag: int | None = None
    tagged: Versions = NO_VERSIONS
    default: Any = _UNSET

    def default_value(self) -> Any:
        if self.default is not _UNSET:
            return self.default
        if isinstance(self.type, Array):
            return []
        if isinstance(self.type, Struct):
            return Message.defaults(self.type.fields)
        assert isinstance(self.type, Primitive)
        return self.type.default


def f(
    name: str,
    type_: Type,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    tag: int | None = None,
    tagged: str | None = None,
    default: Any = _UNSET,
) -> Field:
    """Shorthand used by the message descriptions in protocol.messages."""
    return Field(
        name=name,
        type=type_,
        versions=Versions.parse(versions),
        nullable=Versions.parse(nullable),
        tag=tag,
        tagged=Versions.parse(
            tagged if tagged is not None else (versions if tag is not None else None)
        ),
        default=default,
    )


class Message:
    """A decoded message or struct: attributes named like the fields.

    Handlers build responses as ``Message(field=value, ...)``; missing fields encode as their
    defaults. Plain dicts are accepted by the encoder too.
    """

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"Message({inner})"

    def get(self, name: str, default: Any = None) -> Any:
        return self.__dict__.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        def conv(v: Any) -> Any:
            if isinstance(v, Message):
                return v.to_dict()
            if isinstance(v, list):
                return [conv(x) for x in v]
            return v

        return {k: conv(v) for k, v in self.__dict__.items()}

    @staticmethod
    def defaults(fields: tuple[Field, ...]) -> Message:
        return Message(**{fl.name: fl.default_value() for fl in fields})


@dataclass(frozen=True)
class Api:
    """One Kafka API: request and response described together, for all versions."""

    key: int
    name: str
    versions: Versions
    flexible: Versions
    request: tuple[Field, ...]
    response: tuple[Field, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def request_header_version(self, version: int) -> int:
        return 2 if version in self.flexible else 1

    def response_header_version(self, version: int) -> int:
        # ApiVersions answers always use response header v0, so a client that does not yet
        # know the broker's versions can still read the correlation id (KIP-511).
        if self.key == 18:
            return 0
        return 1 if version in self.flexible else 0


def api(
    key: int,
    name: str,
    versions: str,
    flexible: str,
    request: tuple[Field, ...],
    response: tuple[Field, ...],
) -> Api:
    return Api(key, name, Versions.parse(versions), Versions.parse(flexible), request, response)
