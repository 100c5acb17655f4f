"""`make dist-check`: the sdist and wheel as they would be published, built and checked.

    python -m tests.packaging.dist_check [OUTDIR]        (default build/dist)

1. The files a fresh clone would have (tracked, plus untracked ones git does not ignore) are
   copied to OUTDIR-src, so nothing left in the work tree (build/lib, *.egg-info, caches)
   can reach the distributions.
2. `python -m build` there (an isolated build with pyproject's build-system requirements)
   writes the sdist, then the wheel built from the sdist, to OUTDIR. Its output must hold no
   deprecation warning ("deprecat" in any case, anywhere, fails the check; those lines are
   printed).
3. `twine check --strict` on both.
4. The wheel holds exactly the .py files of the packages pyproject.toml's
   [tool.setuptools.packages.find] selects, its dist-info (the license, both entry points);
   the sdist those files plus pyproject.toml, README.md, LICENSE and the generated metadata;
   neither anything else (tests, examples, bench, docs, build output, caches).
5. The wheel installed into a fresh virtualenv (OUTDIR-venv, dependencies from the package
   index): `minikafka --version` prints the project's version and the packages import.

Exit status 0 when all hold; 1 with the reasons otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# Never in a distribution, whatever directory they appear in.
JUNK_PARTS = frozenset(
    {"tests", "examples", "bench", "docs", "build", "dist", ".venv", "__pycache__", ".git"}
)
JUNK_SUFFIXES = (".pyc", ".pyo", ".so.tmp", ".orig", ".rej", ".log")
SDIST_ROOT_FILES = frozenset({"PKG-INFO", "pyproject.toml", "README.md", "LICENSE", "setup.cfg"})
EXPECTED_ENTRY_POINTS = (
    "[console_scripts]\nminikafka = broker.cli:main",
    "[pytest11]\nminikafka = minikafka.pytest_plugin",
)


def project() -> dict[str, object]:
    with (REPO / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def package_sources(root: Path, include: Iterable[str]) -> set[str]:
    """The .py files setuptools' packages.find with these include patterns puts in a wheel,
    as posix paths relative to root."""
    from setuptools import find_packages

    files: set[str] = set()
    for package in find_packages(where=str(root), include=list(include)):
        directory = root / package.replace(".", "/")
        files.update(p.relative_to(root).as_posix() for p in directory.glob("*.py"))
    return files


def junk(names: Iterable[str]) -> list[str]:
    """Names that must never be in a distribution (an .egg-info folder is only allowed at the
    top of an sdist, where setuptools writes the metadata)."""
    found = []
    for name in names:
        parts = PurePosixPath(name).parts
        nested_egg_info = any(part.endswith(".egg-info") for part in parts[1:-1])
        if JUNK_PARTS.intersection(parts) or name.endswith(JUNK_SUFFIXES) or nested_egg_info:
            found.append(name)
    return found


def wheel_problems(names: list[str], expected_py: set[str], dist_info: str) -> list[str]:
    """What is wrong with a wheel's file list (empty when nothing is)."""
    problems = [f"junk in the wheel: {n}" for n in junk(names)]
    py = {n for n in names if n.endswith(".py")}
    problems += [f"missing from the wheel: {n}" for n in sorted(expected_py - py)]
    problems += [f"not a package file, in the wheel: {n}" for n in sorted(py - expected_py)]
    others = set(names) - py
    problems += [
        f"unexpected in the wheel: {n}" for n in sorted(others) if not n.startswith(dist_info)
    ]
    for required in ("METADATA", "WHEEL", "RECORD", "entry_points.txt", "licenses/LICENSE"):
        if f"{dist_info}{required}" not in names:
            problems.append(f"missing from the wheel: {dist_info}{required}")
    return problems


def sdist_problems(names: list[str], expected_py: set[str], prefix: str) -> list[str]:
    """What is wrong with the files (not folders) an sdist holds, all under its top folder
    `prefix` (name-version/)."""
    problems = [f"outside {prefix}: {n}" for n in names if not n.startswith(prefix)]
    files = {n[len(prefix) :] for n in names if n.startswith(prefix)}
    problems += [f"junk in the sdist: {n}" for n in junk(files)]
    problems += [f"missing from the sdist: {n}" for n in sorted(expected_py - files)]
    problems += [f"missing from the sdist: {n}" for n in sorted(SDIST_ROOT_FILES - files)]
    package_dirs = {PurePosixPath(n).parent for n in expected_py}
    for name in sorted(files - expected_py - SDIST_ROOT_FILES):
        path = PurePosixPath(name)
        if path.parts[0].endswith(".egg-info") and len(path.parts) == 2:
            continue  # the generated metadata (PKG-INFO, SOURCES.txt, ...)
        where = "not a package file" if path.parent in package_dirs else "unexpected"
        problems.append(f"{where}, in the sdist: {name}")
    return problems


def deprecations(output: str) -> list[str]:
    """Lines of the build's output that speak of a deprecation, in any case: `python -m build`
    prints setuptools' warnings as "WARNING `project.license` as a TOML table is deprecated",
    without the warning's class name."""
    return [line.strip() for line in output.splitlines() if "deprecat" in line.lower()]


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    print("+", " ".join(args), flush=True)
    return subprocess.run(args, text=True, check=False, **kwargs)


def clean_copy(target: Path) -> None:
    """The files a fresh clone (with this work tree's uncommitted changes) would have."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    shutil.rmtree(target, ignore_errors=True)
    for raw in listed:
        name = raw.decode()
        source = REPO / name
        if not name or not source.is_file():  # deleted in the work tree, or a submodule
            continue
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)


def main(argv: list[str]) -> int:
    outdir = Path(argv[0]) if argv else REPO / "build" / "dist"
    outdir = outdir if outdir.is_absolute() else REPO / outdir
    source, venv = outdir.with_name(outdir.name + "-src"), outdir.with_name(outdir.name + "-venv")
    meta = project()
    info = meta["project"]
    assert isinstance(info, dict)
    name, version = str(info["name"]), str(info["version"])
    tool = meta["tool"]
    assert isinstance(tool, dict)
    include = tool["setuptools"]["packages"]["find"]["include"]

    clean_copy(source)
    shutil.rmtree(outdir, ignore_errors=True)
    built = _run(
        [sys.executable, "-m", "build", "--outdir", str(outdir), str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    (outdir.parent / f"{outdir.name}-build.log").write_text(built.stdout)
    if built.returncode != 0:
        print(built.stdout[-6000:])
        print(f"FAILED: python -m build exited {built.returncode}")
        return 1
    problems = [f"build output: {line}" for line in deprecations(built.stdout)]
    wheels, sdists = sorted(outdir.glob("*.whl")), sorted(outdir.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        print(f"FAILED: expected one wheel and one sdist in {outdir}: {os.listdir(outdir)}")
        return 1
    wheel, sdist = wheels[0], sdists[0]
    print(
        f"built {sdist.name} ({sdist.stat().st_size // 1024} KiB) and "
        f"{wheel.name} ({wheel.stat().st_size // 1024} KiB)"
    )

    if _run(
        [sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)]
    ).returncode:
        problems.append("twine check --strict failed")

    expected_py = package_sources(source, include)
    dist_info = f"{name.replace('-', '_')}-{version}.dist-info/"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        problems += wheel_problems(names, expected_py, dist_info)
        if f"{dist_info}entry_points.txt" in names:
            entry_points = zf.read(f"{dist_info}entry_points.txt").decode()
            problems += [
                f"entry point missing: {ep!r}"
                for ep in EXPECTED_ENTRY_POINTS
                if ep not in entry_points
            ]
        if f"{dist_info}METADATA" in names:
            metadata = zf.read(f"{dist_info}METADATA").decode()
            for field in (
                f"License-Expression: {info['license']}",
                "License-File: LICENSE",
                f"Requires-Python: {info['requires-python']}",
                "Description-Content-Type: text/markdown",
            ):
                if f"\n{field}\n" not in metadata:
                    problems.append(f"METADATA lacks {field!r}")
    with tarfile.open(sdist) as tf:
        files = [m.name for m in tf.getmembers() if not m.isdir()]
        problems += sdist_problems(files, expected_py, f"{name}-{version}/")
    packages = sorted({n.split("/")[0] for n in expected_py})
    print(f"wheel: {len(expected_py)} modules in packages {', '.join(packages)}")

    shutil.rmtree(venv, ignore_errors=True)
    bin_dir = venv / "bin"
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)],
    ]
    for step in steps:
        if _run(step).returncode:
            problems.append(f"failed: {' '.join(step)}")
            break
    else:
        shown = _run([str(bin_dir / "minikafka"), "--version"], capture_output=True)
        print(shown.stdout.strip())
        if shown.returncode or version not in shown.stdout:
            problems.append(f"minikafka --version printed {shown.stdout!r} {shown.stderr!r}")
        imports = "import " + ", ".join(packages)
        if _run([str(bin_dir / "python"), "-c", imports], cwd=venv).returncode:
            problems.append(f"in a fresh virtualenv, {imports!r} failed")

    for problem in problems:
        print("FAILED:", problem)
    if problems:
        return 1
    print(f"dist-check: OK ({sdist.name}, {wheel.name} in {outdir.relative_to(REPO)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
