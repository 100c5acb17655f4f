"""Every API this project describes, by key."""

from __future__ import annotations

from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.fetch import FETCH
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.messages.metadata import METADATA
from protocol.messages.produce import PRODUCE
from protocol.schema import Api

ALL_APIS: dict[int, Api] = {
    a.key: a for a in (PRODUCE, FETCH, METADATA, API_VERSIONS, INIT_PRODUCER_ID)
}
