"""The checks `make dist-check` applies to the built sdist and wheel (tests/packaging/
dist_check.py), on file lists made up here; `make dist-check` runs them on the real build."""

from __future__ import annotations

from tests.packaging.dist_check import (
    REPO,
    deprecations,
    junk,
    package_sources,
    project,
    sdist_problems,
    wheel_problems,
)

PY = {"broker/__init__.py", "broker/cli.py", "minikafka/__init__.py"}
DIST_INFO = "minikafka-0.1.0.dist-info/"
WHEEL_META = [
    f"{DIST_INFO}{n}" for n in ("METADATA", "WHEEL", "RECORD", "entry_points.txt", "top_level.txt")
] + [f"{DIST_INFO}licenses/LICENSE"]
SDIST_META = ["PKG-INFO", "pyproject.toml", "README.md", "LICENSE", "setup.cfg"]
EGG_INFO = ["minikafka.egg-info/PKG-INFO", "minikafka.egg-info/SOURCES.txt"]


def sdist(names: list[str]) -> list[str]:
    return [f"minikafka-0.1.0/{n}" for n in names]


def test_junk_is_tests_build_output_caches_and_nested_metadata() -> None:
    names = [
        "tests/test_x.py",
        "broker/tests/test_y.py",
        "build/lib/broker/cli.py",
        "broker/__pycache__/cli.cpython-311.pyc",
        "broker/cli.pyc",
        "examples/spark_pipeline.py",
        "bench/__main__.py",
        "docs/ARCHITECTURE.md",
        ".venv/bin/python",
        "broker/minikafka.egg-info/PKG-INFO",
        "broker/cli.py",
        "minikafka.egg-info/PKG-INFO",
    ]
    assert junk(names) == names[:-2]


def test_a_wheel_of_exactly_the_package_files_passes() -> None:
    assert wheel_problems(sorted(PY) + WHEEL_META, PY, DIST_INFO) == []


def test_a_wheel_with_tests_a_missing_module_or_no_license_fails() -> None:
    names = ["broker/__init__.py", "minikafka/__init__.py", "tests/test_x.py", *WHEEL_META[:-1]]
    assert wheel_problems(names, PY, DIST_INFO) == [
        "junk in the wheel: tests/test_x.py",
        "missing from the wheel: broker/cli.py",
        "not a package file, in the wheel: tests/test_x.py",
        f"missing from the wheel: {DIST_INFO}licenses/LICENSE",
    ]


def test_a_wheel_with_stray_data_files_fails() -> None:
    names = [*sorted(PY), *WHEEL_META, "broker/notes.txt", "minikafka.egg-info/PKG-INFO"]
    assert wheel_problems(names, PY, DIST_INFO) == [
        "unexpected in the wheel: broker/notes.txt",
        "unexpected in the wheel: minikafka.egg-info/PKG-INFO",
    ]


def test_an_sdist_of_the_package_files_and_metadata_passes() -> None:
    names = sdist([*sorted(PY), *SDIST_META, *EGG_INFO])
    assert sdist_problems(names, PY, "minikafka-0.1.0/") == []


def test_an_sdist_with_junk_or_without_the_license_fails() -> None:
    names = sdist([*sorted(PY), *SDIST_META[:3], "setup.cfg", "examples/spark_audit.py"])
    names += [*sdist(["broker/scratch.txt", *EGG_INFO]), "elsewhere/x.py"]
    assert sdist_problems(names, PY, "minikafka-0.1.0/") == [
        "outside minikafka-0.1.0/: elsewhere/x.py",
        "junk in the sdist: examples/spark_audit.py",
        "missing from the sdist: LICENSE",
        "not a package file, in the sdist: broker/scratch.txt",
        "unexpected, in the sdist: examples/spark_audit.py",
    ]


def test_deprecation_warnings_in_the_build_output_are_found() -> None:
    # As `python -m build` printed them while project.license was a TOML table.
    output = (
        "running egg_info\n"
        "WARNING `project.license` as a TOML table is deprecated\n"
        "!!\n"
        "        By 2027-Feb-18, you need to update your project and remove deprecated calls\n"
        "warning: build_py: byte-compiling is disabled, skipping.\n"
        "SetuptoolsDeprecationWarning: something else\n"
    )
    assert deprecations(output) == [
        "WARNING `project.license` as a TOML table is deprecated",
        "By 2027-Feb-18, you need to update your project and remove deprecated calls",
        "SetuptoolsDeprecationWarning: something else",
    ]


def test_the_package_files_are_the_selected_packages_only() -> None:
    include = project()["tool"]["setuptools"]["packages"]["find"]["include"]  # type: ignore[index]
    files = package_sources(REPO, include)
    assert {"broker/cli.py", "minikafka/pytest_plugin.py", "minikafka_spark/source.py"} <= files
    assert {f.split("/")[0] for f in files} == {
        "broker",
        "protocol",
        "storage",
        "minikafka",
        "minikafka_spark",
    }
    assert junk(files) == []


def test_the_license_is_an_spdx_expression_with_its_file() -> None:
    meta = project()
    info = meta["project"]
    assert isinstance(info, dict)
    assert info["license"] == "Apache-2.0"  # PEP 639; a table is deprecated by setuptools
    assert info["license-files"] == ["LICENSE"] and (REPO / "LICENSE").is_file()
    build_system = meta["build-system"]
    assert isinstance(build_system, dict)
    assert "setuptools>=77" in build_system["requires"]  # the first to take the SPDX string
