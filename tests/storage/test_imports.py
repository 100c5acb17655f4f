"""Package boundaries (DESIGN.md): protocol does no I/O; storage stays synchronous and sees
only protocol's record view, error codes and compression."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROTOCOL_FORBIDDEN = (
    "asyncio",
    "socket",
    "storage",
    "broker",
    "logging.config",
    "logging.handlers",
)
LOGGING_SETUP_CALLS = {"basicConfig", "dictConfig", "fileConfig"}
STORAGE_FORBIDDEN = ("asyncio", "broker")
# protocol.uniform_records is part of the record view (the record walk of uniform batches).
# protocol.value_type is dataclass for the values made per request (no I/O, no state).
STORAGE_ALLOWED_PROTOCOL = {
    "protocol.records",
    "protocol.value_type",
    "protocol.uniform_records",
    "protocol.errors",
    "protocol.compression",
}
STORAGE_ALLOWED_THIRD_PARTY = {"crc32c"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import; ``from a import b`` yields ``a.b``."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(p for p in [*base_parts, node.module or ""] if p)
            else:
                base = node.module or ""
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}" if alias.name != "*" else base


def logging_setup_calls(source: str) -> list[int]:
    tree = ast.parse(source)
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in LOGGING_SETUP_CALLS
    ]


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def protocol_violations(source: str, module: str, is_package: bool = False) -> list[str]:
    problems = [
        f"line {line}: imports {name}"
        for line, name in imported_modules(source, module, is_package)
        if any(_under(name, bad) for bad in PROTOCOL_FORBIDDEN)
    ]
    problems += [f"line {line}: sets up logging" for line in logging_setup_calls(source)]
    return problems


def storage_violations(source: str, module: str, is_package: bool = False) -> list[str]:
    problems = []
    for line, name in imported_modules(source, module, is_package):
        top = name.split(".")[0]
        if any(_under(name, bad) for bad in STORAGE_FORBIDDEN):
            ok = False
        elif top == "protocol":
            ok = any(_under(name, allowed) for allowed in STORAGE_ALLOWED_PROTOCOL)
        elif top == "storage" or top in STORAGE_ALLOWED_THIRD_PARTY:
            ok = True
        else:
            ok = top in sys.stdlib_module_names
        if not ok:
            problems.append(f"line {line}: imports {name}")
    return problems


def _sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", _sources("protocol"), ids=lambda p: str(p.relative_to(ROOT)))
def test_protocol_does_no_io(path: Path) -> None:
    problems = protocol_violations(path.read_text(), _module_name(path), path.name == "__init__.py")
    assert not problems, f"{path.relative_to(ROOT)}: {problems}"


@pytest.mark.parametrize("path", _sources("storage"), ids=lambda p: str(p.relative_to(ROOT)))
def test_storage_imports_stay_inside_bounds(path: Path) -> None:
    problems = storage_violations(path.read_text(), _module_name(path), path.name == "__init__.py")
    assert not problems, f"{path.relative_to(ROOT)}: {problems}"


@pytest.mark.parametrize(
    ("source", "bad"),
    [
        ("import asyncio", True),
        ("from socket import socket", True),
        ("import logging", False),
        ("import logging.config", True),
        ("import logging\nlogging.basicConfig()", True),
        ("from storage.segment import Segment", True),
        ("from .. import records", False),
        ("from .records import parse_header", False),
        ("import struct", False),
    ],
)
def test_protocol_checker_catches(source: str, bad: bool) -> None:
    assert bool(protocol_violations(source, "protocol.messages.produce")) is bad


@pytest.mark.parametrize(
    ("source", "bad"),
    [
        ("import asyncio", True),
        ("from broker.config import Config", True),
        ("from protocol.records import parse_header", False),
        ("from protocol import errors, compression", False),
        ("from protocol import codec", True),
        ("from protocol.messages.produce import ProduceRequest", True),
        ("import protocol", True),
        ("from . import segment", False),
        ("from .segment import Segment", False),
        ("import crc32c, os, struct", False),
        ("import lz4.frame", True),
    ],
)
def test_storage_checker_catches(source: str, bad: bool) -> None:
    assert bool(storage_violations(source, "storage.partition_log")) is bad
