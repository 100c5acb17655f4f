"""dev/check_layers.py: the tree as it is passes; an upward import, an import between rooms
on one floor, a module in no room and an import circle (type-only imports included) each
fail, named by file and line."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dev.check_layers import ROOT, check, load_layers

FLOORS = {"pkg": ["top", "left | right", "bottom"]}


def make_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"pkg/__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_project_keeps_its_layering() -> None:
    assert check(ROOT, load_layers(ROOT)) == []


def test_make_lint_runs_the_check_and_fails_on_an_upward_import(tmp_path: Path) -> None:
    """The real tree with one import added from the runtime room up to the net room."""
    copy = tmp_path / "tree"
    shutil.copytree(ROOT / "broker", copy / "broker", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    offload = copy / "broker" / "runtime" / "offload.py"
    offload.write_text(offload.read_text() + "\nfrom broker.net import connection  # noqa\n")
    upward, circle = check(copy, load_layers(copy))
    assert upward == (
        "broker/runtime/offload.py:"
        f"{len(offload.read_text().splitlines())}: broker.runtime.offload imports "
        "broker.net.connection, a floor above it"
    )
    # The connection reaches offload again (through dispatch): the import closes a circle.
    assert circle.startswith("import circle: ")
    assert "broker.runtime.offload -> broker.net.connection" in circle
    # And the command make lint calls exits 1 on the real tree's checker given that tree.
    script = (
        "import sys; from pathlib import Path; import dev.check_layers as c; "
        f"c.ROOT = Path({str(copy)!r}); sys.exit(c.main())"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 1
    assert "a floor above it" in result.stdout


def test_an_upward_import_fails(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        {
            "pkg/top/__init__.py": "",
            "pkg/top/a.py": "import os\n",
            "pkg/bottom/__init__.py": "",
            "pkg/bottom/b.py": "from pkg.top import a\n",
        },
    )
    assert check(root, FLOORS) == [
        "pkg/bottom/b.py:1: pkg.bottom.b imports pkg.top.a, a floor above it"
    ]


def test_rooms_on_one_floor_stay_apart_and_every_module_has_a_room(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        {
            "pkg/left/__init__.py": "",
            "pkg/left/a.py": "from pkg.right.b import thing\n",
            "pkg/right/__init__.py": "",
            "pkg/right/b.py": "thing = 1\n",
            "pkg/stray.py": "from pkg.right import b\n",
        },
    )
    assert check(root, FLOORS) == [
        "pkg/left/a.py:1: pkg.left.a imports pkg.right.b; rooms on one floor stay apart",
        "pkg/stray.py:1: pkg.stray is in no room of [tool.minikafka.layers]",
    ]


@pytest.mark.parametrize("guard", ["", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    "])
def test_a_circle_fails_even_of_type_only_imports(tmp_path: Path, guard: str) -> None:
    root = make_tree(
        tmp_path,
        {
            "pkg/bottom/__init__.py": "",
            "pkg/bottom/a.py": "from pkg.bottom import b\n",
            "pkg/bottom/b.py": f"{guard}from pkg.bottom.c import C\n",
            "pkg/bottom/c.py": "from pkg.bottom.a import x\n",
        },
    )
    assert check(root, FLOORS) == [
        "import circle: pkg.bottom.a -> pkg.bottom.b; pkg.bottom.b -> pkg.bottom.c; "
        "pkg.bottom.c -> pkg.bottom.a"
    ]


def test_the_package_root_may_be_imported_from_anywhere(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        {"pkg/bottom/__init__.py": "", "pkg/bottom/a.py": "from pkg import __version__\n"},
    )
    assert check(root, FLOORS) == []
