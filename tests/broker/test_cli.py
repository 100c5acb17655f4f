"""The minikafka command line: argument handling, exit codes, logging, --help."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker import cli
from broker.config.model import Config
from broker.config.properties import PROPERTIES
from broker.runtime import logging_setup

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No KAFKA_* variables from the outer environment; root logging restored afterwards."""
    for var in list(os.environ):
        if var.startswith("KAFKA_") or var == "CLUSTER_ID":
            monkeypatch.delenv(var)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


@pytest.fixture
def fake_server(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Config, str]]:
    """Stands in for broker.process so these tests never open sockets or files."""
    calls: list[tuple[Config, str]] = []

    def run(config: Config, *, config_source: str) -> int:
        calls.append((config, config_source))
        logging.getLogger("broker.process").info("pretend to serve")
        return 0

    module = types.ModuleType("broker.process")
    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "broker.process", module)
    return calls


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")}


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker", *args],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_help_lists_every_property_with_its_default() -> None:
    result = run_module("--help")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("usage: minikafka")
    assert "--override" in out
    for prop in PROPERTIES:
        default = "(none)" if prop.default is None else prop.default or '""'
        assert f"  {prop.name} = {default}" in out, prop.name
    assert "process.roles" in out
    assert "KAFKA_" in out


def test_invalid_value_exits_2_naming_the_property() -> None:
    result = run_module("--override", "num.partitions=many")
    assert result.returncode == 2
    assert result.stderr.startswith("minikafka: invalid value for num.partitions: ")
    assert result.stdout == ""


def test_main_runs_the_server_with_the_loaded_config(
    tmp_path: Path,
    fake_server: list[tuple[Config, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    props = tmp_path / "server.properties"
    props.write_text("num.partitions=2\nnode.id=9\nunknown.prop=1\n")
    monkeypatch.setenv("KAFKA_NUM_PARTITIONS", "3")
    argv = [str(props), "--override", "log.dirs=/x", "--override=node.id=4"]
    assert cli.main(argv) == 0
    ((config, source),) = fake_server
    assert (config.num_partitions, config.node_id, config.log_dir) == (3, 4, "/x")
    assert source == config.source_summary
    assert "server.properties" in source
    err = capsys.readouterr().err
    assert "WARNING [broker.cli] unknown property 'unknown.prop'" in err
    assert "INFO [broker.process] pretend to serve" in err


def test_log_level_property_sets_the_root_level(
    fake_server: list[tuple[Config, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--override", "log.level=warning"]) == 0
    assert logging.getLogger().level == logging.WARNING
    assert "pretend to serve" not in capsys.readouterr().err


def test_config_error_exits_2_before_starting_the_server(
    fake_server: list[tuple[Config, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--override", "listeners=PLAINTEXT://127.0.0.1:99999"]) == 2
    assert fake_server == []
    err = capsys.readouterr().err
    assert err.startswith("minikafka: invalid value for listeners: ")


def test_missing_properties_file_exits_2(
    tmp_path: Path, fake_server: list[tuple[Config, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([str(tmp_path / "nope.properties")]) == 2
    assert "nope.properties" in capsys.readouterr().err
    assert fake_server == []


def test_malformed_override_and_extra_arguments_exit_2(
    fake_server: list[tuple[Config, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--override", "novalue"]) == 2
    assert "key=value" in capsys.readouterr().err
    assert cli.main(["a.properties", "b.properties"]) == 2
    assert cli.main(["--no-such-flag"]) == 2
    assert fake_server == []


def test_dump_subcommand_is_delegated(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def dump_main(argv: list[str]) -> int:
        seen.append(argv)
        return 5

    module = types.ModuleType("broker.tools.dump")
    module.main = dump_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "broker.tools.dump", module)
    assert cli.main(["dump", "--files", "x.log"]) == 5
    assert seen == [["--files", "x.log"]]


def test_log_format_matches_kafka_layout(capsys: pytest.CaptureFixture[str]) -> None:
    logging_setup.configure("INFO")
    logging_setup.configure("DEBUG")  # reconfiguring replaces, never duplicates
    logging.getLogger("broker.lifecycle.server").info("hello %s", "there")
    logging.getLogger("broker.x").debug("fine detail")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    pattern = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO \[broker\.lifecycle\.server\] hello there"
    assert re.fullmatch(pattern, lines[0])
    assert lines[1].endswith("DEBUG [broker.x] fine detail")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from broker import __version__

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith(f"minikafka {__version__} ")


def test_fault_help_lists_each_operations_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fault", "--help"]) == 0
    out = capsys.readouterr().out
    assert "  offline --topic TOPIC --partition PARTITION [--duration-s DURATION_S]\n" in out
    assert "  error --api API --error ERROR [--count COUNT]" in out
    assert "  crash-restart [--down-s DOWN_S]\n" in out


def test_start_up_names_the_properties_set_without_effect(tmp_path: Path) -> None:
    from tests.support.broker_process import BrokerProcess

    broker = BrokerProcess(
        tmp_path / "data",
        {"compression.type": "zstd", "num.io.threads": "16", "num.partitions": "2"},
    ).start()
    try:
        line = broker.wait_for_log("set but without effect here")
        assert line.rstrip().endswith(
            "set but without effect here (accepted as Kafka's): compression.type, num.io.threads"
        )
    finally:
        assert broker.stop() == 0
