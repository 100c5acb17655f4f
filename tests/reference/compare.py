"""Comparing what clients saw of Kafka and of us, after normalising what legitimately differs.

Structured results (dicts and lists, as a scenario collects them) go through the oracle
replay's Differ (tests/oracle/replay.py): ids the broker assigns (producer ids, topic ids,
member ids) are mapped Kafka -> ours the first time they are seen and must stay consistent,
broker-clock timestamps and ports are ignored, lists are matched by their natural key.
Command-line output is compared as text with ids, ports, times and rates masked.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# kafka-python's protocol modules use deprecated importlib.resources calls, which the test
# configuration turns into errors.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from tests.oracle.replay import Differ, IdMaps, RecordsValue

__all__ = ["Known", "RecordsValue", "assert_same", "differences", "normalise_text"]


def differences(kafka: Any, ours: Any, api_key: int = -1) -> list[str]:
    """``path: kafka=X ours=Y`` for each field that differs after normalisation."""
    differ = Differ(IdMaps(), api_key, recorded_at_ms=time.time() * 1000)
    differ.diff({"result": _plain(kafka)}, {"result": _plain(ours)})
    return [f"{path}: kafka={k} ours={b}" for path, k, b, _transient in differ.out]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, RecordsValue):
        return value
    return value


@dataclass(frozen=True)
class Known:
    """A difference we keep, with its reason (docs/REFERENCE.md lists them all)."""

    pattern: str
    reason: str

    def matches(self, line: str) -> bool:
        return re.search(self.pattern, line) is not None


def unexplained(diffs: Iterable[str], known: Iterable[Known]) -> list[str]:
    known = list(known)
    return [d for d in diffs if not any(k.matches(d) for k in known)]


def assert_same(kafka: Any, ours: Any, known: Iterable[Known] = (), api_key: int = -1) -> None:
    diffs = differences(kafka, ours, api_key)
    left = unexplained(diffs, known)
    assert not left, "differences from Apache Kafka:\n" + "\n".join(left)


# Command-line output: what differs between any two runs of the same tool.
_TEXT_RULES: list[tuple[re.Pattern[str], str]] = [
    # The console consumer's own group when none is given: a random number (with the column
    # padding that follows it, whose width depends on the number's).
    (re.compile(r"console-consumer-\d+ *"), "console-consumer-<n> "),
    (re.compile(r"(127\.0\.0\.1|localhost|0\.0\.0\.0):\d+"), r"\1:<port>"),
    # Kafka's Uuid string form (topic ids, cluster ids, directory ids).
    (re.compile(r"(?<![\w-])[A-Za-z0-9_-]{22}(?![\w-])"), "<uuid>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"(?<=/)127\.0\.0\.1"), "<host>"),
]


def normalise_text(text: str, extra: Iterable[tuple[str, str]] = ()) -> str:
    for regex, repl in _TEXT_RULES:
        text = regex.sub(repl, text)
    for pattern, repl in extra:
        text = re.sub(pattern, repl, text)
    return text
