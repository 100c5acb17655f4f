from __future__ import annotations

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
    proc = BrokerProcess(tmp_path / "data").start()
    try:
        yield proc
    finally:
        proc.kill() if not proc.is_running() else proc.stop()


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for a module whose tests each use their own topics."""
    proc = BrokerProcess(tmp_path_factory.mktemp("shared") / "data").start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def acl_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker with SASL users (admin, alice) and StandardAuthorizer; admin is a super user."""
    with running(tmp_path / "data", acl_overrides()) as proc:
        yield proc
