/**
 * The live fleet page's script, as text (inlined by dashboard-page.ts). It polls `dashboard/state`
 * every 1.5 s and updates the tables in place: one row per worker kept by id, cells changed with
 * textContent only (never markup from the router: worker URLs and model names are not trusted).
 * Admin actions go to the admin API beside it (relative URLs, so a path prefix in front of the
 * router works): drain/remove (`DELETE workers/{id}`, a second click confirms) and add
 * (`POST workers` with a JSON body). With an admin key typed in, every request carries it as a
 * bearer token; it is kept in sessionStorage (this tab only), never in the URL.
 */
export const DASHBOARD_SCRIPT = `
'use strict';
(function () {
  var KEY = 'vllm-edge-router.admin-token';
  var POLL_MS = 1500;
  var $ = function (id) { return document.getElementById(id); };
  var rows = new Map();
  var lastEvents = '';

  function token() { try { return sessionStorage.getItem(KEY) || ''; } catch (e) { return ''; } }
  function headers(extra) {
    var h = extra || {};
    var t = token();
    if (t) h.Authorization = 'Bearer ' + t;
    return h;
  }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function set(node, text, cls, title) {
    var tip = title === undefined ? text : title;
    if (node.textContent !== text) node.textContent = text;
    if (cls !== undefined && node.className !== cls) node.className = cls;
    if (node.title !== tip) node.title = tip;
  }
  function ms(v) {
    if (v === null || v === undefined) return '—';
    if (v < 10) return v.toFixed(1);
    if (v < 1000) return String(Math.round(v));
    return (v / 1000).toFixed(2) + ' s';
  }
  function pair(q) { return q ? ms(q.p50) + ' / ' + ms(q.p99) : '—'; }
  function rate(v) { return v >= 100 ? String(Math.round(v)) : v.toFixed(1); }
  function pct(v) { return v === null || v === undefined ? '—' : (v * 100).toFixed(1) + ' %'; }
  function count(v) {
    if (v === null || v === undefined) return '—';
    if (v >= 1e6) return (v / 1e6).toFixed(1) + ' M';
    if (v >= 1e4) return (v / 1e3).toFixed(1) + ' k';
    return String(v);
  }
  function clock(t) { return new Date(t).toLocaleTimeString([], { hour12: false }); }
  function errCls(v) { return v === null ? 'num muted' : v >= 0.05 ? 'num bad' : v > 0 ? 'num warn' : 'num'; }

  function health(w) {
    if (w.draining) return ['draining', 'warn'];
    if (w.suspended) return ['suspended', 'warn'];
    return w.healthy ? ['healthy', 'ok'] : ['unhealthy', 'bad'];
  }
  function breaker(w) {
    if (w.circuit === 'closed') return ['closed', 'ok'];
    if (w.circuit === 'half_open') return ['half-open · probing', 'warn'];
    if (w.next_probe_in_ms === null) return ['open', 'bad'];
    if (w.next_probe_in_ms === 0) return ['open · probe due', 'bad'];
    return ['open · probe in ' + Math.ceil(w.next_probe_in_ms / 1000) + ' s', 'bad'];
  }

  function status(text, cls) { set($('action-status'), text, cls || ''); }
  async function errorText(res) {
    try { var body = await res.json(); return res.status + ': ' + ((body.error && body.error.message) || ''); }
    catch (e) { return 'HTTP ' + res.status; }
  }

  async function drain(id, button) {
    if (!button.classList.contains('armed')) {
      button.classList.add('armed');
      button.textContent = 'Confirm';
      setTimeout(function () { button.classList.remove('armed'); button.textContent = 'Drain'; }, 4000);
      return;
    }
    button.disabled = true;
    try {
      var res = await fetch('workers/' + encodeURIComponent(id), { method: 'DELETE', headers: headers() });
      if (res.ok) {
        var body = await res.json();
        status((body.draining ? 'Draining ' : 'Removed ') + id, 'ok');
      } else status('Drain ' + id + ' refused: ' + (await errorText(res)), 'bad');
    } catch (e) { status('Drain ' + id + ' failed: router unreachable', 'bad'); }
    poll();
  }

  function newRow(w) {
    var tr = el('tr');
    var cells = {};
    var names = ['id', 'role', 'models', 'health', 'breaker', 'load', 'rate', 'errors', 'latency', 'ttft',
      'sessions', 'tree', 'action'];
    var numeric = { load: 1, rate: 1, errors: 1, latency: 1, ttft: 1, sessions: 1, tree: 1 };
    names.forEach(function (n) {
      var td = el('td', numeric[n] ? 'num' : '');
      td.dataset.col = n;
      cells[n] = td;
      tr.appendChild(td);
    });
    var button = el('button', '', 'Drain');
    button.type = 'button';
    button.title = 'Remove this worker: it takes no new requests and leaves once its requests finish';
    button.addEventListener('click', function () { drain(w.id, button); });
    cells.action.className = 'action';
    cells.action.appendChild(button);
    tr.dataset.worker = w.id;
    return { tr: tr, cells: cells, button: button };
  }

  function renderWorker(row, w) {
    var c = row.cells;
    set(c.id, w.id, undefined, w.url === w.id ? w.id : w.id + ' (' + w.url + ')');
    set(c.role, w.role);
    set(c.models, w.models === null ? 'any (not read yet)' : w.models.join(', '), w.models === null ? 'muted' : '');
    var h = health(w);
    set(c.health, h[0], h[1]);
    var b = breaker(w);
    set(c.breaker, b[0], b[1]);
    set(c.load, String(w.load), 'num');
    set(c.rate, rate(w.requests_per_sec), 'num');
    set(c.errors, pct(w.error_rate), errCls(w.error_rate));
    set(c.latency, pair(w.latency_ms), 'num');
    set(c.ttft, pair(w.ttft_ms), 'num');
    set(c.sessions, w.sessions ? count(w.sessions.pinned) + ' / ' + count(w.sessions.active) : '—', 'num');
    set(c.tree, count(w.tree_size), 'num');
    row.tr.className = w.draining ? 'draining' : '';
    if (w.draining) row.button.disabled = true;
  }

  function renderWorkers(workers) {
    var body = document.querySelector('#workers tbody');
    var seen = new Set();
    workers.forEach(function (w) {
      seen.add(w.id);
      var row = rows.get(w.id);
      if (!row) { row = newRow(w); rows.set(w.id, row); }
      renderWorker(row, w);
      body.appendChild(row.tr);
    });
    rows.forEach(function (row, id) { if (!seen.has(id)) { row.tr.remove(); rows.delete(id); } });
    $('empty').hidden = workers.length > 0;
  }

  function renderEvents(events) {
    var key = JSON.stringify(events);
    if (key === lastEvents) return;
    lastEvents = key;
    var body = document.querySelector('#events tbody');
    var out = events.map(function (e) {
      var tr = el('tr');
      tr.appendChild(el('td', 'muted', clock(e.time)));
      tr.appendChild(el('td', e.level === 'warn' ? 'warn' : '', e.kind));
      var who = el('td', '', e.worker || '—');
      who.title = e.worker || '';
      tr.appendChild(who);
      var text = e.message + (e.count > 1 ? ' (×' + e.count + ')' : '');
      var what = el('td', '', text);
      what.title = text;
      tr.appendChild(what);
      return tr;
    });
    if (out.length === 0) {
      var tr = el('tr');
      var td = el('td', 'muted', 'No events yet.');
      td.colSpan = 4;
      tr.appendChild(td);
      out.push(tr);
    }
    body.replaceChildren.apply(body, out);
  }

  function render(s) {
    var p = s.policies;
    set($('policy'), s.pd ? 'policy: prefill ' + p.prefill + ' · decode ' + p.decode : 'policy: ' + p.regular);
    var r = s.router;
    set($('r-rate'), rate(r.requests_per_sec));
    set($('r-errors'), pct(r.error_rate), 'value' + (r.error_rate >= 0.05 ? ' bad' : ''));
    set($('r-latency'), pair(r.latency_ms) + (r.latency_ms ? ' ms' : ''));
    set($('r-ttft'), pair(r.ttft_ms) + (r.ttft_ms ? ' ms' : ''));
    set($('r-inflight'), String(r.in_flight));
    set($('r-healthy'), r.healthy_workers + ' / ' + r.workers,
      'value' + (r.healthy_workers < r.workers ? ' warn' : ''));
    set($('workers-title'), 'Workers · last ' + s.window_secs + ' s');
    renderWorkers(s.workers);
    renderEvents(s.events);
  }

  var timer;
  var inFlight = false;
  var again = false;
  async function poll() {
    if (inFlight) { again = true; return; }
    inFlight = true;
    clearTimeout(timer);
    var conn = $('conn');
    try {
      var res = await fetch('dashboard/state', { headers: headers(), cache: 'no-store' });
      if (res.ok) {
        var state = await res.json();
        render(state);
        set(conn, 'updated ' + clock(state.time), '');
      } else if (res.status === 401) {
        set(conn, token() ? 'admin key refused' : 'admin key required', 'auth');
      } else {
        set(conn, await errorText(res), 'down');
      }
    } catch (e) {
      set(conn, 'router unreachable', 'down');
    } finally {
      inFlight = false;
      timer = setTimeout(poll, again ? 0 : POLL_MS);
      again = false;
    }
  }

  $('auth').addEventListener('submit', function (ev) {
    ev.preventDefault();
    var value = $('token').value.trim();
    try { if (value) sessionStorage.setItem(KEY, value); } catch (e) {}
    $('token').value = '';
    $('token').placeholder = value ? 'key set for this tab' : 'none (loopback)';
    poll();
  });
  $('forget').addEventListener('click', function () {
    try { sessionStorage.removeItem(KEY); } catch (e) {}
    $('token').placeholder = 'none (loopback)';
    poll();
  });
  $('add').addEventListener('submit', async function (ev) {
    ev.preventDefault();
    var url = $('add-url').value.trim();
    if (!url) return;
    try {
      var res = await fetch('workers', {
        method: 'POST',
        headers: headers({ 'Content-Type': 'application/json' }),
        body: JSON.stringify({ url: url }),
      });
      if (res.ok) { status('Added ' + url, 'ok'); $('add-url').value = ''; }
      else status('Add ' + url + ' refused: ' + (await errorText(res)), 'bad');
    } catch (e) { status('Add ' + url + ' failed: router unreachable', 'bad'); }
    poll();
  });
  if (token()) $('token').placeholder = 'key set for this tab';
  poll();
})();
`;
