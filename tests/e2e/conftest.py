from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess, running
from tests.support.sasl import acl_overrides


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running(tmp_path / "data") as proc:
        yield proc


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for a module whose tests each use their own topics."""
    with running(tmp_path_factory.mktemp("shared") / "data") as proc:
        yield proc


@pytest.fixture
def acl_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker with SASL users (admin, alice) and StandardAuthorizer; admin is a super user."""
    with running(tmp_path / "data", acl_overrides()) as proc:
        yield proc


@pytest.fixture
def port_in_use() -> Iterator[int]:
    """A port some other program listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]
