"""The handler table the broker registers at start without importing the handlers."""

from __future__ import annotations

import asyncio
import itertools
import pkgutil
import subprocess
import sys
from pathlib import Path

import broker.handlers
from broker.core.dispatch import Dispatcher
from broker.handlers import HANDLERS, WARM, build_dispatcher, handler_module
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.share_fetch import SHARE_FETCH

ROOT = Path(__file__).resolve().parents[2]


def test_handler_table_repeats_what_each_handler_module_declares() -> None:
    for entry in HANDLERS:
        module = handler_module(entry)
        declared = (
            module.API.key,
            module.MIN_VERSION,
            module.MAX_VERSION,
            getattr(module, "ADVERTISED_MIN_VERSION", None),
            getattr(module, "FEATURE", None),
        )
        assert declared == entry[1:], entry.module


def test_handler_table_names_every_handler_module_and_key_once() -> None:
    # A module missing from HANDLERS would be neither advertised nor served.
    modules = {m.name for m in pkgutil.iter_modules(broker.handlers.__path__)}
    assert sorted(entry.module for entry in HANDLERS) == sorted(
        name for name in modules if not name.startswith("_")
    )
    assert len({entry.key for entry in HANDLERS}) == len(HANDLERS)


def _eager_dispatcher() -> Dispatcher:
    dispatcher = Dispatcher()
    for entry in HANDLERS:
        module = handler_module(entry)
        dispatcher.register(
            module.API,
            module.handle,
            module.MIN_VERSION,
            module.MAX_VERSION,
            getattr(module, "ADVERTISED_MIN_VERSION", None),
            getattr(module, "FEATURE", None),
        )
    return dispatcher


def test_lazy_registry_advertises_what_the_modules_registered_eagerly_would() -> None:
    lazy, eager = build_dispatcher(), _eager_dispatcher()
    assert lazy.advertised() == eager.advertised()
    lazy.enable("share.version")
    eager.enable("share.version")
    assert lazy.advertised() == eager.advertised()
    # Resolving a handler changes nothing in the answer.
    assert lazy.handler(API_VERSIONS.key) is not None
    assert lazy.advertised() == eager.advertised()


def test_lazy_handler_is_the_modules_own_once_asked_for() -> None:
    dispatcher = build_dispatcher()
    assert dispatcher.handler(999) is None
    handler = dispatcher.handler(API_VERSIONS.key)
    assert handler is not None
    module = handler_module(next(e for e in HANDLERS if e.key == API_VERSIONS.key))
    assert handler.fn is module.handle and handler.api is module.API
    assert dispatcher.handler(API_VERSIONS.key) is handler


def test_feature_gated_handler_is_neither_served_nor_advertised_until_enabled() -> None:
    dispatcher = build_dispatcher()
    assert dispatcher.handler(SHARE_FETCH.key) is None
    assert SHARE_FETCH.key not in {k for k, _, _ in dispatcher.advertised()}
    dispatcher.enable("share.version")
    handler = dispatcher.handler(SHARE_FETCH.key)
    assert handler is not None and handler.api is SHARE_FETCH


def test_building_the_dispatcher_imports_no_handler_module() -> None:
    script = (
        "import sys\n"
        "from broker.handlers import build_dispatcher\n"
        "build_dispatcher().advertised()\n"
        "print(sorted(m for m in sys.modules if m.startswith('broker.handlers.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_common_handlers_are_imported_after_the_first_request_one_per_loop_turn() -> None:
    dispatcher = build_dispatcher()
    warm = {entry.key for entry in HANDLERS if entry.module in WARM}
    assert len(warm) == len(WARM)

    async def first_request_then_turns() -> list[int]:
        assert dispatcher.handler(API_VERSIONS.key) is not None
        loaded = []
        for _ in range(2 * len(WARM)):  # bounded: each turn imports one module
            loaded.append(len(dispatcher.handlers))
            await asyncio.sleep(0)
        return loaded

    loaded = asyncio.run(first_request_then_turns())
    assert loaded[0] == 1  # the first request's own handler only, the rest after it
    assert all(b - a <= 1 for a, b in itertools.pairwise(loaded))
    assert warm <= set(dispatcher.handlers)
    assert SHARE_FETCH.key not in dispatcher.handlers


def test_background_imports_wait_while_a_request_is_being_handled() -> None:
    dispatcher = build_dispatcher()

    async def first_request_then_busy() -> tuple[int, int]:
        assert dispatcher.handler(API_VERSIONS.key) is not None
        dispatcher.in_flight = 1  # a request being handled, as inside Dispatcher.call
        for _ in range(len(WARM)):
            await asyncio.sleep(0)
        while_busy = len(dispatcher.handlers)
        dispatcher.in_flight = 0
        deadline = asyncio.get_running_loop().time() + 10
        while len(dispatcher.handlers) < 1 + len(WARM):
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.001)
        return while_busy, len(dispatcher.handlers)

    while_busy, after = asyncio.run(first_request_then_busy())
    assert while_busy == 1
    assert after == 1 + len(WARM)
