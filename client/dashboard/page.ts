/**
 * The dashboard: one self-contained HTML page (inline CSS and JS, no external assets, no
 * build step) that polls GET /v1/status every 2 s and draws tiers, pools, tenants and recent
 * tasks. Every URL it fetches is relative to the page, so it works at `/` locally and under a
 * stage prefix (`/prod/`) behind API Gateway. Text from the API is set with `textContent`
 * only, so a tenant id or an error message can never inject markup.
 */
import { createHash } from 'node:crypto';

/** Poll period of the page; the scheduler publishes its snapshot about as often. */
export const DASHBOARD_REFRESH_MS = 2000;

const STYLE = `
:root { color-scheme: light dark; --bg:#f6f7f9; --card:#fff; --fg:#1c2330; --muted:#5d6778; --line:#dde1e8;
  --track:#e8ebf0; --fill:#3b73d9; --warn:#d98b1c; --bad:#cf3a3a; --good:#2f9e5a; --mark:#1c2330; }
@media (prefers-color-scheme: dark) { :root { --bg:#12151b; --card:#1b2029; --fg:#e6e9ef; --muted:#9aa4b5;
  --line:#2c3340; --track:#2a303b; --fill:#5b8ff0; --mark:#e6e9ef; } }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; background:var(--bg); color:var(--fg); }
header { display:flex; flex-wrap:wrap; gap:12px; align-items:baseline; padding:14px 20px; border-bottom:1px solid var(--line); background:var(--card); }
header h1 { font-size:18px; margin:0; }
header .meta { color:var(--muted); }
#conn { padding:2px 8px; border-radius:10px; font-size:12px; font-weight:600; background:var(--track); }
#conn.live { background:var(--good); color:#fff; } #conn.stale { background:var(--warn); color:#fff; } #conn.down { background:var(--bad); color:#fff; }
main { display:grid; grid-template-columns:repeat(auto-fit,minmax(420px,1fr)); gap:16px; padding:16px 20px; }
section { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:12px 14px; min-width:0; }
section.wide { grid-column:1/-1; }
h2 { font-size:15px; margin:0 0 2px; } p.hint { margin:0 0 10px; color:var(--muted); font-size:12px; }
table { width:100%; border-collapse:collapse; } th { text-align:left; font-size:12px; color:var(--muted); font-weight:600; }
th, td { padding:5px 6px; border-bottom:1px solid var(--line); vertical-align:middle; } tr:last-child td { border-bottom:0; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
.bar { position:relative; height:12px; min-width:120px; background:var(--track); border-radius:6px; overflow:hidden; }
.bar > .fill { position:absolute; inset:0 auto 0 0; background:var(--fill); border-radius:6px; }
.bar > .fill.full { background:var(--bad); } .bar > .fill.over { background:var(--warn); }
.bar > .mark { position:absolute; top:-2px; bottom:-2px; width:2px; background:var(--mark); }
.barrow { display:flex; align-items:center; gap:8px; } .barrow .bar { flex:1; } .barrow span { white-space:nowrap; font-variant-numeric:tabular-nums; }
.state { display:inline-block; padding:1px 7px; border-radius:9px; font-size:11px; font-weight:700; color:#fff; background:var(--muted); }
.state.QUEUED { background:var(--warn); } .state.DISPATCHED { background:#2a9bb5; } .state.RUNNING { background:var(--fill); }
.state.SUCCEEDED { background:var(--good); } .state.FAILED { background:var(--bad); } .state.CANCELLED { background:#8a5cc2; }
.empty { color:var(--muted); font-style:italic; padding:8px 0; }
.legend { display:flex; flex-wrap:wrap; gap:14px; color:var(--muted); font-size:12px; margin-top:8px; }
.legend i { display:inline-block; width:18px; height:10px; border-radius:5px; vertical-align:middle; margin-right:4px; background:var(--fill); }
.legend i.mark { width:2px; border-radius:0; background:var(--mark); } .legend i.full { background:var(--bad); } .legend i.over { background:var(--warn); }
code, .mono { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12px; }
.detail { color:var(--muted); } .detail b { color:var(--fg); font-weight:600; }
#error { display:none; margin:12px 20px 0; padding:8px 12px; border-radius:6px; background:var(--bad); color:#fff; }
`;

const SCRIPT = `
'use strict';
(function () {
  var REFRESH_MS = ${DASHBOARD_REFRESH_MS};
  // Relative to the page, so a stage prefix (/prod/) is kept behind API Gateway.
  var dir = location.pathname.replace(/[^/]*\\.html$/, '');
  if (dir.charAt(dir.length - 1) !== '/') dir += '/';
  var STATUS_URL = dir + 'v1/status?recent=5';
  var last = null;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) for (var key in attrs) {
      if (key === 'text') node.textContent = attrs[key];
      else node.setAttribute(key, attrs[key]);
    }
    (children || []).forEach(function (child) { if (child) node.appendChild(child); });
    return node;
  }
  function txt(value) { return document.createTextNode(String(value)); }
  function clamp(f) { return isFinite(f) ? Math.max(0, Math.min(1, f)) : 0; }
  function pct(f) { return Math.round(f * 100) + '%'; }
  function dur(seconds) {
    var s = Math.max(0, Math.round(seconds));
    if (s < 60) return s + 's';
    if (s < 3600) return Math.floor(s / 60) + 'm ' + (s % 60) + 's';
    return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
  }
  function bar(fraction, opts) {
    opts = opts || {};
    // Sizes go through the CSSOM: the CSP forbids style attributes.
    var fill = el('div', { class: 'fill' + (opts.cls ? ' ' + opts.cls : '') });
    fill.style.width = (clamp(fraction) * 100).toFixed(1) + '%';
    var children = [fill];
    if (opts.mark !== undefined) {
      var mark = el('div', { class: 'mark', title: opts.markTitle || '' });
      mark.style.left = 'calc(' + (clamp(opts.mark) * 100).toFixed(1) + '% - 1px)';
      children.push(mark);
    }
    return el('div', { class: 'bar', role: 'meter', 'aria-valuemin': '0', 'aria-valuemax': '100', 'aria-valuenow': String(Math.round(clamp(fraction) * 100)), title: opts.title || '' }, children);
  }
  function barRow(fraction, label, opts) { return el('div', { class: 'barrow' }, [bar(fraction, opts), el('span', { text: label })]); }
  function fill(id, nodes) { var target = document.getElementById(id); target.replaceChildren.apply(target, nodes); }
  function empty(text, cols) {
    var cell = el('td', { class: 'empty', text: text }); if (cols) cell.setAttribute('colspan', String(cols));
    return el('tr', null, [cell]);
  }

  function renderHeader(s) {
    var parts = ['policy ' + s.policy, 'aging every ' + dur(s.agingSeconds)];
    if (s.scheduler) parts.push(s.scheduler.dispatchRate.toFixed(1) + ' dispatches/s', 'snapshot ' + dur(s.scheduler.ageSeconds) + ' old');
    else parts.push('waiting for the scheduler\\u2019s first snapshot');
    document.getElementById('meta').textContent = parts.join(' \\u00b7 ');
    var conn = document.getElementById('conn');
    var stale = !s.scheduler || s.scheduler.ageSeconds > 30;
    conn.className = stale ? 'stale' : 'live';
    conn.textContent = stale ? 'scheduler not reporting' : 'live';
    document.getElementById('updated').textContent = 'updated ' + new Date(s.at).toLocaleTimeString();
  }

  /** A count, with + when it is a cap (more are queued). */
  function count(n, exact) { return n.toLocaleString('en-US') + (exact ? '' : '+'); }

  function finishedText(f) {
    if (!f) return 'nothing finished in the last 15 minutes';
    return 'last 15 min: ' + f.succeeded + ' succeeded, ' + f.failed + ' failed, ' + f.cancelled + ' cancelled';
  }

  function renderTiers(s) {
    var max = Math.max.apply(null, [1].concat(s.tiers.map(function (t) { return t.waiting; })));
    fill('tiers', s.tiers.map(function (t) {
      return el('tr', { 'data-tier': t.tier }, [
        el('td', { text: t.tier }),
        el('td', { class: 'num', text: count(t.waiting, t.waitingExact !== false), title: (t.held === undefined ? t.waiting : t.held) + ' held by the scheduler' }),
        el('td', { class: 'num', text: t.waiting > 0 ? dur(t.oldestWaitSeconds) : '\\u2013' }),
        el('td', null, [bar(t.waiting / max, { title: t.waiting + ' waiting' })]),
      ]);
    }));
    var total = s.tiers.reduce(function (n, t) { return n + t.waiting; }, 0);
    var exact = s.tiers.every(function (t) { return t.waitingExact !== false; });
    var held = s.tiers.reduce(function (n, t) { return n + (t.held === undefined ? t.waiting : t.held); }, 0);
    document.getElementById('tiers-note').textContent = total === 0
      ? 'Nothing is waiting for capacity right now.'
      : count(total, exact) + ' task' + (total === 1 ? '' : 's') + ' queued (the real backlog, counted every 15 s to 2 min), ' + held + ' of them held by the scheduler for dispatch.';
  }

  function renderPools(s) {
    var l = s.pools.lambda, f = s.pools.fargate;
    function row(name, fraction, label) {
      return el('tr', { 'data-pool': name }, [el('td', { text: name }), el('td', null, [barRow(fraction, label, { cls: fraction >= 1 ? 'full' : '' })])]);
    }
    fill('pools', [
      row('Lambda slots', l.used / l.capacity, l.used + ' / ' + l.capacity),
      row('Fargate vCPU', f.vcpuUsed / f.vcpu, f.vcpuUsed + ' / ' + f.vcpu),
      row('Fargate memory', f.memoryMiBUsed / f.memoryMiB, f.memoryMiBUsed + ' / ' + f.memoryMiB + ' MiB'),
    ]);
  }

  function flowText(t) {
    var parts = [];
    if (t.paused) parts.push('paused');
    if (t.maxStartsPerSecond !== undefined) parts.push((t.rateLimited ? 'at ' : '') + t.maxStartsPerSecond + '/s');
    if (t.parked > 0) parts.push(t.parked + ' parked');
    return parts.length ? parts.join(', ') : '\\u2013';
  }

  function renderPausedTypes(s) {
    var types = s.pausedTypes || [];
    document.getElementById('paused-types').textContent = types.length === 0
      ? 'No task type is paused.'
      : 'Paused task types: ' + types.map(function (t) {
        return t.type + ' (' + t.parked + ' held' + (t.pausedBy ? ', by ' + t.pausedBy : '') + (t.pausedAt ? ' since ' + t.pausedAt : '') + ')';
      }).join('; ') + '.';
  }

  function renderTenants(s) {
    renderPausedTypes(s);
    if (s.tenants.length === 0) { fill('tenants', [empty('No tenants yet: submit a task and its tenant appears here.', 6)]); return; }
    fill('tenants', s.tenants.map(function (t) {
      var quota = t.running / t.maxConcurrency;
      var over = t.entitlement > 0 && t.dominantShare > t.entitlement;
      return el('tr', { 'data-tenant': t.tenantId }, [
        el('td', { class: 'mono', text: t.tenantId }),
        el('td', null, [barRow(quota, t.running + ' / ' + t.maxConcurrency, { cls: quota >= 1 ? 'full' : '', title: 'running or dispatched vs maxConcurrency' })]),
        el('td', { class: 'num', text: count(t.queued, t.queuedExact !== false), title: finishedText(t.recentlyFinished) }),
        el('td', null, [barRow(t.dominantShare, pct(t.dominantShare) + ' of ' + pct(t.entitlement), {
          cls: over ? 'over' : '', mark: t.entitlement, markTitle: 'entitlement ' + pct(t.entitlement),
          title: 'dominant share held vs fair-share entitlement (weight ' + t.weight + ')' })]),
        el('td', { class: 'num', 'data-finished': '', text: t.recentlyFinished ? t.recentlyFinished.succeeded + ' / ' + t.recentlyFinished.failed : '\\u2013', title: finishedText(t.recentlyFinished) }),
        el('td', { 'data-flow': '', class: t.paused || t.rateLimited ? 'held' : '', text: flowText(t), title: 'paused, start-rate limit (at: holding it now), tasks parked by a paused type or a full concurrency key' }),
      ]);
    }));
  }

  function taskDetail(t, nowMs) {
    if (t.state === 'RUNNING' && t.startedAt) {
      var elapsed = (nowMs - Date.parse(t.startedAt)) / 1000;
      return barRow(elapsed / t.timeoutSeconds, dur(elapsed) + ' of ' + dur(t.timeoutSeconds) + ' timeout', { title: 'time used of the timeout' });
    }
    if (t.wait) {
      var worst = t.wait.worstCaseSeconds === undefined ? '' : t.wait.assumedHeadroom ? ' while the pool has a free slot; ' + dur(Math.ceil(t.wait.worstCaseSeconds)) + ' however full it gets' : " at the pool's pace; " + dur(Math.ceil(t.wait.worstCaseSeconds)) + ' however slowly slots free';
      var bound = t.wait.maxWaitSeconds === null ? 'no bound: ' + (t.wait.noBound ? t.wait.noBound.message : 'none given') : 'at most ' + dur(Math.ceil(t.wait.maxWaitSeconds)) + ' more' + worst;
      return el('div', { class: 'detail', title: t.wait.message }, [el('b', { text: t.wait.reason.split('_').join(' ') }), txt(': ' + t.wait.message + ' (' + bound + ')')]);
    }
    if (t.error) return el('div', { class: 'detail' }, [el('b', { text: t.error.name }), txt(': ' + t.error.message)]);
    if (t.cancelRequested) return el('div', { class: 'detail', text: 'cancel requested' });
    if (t.finishedAt) return el('div', { class: 'detail', text: 'finished ' + dur((nowMs - Date.parse(t.finishedAt)) / 1000) + ' ago' });
    return null;
  }

  function renderTasks(s) {
    if (s.recentTasks.length === 0) { fill('tasks', [empty('No tasks yet. Try: tasks submit --tenant acme --type demo.sleep --payload \\'{"ms":2000}\\'', 7)]); return; }
    var nowMs = Date.parse(s.at);
    fill('tasks', s.recentTasks.map(function (t) {
      return el('tr', { 'data-task': t.taskId, 'data-state': t.state }, [
        el('td', { class: 'mono', text: t.taskId, title: t.taskId }),
        el('td', { class: 'mono', text: t.tenantId }),
        el('td', { text: t.type }),
        el('td', null, [el('span', { class: 'state ' + t.state, text: t.state })]),
        el('td', { text: t.priority }),
        el('td', { class: 'num', text: dur((nowMs - Date.parse(t.submittedAt)) / 1000) + ' ago' }),
        el('td', null, [taskDetail(t, nowMs)]),
      ]);
    }));
  }

  function renderBatches(s) {
    var batches = s.openBatches || [];
    if (batches.length === 0) { fill('batches', [empty('No batch in progress. Try: tasks submit --file tasks.ndjson --tenant acme', 5)]); return; }
    fill('batches', batches.map(function (b) {
      var c = b.counts || { succeeded: 0, failed: 0, cancelled: 0, excluded: 0, pending: b.total };
      var ended = c.succeeded + c.failed + c.cancelled;
      var members = b.total - c.excluded;
      return el('tr', { 'data-batch': b.batchId }, [
        el('td', { class: 'mono', text: b.batchId, title: b.batchId }),
        el('td', { class: 'mono', text: b.tenantId }),
        el('td', null, [barRow(members > 0 ? ended / members : 1, ended + ' of ' + members + ' ended', { title: 'members ended of those accepted' })]),
        el('td', { class: 'num', text: c.succeeded + ' / ' + c.failed + ' / ' + c.cancelled }),
        el('td', { class: 'num', text: String(c.pending) }),
      ]);
    }));
  }

  function render(s) {
    renderHeader(s); renderTiers(s); renderPools(s); renderTenants(s); renderBatches(s); renderTasks(s);
    document.body.setAttribute('data-loaded', 'true');
  }

  function showError(message) {
    var box = document.getElementById('error');
    box.style.display = message ? 'block' : 'none';
    box.textContent = message ? message + (last ? ' \\u2014 showing the last figures received.' : '') : '';
    if (message) { var conn = document.getElementById('conn'); conn.className = 'down'; conn.textContent = 'API unreachable'; }
  }

  function poll() {
    fetch(STATUS_URL, { cache: 'no-store', headers: { accept: 'application/json' } })
      .then(function (response) {
        return response.json().then(function (body) {
          if (!response.ok) throw new Error((body && body.error && body.error.message) || ('HTTP ' + response.status));
          return body;
        });
      })
      .then(function (status) { last = status; showError(''); render(status); })
      .catch(function (error) { showError('Cannot read ' + STATUS_URL + ': ' + error.message); })
      .finally(function () { setTimeout(poll, REFRESH_MS); });
  }
  poll();
})();
`;

const BODY = `
<header>
  <h1>Task scheduler</h1>
  <span id="conn">connecting\u2026</span>
  <span class="meta" id="meta">loading status\u2026</span>
  <span class="meta" id="updated"></span>
</header>
<div id="error" role="alert"></div>
<main>
  <section aria-labelledby="h-tiers">
    <h2 id="h-tiers">Queue by priority tier</h2>
    <p class="hint">Tasks waiting for a worker (the real backlog; 10,000+ when a tenant has more), highest tier first. Waiting tasks are promoted one tier per aging period, so none waits forever.</p>
    <table><thead><tr><th>Tier</th><th class="num">Waiting</th><th class="num">Oldest wait</th><th>Depth</th></tr></thead>
    <tbody id="tiers"><tr><td class="empty" colspan="4">Loading\u2026</td></tr></tbody></table>
    <p class="hint" id="tiers-note"></p>
  </section>
  <section aria-labelledby="h-pools">
    <h2 id="h-pools">Worker pools</h2>
    <p class="hint">Capacity in use. Lambda counts concurrent tasks; Fargate counts vCPU and memory.</p>
    <table><tbody id="pools"><tr><td class="empty">Loading\u2026</td></tr></tbody></table>
    <div class="legend"><span><i></i>in use</span><span><i class="full"></i>full: new work waits</span></div>
  </section>
  <section class="wide" aria-labelledby="h-tenants">
    <h2 id="h-tenants">Tenants</h2>
    <p class="hint">Each tenant's running tasks against its quota (maxConcurrency), tasks still queued, the share of capacity it holds against the share its weight entitles it to, and what finished in the last 15 minutes (a tenant stays listed that long after its work ends).</p>
    <table><thead><tr><th>Tenant</th><th>Running / quota</th><th class="num">Queued</th><th>Share held vs entitlement</th><th class="num">Succeeded / failed, 15 min</th><th>Flow control</th></tr></thead>
    <tbody id="tenants"><tr><td class="empty" colspan="6">Loading\u2026</td></tr></tbody></table>
    <p class="hint" id="paused-types"></p>
    <div class="legend"><span><i></i>running / share held</span><span><i class="full"></i>quota reached</span><span><i class="over"></i>above its fair share: others go first</span><span><i class="mark"></i>entitlement</span></div>
  </section>
  <section class="wide" aria-labelledby="h-batches">
    <h2 id="h-batches">Batches in progress</h2>
    <p class="hint">Batches (POST /v1/tasks/batch) whose tasks have not all ended: how many ended, how, and how many are pending. When the last one ends the batch's then-task is submitted.</p>
    <table><thead><tr><th>Batch</th><th>Tenant</th><th>Ended</th><th class="num">Succeeded / failed / cancelled</th><th class="num">Pending</th></tr></thead>
    <tbody id="batches"><tr><td class="empty" colspan="5">Loading\u2026</td></tr></tbody></table>
  </section>
  <section class="wide" aria-labelledby="h-tasks">
    <h2 id="h-tasks">Recent tasks</h2>
    <p class="hint">Newest tasks of the tenants above. Running tasks show time used of their timeout; queued ones say why they wait and for how long at most.</p>
    <table><thead><tr><th>Task</th><th>Tenant</th><th>Type</th><th>State</th><th>Priority</th><th class="num">Submitted</th><th>Progress / why waiting</th></tr></thead>
    <tbody id="tasks"><tr><td class="empty" colspan="7">Loading\u2026</td></tr></tbody></table>
  </section>
</main>
`;

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Task scheduler \u2014 dashboard</title>
<style>${STYLE}</style>
</head>
<body>${BODY}<script>${SCRIPT}</script>
</body>
</html>
`;

const hash = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** Headers of the page: only its own inline style and script run, and it talks only to its own origin. */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy': [
    "default-src 'none'",
    `script-src ${hash(SCRIPT)}`,
    `style-src ${hash(STYLE)}`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
};
