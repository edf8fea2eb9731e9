/*
 * The JetStream dashboard's script: polls data.json, keeps a few minutes of history in
 * memory, renders the panels. No framework, nothing from the network.
 *
 * Invariants:
 * - read-only: the only request it makes is GET data.json (plus the page's own files);
 * - one request in flight at a time, each aborted after FETCH_TIMEOUT_MS; the next refresh
 *   is scheduled when the previous one ended, so a slow server never piles requests up;
 * - everything the server sends is shown with textContent (never parsed as HTML);
 * - the DOM holds at most one page of streams and consumers; history is capped per series
 *   (HISTORY_POINTS) and in series (HISTORY_SERIES).
 * The state the tests read: body[data-state] (loading, ok, error, login),
 * body[data-refreshes] (successful refreshes so far), rows with data-stream /
 * data-consumer / data-query and cells with data-field and data-value (raw numbers),
 * and the event "dashboard:rendered" on document after each render.
 */
(function () {
  "use strict";

  var PAGE_SIZE = 20;
  var FETCH_TIMEOUT_MS = 20000;
  var DEFAULT_REFRESH_MS = 3000;
  var HISTORY_POINTS = 200;       // ten minutes at the default refresh
  var HISTORY_SERIES = 2000;
  var HISTORY_WINDOW_MS = 10 * 60 * 1000;
  var CRED_KEY = "jetstream-dashboard-credentials";

  var history = new Map();
  var refreshes = 0;
  var lastOk = 0;
  var timer = null;
  var inFlight = null;

  function $(id) { return document.getElementById(id); }

  // `?refresh=SECONDS` in the page's address overrides the server's interval (at least 1 s)
  var refreshOverrideMs = (function () {
    var seconds = parseFloat(new URLSearchParams(location.search).get("refresh") || "");
    return isFinite(seconds) && seconds > 0 ? Math.max(1000, seconds * 1000) : 0;
  })();

  // -- small DOM helpers ------------------------------------------------------------------
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (key) {
        var value = attrs[key];
        if (value === null || value === undefined) { return; }
        if (key === "text") { node.textContent = String(value); }
        else if (key === "cls") { node.className = value; }
        else if (key.indexOf("data-") === 0 || key === "href" || key === "title") {
          node.setAttribute(key, String(value));
        }
        else { node[key] = value; }
      });
    }
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) { continue; }
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }

  function show(node, visible) { node.hidden = !visible; }

  function note(id, text) {
    var node = $(id);
    node.textContent = text || "";
    show(node, Boolean(text));
  }

  // -- formatting ---------------------------------------------------------------------------
  function num(value) {
    var n = Number(value);
    return isFinite(n) ? n : 0;
  }

  function fmtInt(value) {
    if (value === null || value === undefined) { return "–"; }
    return Math.round(num(value)).toLocaleString("en-US");
  }

  function fmtBytes(value) {
    var n = num(value);
    var units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? String(Math.round(n)) : n.toFixed(n < 10 ? 2 : 1)) + " " + units[i];
  }

  function fmtRate(value, unit) {
    if (value === null || value === undefined) { return "–"; }
    var n = num(value);
    var text = n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(n >= 10 ? 1 : 2);
    return text + " " + (unit || "msg/s");
  }

  function parseTime(text) {
    if (!text || text.indexOf("0001-01-01") === 0) { return null; }
    // RFC 3339 with nanoseconds: Date.parse takes milliseconds only
    var trimmed = String(text).replace(/(\.\d{3})\d+/, "$1");
    var ms = Date.parse(trimmed);
    return isNaN(ms) ? null : ms;
  }

  function fmtAgo(ms, nowMs) {
    if (ms === null) { return "never"; }
    var s = Math.max(0, Math.round((nowMs - ms) / 1000));
    if (s < 60) { return s + "s ago"; }
    if (s < 3600) { return Math.floor(s / 60) + "m " + (s % 60) + "s ago"; }
    if (s < 86400) { return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m ago"; }
    return Math.floor(s / 86400) + "d ago";
  }

  function fmtLimit(value) {
    var n = num(value);
    return n < 0 ? "unlimited" : fmtInt(n);
  }

  // -- history and rates --------------------------------------------------------------------
  function record(key, t, value) {
    var series = history.get(key);
    if (!series) {
      if (history.size >= HISTORY_SERIES) { forgetOldest(); }
      series = [];
      history.set(key, series);
    }
    var last = series[series.length - 1];
    if (last && t <= last[0]) { return series; }      // the same snapshot twice
    if (last && value < last[1] && key.charAt(0) === "s") { series.length = 0; }  // recreated
    series.push([t, value]);
    while (series.length > HISTORY_POINTS || (series.length && t - series[0][0] > HISTORY_WINDOW_MS)) {
      series.shift();
    }
    return series;
  }

  function forgetOldest() {
    var oldestKey = null, oldest = Infinity;
    history.forEach(function (series, key) {
      var t = series.length ? series[series.length - 1][0] : 0;
      if (t < oldest) { oldest = t; oldestKey = key; }
    });
    if (oldestKey !== null) { history.delete(oldestKey); }
  }

  function rates(series) {
    var out = [];
    for (var i = 1; i < series.length; i++) {
      var dt = (series[i][0] - series[i - 1][0]) / 1000;
      if (dt > 0) { out.push(Math.max(0, (series[i][1] - series[i - 1][1]) / dt)); }
    }
    return out;
  }

  function values(series) { return series.map(function (p) { return p[1]; }); }

  // the mean rate over the last `windowMs` (bursty writers read better than the last step)
  function rateOver(series, windowMs) {
    if (series.length < 2) { return null; }
    var end = series[series.length - 1];
    var start = series[0];
    for (var i = series.length - 2; i >= 0 && end[0] - series[i][0] <= windowMs; i--) { start = series[i]; }
    var dt = (end[0] - start[0]) / 1000;
    return dt > 0 ? Math.max(0, (end[1] - start[1]) / dt) : null;
  }

  // -- charts: small inline SVG -----------------------------------------------------------
  var SVG = "http://www.w3.org/2000/svg";

  function sparkline(points, label, tone) {
    var width = 140, height = 30, pad = 2;
    var svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "spark " + (tone || ""));
    svg.setAttribute("width", String(width));
    svg.setAttribute("height", String(height));
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("role", "img");
    var title = document.createElementNS(SVG, "title");
    title.textContent = label;
    svg.appendChild(title);
    if (points.length < 2) {
      var wait = document.createElementNS(SVG, "line");
      wait.setAttribute("x1", "0"); wait.setAttribute("x2", String(width));
      wait.setAttribute("y1", String(height - pad)); wait.setAttribute("y2", String(height - pad));
      wait.setAttribute("class", "baseline waiting");
      svg.appendChild(wait);
      return svg;
    }
    var max = Math.max.apply(null, points);
    var min = 0;
    var span = max - min || 1;
    var step = (width - 2 * pad) / (points.length - 1);
    var coords = points.map(function (v, i) {
      var x = pad + i * step;
      var y = height - pad - ((v - min) / span) * (height - 2 * pad);
      return x.toFixed(1) + "," + y.toFixed(1);
    });
    var area = document.createElementNS(SVG, "polygon");
    area.setAttribute("points", pad + "," + (height - pad) + " " + coords.join(" ") + " " +
      (pad + (points.length - 1) * step).toFixed(1) + "," + (height - pad));
    area.setAttribute("class", "area");
    svg.appendChild(area);
    var line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", coords.join(" "));
    line.setAttribute("class", "line");
    svg.appendChild(line);
    return svg;
  }

  // -- the query in the location hash -------------------------------------------------------
  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    return {
      stream: params.get("stream") || "",
      subject: params.get("subject") || "",
      offset: Math.max(0, parseInt(params.get("offset") || "0", 10) || 0)
    };
  }

  function hashFor(query) {
    var params = new URLSearchParams();
    if (query.stream) { params.set("stream", query.stream); }
    if (query.subject) { params.set("subject", query.subject); }
    if (query.offset) { params.set("offset", String(query.offset)); }
    var text = params.toString();
    return "#" + text;
  }

  function dataUrl(query) {
    var params = new URLSearchParams();
    params.set("limit", String(PAGE_SIZE));
    params.set("offset", String(query.offset));
    if (query.stream) { params.set("stream", query.stream); }
    if (query.subject) { params.set("subject", query.subject); }
    return "data.json?" + params.toString();
  }

  // -- credentials (only when the server asks) ----------------------------------------------
  function credentials() {
    try { return JSON.parse(sessionStorage.getItem(CRED_KEY) || "null"); }
    catch (e) { return null; }
  }

  function base64Utf8(text) {
    var bytes = new TextEncoder().encode(text);
    var binary = "";
    bytes.forEach(function (b) { binary += String.fromCharCode(b); });
    return btoa(binary);
  }

  function authHeader(creds) {
    if (!creds) { return null; }
    if (!creds.user) { return "Bearer " + creds.password; }
    return "Basic " + base64Utf8(creds.user + ":" + creds.password);
  }

  function showLogin(reason) {
    document.body.dataset.state = "login";
    $("login-reason").textContent = reason || "This server asks for credentials.";
    show($("login"), true);
    show($("content"), false);
    setStatus("error", "signed out");
    $("login-user").focus();
  }

  // -- fetching -------------------------------------------------------------------------------
  function schedule(ms) {
    if (timer !== null) { clearTimeout(timer); }
    timer = setTimeout(refresh, ms);
  }

  function refresh() {
    timer = null;
    if (inFlight) { inFlight.abort(); }
    var controller = new AbortController();
    inFlight = controller;
    var deadline = setTimeout(function () { controller.abort(); }, FETCH_TIMEOUT_MS);
    var headers = { "Accept": "application/json" };
    var auth = authHeader(credentials());
    if (auth) { headers["Authorization"] = auth; }
    var query = readHash();
    fetch(dataUrl(query), { headers: headers, signal: controller.signal, cache: "no-store" })
      .then(function (response) {
        return response.json().catch(function () { return {}; }).then(function (body) {
          return { status: response.status, body: body };
        });
      })
      .then(function (answer) {
        if (answer.status === 401) {
          sessionStorage.removeItem(CRED_KEY);
          showLogin(answer.body.error);
          return;
        }
        if (answer.status !== 200) {
          failed("the dashboard answered " + answer.status + ": " + (answer.body.error || "no detail"));
          schedule(refreshOverrideMs || DEFAULT_REFRESH_MS);
          return;
        }
        render(answer.body, query);
        schedule(refreshOverrideMs || Math.max(1000, num(answer.body.refresh_ms) || DEFAULT_REFRESH_MS));
      })
      .catch(function (err) {
        var why = err && err.name === "AbortError"
          ? "no answer within " + FETCH_TIMEOUT_MS / 1000 + "s"
          : String(err && err.message || err);
        failed("the dashboard at " + location.host + " does not answer (" + why + ")");
        schedule(refreshOverrideMs || DEFAULT_REFRESH_MS);
      })
      .then(function () {
        clearTimeout(deadline);
        if (inFlight === controller) { inFlight = null; }
      });
  }

  function failed(message) {
    var since = lastOk ? " · showing the data of " + new Date(lastOk).toLocaleTimeString() : "";
    banner("error", message + since);
    document.body.dataset.state = "error";
    setStatus("error", "no answer");
  }

  function banner(kind, text) {
    var node = $("banner");
    node.className = "banner " + kind;
    node.textContent = text || "";
    show(node, Boolean(text));
  }

  function setStatus(kind, text) {
    $("status-dot").className = "dot " + kind;
    $("status-text").textContent = text;
  }

  // -- rendering --------------------------------------------------------------------------
  function render(data, query) {
    lastOk = Date.now();
    refreshes += 1;
    var nowMs = num(data.now_ms) || Date.now();
    show($("login"), false);
    show($("content"), true);
    show($("sign-out"), Boolean(credentials()));
    var errors = (data.errors || []).concat([]);
    banner(errors.length ? "warn" : "", errors.join(" · "));
    renderHeader(data);
    renderServer(data, nowMs);
    renderAccount(data);
    var streams = (data.streams && data.streams.items) || [];
    renderStreams(data, query, streams, nowMs);
    renderConsumers(data, query, streams, nowMs);
    var cost = data.cost || {};
    $("footer-cost").textContent = "last refresh: " +
      (cost.api_requests !== undefined ? fmtInt(cost.api_requests) + " API requests, " : "") +
      (cost.took_ms !== undefined ? num(cost.took_ms).toFixed(1) + " ms" : "");
    document.body.dataset.state = "ok";
    document.body.dataset.refreshes = String(refreshes);
    setStatus("ok", "updated " + new Date().toLocaleTimeString());
    document.dispatchEvent(new CustomEvent("dashboard:rendered", { detail: { refreshes: refreshes } }));
  }

  function renderHeader(data) {
    var server = data.server || {};
    var bits = [];
    if (server.name && server.name !== server.id) { bits.push(server.name); }
    else if (server.id) { bits.push("server " + server.id.slice(0, 10) + "…"); }
    if (server.version) { bits.push("v" + server.version); }
    if (data.server_url) { bits.push(data.server_url); }
    $("server-title").textContent = bits.join(" · ");
    var who = data.identity;
    $("identity").textContent = who ? "user " + (who.user || "(anonymous)") + " · account " + who.account : "";
    $("footer-source").textContent = data.source === "jetstream-cli"
      ? "served by jetstream dashboard"
      : "served by the bundled server's monitoring port";
  }

  function stat(list, label, value, field, raw, chart) {
    list.appendChild(el("div", { cls: "stat" },
      el("span", { cls: "label", text: label }),
      el("span", { cls: "value", "data-field": field, "data-value": raw === undefined || raw === null ? null : raw, text: value }),
      chart || null));
  }

  function fmtUptime(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    if (d) { return d + "d " + h + "h"; }
    if (h) { return h + "h " + m + "m"; }
    return m + "m " + (s % 60) + "s";
  }

  function renderServer(data, nowMs) {
    var list = $("server-stats");
    clear(list);
    var server = data.server;
    var figures = Boolean(server && server.scope);   // scope null: name and version only
    note("server-note", figures ? "" : (data.notes || []).filter(function (n) {
      return n.indexOf("server") >= 0 || n.indexOf("$SYS") >= 0;
    }).join(" ") || "No server statistics from this server.");
    $("server-card-title").textContent = "Server";
    if (!figures) { return; }
    $("server-card-title").textContent = server.scope === "account"
      ? "Account " + (server.account || "") + " on the server" : "Server";
    var t = nowMs, recent = 10000;
    var inSeries = record("srv:in_msgs", t, num(server.in_msgs));
    var outSeries = record("srv:out_msgs", t, num(server.out_msgs));
    var inBytes = rateOver(record("srv:in_bytes", t, num(server.in_bytes)), recent);
    var outBytes = rateOver(record("srv:out_bytes", t, num(server.out_bytes)), recent);
    var inNow = rateOver(inSeries, recent), outNow = rateOver(outSeries, recent);
    stat(list, "Connections", fmtInt(server.connections), "connections", server.connections);
    stat(list, "Subscriptions", fmtInt(server.subscriptions), "subscriptions", server.subscriptions);
    stat(list, "Messages in", fmtRate(inNow), "in_rate", inNow,
      sparkline(rates(inSeries), "messages in per second", "blue"));
    stat(list, "Messages out", fmtRate(outNow), "out_rate", outNow,
      sparkline(rates(outSeries), "messages out per second", "teal"));
    stat(list, "Bytes in", inBytes === null ? "–" : fmtBytes(inBytes) + "/s", "in_bytes_rate", inBytes);
    stat(list, "Bytes out", outBytes === null ? "–" : fmtBytes(outBytes) + "/s", "out_bytes_rate", outBytes);
    if (server.slow_consumers !== undefined && server.slow_consumers !== null) {
      stat(list, "Slow consumers", fmtInt(server.slow_consumers), "slow_consumers", server.slow_consumers);
    }
    var loop = server.event_loop;
    if (loop) {
      var lag = values(record("srv:loop", t, num(loop.recent_max_lag_ms)));
      stat(list, "Event-loop lag", num(loop.lag_ms).toFixed(1) + " ms, max " +
        num(loop.recent_max_lag_ms).toFixed(0) + " ms", "loop_lag_ms", loop.lag_ms,
        sparkline(lag, "largest event-loop lag over the last 10 s, in ms", num(loop.recent_max_lag_ms) > 100 ? "red" : "amber"));
    }
    var started = parseTime(server.start);
    if (started !== null) {
      stat(list, "Up", fmtUptime(nowMs - started), "uptime", nowMs - started);
    }
  }

  function last(list) { return list.length ? list[list.length - 1] : null; }

  function usageBar(label, used, limit, field, bytes) {
    var u = num(used), l = num(limit);
    var unlimited = limit === undefined || limit === null || l < 0;
    var pct = unlimited || l === 0 ? 0 : Math.min(100, (u / l) * 100);
    var text = (bytes ? fmtBytes(u) : fmtInt(u)) + " of " +
      (unlimited ? "unlimited" : (bytes ? fmtBytes(l) : fmtInt(l)));
    var bar = null;
    if (!unlimited) {   // a bar only against a limit
      bar = el("div", { cls: "bar" + (pct >= 90 ? " full" : pct >= 75 ? " high" : "") });
      var fill = el("span");
      fill.style.width = pct.toFixed(1) + "%";
      bar.appendChild(fill);
    }
    return el("div", { cls: "usage", "data-field": field, "data-value": u },
      el("div", { cls: "usage-label" }, el("span", { text: label }), el("span", { cls: "muted", text: text })),
      bar);
  }

  function renderAccount(data) {
    var box = $("account-usage");
    clear(box);
    var acc = data.account;
    note("account-note", acc ? "" : (data.notes || []).filter(function (n) {
      return n.indexOf("account") >= 0 || n.indexOf("JetStream") >= 0;
    }).join(" ") || "No JetStream account information.");
    var who = data.identity;
    $("account-card-title").textContent = "JetStream account" + (who && who.account ? " " + who.account : "");
    if (!acc) { return; }
    var limits = acc.limits || {};
    box.appendChild(usageBar("Memory", acc.memory, limits.max_memory, "memory", true));
    box.appendChild(usageBar("Storage", acc.storage, limits.max_storage, "storage", true));
    box.appendChild(usageBar("Streams", acc.streams, limits.max_streams, "streams", false));
    var consumers = num(limits.max_consumers);
    box.appendChild(el("div", { cls: "usage-label", "data-field": "consumers", "data-value": acc.consumers },
      el("span", { text: "Consumers" }),
      el("span", { cls: "muted", text: fmtInt(acc.consumers) + (consumers > 0 ? " (at most " + fmtInt(consumers) + " per stream)" : "") })));
    if (acc.api) {
      box.appendChild(el("div", { cls: "usage-label" }, el("span", { text: "API requests" }),
        el("span", { cls: "muted", text: fmtInt(acc.api.total) + " · " + fmtInt(acc.api.errors) + " errors" })));
    }
  }

  function subjectsOf(info) {
    var subjects = (info.config && info.config.subjects) || [];
    if (info.config && info.config.mirror) { return "mirror of " + info.config.mirror.name; }
    return subjects.length ? subjects.join(", ") : "–";
  }

  function cell(text, field, raw, cls) {
    return el("td", { cls: cls || null, "data-field": field || null,
      "data-value": raw === undefined ? null : raw, text: text });
  }

  function renderStreams(data, query, streams, nowMs) {
    var page = data.streams || { total: 0, offset: 0, limit: PAGE_SIZE };
    var body = $("streams").querySelector("tbody");
    clear(body);
    var detail = Boolean(data.detail);
    $("streams-title").textContent = detail ? "Stream " + data.detail : "Streams";
    $("filter-subject").value = query.subject;
    show($("all-streams"), detail || Boolean(query.subject));
    $("all-streams").href = "#";
    var total = num(page.total);
    var hidden = num(page.hidden);
    var from = streams.length ? num(page.offset) + 1 : 0;
    $("streams-range").textContent = detail ? "" :
      (total ? from + "–" + (num(page.offset) + streams.length) + " of " + fmtInt(total) : "");
    var prev = $("prev-page"), next = $("next-page");
    show(prev, !detail && num(page.offset) > 0);
    show(next, !detail && num(page.offset) + streams.length < total);
    prev.href = hashFor({ subject: query.subject, offset: Math.max(0, num(page.offset) - PAGE_SIZE) });
    next.href = hashFor({ subject: query.subject, offset: num(page.offset) + PAGE_SIZE });
    var notes = [];
    if (hidden) { notes.push(fmtInt(hidden) + " stream" + (hidden === 1 ? "" : "s") + " of this account are not shown: this user may not read " + (hidden === 1 ? "its" : "their") + " information."); }
    if (page.note) { notes.push(page.note); }
    note("streams-note", notes.join(" "));
    streams.forEach(function (info) {
      var cfg = info.config || {}, st = info.state || {};
      var name = cfg.name || "";
      var series = record("s:" + name, nowMs, num(st.last_seq));
      var rate = rates(series);
      var minute = rateOver(series, 60000);
      var link = el("a", { href: hashFor({ stream: name }), text: name });
      body.appendChild(el("tr", { "data-stream": name },
        el("td", { cls: "name" }, link),
        cell(subjectsOf(info), "subjects", undefined, "subjects"),
        cell(cfg.storage || "file", "storage"),
        cell(fmtInt(cfg.num_replicas || 1), "replicas", cfg.num_replicas || 1, "num"),
        cell(fmtInt(st.messages), "messages", num(st.messages), "num"),
        cell(fmtBytes(st.bytes), "bytes", num(st.bytes), "num"),
        cell(fmtInt(st.first_seq), "first_seq", num(st.first_seq), "num"),
        cell(fmtInt(st.last_seq), "last_seq", num(st.last_seq), "num"),
        cell(fmtInt(st.consumer_count), "consumer_count", num(st.consumer_count), "num"),
        cell(minute === null ? "…" : fmtRate(minute), "publish_rate", minute, "num"),
        el("td", null, sparkline(rate, "messages stored per second, last minutes", "blue"))));
    });
    show($("streams-empty"), streams.length === 0);
    show($("streams"), streams.length > 0);
    $("streams-empty").textContent = query.subject
      ? "No stream with a subject matching " + query.subject + "."
      : (detail ? "" : "No stream to show.");
  }

  function queryOf(consumer) {
    var meta = (consumer.config && consumer.config.metadata) || {};
    if (!("spark_jetstream.owner" in meta)) { return null; }
    return { owner: meta["spark_jetstream.owner"] || "", start: meta["spark_jetstream.start"] || "" };
  }

  function lagOf(consumer) { return num(consumer.num_pending) + num(consumer.num_ack_pending); }

  function trend(series) {
    var lag = values(series);
    var now = last(lag);
    if (now === 0) { return ["caught up", "good"]; }
    if (lag.length < 3) { return ["behind", "warn"]; }
    var earlier = lag[Math.max(0, lag.length - 6)];
    if (now < earlier) { return ["catching up", "warn"]; }
    if (now > earlier) { return ["falling behind", "bad"]; }
    return ["behind, steady", "warn"];
  }

  function lastActive(consumer) {
    var a = parseTime(consumer.delivered && consumer.delivered.last_active);
    var b = parseTime(consumer.ack_floor && consumer.ack_floor.last_active);
    if (a === null) { return b; }
    if (b === null) { return a; }
    return Math.max(a, b);
  }

  function renderConsumers(data, query, streams, nowMs) {
    var body = $("consumers").querySelector("tbody");
    var qbody = $("queries").querySelector("tbody");
    clear(body);
    clear(qbody);
    var detail = Boolean(data.detail);
    var shown = 0, notes = [], totals = 0;
    streams.forEach(function (info) {
      var name = (info.config && info.config.name) || "";
      var page = info.consumers || { items: [], total: 0 };
      totals += num(page.total);
      if (page.note) { notes.push(name + ": " + page.note); }
      var items = page.items || [];
      if (!detail && num(page.total) > items.length) {
        notes.push(name + " has " + fmtInt(page.total) + " consumers; " + items.length +
          " shown (open the stream to page through them).");
      }
      items.forEach(function (c) {
        shown += 1;
        var cname = c.name || "";
        var cfg = c.config || {};
        var q = queryOf(c);
        var lag = lagOf(c);
        var kind = (cfg.durable_name ? "durable" : "ephemeral") + ", " + (cfg.deliver_subject ? "push" : "pull");
        var activeMs = lastActive(c);
        body.appendChild(el("tr", { "data-consumer": name + "/" + cname },
          cell(name, "stream", undefined, "name"),
          cell(cname, "name", undefined, "name"),
          cell(kind, "kind"),
          cell(fmtInt(c.num_pending), "num_pending", num(c.num_pending), "num"),
          cell(fmtInt(c.num_ack_pending), "num_ack_pending", num(c.num_ack_pending), "num"),
          cell(fmtInt(c.num_redelivered), "num_redelivered", num(c.num_redelivered), "num"),
          cell(fmtInt(c.ack_floor && c.ack_floor.stream_seq), "ack_floor", num(c.ack_floor && c.ack_floor.stream_seq), "num"),
          cell(fmtInt(c.delivered && c.delivered.stream_seq), "delivered", num(c.delivered && c.delivered.stream_seq), "num"),
          cell(fmtAgo(activeMs, nowMs), "last_active", activeMs === null ? "" : activeMs),
          cell(q ? "query " + shortId(q.owner) : "–", "query", q ? q.owner : undefined, "mono")));
        if (q) {
          var series = record("c:" + name + "/" + cname, nowMs, lag);
          var status = trend(series);
          qbody.appendChild(el("tr", { "data-query": name + "/" + cname },
            cell(name, "stream", undefined, "name"),
            cell(cname, "durable", undefined, "name"),
            cell(q.owner || "(not yet claimed)", "owner", q.owner, "mono"),
            cell(fmtInt(q.start), "start", num(q.start), "num"),
            cell(fmtInt(c.ack_floor && c.ack_floor.stream_seq), "committed", num(c.ack_floor && c.ack_floor.stream_seq), "num"),
            cell(fmtInt(lag), "lag", lag, "num lag-" + status[1]),
            el("td", null, sparkline(values(series), "messages the query has not committed yet", status[1] === "bad" ? "red" : "green")),
            el("td", null, el("span", { cls: "pill " + status[1], "data-field": "status", text: status[0] }))));
        }
      });
    });
    $("consumers-title").textContent = detail ? "Consumers of " + data.detail : "Consumers";
    var page = detail && streams.length ? streams[0].consumers || {} : null;
    var prev = $("prev-consumers"), next = $("next-consumers");
    if (page) {
      var offset = num(page.offset), count = (page.items || []).length;
      $("consumers-range").textContent = num(page.total)
        ? (offset + 1) + "–" + (offset + count) + " of " + fmtInt(page.total) : "";
      show(prev, offset > 0);
      show(next, offset + count < num(page.total));
      prev.href = hashFor({ stream: data.detail, offset: Math.max(0, offset - PAGE_SIZE) });
      next.href = hashFor({ stream: data.detail, offset: offset + PAGE_SIZE });
    } else {
      $("consumers-range").textContent = totals ? shown + " of " + fmtInt(totals) + " on the streams shown" : "";
      show(prev, false);
      show(next, false);
    }
    note("consumers-note", notes.join(" "));
    show($("consumers-empty"), shown === 0);
    show($("consumers"), shown > 0);
    show($("queries-empty"), qbody.childElementCount === 0);
    show($("queries"), qbody.childElementCount > 0);
  }

  function shortId(owner) { return owner && owner.length > 12 ? owner.slice(0, 12) + "…" : (owner || "(unclaimed)"); }

  // -- wiring -------------------------------------------------------------------------------
  function start() {
    $("login").addEventListener("submit", function (event) {
      event.preventDefault();
      sessionStorage.setItem(CRED_KEY, JSON.stringify({
        user: $("login-user").value, password: $("login-password").value
      }));
      $("login-password").value = "";
      document.body.dataset.state = "loading";
      refresh();
    });
    $("sign-out").addEventListener("click", function () {
      sessionStorage.removeItem(CRED_KEY);
      refresh();
    });
    $("filter").addEventListener("submit", function (event) {
      event.preventDefault();
      location.hash = hashFor({ subject: $("filter-subject").value.trim() });
    });
    window.addEventListener("hashchange", function () { refresh(); });
    refresh();
  }

  document.addEventListener("DOMContentLoaded", start);
})();
