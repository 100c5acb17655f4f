"""``listeners``, ``advertised.listeners`` and the protocol map into ``Listener``s, with
Kafka's checks (KafkaConfig.listeners, EndPoint.parseListenerName); and the control plane's
address."""

from __future__ import annotations

import ipaddress
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from broker.config.kinds import INT_RE
from broker.config.model import ConfigError, Listener
from broker.security import settings as security_settings


@dataclass(frozen=True)
class _Endpoint:
    name: str
    host: str
    port: int


_ENDPOINT_RE = re.compile(r"([A-Za-z0-9_-]+)://(?:\[([^\]]*)\]|([^\[\]/:]*)):([0-9]+)")
_HOST_RE = re.compile(r"[A-Za-z0-9._%-]*")


def _parse_endpoints(prop: str, raw: str) -> list[_Endpoint]:
    endpoints: list[_Endpoint] = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        match = _ENDPOINT_RE.fullmatch(item)
        if match is None:
            hint = ""
            if item.count(":") > 2 and "[" not in item:
                hint = " (an IPv6 address needs brackets, e.g. PLAINTEXT://[::1]:9092)"
            raise ConfigError(prop, f"{item!r} is not NAME://host:port{hint}")
        name, v6_host, host, port_text = match.groups()
        if v6_host is not None:
            try:
                ipaddress.IPv6Address(v6_host)
            except ValueError as exc:
                raise ConfigError(prop, f"{item!r}: bad IPv6 address: {exc}") from None
            host = v6_host
        elif not _HOST_RE.fullmatch(host):
            raise ConfigError(prop, f"{item!r}: bad host {host!r}")
        port = int(port_text)
        if port > 65535:
            raise ConfigError(prop, f"{item!r}: port {port} is out of range 0-65535")
        # Kafka normalises listener names to upper case (ListenerName.normalised).
        name = name.upper()
        if any(e.name == name for e in endpoints):
            raise ConfigError(prop, f"listener name {name} is used more than once")
        endpoints.append(_Endpoint(name, host, port))
    return endpoints


_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _parse_protocol_map(raw: str) -> dict[str, str]:
    prop = "listener.security.protocol.map"
    mapping: dict[str, str] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name:
            raise ConfigError(prop, f"{item!r} is not NAME:PROTOCOL")
        if protocol not in _PROTOCOLS:
            raise ConfigError(
                prop, f"{item!r}: unknown security protocol (one of {', '.join(_PROTOCOLS)})"
            )
        mapping[name] = protocol
    return mapping


def _advertisable(bind_host: str) -> str:
    # Clients cannot connect to a wildcard address. Kafka advertises the canonical host
    # name there; a loopback address is the predictable choice for a local broker.
    if bind_host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if bind_host == "::":
        return "::1"
    return bind_host


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost (what the control plane may bind without opting in)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def control_listener(raw: str | None, allow_remote: bool) -> tuple[str | None, int]:
    # Fault injection can crash the broker and drop answers: anyone who can reach it can break
    # every client, so it binds loopback unless explicitly opened.
    return side_listener(
        "minikafka.control.listener",
        raw,
        allow_remote,
        "the control plane can crash the broker",
        "minikafka.control.allow.remote",
    )


def console_listener(raw: str | None, allow_remote: bool) -> tuple[str | None, int]:
    # The console shows every record and group to whoever reaches it (without SASL it asks
    # no credentials), so it binds loopback unless explicitly opened.
    return side_listener(
        "minikafka.console.listener",
        raw,
        allow_remote,
        "the console shows the broker's data",
        "minikafka.console.allow.remote",
    )


def side_listener(
    name: str, raw: str | None, allow_remote: bool, why: str, opener: str
) -> tuple[str | None, int]:
    """``[http://]host:port`` of an HTTP side listener: (host, port), or (None, 0) when off."""
    if raw is None:
        return None, 0
    address = raw[len("http://") :] if raw.lower().startswith("http://") else raw
    host, sep, port_text = address.rstrip("/").rpartition(":")
    if not sep or not INT_RE.fullmatch(port_text) or not 0 <= int(port_text) <= 65535:
        raise ConfigError(name, f"{raw!r} is not host:port")
    host = host.strip("[]")
    if not host:
        raise ConfigError(name, f"{raw!r} names no host (use 127.0.0.1:{port_text})")
    if not allow_remote and not is_loopback(host):
        raise ConfigError(
            name,
            f"{host} is not a loopback address; {why}, so set {opener}=true to serve it there",
        )
    return host, int(port_text)


def build_listeners(values: Mapping[str, Any], raw: Mapping[str, str]) -> tuple[Listener, ...]:
    listeners = _parse_endpoints("listeners", values["listeners"])
    advertised_raw = values["advertised.listeners"]
    advertised = _parse_endpoints("advertised.listeners", advertised_raw or "")
    protocols = _parse_protocol_map(values["listener.security.protocol.map"])
    controllers = {
        n.strip().upper() for n in values["controller.listener.names"].split(",") if n.strip()
    }
    if not listeners:
        raise ConfigError("listeners", "at least one listener is required")
    names = {e.name for e in listeners}
    for adv in advertised:
        if adv.name not in names:
            raise ConfigError(
                "advertised.listeners", f"listener {adv.name} is not defined in listeners"
            )
        if adv.host in ("0.0.0.0", "::"):
            raise ConfigError(
                "advertised.listeners",
                f"{adv.name} advertises the non-routable address {adv.host}",
            )
    served = [e for e in listeners if e.name not in controllers]
    if not served:
        raise ConfigError("listeners", "every listener is a controller listener; nothing to serve")
    ports = [e.port for e in served if e.port != 0]
    if len(ports) != len(set(ports)):
        raise ConfigError("listeners", "two listeners use the same port")
    size = values["minikafka.cluster.size"]
    _check_node_ports("listeners", [(e.name, e.port) for e in served], size)
    for host in {a.host for a in advertised}:
        same_host = [(a.name, a.port) for a in advertised if a.host == host]
        _check_node_ports("advertised.listeners", same_host, size)
    adv_by_name = {a.name: a for a in advertised}
    result: list[Listener] = []
    for ep in served:
        protocol = protocols.get(ep.name)
        if protocol is None:
            raise ConfigError(
                "listeners",
                f"no security protocol for listener {ep.name} in listener.security.protocol.map",
            )
        try:
            security = security_settings.listener_security(ep.name, protocol, raw)
        except security_settings.SettingError as exc:
            raise ConfigError(exc.prop, exc.message) from None
        public = adv_by_name.get(ep.name)
        if public is None:
            result.append(
                Listener(ep.name, ep.host, ep.port, _advertisable(ep.host), ep.port, security)
            )
        else:
            host = public.host or _advertisable(ep.host)
            result.append(Listener(ep.name, ep.host, ep.port, host, public.port, security))
    return tuple(result)


def _check_node_ports(prop: str, ports: list[tuple[str, int]], size: int) -> None:
    """A simulated cluster's node k serves (and advertises) each listener at its port + k, so
    each listener takes ``size`` ports: two whose ranges overlap would have two nodes on one
    port (the second fails to bind, or clients reach the wrong node)."""
    if size == 1:
        return
    taken = sorted((port, name) for name, port in ports if port != 0)
    for port, name in taken:
        if port + size - 1 > 65535:
            raise ConfigError(
                prop, f"{name}'s port {port} + {size - 1} nodes passes 65535: pick a lower port"
            )
    for (port, name), (next_port, next_name) in itertools.pairwise(taken):
        if next_port < port + size:
            raise ConfigError(
                prop,
                f"with minikafka.cluster.size={size} node k uses each listener's port + k: "
                f"{name} takes ports {port}-{port + size - 1}, which {next_name}'s port "
                f"{next_port} falls in; space the listeners' ports at least {size} apart",
            )
