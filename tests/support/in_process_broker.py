"""A broker running in this process, on its own event loop thread, for tests that inject
faults into the broker's own calls (a real socket still carries every request)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from broker.config.loader import make_config
from broker.lifecycle.server import Broker

START_TIMEOUT_S = 20.0


@contextmanager
def in_process_broker(data_dir: Path, overrides: dict[str, str] | None = None) -> Iterator[Broker]:
    """Start a Broker on 127.0.0.1 (ephemeral port: ``broker.config.listeners[0].port``)."""
    config = make_config(
        {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data_dir), **(overrides or {})}
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="in-process-broker", daemon=True)
    thread.start()
    broker = Broker(config)
    try:
        asyncio.run_coroutine_threadsafe(broker.start(), loop).result(START_TIMEOUT_S)
        yield broker
    finally:
        try:
            asyncio.run_coroutine_threadsafe(broker.stop(), loop).result(START_TIMEOUT_S)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(START_TIMEOUT_S)
            loop.close()
