"""Prometheus' text exposition format (version 0.0.4), written by hand: the broker takes no
dependency for it. A family is one ``# HELP``/``# TYPE`` block and its samples; a counter's
samples end in ``_total`` as the JMX exporter names Kafka's meter counts, a histogram has
cumulative ``_bucket`` samples up to ``le="+Inf"``, then ``_sum`` and ``_count``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass
class Family:
    name: str
    kind: str  # counter | gauge | histogram
    help: str
    # (name suffix, labels as written between the braces, value): suffix "" for plain
    # samples, "_bucket", "_sum", "_count". Only strings and numbers, so the garbage collector
    # untracks each tuple at its first pass: nested label tuples outlived it into its older
    # generations, and a scrape of thousands made it scan the broker's whole heap.
    samples: list[tuple[str, str, float]] = field(default_factory=list)

    def add(self, value: float, **labels: str) -> None:
        self.samples.append(("", _labels(labels), value))

    def add_histogram(
        self, bounds: Sequence[float], counts: Sequence[int], total: float, **labels: str
    ) -> None:
        """``counts``: per bucket (not cumulative), one more than ``bounds`` (the rest)."""
        base = _labels(labels)
        before = f"{base}," if base else ""
        running = 0
        for bound, count in zip([*bounds, math.inf], counts, strict=True):
            running += count
            self.samples.append(("_bucket", f'{before}le="{_number(bound)}"', running))
        self.samples.append(("_sum", base, total))
        self.samples.append(("_count", base, running))


def render(families: Iterable[Family]) -> str:
    out: list[str] = []
    for family in families:
        out.append(f"# HELP {family.name} {_escape_help(family.help)}")
        out.append(f"# TYPE {family.name} {family.kind}")
        for suffix, labels, value in family.samples:
            if labels:
                out.append(f"{family.name}{suffix}{{{labels}}} {_number(value)}")
            else:
                out.append(f"{family.name}{suffix} {_number(value)}")
    return "\n".join(out) + "\n"


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels.items())


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return repr(float(value))


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")
