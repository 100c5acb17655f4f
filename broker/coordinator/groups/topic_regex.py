"""Subscription regexes (ConsumerGroupHeartbeat's SubscribedTopicRegex) in linear time.

Kafka 4.0 compiles them with RE2/J (com.google.re2j 1.7), whose matching time is linear in the
topic name, and answers INVALID_REGULAR_EXPRESSION with "SubscribedTopicRegex `<regex>` is
not a valid regular expression: <RE2/J's description>." for one that does not compile. Here
google-re2 (the C++ RE2 that RE2/J ports) does the matching; RE2/J's syntax rules are kept by
refusing what RE2/J refuses and C++ RE2 accepts (``\\C``, ``(?<name>``, a capture name used
twice) and by giving C++ RE2's errors RE2/J's descriptions.

Bounds (not in Kafka, whose regexes are only as large as a request): a pattern longer than
``MAX_PATTERN_LENGTH``, with more than ``MAX_UNICODE_CLASSES`` ``\\p``/``\\P`` classes, or
compiling to more than ``MAX_PROGRAM_SIZE`` instructions is refused as invalid. RE2 compiles
holding the GIL, and a Unicode class is its costliest piece (about 0.3 ms each), so one
compile stays within a few milliseconds; one match costs at most about program size x name
length (a topic name has at most 249 characters), and a resolution of R regexes over T topics
at most R x T of those.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import re2

log = logging.getLogger(__name__)

MAX_PATTERN_LENGTH = 2048
MAX_UNICODE_CLASSES = 10
MAX_PROGRAM_SIZE = 10_000
# RE2's memory budget per compiled regex (its DFA cache): a bigger program fails to compile.
MAX_MEMORY_BYTES = 384 << 10

# C++ RE2's error texts (RE2::ErrorCode's) -> RE2/J 1.7's descriptions (Parser.ERR_*).
_RE2J_DESCRIPTIONS = (
    ("invalid escape sequence", "invalid escape sequence"),
    ("invalid character class range", "invalid character class range"),
    ("invalid character class", "invalid character class"),
    ("missing ]", "missing closing ]"),
    ("missing )", "missing closing )"),
    # RE2/J meets a stray ')' with an empty parse stack.
    ("unexpected )", "regexp/syntax: internal error"),
    ("trailing \\", "trailing backslash at end of expression"),
    ("no argument for repetition operator", "missing argument to repetition operator"),
    ("invalid repetition size", "invalid repeat count"),
    ("bad repetition operator", "invalid nested repetition operator"),
    ("invalid perl operator", "invalid or unsupported Perl syntax"),
    ("invalid named capture group", "invalid named capture"),
)


class InvalidRegex(Exception):
    """The pattern does not compile; ``description`` is RE2/J's (PatternSyntaxException's
    getDescription), or the bound it exceeds."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class TopicRegex:
    """One compiled subscription regex; ``matches`` is RE2/J's ``matcher(name).matches()``,
    a match of the whole name."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str, compiled: re2._Regexp) -> None:
        self.pattern = pattern
        self._compiled = compiled

    def matches(self, topic_name: str) -> bool:
        return self._compiled.fullmatch(topic_name) is not None


@functools.cache
def _re2() -> ModuleType:
    """google-re2, imported at the first regex subscription: most brokers never see one."""
    import re2

    module: ModuleType = re2
    return module


def compile_regex(pattern: str) -> TopicRegex:
    """Compile ``pattern`` with RE2/J's syntax rules, or raise InvalidRegex."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidRegex(f"pattern longer than {MAX_PATTERN_LENGTH} characters")
    _refuse_what_re2j_refuses(pattern)
    re2 = _re2()
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_MEMORY_BYTES
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as e:
        raise InvalidRegex(_re2j_description(e)) from None
    except UnicodeEncodeError:  # a lone surrogate: not text RE2/J could hold either
        raise InvalidRegex("invalid UTF-8") from None
    size = compiled.programsize
    if size > MAX_PROGRAM_SIZE:
        raise InvalidRegex(f"pattern too large: {size} instructions, at most {MAX_PROGRAM_SIZE}")
    return TopicRegex(pattern, compiled)


def resolve(
    patterns: Iterable[str], topic_names: Iterable[str], context: str = ""
) -> dict[str, frozenset[str]]:
    """Kafka's refreshRegularExpressions: each pattern -> the topic names it matches. A
    pattern that no longer compiles resolves to nothing (logged, as Kafka does)."""
    compiled: list[TopicRegex] = []
    resolved: dict[str, set[str]] = {}
    for pattern in patterns:
        resolved[pattern] = set()
        try:
            compiled.append(compile_regex(pattern))
        except InvalidRegex as e:
            log.error(
                "%sCouldn't parse regular expression '%s' due to `%s`. Ignoring it.",
                context,
                pattern,
                e.description,
            )
    if compiled:
        for name in topic_names:
            for regex in compiled:
                if regex.matches(name):
                    resolved[regex.pattern].add(name)
    return {pattern: frozenset(names) for pattern, names in resolved.items()}


def _re2j_description(error: re2.error) -> str:
    raw = error.args[0] if error.args else ""
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    for re2_text, re2j_text in _RE2J_DESCRIPTIONS:
        if text.startswith(re2_text):
            return re2j_text
    if text.startswith("pattern too large"):
        return f"pattern too large: over {MAX_MEMORY_BYTES} bytes of program"
    return text


def _refuse_what_re2j_refuses(pattern: str) -> None:
    """RE2/J 1.7's Parser refuses ``\\C`` (any byte) and ``(?<name>...)`` (only
    ``(?P<name>...)``), and a capture name given twice; C++ RE2 takes all three. Also counts
    the Unicode classes against their bound. Walks the pattern as RE2/J's parser does:
    escapes, ``\\Q...\\E`` literals, character classes."""
    names: set[str] = set()
    unicode_classes = 0
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1] if i + 1 < n else ""
            if nxt == "C":
                raise InvalidRegex("invalid escape sequence")
            if nxt in ("p", "P"):
                unicode_classes += 1
                if unicode_classes > MAX_UNICODE_CLASSES:
                    raise InvalidRegex(
                        f"more than {MAX_UNICODE_CLASSES} Unicode classes (\\p, \\P)"
                    )
            if nxt == "Q" and not in_class:
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
                continue
            i += 2
            continue
        if in_class:
            if c == "[" and pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                i = i + 1 if end < 0 else end + 2
                continue
            if c == "]":
                in_class = False
            i += 1
            continue
        if c == "[":
            in_class = True
            i += 1
            # A ']' first in the class (after an optional '^') is a literal.
            if pattern.startswith("^", i):
                i += 1
            if pattern.startswith("]", i):
                i += 1
            continue
        if c == "(" and pattern.startswith("(?", i):
            if pattern.startswith("(?<", i):
                raise InvalidRegex("invalid or unsupported Perl syntax")
            if pattern.startswith("(?P<", i):
                end = pattern.find(">", i + 4)
                if end >= 0:
                    name = pattern[i + 4 : end]
                    if name in names:
                        raise InvalidRegex("duplicate capture group name")
                    names.add(name)
        i += 1
