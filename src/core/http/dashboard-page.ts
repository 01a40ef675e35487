/**
 * The live fleet page (GET /dashboard): one self-contained HTML document, its CSS and script inline
 * (no CDN, no external font: it works offline and behind a proxy), about 15 KB, served by the core
 * on every runtime. It holds no fleet data: the script polls `dashboard/state` and builds the
 * tables with textContent only (worker URLs and model names are not trusted markup). The
 * response's CSP allows only the inline style and script, by their hashes. Fixed column widths and
 * tabular figures keep the layout still while numbers change; it fits a 1366×768 screen.
 */
import { DASHBOARD_SCRIPT } from './dashboard-script.ts';

const STYLE = `
:root { color-scheme: light dark; --bg: #f6f7f9; --panel: #fff; --fg: #1b1f24; --muted: #5b6470;
  --line: #d9dde3; --ok: #17803d; --warn: #a15c00; --bad: #c0262d; --accent: #2456c7; }
@media (prefers-color-scheme: dark) { :root { --bg: #111418; --panel: #1a1f25; --fg: #e6e9ed;
  --muted: #9aa3ad; --line: #2c333b; --ok: #4cc37a; --warn: #e0a340; --bad: #ff6b6b; --accent: #7aa2ff; } }
* { box-sizing: border-box; }
body { margin: 0; padding: 12px 16px; background: var(--bg); color: var(--fg);
  font: 13px/1.35 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-variant-numeric: tabular-nums; }
header { display: flex; align-items: center; gap: 16px; height: 40px; }
h1 { font-size: 16px; margin: 0; white-space: nowrap; }
h1 span { color: var(--muted); font-weight: 400; }
h2 { font-size: 13px; margin: 14px 0 6px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
#policy { color: var(--muted); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; flex: 1; }
#auth { display: flex; gap: 6px; align-items: center; }
#auth input { width: 180px; }
#conn { width: 190px; text-align: right; white-space: nowrap; color: var(--muted); }
#conn.down, #conn.auth { color: var(--bad); }
input, button { font: inherit; color: inherit; }
input { background: var(--panel); border: 1px solid var(--line); border-radius: 4px; padding: 3px 6px; }
button { background: var(--panel); border: 1px solid var(--line); border-radius: 4px; padding: 2px 8px; cursor: pointer; }
button:hover:not(:disabled) { border-color: var(--accent); }
button:disabled { opacity: .45; cursor: default; }
button.armed { border-color: var(--bad); color: var(--bad); }
#summary { display: grid; grid-template-columns: repeat(6, 1fr); gap: 8px; margin-top: 6px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; height: 52px; }
.card .label { color: var(--muted); font-size: 11px; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 18px; font-variant-numeric: tabular-nums; white-space: nowrap; }
table { width: 100%; border-collapse: collapse; table-layout: fixed; background: var(--panel);
  border: 1px solid var(--line); font-variant-numeric: tabular-nums; }
th, td { padding: 4px 8px; height: 28px; text-align: left; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; border-bottom: 1px solid var(--line); }
th { font-size: 11px; font-weight: 600; color: var(--muted); height: 36px; white-space: normal; line-height: 1.2; }
td.num, th.num { text-align: right; }
.ok { color: var(--ok); } .warn { color: var(--warn); } .bad { color: var(--bad); } .muted { color: var(--muted); }
td.action { text-overflow: clip; }
td.action button { width: 64px; }
#workers tbody tr.draining td { opacity: .7; }
#empty { color: var(--muted); padding: 8px 0; }
#add { display: flex; gap: 8px; align-items: center; margin-top: 8px; height: 28px; }
#add-url { width: 320px; }
#action-status { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; flex: 1; }
.events { height: 236px; overflow-y: auto; border: 1px solid var(--line); background: var(--panel); }
.events table { border: 0; }
`;

/** Column headers (fixed markup), widths (px; 0: what is left) and whether they hold numbers. */
const WORKER_COLUMNS: readonly [string, number, boolean][] = [
  ['Worker', 0, false],
  ['Role', 64, false],
  ['Models', 120, false],
  ['Health', 92, false],
  ['Breaker', 160, false],
  ['In<br>flight', 64, true],
  ['Req/s', 64, true],
  ['Errors', 64, true],
  ['Latency ms<br>p50 / p99', 118, true],
  ['TTFT ms<br>p50 / p99', 118, true],
  ['Sessions<br>pinned / active', 108, true],
  ['Prefix tree<br>chars', 84, true],
  ['', 84, false],
];

const EVENT_COLUMNS: readonly [string, number, boolean][] = [
  ['Time', 84, false],
  ['Kind', 90, false],
  ['Worker', 260, false],
  ['Event', 0, false],
];

function table(id: string, columns: readonly [string, number, boolean][]): string {
  const cols = columns.map(([, w]) => (w > 0 ? `<col width="${w}">` : '<col>')).join('');
  const heads = columns.map(([name, , num]) => `<th${num ? ' class="num"' : ''}>${name}</th>`).join('');
  return `<table id="${id}"><colgroup>${cols}</colgroup><thead><tr>${heads}</tr></thead><tbody></tbody></table>`;
}

const CARDS: readonly [string, string][] = [
  ['rate', 'Requests/s'],
  ['errors', 'Error rate'],
  ['latency', 'Latency p50 / p99'],
  ['ttft', 'TTFT p50 / p99'],
  ['inflight', 'In flight'],
  ['healthy', 'Workers healthy'],
];

const BODY = `
<header>
  <h1>vllm-edge-router <span>fleet</span></h1>
  <div id="policy"></div>
  <form id="auth" autocomplete="off">
    <label for="token">Admin key</label>
    <input id="token" type="password" autocomplete="off" placeholder="none (loopback)" spellcheck="false">
    <button type="submit">Use</button>
    <button type="button" id="forget">Forget</button>
  </form>
  <div id="conn" role="status">connecting…</div>
</header>
<section id="summary">
${CARDS.map(([id, label]) => `  <div class="card"><div class="label">${label}</div><div class="value" id="r-${id}">—</div></div>`).join('\n')}
</section>
<h2 id="workers-title">Workers</h2>
${table('workers', WORKER_COLUMNS)}
<div id="empty" hidden>No workers registered.</div>
<form id="add" autocomplete="off">
  <input id="add-url" type="url" required placeholder="http://10.0.0.5:8000" spellcheck="false">
  <button type="submit">Add worker</button>
  <span id="action-status" role="status"></span>
</form>
<h2>Recent events</h2>
<div class="events">${table('events', EVENT_COLUMNS)}</div>
`;

/** The page (the same for every request: it holds no data). */
export const DASHBOARD_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Fleet · vllm-edge-router</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>${BODY}<script>${DASHBOARD_SCRIPT}</script>
</body>
</html>
`;

async function sha256Source(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return `'sha256-${btoa(String.fromCharCode(...digest))}'`;
}

/** The page's Content-Security-Policy: its own inline style and script (by hash), requests to itself only. */
export async function dashboardCsp(): Promise<string> {
  return [
    "default-src 'none'",
    `script-src ${await sha256Source(DASHBOARD_SCRIPT)}`,
    `style-src ${await sha256Source(STYLE)}`,
    "connect-src 'self'",
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}
