"""Value kinds of the property table: how a raw string becomes a value, and validators
(Kafka's ConfigDef types and validators, with its error texts)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.security import scram_bootstrap
from broker.security.scram_bootstrap import BootstrapUser


@dataclass(frozen=True)
class Kind:
    """How a raw string becomes a value; ``parse`` raises ValueError with a reason."""

    name: str
    parse: Callable[[str], Any]


INT_RE = re.compile(r"[+-]?[0-9]+")


def _java_integer(bits: int) -> Callable[[str], int]:
    """Kafka's INT (Integer.parseInt) or LONG (Long.parseLong) on the trimmed value."""
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def parse(raw: str) -> int:
        text = raw.strip()
        if not INT_RE.fullmatch(text):
            raise ValueError(f"{raw!r} is not an integer")
        value = int(text)
        if not low <= value <= high:
            raise ValueError(f"{text} does not fit in a {bits}-bit integer")
        return value

    return parse


_parse_int = _java_integer(32)
_parse_long = _java_integer(64)


def _parse_bool(raw: str) -> bool:
    # Kafka's BOOLEAN type accepts exactly true/false, case-insensitively.
    text = raw.strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise ValueError(f"{raw!r} is not a boolean (expected true or false)")


def _parse_string(raw: str) -> str:
    return raw.strip()


def _parse_optional(raw: str) -> str | None:
    text = raw.strip()
    return text or None


def choice(*options: str) -> Kind:
    canonical = {o.lower(): o for o in options}

    def parse(raw: str) -> str:
        text = raw.strip().lower()
        if text not in canonical:
            raise ValueError(f"{raw.strip()!r} is not one of {', '.join(options)}")
        return canonical[text]

    return Kind("one of " + "|".join(options), parse)


_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def consumer_assignors(raw: str) -> tuple[str, ...]:
    """group.consumer.assignors as assignor names (Kafka takes names or class names)."""
    names = []
    for item in raw.split(","):
        name = _ASSIGNOR_CLASSES.get(item.strip(), item.strip())
        if not name:
            continue
        if name not in ("uniform", "range"):
            raise ValueError(f"{item.strip()!r} is not a known assignor (uniform, range)")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("at least one assignor is required")
    return tuple(names)


def check_assignors(raw: str) -> None:
    consumer_assignors(raw)


def at_least(minimum: int) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if value < minimum:
            raise ValueError(f"{value} is below the minimum of {minimum}")

    return check


def _log_level(raw: str) -> str:
    text = raw.strip().upper()
    if text == "WARN":  # log4j spelling, as Kafka users write it
        text = "WARNING"
    if text not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ValueError(f"{raw.strip()!r} is not one of DEBUG, INFO, WARNING, ERROR")
    return text


def _log_dirs(raw: str) -> str:
    dirs = [d.strip() for d in raw.split(",") if d.strip()]
    if not dirs:
        raise ValueError("a log directory is required")
    if len(dirs) > 1:
        raise ValueError(
            f"minikafka supports a single log directory, got {len(dirs)}: {', '.join(dirs)}"
        )
    return dirs[0]


def scram_users(raw: str) -> tuple[BootstrapUser, ...]:
    return tuple(scram_bootstrap.parse(raw))


def parse_ip_overrides(raw: str) -> tuple[tuple[str, int], ...]:
    """Kafka's getMap: 'host:count' pairs, comma-separated (the count after the last ':')."""
    pairs: list[tuple[str, int]] = []
    for item in raw.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host.strip():
            raise ValueError(f"{item!r} is not host:count")
        pairs.append((host.strip(), _parse_int(count)))
    return tuple(pairs)


INT = Kind("int", _parse_int)
LONG = Kind("long", _parse_long)


def _parse_double(raw: str) -> float:
    """Kafka's DOUBLE (Double.parseDouble on the trimmed value)."""
    try:
        return float(raw.strip())
    except ValueError:
        raise ValueError(f"{raw.strip()!r} is not a number") from None


DOUBLE = Kind("double", _parse_double)
BOOLEAN = Kind("boolean", _parse_bool)
STRING = Kind("string", _parse_string)
OPTIONAL_STRING = Kind("string", _parse_optional)
LIST = Kind("list", _parse_string)  # comma-separated; parsed where it is used
LOG_LEVEL = Kind("one of DEBUG|INFO|WARNING|ERROR", _log_level)
LOG_DIR = Kind("path", _log_dirs)
