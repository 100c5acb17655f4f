"""The console's only script, served as /static/console.js (its CSP allows no other): live
rates on the overview and the request log's tail on the faults page. A Python string, not a
file beside the modules, so that the wheel holds .py files only (tests/packaging)."""

SCRIPT = """"use strict";

function poll(url, every, use) {
  const tick = () =>
    fetch(url(), { credentials: "same-origin", cache: "no-store" })
      .then((r) => (r.ok ? r.json() : null))
      .then((data) => data && use(data))
      .catch(() => {})
      .finally(() => setTimeout(tick, every));
  tick();
}

const rates = document.getElementById("messages-in");
if (rates) {
  poll(() => "/rates.json", 2000, (d) => {
    document.getElementById("messages-in").textContent =
      `${d.messages_in} (${d.messages_in_rate.toFixed(1)}/s)`;
    document.getElementById("bytes-in").textContent =
      `${d.bytes_in} (${d.bytes_in_rate.toFixed(0)}/s)`;
    document.getElementById("bytes-out").textContent =
      `${d.bytes_out} (${d.bytes_out_rate.toFixed(0)}/s)`;
  });
}

const tail = document.getElementById("request-tail");
if (tail) {
  let since = 0;
  poll(() => `/faults/requests.json?since=${since}`, 1000, (d) => {
    document.getElementById("log-state").textContent = d.on ? "on" : "off";
    for (const e of d.entries) {
      since = Math.max(since, e.time);
      const row = tail.insertRow(1);
      const when = new Date(e.time * 1000).toISOString().slice(11, 23);
      for (const v of [when, e.api, e.version, e.client_id, e.peer, e.request]) {
        row.insertCell().textContent = v === null ? "" : String(v);
      }
    }
    while (tail.rows.length > 501) tail.deleteRow(tail.rows.length - 1);
  });
}
"""
