"""The peer-test verdict for kafka-python's suite, and the consistency of its two lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peer.kafka_python_verdict import judge, read_excluded, read_must_pass, summary_line
from tests.peer.run_kafka_python import KAFKA_4_0_PASSED, broker_error_lines

PEER_DIR = Path(__file__).parent
MUST_PASS = PEER_DIR / "kafka-python.must-pass"
EXCLUDED = PEER_DIR / "kafka-python.excluded"


def test_verdict_fails_when_a_must_pass_test_fails_errors_skips_or_is_missing() -> None:
    outcomes = {"a": "passed", "b": "failed", "c": "error", "d": "skipped"}
    verdict = judge(outcomes, ["a", "b", "c", "d", "gone"], {})
    assert not verdict.ok
    assert verdict.must_pass_not_passing == {
        "b": "failed",
        "c": "error",
        "d": "skipped",
        "gone": "not run",
    }


def test_verdict_passes_when_must_pass_tests_pass_and_excluded_ones_fail() -> None:
    verdict = judge({"a": "passed", "x": "failed"}, ["a"], {"x": "needs transactions"})
    assert verdict.ok
    assert verdict.counts == {"passed": 1, "failed": 1}


def test_verdict_fails_on_a_test_in_neither_list() -> None:
    verdict = judge({"a": "passed", "new": "passed"}, ["a"], {})
    assert not verdict.ok
    assert verdict.unlisted == {"new": "passed"}


def test_verdict_reports_an_excluded_test_that_now_passes_without_failing() -> None:
    verdict = judge({"a": "passed", "x": "passed"}, ["a"], {"x": "needs ElectLeaders"})
    assert verdict.ok
    assert verdict.excluded_now_passing == ["x"]


def test_verdict_fails_on_a_test_listed_twice() -> None:
    assert not judge({"a": "passed"}, ["a"], {"a": "why"}).ok
    assert not judge({"a": "passed"}, ["a", "a"], {}).ok


def test_excluded_line_without_a_reason_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "excluded"
    path.write_text("# comment\n\ntest/x.py::test_a  # needs ACLs\ntest/x.py::test_b\n")
    with pytest.raises(ValueError, match="test_b"):
        read_excluded(path)


def test_summary_line_counts_every_outcome() -> None:
    verdict = judge({"a": "passed", "b": "passed", "c": "skipped"}, [], {})
    assert summary_line(verdict.counts) == "2 passed, 0 failed, 0 error, 1 skipped (3 run)"


def test_committed_lists_are_disjoint_and_every_exclusion_has_a_reason() -> None:
    must_pass = read_must_pass(MUST_PASS)
    excluded = read_excluded(EXCLUDED)
    assert len(set(must_pass)) == len(must_pass)
    assert not set(must_pass) & set(excluded)
    assert all(node_id.startswith("test/integration/") for node_id in [*must_pass, *excluded])


def test_must_pass_plus_excluded_tests_kafka_passes_are_kafkas_count() -> None:
    # Issue 12 measured 54 passes on Kafka 4.0. Every one is either must-pass here or
    # excluded as "passes on Kafka 4.0; needs ..."; a list that disagrees is out of date.
    excluded = read_excluded(EXCLUDED)
    kafka_only = [r for r in excluded.values() if r.startswith("passes on Kafka 4.0; needs ")]
    others = [r for r in excluded.values() if r.startswith("not passed on Kafka 4.0 either: ")]
    assert len(kafka_only) + len(others) == len(excluded)
    assert len(read_must_pass(MUST_PASS)) + len(kafka_only) == KAFKA_4_0_PASSED


def test_broker_log_errors_tracebacks_and_criticals_are_picked_out() -> None:
    error = "2026-01-01 10:00:02,000 ERROR [broker.net.connection] handler failed"
    traceback = "Traceback (most recent call last):"
    critical = "2026-01-01 10:00:03,000 CRITICAL [broker.lifecycle.server] giving up"
    log = "\n".join(
        [
            "2026-01-01 10:00:00,000 INFO [broker.lifecycle.server] minikafka started",
            "2026-01-01 10:00:01,000 WARNING [broker.cli] unknown property 'x' is ignored",
            error,
            traceback,
            critical,
        ]
    )
    assert broker_error_lines(log) == [error, traceback, critical]
