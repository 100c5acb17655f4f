"""The console's HTML pages, rendered on the server (no build step; one small script of
the console's own, /static/console.js, for live rates and the request log's tail). Every
value that comes from a client or the log is escaped; a topic or group the principal may
not DESCRIBE is answered as one that does not exist. Each form that changes something
posts to /actions/<name> (broker.console.actions) with the login's token.

    /                       overview: node, listeners, uptime, totals and rates, clients
    /topics                 topics with partitions, size, messages in
    /topics/<t>             partitions (log start/end, LSO, size, segments), producers
                            and open transactions, configs with their sources
    /topics/<t>/<p>         records: ?offset= or ?timestamp= (ms), &order=oldest|newest,
                            &count=, &format=text|json|hex; ?search=<text>&in=key|value|any
                            from ?offset= (a bounded window: broker.console.browse.search)
    /groups                 groups, classic and KIP-848, with their lag
    /groups/<g>             members, assignments, committed offsets and lag
    /acls, /users           ACLs and SCRAM users (for a principal that may DESCRIBE the
                            cluster); changed with the admin APIs
    /faults                 faults set, set and clear one, the request log's tail
"""

from __future__ import annotations

import contextlib
import html
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from broker.config.topic_configs import describe_topic
from broker.console import browse
from broker.coordinator.groups.consumer_protocol import MalformedProtocol, decode_assignment
from broker.runtime import offload
from broker.security import acl

if TYPE_CHECKING:
    from broker.config.model import Config
    from broker.core.metrics import TopicCounters
    from broker.core.state import BrokerState
    from storage.partition_log import PartitionLog

Visible = Callable[[str, str], bool]  # (kind "topic" | "group" | "cluster", name)
SHOWN_BYTES = 2048  # of a key, value or header value; the rest is counted, not shown
DEFAULT_COUNT = 50
# A table of more rows than this is written off the loop (broker.runtime.offload).
OFFLOAD_ROWS = 100


class Html(str):
    """Markup made here, not escaped again."""


def esc(value: object) -> Html:
    return value if isinstance(value, Html) else Html(html.escape(str(value), quote=True))


def link(path: str, text: object, **query: object) -> Html:
    href = path + ("?" + urlencode({k: str(v) for k, v in query.items()}) if query else "")
    return Html(f'<a href="{esc(href)}">{esc(text)}</a>')


def part(name: str) -> str:
    return quote(name, safe="")


def table(head: Iterable[str], rows: Iterable[Iterable[object]]) -> Html:
    out = ["<table><tr>", *(f"<th>{esc(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>")
    out.append("</table>")
    return Html("".join(out))


class Rates:
    """Per-second rates of the broker's totals over the last sampling interval."""

    def __init__(self) -> None:
        self._last: tuple[float, int, int, int] | None = None
        self.messages_in = self.bytes_in = self.bytes_out = 0.0

    def sample(self, total: TopicCounters, now: float) -> None:
        current = (now, total.messages_in, total.bytes_in, total.bytes_out)
        if self._last is not None and now > self._last[0]:
            elapsed = now - self._last[0]
            self.messages_in, self.bytes_in, self.bytes_out = (
                max(current[i] - self._last[i], 0) / elapsed for i in (1, 2, 3)
            )
        self._last = current


@dataclass
class View:
    state: BrokerState
    visible: Visible
    query: dict[str, str]
    principal: str | None
    config: Config
    rates: Rates
    csrf: str = ""  # the token each form carries (broker.console.server)
    faults: Any = None  # broker.toolkit.faults.FaultInjector, when the broker has one
    notice: str | None = None  # what the change redirected here did (broker.console.server)


def form(action: str, view: View, fields: str, button: str) -> Html:
    """A form posting to /actions/<action> with the login's token."""
    return Html(
        f'<form method="post" action="/actions/{esc(action)}" class="action">'
        f'<input type="hidden" name="csrf" value="{esc(view.csrf)}">{fields}'
        f'<button type="submit">{esc(button)}</button></form>'
    )


def hidden(name: str, value: object) -> str:
    return f'<input type="hidden" name="{esc(name)}" value="{esc(value)}">'


def field(label: str, name: str, value: object = "", size: int = 20) -> str:
    return (
        f'<label>{esc(label)} <input name="{esc(name)}" value="{esc(value)}" '
        f'size="{size}"></label> '
    )


def area(label: str, name: str, placeholder: str = "") -> str:
    return (
        f'<label>{esc(label)} <textarea name="{esc(name)}" rows="3" cols="40" '
        f'placeholder="{esc(placeholder)}"></textarea></label> '
    )


def select(label: str, name: str, options: Iterable[str]) -> str:
    shown = "".join(f'<option value="{esc(o)}">{esc(o)}</option>' for o in options)
    return f'<label>{esc(label)} <select name="{esc(name)}">{shown}</select></label> '


def outcome_page(ok: bool, message: str, back: str) -> str:
    mark = "Done" if ok else "Refused"
    return _layout(
        mark,
        f'<p class="{"ok" if ok else "bad"}" id="outcome">{esc(message)}</p>'
        f"<p>{link(back, 'back')}</p>",
    )


async def render(view: View, parts: list[str]) -> str | None:
    page = await _page(view, parts)
    if page is None:
        return None
    title, body, script = page
    if view.notice is not None:
        # A change's outcome, on the page its form's answer redirected to.
        body = f'<p class="ok" id="outcome">{esc(view.notice)}</p>{body}'
    return _layout(title, body, script)


async def _page(view: View, parts: list[str]) -> tuple[str, str, bool] | None:
    """(title, body, whether it runs the console's script), or None: no such page."""
    if not parts:
        return "Overview", _overview(view), True
    if parts[0] == "topics":
        if len(parts) == 1:
            return "Topics", _topics(view), False
        info = view.state.store.topic(parts[1])
        if info is None or not view.visible("topic", info.name):
            return None
        if len(parts) == 2:
            return f"Topic {info.name}", await _topic(view, info.name, info.partitions), False
        if len(parts) == 3 and parts[2].isdigit() and int(parts[2]) < len(info.partitions):
            plog = info.partitions[int(parts[2])]
            return f"{info.name}-{plog.partition}", await _messages(view, plog), False
        return None
    if parts[0] == "groups":
        if len(parts) == 1:
            return "Consumer groups", _groups(view), False
        if len(parts) == 2 and view.visible("group", parts[1]):
            body = _group(view, parts[1])
            return None if body is None else (f"Group {parts[1]}", body, False)
    if parts == ["acls"]:
        return "ACLs", _acls(view), False
    if parts == ["users"]:
        return "SCRAM users", _users(view), False
    if parts == ["faults"]:
        return "Faults", _faults(view), True
    return None


_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
nav a{margin-right:1em}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
pre{margin:0;white-space:pre-wrap;word-break:break-all;max-width:60em}
.muted{color:#777}
form.action{margin:.5em 0;padding:.4em;border:1px solid #ddd;background:#fafafa}
form.action label{margin-right:.6em}
.ok{color:#060}.bad{color:#a00;font-weight:bold}
"""


def _layout(title: str, body: str, script: bool = False) -> str:
    # The script (the console's own, CSP 'self') updates rates and the request log's tail.
    tag = '<script src="/static/console.js" defer></script>' if script else ""
    return (
        f'<!doctype html><html><head><meta charset="utf-8">{tag}'
        f"<title>{esc(title)} - minikafka</title><style>{_STYLE}</style></head><body>"
        f"<nav>{link('/', 'Overview')}{link('/topics', 'Topics')}"
        f"{link('/groups', 'Consumer groups')}{link('/acls', 'ACLs')}"
        f'{link("/users", "Users")}{link("/faults", "Faults")}<a href="/metrics">Metrics</a></nav>'
        f"<h1>{esc(title)}</h1>{body}</body></html>"
    )


# -- overview ------------------------------------------------------------------------------


def _overview(view: View) -> str:
    state = view.state
    config = view.config
    metrics = state.metrics
    topics = [t for t in state.store.topics() if view.visible("topic", t.name)]
    partitions = [plog for t in topics for plog in t.partitions]
    uptime = int(time.time() - metrics.started)
    rates = view.rates
    node = table(
        ["node id", "cluster id", "uptime", "principal"],
        [[state.node_id, state.cluster_id, _duration(uptime), view.principal or "(no SASL)"]],
    )
    listeners = table(
        ["listener", "bind", "advertised", "security"],
        [
            [
                listener.name,
                f"{listener.host or '*'}:{listener.port}",
                f"{listener.advertised_host}:{listener.advertised_port}",
                listener.security.protocol,
            ]
            for listener in config.listeners
        ],
    )
    traffic = table(
        ["topics", "partitions", "bytes on disk", "messages in", "bytes in", "bytes out"],
        [
            [
                len(topics),
                len(partitions),
                sum(p.size for p in partitions),
                Html(
                    f'<span id="messages-in">{metrics.total.messages_in} '
                    f"({rates.messages_in:.1f}/s)</span>"
                ),
                Html(
                    f'<span id="bytes-in">{metrics.total.bytes_in} ({rates.bytes_in:.0f}/s)</span>'
                ),
                Html(
                    f'<span id="bytes-out">{metrics.total.bytes_out} '
                    f"({rates.bytes_out:.0f}/s)</span>"
                ),
            ]
        ],
    )
    out = [node, "<h2>Listeners</h2>", listeners, "<h2>Traffic</h2>", traffic]
    if view.visible("cluster", "kafka-cluster"):
        clients: dict[tuple[str, str, str], int] = {}
        for client in state.client_software.values():
            clients[client] = clients.get(client, 0) + 1
        out += [
            f"<h2>Connections ({len(state.connections)})</h2>",
            table(
                ["client id", "software", "version", "connections"],
                [[*k, n] for k, n in sorted(clients.items())],
            ),
        ]
    return "".join(out)


def _duration(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h {rest // 60}m {rest % 60}s"


# -- topics --------------------------------------------------------------------------------


def _topics(view: View) -> str:
    rows = []
    for info in sorted(view.state.store.topics(), key=lambda t: t.name):
        if not view.visible("topic", info.name):
            continue
        counters = view.state.metrics.topics.get(info.name)
        rows.append(
            [
                link(f"/topics/{part(info.name)}", info.name),
                len(info.partitions),
                sum(p.size for p in info.partitions),
                sum(p.high_watermark - p.log_start_offset for p in info.partitions),
                counters.messages_in if counters else 0,
            ]
        )
    create = form(
        "create-topic",
        view,
        field("name", "name")
        + field("partitions", "partitions", 1, 4)
        + area("configs", "configs", "cleanup.policy=compact"),
        "Create topic",
    )
    return (
        table(["topic", "partitions", "bytes", "records in log", "messages in"], rows)
        + "<h2>Create a topic</h2>"
        + create
    )


async def _topic(view: View, name: str, logs: list[PartitionLog]) -> str:
    # The numbers read here; hundreds of partitions' rows are written off the loop.
    numbers = [
        (
            plog.partition,
            plog.log_start_offset,
            plog.high_watermark,
            plog.last_stable_offset,
            plog.size,
            len(plog.segments),
        )
        for plog in logs
    ]
    if len(numbers) < OFFLOAD_ROWS:
        partitions = _partitions_table(name, numbers)
    else:
        partitions = await offload.run(_partitions_table, name, numbers)
    producers = table(
        [
            "partition",
            "producer id",
            "epoch",
            "last sequence",
            "last offset",
            "last timestamp",
            "open transaction from",
        ],
        [
            [
                plog.partition,
                entry.producer_id,
                entry.epoch,
                entry.last_seq,
                entry.last_offset,
                entry.last_timestamp_ms,
                entry.current_txn_first_offset if entry.in_transaction else "",
            ]
            for plog in logs
            for entry in sorted(plog.producers.entries(), key=lambda e: e.producer_id)
        ],
    )
    state = view.state
    info = state.store.topic(name)
    overrides = state.topic_overrides(info) if info is not None else {}
    configs = table(
        ["config", "value", "source"],
        [
            [e.name, "(sensitive)" if e.sensitive else e.value, e.source.name]
            for e in describe_topic(view.config, overrides)
        ],
    )
    changes = (
        form(
            "alter-config",
            view,
            hidden("topic", name)
            + field("config", "config")
            + field("value", "value")
            + select("", "op", ["set", "delete"]),
            "Alter config",
        )
        + form(
            "delete-records",
            view,
            hidden("topic", name)
            + field("partition", "partition", 0, 4)
            + field("before offset (-1: all)", "offset", -1, 10),
            "Delete records",
        )
        + form(
            "delete-topic",
            view,
            hidden("name", name) + field("type the topic's name to confirm", "confirm"),
            "Delete topic",
        )
    )
    return (
        f"<h2>Partitions</h2>{partitions}<h2>Producers and transactions</h2>{producers}"
        f"<h2>Configs</h2>{configs}<h2>Change</h2>{changes}"
    )


def _partitions_table(name: str, numbers: list[tuple[int, int, int, int, int, int]]) -> Html:
    base = f"/topics/{part(name)}"
    return table(
        ["partition", "log start", "high watermark", "LSO", "bytes", "segments", "records"],
        [
            [
                link(f"{base}/{index}", index),
                *rest,
                link(f"{base}/{index}", "browse", order="newest"),
            ]
            for index, *rest in numbers
        ],
    )


async def _messages(view: View, plog: PartitionLog) -> str:
    query = view.query
    if query.get("search"):
        return await _search(view, plog)
    count = _int(query.get("count"), DEFAULT_COUNT, 1, browse.MAX_RECORDS)
    newest = query.get("order") == "newest"
    shape = query.get("format", "text")
    default = plog.high_watermark - count if newest else plog.log_start_offset
    offset = _int(query.get("offset"), default, 0, 2**63 - 1)
    if "timestamp" in query:
        # ListOffsets' lookup: the first record at or after the time (none: the log end).
        found = plog.offset_for_timestamp(_int(query["timestamp"], 0, 0, 2**63 - 1))
        offset = found.offset if found is not None else plog.high_watermark
    elif newest and "offset" in query:
        offset = offset - count + 1  # newest first, down from the given offset
    start = max(offset, plog.log_start_offset)
    page = await browse.read(plog, start, count)
    if newest:
        # A page's read is bounded in bytes: big records stop it short of the newest ones
        # asked for. Read again nearer the end, as many as fitted (records alike in size).
        wanted_end = min(start + count, plog.high_watermark)
        for _ in range(2):
            later = wanted_end - len(page.records)
            if not page.records or page.next_offset >= wanted_end or later <= start:
                break
            start = later
            page = await browse.read(plog, start, count)
    records = list(reversed(page.records)) if newest else page.records
    # Formatting hundreds of records is milliseconds of Python: a worker thread's, not the loop's.
    rows = await offload.run(_records_table, records, shape)
    base = f"/topics/{part(plog.topic)}/{plog.partition}"
    nav = [
        link(base, "oldest", count=count),
        link(base, "newest", order="newest", count=count),
    ]
    if page.records and not newest and page.next_offset < plog.high_watermark:
        nav.append(link(base, "next", offset=page.next_offset, count=count, format=shape))
    if page.records and newest and page.records[0].offset > plog.log_start_offset:
        nav.append(
            link(
                base,
                "older",
                offset=page.records[0].offset - 1,
                order="newest",
                count=count,
                format=shape,
            )
        )
    shapes = [
        link(base, f, offset=offset, order=query.get("order", "oldest"), count=count, format=f)
        for f in ("text", "json", "hex")
    ]
    problem = f"<p><b>{esc(page.problem)}</b></p>" if page.problem else ""
    send = _search_form(view, plog) + form(
        "produce",
        view,
        hidden("topic", plog.topic)
        + hidden("partition", plog.partition)
        + field("key", "key")
        + area("value", "value")
        + area("headers", "headers", "name=value"),
        "Produce",
    )
    return (
        f"<p>log start {plog.log_start_offset}, high watermark {plog.high_watermark}, "
        f"LSO {plog.last_stable_offset}; {len(records)} record(s) "
        f"{'newest' if newest else 'oldest'} first</p>"
        f"<p>{' '.join(nav)} | show as {' '.join(shapes)}</p>{problem}"
        + rows
        + "<h2>Produce a record</h2>"
        + send
    )


def _search_form(view: View, plog: PartitionLog, needle: str = "", start: object = "") -> Html:
    where = view.query.get("in", "any")
    options = "".join(
        f'<option value="{w}"{" selected" if w == where else ""}>{w}</option>'
        for w in ("any", "key", "value")
    )
    return Html(
        f'<h2>Search</h2><form method="get" class="action" '
        f'action="/topics/{esc(part(plog.topic))}/{plog.partition}">'
        + field("text", "search", needle)
        + f'<label>in <select name="in">{options}</select></label> '
        + field("from offset", "offset", start, 10)
        + f'<button type="submit">Search</button> <span class="muted">at most '
        f"{browse.SEARCH_RECORDS} records or {browse.SEARCH_BYTES // (1024 * 1024)} MiB "
        "scanned a search</span></form>"
    )


async def _search(view: View, plog: PartitionLog) -> str:
    query = view.query
    needle = query["search"]
    where = query.get("in", "any")
    shape = query.get("format", "text")
    start = _int(query.get("offset"), plog.log_start_offset, 0, 2**63 - 1)
    found = await browse.search(plog, start, needle.encode(), where)
    rows = await offload.run(_records_table, found.records, shape)
    base = f"/topics/{part(plog.topic)}/{plog.partition}"
    more = ""
    if found.next_offset < plog.high_watermark:
        more = link(
            base,
            "search on",
            search=needle,
            offset=found.next_offset,
            format=shape,
            **{"in": where},
        )
    problem = f"<p><b>{esc(found.problem)}</b></p>" if found.problem else ""
    return (
        f'<p id="search-window">{len(found.records)} match(es) for {esc(repr(needle))} in '
        f"{esc(where)}; scanned offsets {found.start} to {found.next_offset - 1} "
        f"({found.scanned_records} records, {found.scanned_bytes} bytes of log) {more}</p>"
        + problem
        + rows
        + _search_form(view, plog, needle, found.next_offset)
    )


def _records_table(records: list[browse.Shown], shape: str) -> Html:
    rows = []
    for r in records:
        b = r.batch
        details = (
            f"batch {b.base_offset}-{b.last_offset}, {b.size} B, {b.codec}, "
            f"producer {b.producer_id} epoch {b.producer_epoch} seq {b.base_sequence}"
            + (", transactional" if b.transactional else "")
            + (f", control {r.marker}" if b.control else "")
            + f", {b.timestamp_type}"
        )
        headers = "".join(f"{esc(k)}: {_shown(v, shape)}<br>" for k, v in r.headers)
        rows.append(
            [
                r.offset,
                r.timestamp,
                Html(_shown(r.key, shape)),
                Html(_shown(r.value, shape)),
                Html(headers),
                Html(f'<span class="muted">{esc(details)}</span>'),
            ]
        )
    return table(["offset", "timestamp", "key", "value", "headers", "batch"], rows)


def _int(text: str | None, default: int, low: int, high: int) -> int:
    if text is None or not text.lstrip("-").isdigit():
        return default
    return max(low, min(int(text), high))


def _shown(data: bytes | None, shape: str) -> str:
    if data is None:
        return '<span class="muted">null</span>'
    cut = data[:SHOWN_BYTES]
    rest = (
        f' <span class="muted">(+{len(data) - len(cut)} B)</span>' if len(data) > len(cut) else ""
    )
    if shape == "hex":
        return f"<pre>{esc(cut.hex(' '))}</pre>{rest}"
    text = cut.decode("utf-8", errors="replace")
    if shape == "json" and not rest:
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(data), indent=2, ensure_ascii=False)
    return f"<pre>{esc(text)}</pre>{rest}"


# -- groups --------------------------------------------------------------------------------


def _lag(view: View, group: str) -> list[tuple[str, int, int, int, int]]:
    """(topic, partition, committed, high watermark, lag) of each visible partition."""
    out = []
    store = view.state.store
    for (topic, partition), committed in sorted(view.state.groups.store.offsets(group).items()):
        plog = store.partition(topic, partition)
        if plog is None or not view.visible("topic", topic):
            continue
        end = plog.high_watermark
        out.append((topic, partition, committed.offset, end, max(end - committed.offset, 0)))
    return out


def _groups(view: View) -> str:
    coordinator = view.state.groups
    rows: dict[str, list[object]] = {}
    for record_group in coordinator.store.groups():
        rows[record_group] = [record_group, "classic", "Empty", 0]
    for classic in coordinator.list_groups():
        rows[classic.group_id] = [
            classic.group_id,
            "classic",
            classic.state.value,
            len(classic.members),
        ]
    for consumer in coordinator.consumer.groups.values():
        rows[consumer.group_id] = [
            consumer.group_id,
            "consumer",
            consumer.state.value,
            len(consumer.members),
        ]
    shown = []
    for group_id, row in sorted(rows.items()):
        if not view.visible("group", group_id):
            continue
        row[0] = link(f"/groups/{part(group_id)}", group_id)
        shown.append([*row, sum(entry[4] for entry in _lag(view, group_id))])
    return table(["group", "protocol", "state", "members", "lag"], shown)


def _group(view: View, group_id: str) -> str | None:
    coordinator = view.state.groups
    classic = coordinator.describe(group_id)
    consumer = coordinator.consumer.groups.get(group_id)
    offsets = _lag(view, group_id)
    if classic is None and consumer is None and group_id not in coordinator.store.groups():
        return None
    members: list[list[object]] = []
    summary = ""
    if consumer is not None:
        names = {t.topic_id: t.name for t in view.state.store.topics()}
        summary = f"KIP-848 consumer group, {consumer.state.value}, epoch {consumer.group_epoch}"
        for m in consumer.members.values():
            assigned = ", ".join(
                f"{names.get(tid, tid.hex())}: {sorted(ps)}"
                for tid, ps in sorted(m.assigned.items())
                if view.visible("topic", names.get(tid, ""))
            )
            members.append([m.member_id, m.client_id, m.client_host, assigned])
    elif classic is not None:
        summary = (
            f"classic group, {classic.state.value}, generation {classic.generation_id}, "
            f"protocol {classic.protocol_type or ''}/{classic.protocol_name or ''}"
        )
        for cm in classic.members.values():
            assigned = ""
            if classic.protocol_type == "consumer" and cm.assignment:
                try:
                    assigned = ", ".join(
                        f"{t}: {sorted(ps)}"
                        for t, ps in decode_assignment(cm.assignment).partitions
                        if view.visible("topic", t)
                    )
                except MalformedProtocol:
                    assigned = "(unreadable assignment)"
            members.append([cm.member_id, cm.client_id, cm.client_host, assigned])
    else:
        summary = "no members (committed offsets only)"
    reset = form(
        "reset-offsets",
        view,
        hidden("group", group_id)
        + field("topic", "topic", offsets[0][0] if offsets else "")
        + field("partition (blank: all)", "partition", "", 4)
        + select("to", "to", ["earliest", "latest", "offset"])
        + field("offset", "offset", "", 10),
        "Reset offsets",
    )
    return (
        f"<p>{esc(summary)}</p><h2>Members</h2>"
        + table(["member id", "client id", "host", "assignment"], members)
        + "<h2>Committed offsets</h2>"
        + table(
            ["topic", "partition", "committed", "high watermark", "lag"],
            [[link(f"/topics/{part(t)}", t), p, c, e, lag] for t, p, c, e, lag in offsets],
        )
        + "<h2>Reset offsets</h2><p>Only while the group has no members, as "
        "kafka-consumer-groups --reset-offsets.</p>" + reset
    )


# -- security ------------------------------------------------------------------------------

_ADMIN_HINT = "<p>Changed with the admin APIs: {}. The console lists them only.</p>"


def _acls(view: View) -> str:
    authorizer = view.state.authorizer
    if authorizer is None:
        return "<p>No authorizer (authorizer.class.name is not set): every request is allowed.</p>"
    if not view.visible("cluster", acl.CLUSTER_NAME):
        return "<p>Listing ACLs needs DESCRIBE on the cluster.</p>"
    every = acl.AclFilter(acl.ANY_RESOURCE, None, acl.ANY_PATTERN, None, None, 1, 1)
    rows = [
        [
            a.principal,
            a.host,
            acl.RESOURCE_TYPES.get(a.resource_type, a.resource_type),
            a.resource_name,
            {acl.LITERAL: "LITERAL", acl.PREFIXED: "PREFIXED"}.get(a.pattern_type, a.pattern_type),
            acl.OPERATIONS.get(a.operation, a.operation),
            {acl.ALLOW: "ALLOW", acl.DENY: "DENY"}.get(a.permission_type, a.permission_type),
        ]
        for a in sorted(
            authorizer.acls(every), key=lambda a: (a.principal, a.resource_type, a.resource_name)
        )
    ]
    return table(
        ["principal", "host", "resource", "name", "pattern", "operation", "permission"], rows
    ) + _ADMIN_HINT.format(
        "kafka-acls.sh --add/--remove, or Admin.createAcls/deleteAcls (CreateAcls, DeleteAcls)"
    )


def _users(view: View) -> str:
    from broker.security.sasl_scram import MECHANISMS

    if not view.visible("cluster", acl.CLUSTER_NAME):
        return "<p>Listing users needs DESCRIBE on the cluster.</p>"
    names = {kind: name for name, (kind, _digest, _min) in MECHANISMS.items()}
    rows = [
        [user, names.get(kind, kind), c.iterations]
        for (user, kind), c in sorted(view.state.scram_credentials.all().items())
    ]
    return table(["user", "mechanism", "iterations"], rows) + _ADMIN_HINT.format(
        "kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=[password=...]' --entity-type "
        "users, or Admin.alterUserScramCredentials (AlterUserScramCredentials)"
    )


# -- faults --------------------------------------------------------------------------------


def _faults(view: View) -> str:
    faults = view.faults
    if faults is None:
        return "<p>This broker has no fault injection.</p>"
    if not view.visible("cluster", acl.CLUSTER_NAME):
        # Faults and logged requests name any topic: for the cluster's describers.
        return "<p>The faults and the request log need DESCRIBE on the cluster.</p>"
    status = faults.status()
    rows = [
        [
            rule["id"],
            rule["action"],
            rule["api"],
            ", ".join(f"{k}={v}" for k, v in rule.items() if k not in ("id", "action", "api")),
            Html(
                form(
                    "fault",
                    view,
                    hidden("operation", "clear") + hidden("args", json.dumps({"id": rule["id"]})),
                    "Clear",
                )
            ),
        ]
        for rule in status["faults"]
    ]
    offline = ", ".join(f"{o['topic']}-{o['partition']}" for o in status["offline"]) or "none"
    logging = status["request_log"]
    return (
        table(["id", "action", "api", "scope and details", ""], rows)
        + f"<p>offline partitions: {esc(offline)}; refusing connections for "
        f"{status['refusing_connections_s']} s</p>"
        + "<h2>Set a fault</h2>"
        + form(
            "fault",
            view,
            select(
                "operation",
                "operation",
                [
                    "error",
                    "delay",
                    "drop",
                    "throttle",
                    "offline",
                    "online",
                    "close-connections",
                    "refuse-connections",
                    "clear",
                ],
            )
            + area(
                "arguments (JSON)",
                "args",
                '{"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 1}',
            ),
            "Apply",
        )
        + "<p>The arguments are those of <code>minikafka fault</code> and the control plane's "
        "/v1/&lt;operation&gt;.</p><h2>Request log</h2>"
        + (
            f'<p id="log-state">on ({logging} kept)</p>'
            if logging is not None
            else '<p id="log-state">off</p>'
        )
        + form(
            "fault",
            view,
            hidden("operation", "log-requests") + hidden("args", "{}"),
            "Start (or restart) the request log",
        )
        + table(["time", "api", "version", "client id", "peer", "request"], []).replace(
            "<table>", '<table id="request-tail">', 1
        )
    )
