"""The console's HTTP listener (``minikafka.console.listener``; off unless set).

Loopback only unless ``minikafka.console.allow.remote=true``, with the Host and Origin checks
of every side listener (broker.net.local_http): a web page elsewhere cannot read it, even
after DNS rebinding. Changes are POSTs to /actions/<name> (broker.console.actions), taken
only with an Origin that is the console's own (a POST without one is refused), the
Content-Type of an HTML form, a body of at most ``max_body`` bytes and the form's token: an
HMAC of the login under a secret made at each start, which a page elsewhere cannot read.

    GET /health   200 while the console serves and the broker is not stopping, else 503
    GET /ready    200 once the broker serves its listeners, 503 before, while restarting
                  after a fault-injected crash and while stopping
    GET /metrics  Prometheus text format (broker.console.metrics)
    GET /, /topics, /topics/<t>, /topics/<t>/<p>, /groups, /groups/<g>, /acls, /users,
        /faults   HTML pages (broker.console.pages)
    GET /rates.json, /faults/requests.json?since=<time>   for /static/console.js
    POST /actions/<name>   a change (broker.console.actions): done, answered 303 See Other
                  to the page showing it (POST/redirect/GET: a reload repeats nothing), its
                  outcome shown there (?done=<reference>); refused, answered 400 with why

With SASL on any listener, everything but /health and /ready asks for HTTP Basic
credentials, checked as the broker's own logins are (broker.console.logins: failed ones
logged a line per address and user a minute, answered 429 past a few a minute), and shows
only the topics and groups that principal may DESCRIBE (the broker's authorizer; everything
without one).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import secrets
import socket
import time
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

from broker.console import actions, pages
from broker.console.exposition import Family, render
from broker.console.logins import Logins
from broker.console.metrics import collect
from broker.console.script import SCRIPT
from broker.net.local_http import HttpError, LocalHttpServer, Refused, Reply, Request
from broker.runtime import offload
from broker.security.acl import CLUSTER, CLUSTER_NAME, DESCRIBE, GROUP, TOPIC
from broker.security.client_address import java_host_address
from protocol.api_keys import ALL_APIS

if TYPE_CHECKING:
    from broker.config.model import Config
    from broker.core.state import BrokerState
    from broker.lifecycle.server import Broker
    from broker.toolkit.faults import FaultInjector

log = logging.getLogger(__name__)

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
RATE_INTERVAL_S = 5.0
OFFLOAD_BYTES = 256 * 1024
OFFLOAD_SAMPLES = 2000
API_NAMES = {key: api.name for key, api in ALL_APIS.items()}


class ConsoleHost(Protocol):
    """What the console shows (broker.toolkit.host.BrokerHost): the current broker, which a
    fault-injected crash replaces, or None while there is none."""

    config: Config
    broker: Broker | None

    @property
    def faults(self) -> FaultInjector: ...


FORM = "application/x-www-form-urlencoded"
MAX_FORM_FIELDS = 64


class ConsoleServer(LocalHttpServer):
    what = "console"
    log_bodies = False
    # A form: a record produced from the page is at most this (Kafka's default
    # max.request.size is 1 MiB).
    max_body = 1024 * 1024
    max_connections = 16
    answer_timeout = 30.0

    def __init__(self, host: ConsoleHost, bind: str, sockets: list[socket.socket]) -> None:
        super().__init__(bind, sockets, host.config.console_allow_remote)
        self.host = host
        self.started = time.time()
        self.stopping = False
        self.logins = Logins()
        self.notices = Notices()
        self.rates = pages.Rates()
        self._sampler: asyncio.Task[None] | None = None
        # Forms' tokens are HMACs under this: a restart of the process voids old pages.
        self._secret = secrets.token_bytes(32)

    @classmethod
    def bind_to(cls, host: ConsoleHost, bind: str, port: int) -> ConsoleServer:
        sockets = cls.bind_sockets(bind, port, "console", "minikafka.console.listener")
        return cls(host, bind, sockets)

    async def serve(self) -> None:
        await self.start_serving()
        self._sampler = asyncio.create_task(self._sample(), name="console-rates")
        log.info("minikafka console on %s/ (metrics on %s/metrics)", self.url, self.url)

    async def close(self) -> None:
        self.stopping = True
        if self._sampler is not None:
            self._sampler.cancel()
        await super().close()

    async def _sample(self) -> None:
        """Messages and bytes per second for the overview: the counters' change over the
        last interval (as Kafka's meters' one-minute rates, only shorter)."""
        while True:
            state = self._state()
            if state is not None:
                self.rates.sample(state.metrics.total, time.monotonic())
            await asyncio.sleep(RATE_INTERVAL_S)

    def _state(self) -> BrokerState | None:
        broker = self.host.broker
        return broker.state if broker is not None else None

    def check_caller(self, request: Request) -> None:
        if request.method == "GET":
            if request.headers.get("content-length", "0") != "0":
                raise HttpError(400, "a GET carries no body")
            return
        if request.method != "POST":
            raise HttpError(
                405, f"method {request.method} not allowed (GET, POST)", {"Allow": "GET, POST"}
            )
        # check_origin refused a foreign Origin; a POST must name its own, which every
        # browser sends with a form's POST.
        if "origin" not in request.headers:
            raise Refused(403, "a POST must carry the console's own Origin")
        media = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if media != FORM:
            raise Refused(415, f"a POST body must be Content-Type: {FORM}")

    def log_call(self, peer: Any, request: Request, status: int, refusal: str) -> None:
        # Logins log their failures (a line per address and user a minute, not per request);
        # a browser's first request, without credentials, is answered 401 as a matter of course.
        if status in (401, 429):
            return
        super().log_call(peer, request, status, refusal)

    def csrf_token(self, principal: str | None) -> str:
        return hmac.new(self._secret, (principal or "").encode(), hashlib.sha256).hexdigest()

    async def route(self, request: Request) -> Reply:
        url = urlsplit(request.target)
        path = url.path.rstrip("/") or "/"
        if path == "/health":
            return self._health()
        if path == "/ready":
            return self._ready()
        if path == "/favicon.ico":
            # Asked by every browser with every page: an empty answer, not a logged 404.
            return Reply(204, b"", "image/x-icon", {"Cache-Control": "max-age=86400"})
        state = self._state()
        if state is None:
            raise HttpError(503, "the broker is restarting", {"Retry-After": "1"})
        principal = await self._login(state, request)
        visible = self._visibility(state, principal, request)
        query = dict(parse_qsl(url.query))
        if request.method == "POST":
            return await self._act(state, principal, request, path)
        if path == "/metrics":
            faults = self.host.faults
            faulted = faults.offline.keys() if faults is not None else ()
            families = await collect(state, API_NAMES, visible, faulted)
            # Thousands of partitions' samples: the text is written off the loop.
            if sum(len(f.samples) for f in families) < OFFLOAD_SAMPLES:
                return Reply(200, render(families).encode(), PROMETHEUS_TEXT)
            return Reply(200, await offload.run(_exposition, families), PROMETHEUS_TEXT)
        if path == "/static/console.js":
            return Reply(200, _SCRIPT, "text/javascript; charset=utf-8", _STATIC_HEADERS.copy())
        if path == "/rates.json":
            return _json(self._rates(state))
        if path == "/faults/requests.json":
            # Requests name any topic and carry their data: for the cluster's describers.
            if not visible("cluster", CLUSTER_NAME):
                raise HttpError(403, "the request log needs DESCRIBE on the cluster")
            since = query.get("since", "0")
            try:
                after = float(since)
            except ValueError:
                after = 0.0
            return _json(actions.request_tail(self.host.faults, after))
        parts = [unquote(p) for p in path.strip("/").split("/")] if path != "/" else []
        view = pages.View(
            state,
            visible,
            query,
            principal,
            self.host.config,
            self.rates,
            self.csrf_token(principal),
            self.host.faults,
            self.notices.get(principal, query.get("done", "")),
        )
        html = await pages.render(view, parts)
        if html is None:
            raise HttpError(404, f"no page {url.path[:200]!r}")
        # A page of records runs to megabytes: encoded off the loop.
        body = html.encode() if len(html) < OFFLOAD_BYTES else await offload.run(str.encode, html)
        return Reply(200, body, "text/html; charset=utf-8", _PAGE_HEADERS.copy())

    def _rates(self, state: BrokerState) -> dict[str, float]:
        total = state.metrics.total
        rates = self.rates
        return {
            "messages_in": total.messages_in,
            "bytes_in": total.bytes_in,
            "bytes_out": total.bytes_out,
            "messages_in_rate": rates.messages_in,
            "bytes_in_rate": rates.bytes_in,
            "bytes_out_rate": rates.bytes_out,
        }

    async def _act(
        self, state: BrokerState, principal: str | None, request: Request, path: str
    ) -> Reply:
        """A form's change: token checked, then the action (broker.console.actions)."""
        try:
            text = request.body.decode("utf-8")
            fields = parse_qsl(
                text,
                keep_blank_values=True,
                strict_parsing=bool(text),
                max_num_fields=MAX_FORM_FIELDS,
            )
        except (UnicodeDecodeError, ValueError):
            raise HttpError(400, "the body is not a form") from None
        form = dict(fields)
        token = form.pop("csrf", "")
        if not hmac.compare_digest(token.encode(), self.csrf_token(principal).encode()):
            raise Refused(403, "the form's token is missing or stale: reload the page")
        name = path.removeprefix("/actions/")
        if name == path or name not in actions.ACTIONS:
            raise HttpError(404, f"no action {path[:100]!r}")
        caller = actions.Caller(state, principal, request.peer, self.host.faults)
        try:
            outcome = await actions.run(caller, name, form)
        except actions.ActionError as exc:
            outcome = actions.Outcome(False, str(exc), "/")
        log.info(
            "console: %s by %s: %s",
            name,
            principal or "(no login)",
            outcome.message if outcome.ok else f"refused: {outcome.message}",
        )
        if not outcome.ok:
            # Nothing changed: the refusal is the answer, and sending it again repeats nothing.
            body = pages.outcome_page(False, outcome.message, outcome.back).encode()
            return Reply(400, body, "text/html; charset=utf-8", _PAGE_HEADERS.copy())
        # POST/redirect/GET: the page showing the change, so a reload does not make it again.
        ref = self.notices.put(principal, outcome.message)
        there = f"{outcome.back}{'&' if '?' in outcome.back else '?'}done={ref}"
        body = pages.outcome_page(True, outcome.message, there).encode()
        return Reply(
            303,
            body,
            "text/html; charset=utf-8",
            {**_PAGE_HEADERS, "Location": there},
        )

    # -- health --------------------------------------------------------------------------

    def _health(self) -> Reply:
        state = self._state()
        stopping = self.stopping or (state is not None and state.shutting_down)
        return _status(not stopping, "stopping" if stopping else "serving")

    def _ready(self) -> Reply:
        broker = self.host.broker
        state = self._state()
        if broker is None or state is None:
            return _status(False, "no broker (starting or restarting)")
        if state.shutting_down or self.stopping:
            return _status(False, "stopping")
        return _status(True, "ready")

    # -- who is asking -------------------------------------------------------------------

    def _sasl_on(self) -> bool:
        return any(listener.security.sasl is not None for listener in self.host.config.listeners)

    async def _login(self, state: BrokerState, request: Request) -> str | None:
        """The principal (``User:<name>``) of the request's Basic credentials, or None when
        no listener takes SASL (then the console asks for none)."""
        if not self._sasl_on():
            return None
        authorization = request.headers.get("authorization", "")
        return await self.logins.principal(self.host.config, state, authorization, request.peer)

    def _visibility(
        self, state: BrokerState, principal: str | None, request: Request
    ) -> pages.Visible:
        authorizer = state.authorizer
        if authorizer is None or principal is None:
            return _everything
        host = java_host_address(request.peer)
        kinds = {"topic": TOPIC, "group": GROUP, "cluster": CLUSTER}
        cache: dict[tuple[str, str], bool] = {}

        def visible(kind: str, name: str) -> bool:
            seen = cache.get((kind, name))
            if seen is None:
                seen = cache[kind, name] = authorizer.authorize(
                    principal, host, DESCRIBE, kinds[kind], name, log_denied=False
                )
            return seen

        return visible


class Notices:
    """What a change from a form did, kept for the page its answer redirects to: named by a
    random reference in that page's address, shown only to the same login; the last
    ``KEPT`` only (an older reference shows the page without it)."""

    KEPT = 256

    def __init__(self) -> None:
        self._kept: dict[str, tuple[str | None, str]] = {}

    def put(self, principal: str | None, message: str) -> str:
        ref = secrets.token_urlsafe(9)
        if len(self._kept) >= self.KEPT:
            del self._kept[next(iter(self._kept))]
        self._kept[ref] = (principal, message)
        return ref

    def get(self, principal: str | None, ref: str) -> str | None:
        kept = self._kept.get(ref)
        return kept[1] if kept is not None and kept[0] == principal else None


_PAGE_HEADERS = {
    # The pages embed records' bytes (escaped): no script runs on them but the console's
    # own file, nothing loads from elsewhere, forms post only here, no other site frames them.
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; connect-src 'self'; "
    "style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    # No page address (topic names) to other sites; not no-referrer, under which Chromium
    # sends a form's POST with "Origin: null", which the Origin check refuses.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


_STATIC_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "max-age=60"}
_SCRIPT = SCRIPT.encode()


def _json(payload: object) -> Reply:
    body = json.dumps(payload, default=str).encode()
    return Reply(200, body, "application/json", {"Cache-Control": "no-store"})


def _exposition(families: list[Family]) -> bytes:
    return render(families).encode()


def _everything(kind: str, name: str) -> bool:
    return True


def _status(ok: bool, text: str) -> Reply:
    body = f'{{"status": "{"UP" if ok else "DOWN"}", "detail": "{text}"}}\n'.encode()
    return Reply(200 if ok else 503, body, "application/json", {"Cache-Control": "no-store"})
