"""Kafka's client-quota rules (KIP-546): which entities and keys exist, how values are
checked (ClientQuotaControlManager) and how a DescribeClientQuotas filter matches
(ClientQuotasImage.describe). Pure functions over plain values; the handlers store and answer.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass

USER, CLIENT_ID, IP = "user", "client-id", "ip"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

LONG, INT, DOUBLE = "LONG", "INT", "DOUBLE"
# QuotaConfig.userAndClientQuotaConfigs() and QuotaConfig.ipConfigs(): key -> ConfigDef type.
USER_AND_CLIENT_KEYS = {
    "producer_byte_rate": LONG,
    "consumer_byte_rate": LONG,
    "request_percentage": DOUBLE,
    "controller_mutation_rate": DOUBLE,
}
IP_KEYS = {"connection_creation_rate": INT}
_LIMITS = {LONG: (2**63 - 1, "a LONG"), INT: (2**31 - 1, "an INT")}


class InvalidFilter(Exception):
    """DescribeClientQuotas refused: error code name and Kafka's message."""

    def __init__(self, unsupported: bool, message: str) -> None:
        super().__init__(message)
        self.unsupported = unsupported
        self.message = message


def check_entity(entity: Mapping[str, str | None]) -> str | None:
    """ClientQuotaControlManager.validateEntity: Kafka's message, or None when valid."""
    if not entity:
        return "Invalid empty client quota entity"
    for entity_type, name in entity.items():
        if entity_type not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {entity_type}"
        if name is not None and not name:
            return f"Empty {entity_type} not supported"
    return None


def keys_for(entity: Mapping[str, str | None], ip_is_valid: bool) -> dict[str, str] | str:
    """configKeysForEntityType: the valid quota keys for this entity, or Kafka's message."""
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            # Kafka's message lacks the space: "...should" + "not be combined...".
            return (
                "Invalid quota entity combination, IP entity shouldnot be combined with User "
                "or ClientId"
            )
        if not ip_is_valid:
            return f"{entity[IP]} is not a valid IP or resolvable host."
        return IP_KEYS
    return USER_AND_CLIENT_KEYS


def check_value(keys: Mapping[str, str], key: str, value: float) -> str | None:
    """validateQuotaKeyValue: Kafka's message, or None when the value may be stored."""
    kind = keys.get(key)
    if kind is None:
        return f"Invalid configuration key {key}"
    # Kafka tests "value <= 0.0", so NaN passes here as it does there.
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if kind == DOUBLE:
        return None
    limit, name = _LIMITS[kind]
    if value > float(limit):  # Java compares the double with the limit widened to double
        return f"Proposed value for {key} is too large for {name}."
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class QuotaFilter:
    exact: dict[str, str | None]
    specified: frozenset[str]
    strict: bool

    def matches(self, entity: Mapping[str, str | None]) -> bool:
        """ClientQuotasImage.matches."""
        if self.strict and len(entity) != len(self.exact) + len(self.specified):
            return False
        for entity_type, name in self.exact.items():
            if entity_type not in entity or entity[entity_type] != name:
                return False
        return all(t in entity for t in self.specified)


def parse_filter(components: list[tuple[str, int, str | None]], strict: bool) -> QuotaFilter:
    """ClientQuotasImage.describe's checks, in its order; raises InvalidFilter."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for entity_type, match_type, match in components:
        if not entity_type:
            raise InvalidFilter(False, "Invalid empty entity type.")
        if entity_type in exact or entity_type in specified:
            raise InvalidFilter(
                False, f"Entity type {entity_type} cannot appear more than once in the filter."
            )
        if entity_type not in (IP, USER, CLIENT_ID):
            raise InvalidFilter(True, f"Unsupported entity type {entity_type}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise InvalidFilter(
                    False, "Request specified MATCH_TYPE_EXACT, but set match string to null."
                )
            exact[entity_type] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise InvalidFilter(
                    False,
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                )
            exact[entity_type] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise InvalidFilter(
                    False,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )
            specified.add(entity_type)
        else:
            raise InvalidFilter(False, f"Unknown match type {match_type}")
    named = set(exact) | specified
    if IP in named and (USER in named or CLIENT_ID in named):
        raise InvalidFilter(
            False,
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        )
    return QuotaFilter(exact, frozenset(specified), strict)
