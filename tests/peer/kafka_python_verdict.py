"""The must-pass and excluded lists of kafka-python's integration tests, and the verdict.

`kafka-python.must-pass`: one pytest node id a line; each must pass against minikafka.
`kafka-python.excluded`: `<node id>  # <the Kafka behaviour it needs, or why it cannot run>`.
Blank lines and lines starting with `#` are comments in both files.

The verdict fails on a must-pass test that did not pass and on a test the suite ran that
neither list names (a new kafka-python version must be sorted into the lists, not
silently ignored). An excluded test that passes is reported, so it can be promoted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

OUTCOMES = ("passed", "failed", "error", "skipped")


def read_must_pass(path: Path) -> list[str]:
    return _content_lines(path)


def read_excluded(path: Path) -> dict[str, str]:
    """Node id -> reason. A line without a reason is refused: every exclusion says why."""
    excluded: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        node_id, sep, reason = text.partition(" #")
        if not sep or not reason.strip():
            raise ValueError(f"{path.name}:{number}: no '# reason' after {node_id.strip()!r}")
        excluded[node_id.strip()] = reason.strip()
    return excluded


def _content_lines(path: Path) -> list[str]:
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


@dataclass
class Verdict:
    counts: Counter[str]
    must_pass_not_passing: dict[str, str] = field(default_factory=dict)
    unlisted: dict[str, str] = field(default_factory=dict)
    excluded_now_passing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.must_pass_not_passing or self.unlisted or self.problems)


def judge(outcomes: dict[str, str], must_pass: list[str], excluded: dict[str, str]) -> Verdict:
    verdict = Verdict(counts=Counter(outcomes.values()))
    for node_id in sorted(set(must_pass) & set(excluded)):
        verdict.problems.append(f"listed as both must-pass and excluded: {node_id}")
    for node_id, seen in Counter(must_pass).items():
        if seen > 1:
            verdict.problems.append(f"listed {seen} times as must-pass: {node_id}")
    for node_id in must_pass:
        outcome = outcomes.get(node_id, "not run")
        if outcome != "passed":
            verdict.must_pass_not_passing[node_id] = outcome
    listed = set(must_pass) | set(excluded)
    for node_id, outcome in sorted(outcomes.items()):
        if node_id not in listed:
            verdict.unlisted[node_id] = outcome
        elif node_id in excluded and outcome == "passed":
            verdict.excluded_now_passing.append(node_id)
    return verdict


def summary_line(counts: Counter[str]) -> str:
    total = sum(counts.values())
    parts = ", ".join(f"{counts.get(name, 0)} {name}" for name in OUTCOMES)
    return f"{parts} ({total} run)"


def report(verdict: Verdict, excluded: dict[str, str]) -> list[str]:
    """The lines the CI log shows after the counts."""
    lines: list[str] = []
    for problem in verdict.problems:
        lines.append(f"LIST ERROR: {problem}")
    for node_id, outcome in verdict.must_pass_not_passing.items():
        lines.append(f"MUST-PASS {outcome.upper()}: {node_id}")
    for node_id, outcome in verdict.unlisted.items():
        lines.append(f"NOT IN ANY LIST ({outcome}): {node_id}")
    for node_id in verdict.excluded_now_passing:
        lines.append(
            f"now passes, move it to kafka-python.must-pass: {node_id} ({excluded[node_id]})"
        )
    return lines
