"""Where properties come from: Java ``.properties`` text, ``KAFKA_*`` environment
variables (as the apache/kafka image maps them) and ``--override`` flags."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from broker.config.model import ConfigError


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text as ``java.util.Properties.load`` does.

    Handles ``=``, ``:`` and whitespace separators, ``#``/``!`` comments, backslash
    line continuation and escapes (``\\t``, ``\\n``, ``\\uXXXX``, ``\\x`` -> ``x``).
    A repeated key keeps its last value, as in Java.
    """
    result: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        # An odd number of trailing backslashes joins the next line, minus its indent.
        while _ends_with_continuation(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        if _ends_with_continuation(line):  # continuation at end of file
            line = line[:-1]
        key, value = _split_key_value(line)
        result[_unescape(key)] = _unescape(value)
    return result


def _ends_with_continuation(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    pos = 0
    while pos < len(line):
        ch = line[pos]
        if ch == "\\":
            pos += 2
            continue
        if ch in "=: \t\f":
            break
        pos += 1
    key = line[:pos]
    rest = line[pos:].lstrip(" \t\f")
    if rest and rest[0] in "=:":
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


# Variables the apache/kafka image reads for the JVM or its scripts, not as properties.
_NON_PROPERTY_ENV = frozenset(
    {
        "KAFKA_VERSION",
        "KAFKA_HOME",
        "KAFKA_HEAP_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS",
        "KAFKA_GC_LOG_OPTS",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
        "KAFKA_JMX_OPTS",
        "KAFKA_JMX_HOSTNAME",
        "KAFKA_JMX_PORT",
        "KAFKA_DEBUG",
        "KAFKA_LOG_DIR",  # kafka-run-class.sh: where the JVM's own log files go
    }
)
_PLAUSIBLE_KEY = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")


def env_var_to_property(var: str) -> str | None:
    """Map ``KAFKA_LOG_DIRS`` to ``log.dirs``; None if the variable is not a property.

    The apache/kafka image turns ``___`` into ``-``, ``__`` into ``_`` and ``_`` into
    ``.``, in that order, and lower-cases the result.
    """
    if not var.startswith("KAFKA_") or var.upper() in _NON_PROPERTY_ENV:
        return None
    body = var[len("KAFKA_") :].replace("___", "-").replace("__", "\0").replace("_", ".")
    name = body.replace("\0", "_").lower()
    return name if _PLAUSIBLE_KEY.fullmatch(name) else None


def env_properties(env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Property name -> (value, variable that set it)."""
    found: dict[str, tuple[str, str]] = {}
    # The apache/kafka image formats storage with CLUSTER_ID; KAFKA_CLUSTER_ID wins.
    if env.get("CLUSTER_ID"):
        found["cluster.id"] = (env["CLUSTER_ID"], "environment CLUSTER_ID")
    for var in sorted(env):
        name = env_var_to_property(var)
        if name is not None:
            found[name] = (env[var], f"environment {var}")
    return found


def parse_overrides(overrides: Iterable[str]) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(None, f"--override expects key=value, got {item!r}")
        found[key.strip()] = (value, "--override")
    return found


def read_file(path: str) -> dict[str, tuple[str, str]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(None, f"cannot read properties file {path}: {exc}") from exc
    return {k: (v, f"file {path}") for k, v in parse_properties(text).items()}
