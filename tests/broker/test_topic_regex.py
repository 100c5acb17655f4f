"""topic_regex: RE2/J's syntax rules and descriptions, the size bounds, whole-name matching."""

from __future__ import annotations

import time

import pytest

from broker.coordinator.groups import topic_regex
from broker.coordinator.groups.topic_regex import InvalidRegex, compile_regex, resolve


@pytest.mark.parametrize(
    ("pattern", "description"),
    [
        ("(?=x)", "invalid or unsupported Perl syntax"),
        ("(?<=x)y", "invalid or unsupported Perl syntax"),
        ("(?<name>x)", "invalid or unsupported Perl syntax"),
        ("(a)\\1", "invalid escape sequence"),
        ("\\C", "invalid escape sequence"),
        ("(?P<n>a)(?P<n>b)", "duplicate capture group name"),
        ("a**", "invalid nested repetition operator"),
        ("a{1001}", "invalid repeat count"),
        ("(a", "missing closing )"),
        ("[a", "missing closing ]"),
        ("a\\", "trailing backslash at end of expression"),
        ("*a", "missing argument to repetition operator"),
        ("[z-a]", "invalid character class range"),
    ],
)
def test_what_re2j_refuses_is_refused_with_its_description(pattern: str, description: str) -> None:
    with pytest.raises(InvalidRegex) as refused:
        compile_regex(pattern)
    assert refused.value.description == description


def test_re2_syntax_is_accepted_and_matches_whole_names() -> None:
    for pattern in ("(?P<v>orders)\\..*", "\\Qorders.\\E\\pN+", "(?i)ORDERS\\.[[:alnum:]]+"):
        regex = compile_regex(pattern)
        assert regex.matches("orders.1"), pattern
        assert not regex.matches("xorders.1"), pattern
    assert compile_regex("\\Q\\C\\E").matches("\\C")  # literal inside \Q...\E, as in RE2/J


def test_bounds_keep_one_compile_short() -> None:
    with pytest.raises(InvalidRegex, match="longer than"):
        compile_regex("a" * (topic_regex.MAX_PATTERN_LENGTH + 1))
    with pytest.raises(InvalidRegex, match="Unicode classes"):
        compile_regex("\\pL" * (topic_regex.MAX_UNICODE_CLASSES + 1))
    started = time.monotonic()
    with pytest.raises(InvalidRegex, match="too large"):
        compile_regex("(\\pL|\\pN|[._-]){0,30}x")
    assert time.monotonic() - started < 0.5


def test_backtracking_pattern_resolves_in_linear_time() -> None:
    names = [f"orders.v{i}".ljust(249, "x") for i in range(500)] + ["ordersy"]
    started = time.monotonic()
    resolved = resolve(["((.*)*(.*)*)*y", "orders\\..*", "(?=x)"], names)
    assert time.monotonic() - started < 5
    assert resolved["((.*)*(.*)*)*y"] == {"ordersy"}
    assert len(resolved["orders\\..*"]) == 500
    assert resolved["(?=x)"] == frozenset()  # no longer compiles: logged, matches nothing
