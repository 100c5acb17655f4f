"""Helpers shared by the group handlers."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.groups.coordinator import GroupCoordinator


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    return ctx.state.groups


def client_host(ctx: RequestContext) -> str:
    # Kafka shows InetAddress.toString(): "/127.0.0.1".
    host = ctx.peer.rsplit(":", 1)[0] if ":" in ctx.peer else ctx.peer
    return f"/{host}"
