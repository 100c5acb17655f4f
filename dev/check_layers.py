"""The house rules of broker/: its rooms stand on floors, and imports only go down.

The floors are listed in pyproject.toml (``[tool.minikafka.layers]``), top first. A module
may import modules of its own room and of the floors below; rooms on one floor do not import
each other. No two modules import each other, directly or round a circle. Every import
counts: those under ``if TYPE_CHECKING:`` and inside functions too, since a circle of type
imports is still a circle for a reader. Run by ``make lint``; exits 1 and names each
offending import.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (a module or package of the tree)
    path: Path
    line: int


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def collect_modules(root: Path, package: str) -> dict[str, Path]:
    return {
        module_name(root, path): path
        for path in sorted((root / package).rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def imports_of(name: str, path: Path, modules: Mapping[str, Path]) -> Iterator[Import]:
    """Each import of a module in ``modules``; ``from a import b`` is a.b when that is a
    module, else a."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield Import(name, alias.name, path, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(p for p in [*parts, node.module or ""] if p)
            else:
                base = node.module or ""
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in modules:
                    yield Import(name, full, path, node.lineno)
                elif base in modules:
                    yield Import(name, base, path, node.lineno)


def parse_floors(package: str, floors: Sequence[str]) -> dict[str, tuple[int, str]]:
    """Room (dotted, e.g. broker.net) -> (floor number from the top, room)."""
    where: dict[str, tuple[int, str]] = {}
    for level, floor in enumerate(floors):
        for room in floor.split("|"):
            room = room.strip()
            where[f"{package}.{room}"] = (level, room)
    return where


def room_of(module: str, rooms: Mapping[str, tuple[int, str]]) -> str | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in rooms:
            return prefix
    return None


def layering_problems(
    package: str, floors: Sequence[str], edges: Sequence[Import], root: Path
) -> list[str]:
    rooms = parse_floors(package, floors)
    problems = []
    for imp in edges:
        if imp.target == package:
            continue  # the package itself: its version, imported by anyone
        src, dst = room_of(imp.source, rooms), room_of(imp.target, rooms)
        where = f"{imp.path.relative_to(root)}:{imp.line}"
        if src is None and imp.source != package:
            problems.append(f"{where}: {imp.source} is in no room of [tool.minikafka.layers]")
            continue
        if dst is None or src is None or src == dst:
            continue
        (src_floor, _), (dst_floor, _) = rooms[src], rooms[dst]
        if dst_floor < src_floor:
            problems.append(f"{where}: {imp.source} imports {imp.target}, a floor above it")
        elif dst_floor == src_floor:
            problems.append(
                f"{where}: {imp.source} imports {imp.target}; rooms on one floor stay apart"
            )
    return problems


def circles(edges: Sequence[Import]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for imp in edges:
        if imp.source != imp.target:
            graph.setdefault(imp.source, set()).add(imp.target)
            graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def check(root: Path, layers: Mapping[str, Sequence[str]]) -> list[str]:
    problems: list[str] = []
    for package, floors in layers.items():
        modules = collect_modules(root, package)
        edges = [imp for name, path in modules.items() for imp in imports_of(name, path, modules)]
        problems += layering_problems(package, floors, edges, root)
        for component in circles(edges):
            inside = [
                f"{e.source} -> {e.target}" for e in edges if {e.source, e.target} <= set(component)
            ]
            problems.append("import circle: " + "; ".join(sorted(set(inside))))
    return problems


def load_layers(root: Path) -> dict[str, list[str]]:
    with open(root / "pyproject.toml", "rb") as f:
        return dict(tomllib.load(f)["tool"]["minikafka"]["layers"])


def main() -> int:
    problems = check(ROOT, load_layers(ROOT))
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} import(s) against the layering ([tool.minikafka.layers])")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
