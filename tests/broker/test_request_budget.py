"""Broker-wide request bounds (queued.max.requests, queued.max.request.bytes) and
connection quotas on their own."""

from __future__ import annotations

import pytest

from broker.limits.connection_quotas import ConnectionQuotas, normalize
from broker.limits.request_budget import RequestBudget


def test_the_pool_is_overdrawn_by_one_request_at_most_then_waiters_go_first_in_first_out() -> None:
    budget = RequestBudget(500, 100)
    granted: list[str] = []
    assert budget.try_reserve(150, lambda: granted.append("first"))
    assert budget.available_bytes == -50
    assert not budget.try_reserve(10, lambda: granted.append("second"))
    assert not budget.try_reserve(10, lambda: granted.append("third"))
    budget.release(150)
    assert granted == ["second", "third"]
    assert budget.available_bytes == 80


def test_without_queued_max_request_bytes_nothing_waits() -> None:
    budget = RequestBudget(500, -1)
    assert budget.try_reserve(10**9, lambda: None)
    assert not budget.limits_bytes


def test_queued_max_requests_resumes_waiting_connections_once_below_the_limit() -> None:
    budget = RequestBudget(2, -1)
    resumed: list[int] = []
    budget.request_queued()
    budget.request_queued()
    assert budget.requests_full
    budget.wait_for_request_room(1, lambda: resumed.append(1))
    budget.wait_for_request_room(2, lambda: resumed.append(2))
    budget.forget(2)
    budget.request_started()
    assert resumed == [1]
    assert not budget.requests_full


@pytest.mark.asyncio
async def test_per_ip_limit_counts_only_accepted_connections_and_overrides_win() -> None:
    quotas = ConnectionQuotas(10, 1, (("127.0.0.2", 3),))
    assert quotas.try_inc("127.0.0.1")
    assert not quotas.try_inc("127.0.0.1")
    assert quotas.count("127.0.0.1") == 1 and quotas.total == 1
    assert all(quotas.try_inc("127.0.0.2") for _ in range(3))
    assert not quotas.try_inc("127.0.0.2")
    quotas.dec("127.0.0.1")
    assert quotas.try_inc("127.0.0.1")


def test_an_ipv4_mapped_peer_counts_as_its_ipv4_address() -> None:
    assert normalize("::ffff:127.0.0.1") == "127.0.0.1"
    assert normalize("127.0.0.1") == "127.0.0.1"
