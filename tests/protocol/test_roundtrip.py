"""Every described API, every version, request and response: encode -> decode -> encode.

The cases come from ``ALL_APIS``, so an API added there is covered without touching this file.
"""

from __future__ import annotations

import pytest

from protocol.api_keys import ALL_APIS
from protocol.schema import INF, Api, Message
from tests.support.values import (
    ValueGenerator,
    absent_mismatches,
    all_paths,
    api_versions,
    decode_side,
    defaults_message,
    encode_side,
    fields_of,
    non_default_paths,
    plain,
)

# Several samples per case: nullable fields come out None in some and set in others, and
# arrays are empty in some; together they reach every field (checked below).
SEEDS = range(6)

CASES = [
    pytest.param(api_, version, side, id=f"{api_.name}-v{version}-{side}")
    for api_ in ALL_APIS.values()
    for version in api_versions(api_)
    for side in ("request", "response")
]


def _check_round_trip(api_: Api, version: int, side: str, value: object) -> None:
    fields = fields_of(api_, side)
    flexible = api_.is_flexible(version)
    data = encode_side(api_, version, side, value)
    decoded = decode_side(api_, version, side, data)
    assert plain(fields, version, flexible, decoded) == plain(fields, version, flexible, value)
    assert absent_mismatches(fields, version, flexible, decoded) == []
    assert encode_side(api_, version, side, decoded) == data


def test_every_api_has_a_finite_version_range() -> None:
    for api_ in ALL_APIS.values():
        assert 0 <= api_.versions.low <= api_.versions.high < INF, api_.name
        assert api_.key in ALL_APIS and ALL_APIS[api_.key] is api_


@pytest.mark.parametrize(("api_", "version", "side"), CASES)
def test_generated_message_round_trips(api_: Api, version: int, side: str) -> None:
    fields = fields_of(api_, side)
    flexible = api_.is_flexible(version)
    covered: set[str] = set()
    for seed in SEEDS:
        value = ValueGenerator(f"{api_.key}/{version}/{side}/{seed}").message(
            fields, version, flexible
        )
        _check_round_trip(api_, version, side, value)
        covered |= non_default_paths(fields, version, flexible, value)
    # The samples must have exercised every field present at this version with a
    # non-default value, or the round trip proved nothing about it.
    assert all_paths(fields, version, flexible) - covered == set()


@pytest.mark.parametrize(("api_", "version", "side"), CASES)
def test_defaults_only_message_round_trips(api_: Api, version: int, side: str) -> None:
    fields = fields_of(api_, side)
    flexible = api_.is_flexible(version)
    empty = encode_side(api_, version, side, Message())
    # Missing fields encode as their defaults: an empty Message, one with every field present
    # at the version, and one with every field of every version are the same bytes.
    assert encode_side(api_, version, side, defaults_message(fields, version, flexible)) == empty
    assert encode_side(api_, version, side, Message.defaults(fields)) == empty
    _check_round_trip(api_, version, side, Message())
    decoded = decode_side(api_, version, side, empty)
    assert decoded.to_dict() == Message.defaults(fields).to_dict()


@pytest.mark.parametrize(("api_", "version", "side"), CASES)
def test_plain_dict_encodes_like_message(api_: Api, version: int, side: str) -> None:
    # Handlers may pass plain dicts; the encoder must treat them exactly like Messages.
    fields = fields_of(api_, side)
    flexible = api_.is_flexible(version)
    value = ValueGenerator(f"dict/{api_.key}/{version}/{side}").message(fields, version, flexible)
    assert encode_side(api_, version, side, value.to_dict()) == encode_side(
        api_, version, side, value
    )
