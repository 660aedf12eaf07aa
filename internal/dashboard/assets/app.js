// Gleaner dashboard: a read-only page over /api. No library: charts are
// drawn on canvas (many points) and SVG (few, interactive), and every
// chart says what it holds in data-* attributes (count, series) so a
// browser test can check it against the campaign.
'use strict';

const $ = (sel, el = document) => el.querySelector(sel);
const esc = s => String(s ?? '').replace(/[&<>"']/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
const fmt = v => v == null || !isFinite(v) ? '–' : Math.abs(v) >= 1e5 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(3) : +v.toPrecision(5) + '';
const ago = ms => { const s = Math.max(0, (Date.now() - ms) / 1000); return s < 90 ? Math.round(s) + ' s' : s < 5400 ? Math.round(s / 60) + ' min' : s < 172800 ? (s / 3600).toFixed(1) + ' h' : (s / 86400).toFixed(1) + ' d'; };
const clock = ms => new Date(ms).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit', second: '2-digit'});
const pill = s => `<span class="pill s-${esc(s)}">${esc(s)}</span>`;
const STATE_COLORS = {running:'#2f6fde', pending:'#9aa3b5', paused:'#e0a526', completed:'#1f9d55', stopped:'#7b6fb0', failed:'#d23c3c', parked:'#e0a526', 'stopped-at-rung':'#7b6fb0'};
// A trial's workflow id, shortened: "CAMPAIGN t00009" (segments ".2").
function shortTrial(id) { const m = String(id).match(/^gleaner-campaign-(.+)-trial-(\d+)(\.\d+)?$/); return m ? `${m[1]} t${m[2]}${m[3] || ''}` : String(id).replace(/^gleaner-campaign-/, ''); }
// A colour per name, far apart for names that differ only at the end
// (trial ids): FNV-1a, then the golden angle.
function hue(s) {
  let h = 2166136261;
  for (const c of String(s)) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
  return `hsl(${Math.round((h % 1000) * 137.508) % 360} 62% 52%)`;
}

// generation counts the views shown: an answer that arrives for a view
// no longer shown is dropped (STALE), never drawn into the new one.
let generation = 0;
const STALE = new Error('stale');
async function api(path) {
  const g = generation;
  const r = await fetch(path, {headers: {Accept: 'application/json'}});
  if (!r.ok) { let m = r.status + ' ' + r.statusText; try { m = (await r.json()).error || m; } catch (e) {} throw new Error(m); }
  const j = await r.json();
  if (g !== generation) throw STALE;
  return j;
}

// ---- routing -------------------------------------------------------------
let current = null; // the view: {stop()}
function route() {
  if (current) current.stop();
  generation++;
  const h = decodeURIComponent(location.hash.slice(1) || '/');
  const m = h.match(/^\/(c|p)\/(.+)$/);
  current = !m ? overviewView() : m[1] === 'c' ? campaignView(m[2]) : poolView(m[2]);
}
window.addEventListener('hashchange', route);
window.addEventListener('load', route);

function poller(fn, every) {
  let t = null, stopped = false;
  const tick = async () => { if (stopped) return; try { await fn(); } catch (e) { if (e !== STALE) showError(e); } if (!stopped) t = setTimeout(tick, every); };
  tick();
  return {stop() { stopped = true; clearTimeout(t); }};
}
function showError(e) { const el = $('#asof'); el.textContent = 'error: ' + e.message; el.className = 'bad'; }
function asOf(t) { const el = $('#asof'); el.className = 'muted'; el.textContent = 'as of ' + new Date(t).toLocaleTimeString(); }
function crumbs(html) { $('#crumbs').innerHTML = html; }

// ---- overview ------------------------------------------------------------
function overviewView() {
  crumbs('');
  return poller(async () => {
    const ov = await api('api/overview');
    asOf(ov.as_of);
    const c = ov.campaigns.map(x => {
      const counts = x.counts ? Object.entries(x.counts).filter(([, n]) => n > 0).map(([s, n]) => `${pill(s)} ${n}`).join(' ') : `${x.trials_done} ended`;
      const prog = x.max_trials ? `<span class="bar"><i style="width:${(100 * Math.min(1, x.trials_done / x.max_trials)).toFixed(1)}%"></i></span> ${x.trials_done}/${x.max_trials}` : x.trials_done;
      return `<tr data-campaign="${esc(x.name)}"><td><a href="#/c/${encodeURIComponent(x.name)}">${esc(x.name)}</a></td><td>${pill(x.state)}</td><td>${prog}</td><td>${counts}</td>
        <td class="num">${x.objectives ? (x.hypervolume == null ? '–' : `HV ${fmt(x.hypervolume)}`) : x.best == null ? '–' : fmt(x.best)}</td><td class="muted">${x.objectives ? `${x.objectives} objectives (Pareto front)` : `${esc(x.objective || '')} ${esc(x.mode || '')}`}</td>
        <td class="num">${ago(Date.parse(x.started))}</td><td>${x.pool ? `<a href="#/p/${encodeURIComponent(x.pool)}">${esc(x.pool)}</a>` : ''}</td></tr>`;
    }).join('');
    const p = ov.pools.map(x => `<tr data-pool="${esc(x.name)}"><td><a href="#/p/${encodeURIComponent(x.name)}">${esc(x.name)}</a></td><td class="num">${x.nodes}</td><td class="num">${x.in_use}</td>
      <td class="num">${x.trials}</td><td class="num">${x.inline_campaigns}</td><td>${x.last && x.last.status ? `${esc(x.last.formulation)} ${esc(x.last.status)}, ${fmt(x.last.solve_ms)} ms` : '–'}</td><td class="bad">${esc(x.error || '')}</td></tr>`).join('');
    $('#main').innerHTML = `<h1>Campaigns</h1><div class="card"><table id="campaigns" data-count="${ov.campaigns.length}"><thead><tr><th>campaign</th><th>state</th><th>progress</th><th>trials</th><th class="num">best</th><th>objective</th><th class="num">age</th><th>pool</th></tr></thead><tbody>${c || '<tr><td colspan="8" class="empty">No campaign yet: gleaner submit SPEC</td></tr>'}</tbody></table></div>
      <h1 style="margin-top:18px">Pools</h1><div class="card"><table id="pools" data-count="${ov.pools.length}"><thead><tr><th>pool</th><th class="num">nodes</th><th class="num">in use</th><th class="num">trials</th><th class="num">inline campaigns</th><th>last solve</th><th></th></tr></thead><tbody>${p || '<tr><td colspan="7" class="empty">No pool runs</td></tr>'}</tbody></table></div>`;
  }, 3000);
}

// ---- plotting ------------------------------------------------------------
// A plot on a canvas: axes from domains, ticks, and a draw callback with
// scale functions. Returns the scales for hit testing.
function ticks(lo, hi, n = 5) {
  if (!(hi > lo)) return [lo];
  const step0 = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= step0);
  const out = []; for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}
// Ticks of a log axis: 1, 2 and 5 times the powers of ten in range (the
// powers alone when those are too many).
function logTicks(lo, hi) {
  const out = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) for (const m of [1, 2, 5]) { const v = m * Math.pow(10, e); if (v >= lo && v <= hi) out.push(+v.toPrecision(6)); }
  return out.length > 8 ? out.filter(v => Math.abs(Math.log10(v) % 1) < 1e-9) : out;
}
function extent(vals, pad = 0.04) {
  let lo = Infinity, hi = -Infinity;
  for (const v of vals) if (isFinite(v)) { if (v < lo) lo = v; if (v > hi) hi = v; }
  if (lo === Infinity) return [0, 1];
  if (lo === hi) { const d = Math.abs(lo) * 0.1 || 1; return [lo - d, hi + d]; }
  const d = (hi - lo) * pad; return [lo - d, hi + d];
}
function canvasPlot(el, o) {
  const W = el.clientWidth || 560, H = o.height || 260, dpr = window.devicePixelRatio || 1;
  let cv = el.querySelector('canvas');
  if (!cv) { cv = document.createElement('canvas'); el.appendChild(cv); }
  cv.width = W * dpr; cv.height = H * dpr; cv.style.height = H + 'px';
  const g = cv.getContext('2d'); g.setTransform(dpr, 0, 0, dpr, 0, 0); g.clearRect(0, 0, W, H);
  const m = {l: 58, r: 12, t: 8, b: 34};
  const [x0, x1] = o.x, [y0, y1] = o.y;
  const lx = o.xlog, ly = o.ylog, T = (v, log) => log ? Math.log10(v) : v;
  const sx = v => m.l + (T(v, lx) - T(x0, lx)) / ((T(x1, lx) - T(x0, lx)) || 1) * (W - m.l - m.r);
  const sy = v => H - m.b - (T(v, ly) - T(y0, ly)) / ((T(y1, ly) - T(y0, ly)) || 1) * (H - m.t - m.b);
  g.strokeStyle = '#d9dde5'; g.fillStyle = '#6b7385'; g.font = '11px system-ui'; g.lineWidth = 1;
  const xt = o.xticks || (lx ? logTicks(x0, x1) : ticks(x0, x1));
  const yt = ly ? logTicks(y0, y1) : ticks(y0, y1);
  g.textAlign = 'center';
  for (const v of xt) { const x = sx(v); if (x < m.l - 1 || x > W - m.r + 1) continue; g.beginPath(); g.moveTo(x, m.t); g.lineTo(x, H - m.b); g.stroke(); g.fillText(o.xfmt ? o.xfmt(v) : fmt(v), x, H - m.b + 14); }
  g.textAlign = 'right';
  for (const v of yt) { const y = sy(v); if (y < m.t - 1 || y > H - m.b + 1) continue; g.beginPath(); g.moveTo(m.l, y); g.lineTo(W - m.r, y); g.stroke(); g.fillText(fmt(v), m.l - 5, y + 4); }
  g.textAlign = 'center'; g.fillText(o.xlabel || '', (m.l + W - m.r) / 2, H - 4);
  g.save(); g.translate(12, (m.t + H - m.b) / 2); g.rotate(-Math.PI / 2); g.fillText(o.ylabel || '', 0, 0); g.restore();
  g.save(); g.beginPath(); g.rect(m.l, m.t, W - m.l - m.r, H - m.t - m.b); g.clip();
  o.draw(g, sx, sy, {W, H, m});
  g.restore();
  return {sx, sy, cv, W, H, m};
}

// Hover: the nearest of pts ([x, y, label]) within 8 px shows its label.
function hover(el, plot, pts) {
  const tip = $('#tip');
  plot.cv.onmousemove = ev => {
    const r = plot.cv.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top;
    let best = null, bd = 64;
    for (const p of pts) { const dx = plot.sx(p[0]) - mx, dy = plot.sy(p[1]) - my, d = dx * dx + dy * dy; if (d < bd) { bd = d; best = p; } }
    if (!best) { tip.hidden = true; return; }
    tip.hidden = false; tip.textContent = best[2]; tip.style.left = ev.clientX + 12 + 'px'; tip.style.top = ev.clientY + 12 + 'px';
  };
  plot.cv.onmouseleave = () => { tip.hidden = true; };
}

// ---- campaign ------------------------------------------------------------
function campaignView(name) {
  crumbs(`/ campaign <b>${esc(name)}</b>`);
  const st = {rows: new Map(), version: 0, page: null, xTime: false, sort: {key: 'n', dir: 1}, filter: '', state: '', pageNo: 0,
    brush: {}, selected: null, top: 10, drawnAt: 0};
  const base = `api/campaigns/${encodeURIComponent(name)}`;
  $('#main').innerHTML = `
    <h1>${esc(name)} <span id="c-state"></span></h1>
    <div class="stats" id="c-stats"></div>
    <div class="grid">
      <section class="card" id="pareto" hidden><header><h2>Pareto front</h2><span class="controls" id="pf-axes"></span></header><div class="plot"></div><div class="legend" id="pf-legend"></div><div class="muted" id="pf-hv"></div></section>
      <section class="card" id="history"><header><h2>Optimisation history</h2><span class="muted first-of"></span><label class="controls"><input type="checkbox" id="h-time"> against time</label></header><div class="plot"></div><div class="legend"><span><i style="background:#2f6fde"></i>trial's score (its best value)</span><span><i style="background:#d23c3c"></i>best so far</span></div></section>
      <section class="card" id="curves"><header><h2>Learning curves</h2><span class="muted first-of"></span><label class="controls">top <input type="number" id="cv-top" min="0" max="1000" value="10" style="width:60px"></label></header><div class="plot"></div><div class="legend" id="cv-legend"></div></section>
      <section class="card wide" id="parallel"><header><h2>Parallel coordinates</h2><span class="muted" id="pc-note"></span><button id="pc-clear">clear brushes</button></header><div class="plot"></div></section>
      <section class="card" id="importance"><header><h2>Parameter importance</h2><span class="muted"><span class="first-of"></span> PED-ANOVA, top 10% vs all</span></header><div class="plot"></div></section>
      <section class="card" id="slices"><header><h2>Slices</h2><span class="muted first-of"></span></header><div class="slices"></div></section>
      <section class="card wide" id="trials"><header><h2>Trials</h2>
        <span class="controls"><select id="t-state"><option value="">every state</option></select><input type="text" id="t-filter" placeholder="filter: id, parameter, error"><a id="t-csv">CSV</a><a id="t-json">JSON</a></span></header>
        <div id="t-table"></div><div id="t-detail"></div></section>
      <section class="card wide" id="timeline"><header><h2>Trial timeline</h2><span class="muted" id="tl-note"></span></header><div class="plot"></div><div class="legend">${['pending', 'running', 'paused', 'completed', 'stopped', 'failed'].map(s => `<span><i style="background:${STATE_COLORS[s]}"></i>${s}</span>`).join('')}<span>▲ preempted</span><span>◆ rescaled</span></div></section>
    </div>`;
  $('#t-csv').href = base + '/export?format=csv'; $('#t-json').href = base + '/export?format=json';
  $('#h-time').onchange = e => { st.xTime = e.target.checked; drawHistory(st, columnsOf(st.sorted)); };
  $('#cv-top').onchange = e => { st.top = Math.max(0, +e.target.value || 0); loadCurves(); };
  $('#t-filter').oninput = e => { st.filter = e.target.value.toLowerCase(); st.pageNo = 0; drawTable(st, base); };
  $('#t-state').onchange = e => { st.state = e.target.value; st.pageNo = 0; drawTable(st, base); };
  $('#pc-clear').onclick = () => { st.brush = {}; drawParallel(st); drawTable(st, base); };
  let curvesAt = 0, tlAt = 0;
  const loadCurves = async () => { const c = await api(`${base}/curves?top=${st.top}&others=100`); drawCurves(c, st.page.spec.objective); };
  const loadTimeline = async () => { const t = await api(`${base}/timeline?limit=60`); drawTimeline(t); };
  const main = poller(async () => {
    const p = await api(`${base}?since=${st.version}`);
    if (st.page && p.epoch !== st.page.epoch) {
      // The server's watcher is new (it restarted, or forgot the
      // campaign): its versions are not ours; start again from 0.
      st.rows.clear(); st.version = 0; st.page = null;
      return;
    }
    const first = !st.page, changed = p.rows.id.length > 0 || first;
    st.version = p.version; st.page = p;
    asOf(p.as_of);
    header(st);
    if (first) setupObjectives(st, base);
    if (first) {
      // The first answer holds every trial, by number: the history is
      // drawn from its columns before anything else is built.
      drawHistory(st, p.rows);
      window.firstChartAt = performance.now();
      await new Promise(r => requestAnimationFrame(() => setTimeout(r)));
    }
    for (const r of rowsOf(p.rows)) st.rows.set(r.id, r);
    // Several objectives: the front is the status's; it may change
    // while no row does.
    const front = JSON.stringify(p.status.pareto || null), frontChanged = !!p.spec.objectives && front !== st.frontJSON;
    if (frontChanged) { st.frontJSON = front; st.front = new Set(((p.status.pareto || {}).trials || []).map(e => e.trial_id)); }
    if (changed) {
      st.sorted = [...st.rows.values()].sort((a, b) => a.n - b.n);
      if (!first) drawHistory(st, columnsOf(st.sorted));
      drawParallel(st); drawSlices(st);
    }
    if (changed || frontChanged) drawTable(st, base);
    if (p.spec.objectives && (changed || frontChanged)) drawPareto(st, base);
    const imp = JSON.stringify([p.importance, p.importance_note]);
    if (imp !== st.impJSON) { st.impJSON = imp; drawImportance(st); }
    if (changed) {
      $('#history').dataset.version = p.version;
    }
    const now = Date.now();
    if (changed || now - curvesAt > 10000) { curvesAt = now; await loadCurves(); }
    if (changed || now - tlAt > 10000) { tlAt = now; await loadTimeline(); }
  }, 2000);
  window.onresize = () => { if (st.sorted) { drawHistory(st, columnsOf(st.sorted)); drawParallel(st); drawSlices(st); if (st.page.spec.objectives) drawPareto(st, base); } };
  return {stop() { main.stop(); window.onresize = null; }};
}

// The rows of a page's answer, which comes by column.
function rowsOf(c) {
  const out = new Array(c.id.length), ps = Object.entries(c.p || {});
  for (let i = 0; i < c.id.length; i++) {
    const p = {};
    for (const [k, col] of ps) if (col[i] != null) p[k] = col[i];
    out[i] = {id: c.id[i], n: c.n[i], s: c.s[i], g: c.g[i], v: c.v[i], b: c.b[i], t1: c.t1[i], m: c.m[i], r: c.r[i], x: c.x[i], k: c.k[i], e: c.e[i], p};
    if (c.vs) {
      // Several objectives: their values (null until a report carried
      // every one), as columns o0, o1… to sort by, and feasibility.
      const vs = c.vs[i], r = out[i];
      r.vs = vs; r.inf = !!(c.inf && c.inf[i]); r.fe = vs ? (r.inf ? 'no' : 'yes') : null;
      if (vs) vs.forEach((v, k) => { r['o' + k] = v; });
    }
  }
  return out;
}

function header(st) {
  const p = st.page, s = p.status;
  $('#c-state').innerHTML = pill(s.state) + (p.ui_url ? ` <a href="${esc(p.ui_url)}" style="font-size:13px">in Temporal UI</a>` : '');
  const stat = (v, l) => `<div class="stat"><b>${v}</b><span>${l}</span></div>`;
  const best = s.best ? `${fmt(s.best.score)} <span class="muted" style="font-size:12px">${esc(s.best.trial_id)}</span>` : '–';
  // Several objectives: the front's size and hypervolume are the best.
  const f = s.pareto, goals = (p.spec.objectives || []).map(o => `${o.mode} ${o.metric}`).join(', ');
  const bestStat = p.spec.objectives ? stat(f ? f.size : 0, `on the Pareto front (${esc(goals)})`) + stat(f && f.reference_point ? fmt(f.hypervolume) : '–', 'hypervolume') :
    stat(best, `best ${esc(p.spec.objective)} (${esc(p.spec.mode)})`);
  $('#c-stats').innerHTML = bestStat + stat(`${s.completed + s.stopped + s.failed}/${s.max_trials || '∞'}`, 'trials ended') +
    stat(s.running, 'running') + stat(s.waiting, 'waiting for nodes') + stat(s.paused, 'paused') + stat(s.completed, 'completed') + stat(s.stopped, 'stopped') +
    stat(`<span class="${s.failed ? 'bad' : ''}">${s.failed}</span>`, 'failed') + (s.parked ? stat(s.parked, 'parked') : '') +
    stat(esc(p.spec.algorithm || 'random'), 'search') + stat(p.spec.pool ? `<a href="#/p/${encodeURIComponent(p.spec.pool)}">${esc(p.spec.pool)}</a>` : '–', 'pool' + (p.spec.inline ? ' (inline)' : ''));
  const sel = $('#t-state');
  if (sel.options.length === 1) for (const s of ['running', 'pending', 'paused', 'parked', 'completed', 'stopped', 'stopped-at-rung', 'failed']) sel.add(new Option(s, s));
}

const better = (mode, a, b) => mode === 'max' ? a > b : a < b;

// The history's columns of rows sorted by number.
function columnsOf(rows) { return {id: rows.map(r => r.id), n: rows.map(r => r.n), b: rows.map(r => r.b), t1: rows.map(r => r.t1), s: rows.map(r => r.s)}; }

// The optimisation history from columns sorted by trial number: every
// trial's score (its best reported value, as the leaderboard and the
// campaign's best count it), and the best so far by number or by the
// time it ended. The parallel coordinates and slices plot the same.
function drawHistory(st, c) {
  const el = $('#history .plot'), mode = st.page.spec.mode, X = st.xTime ? c.t1 : c.n;
  const idx = [];
  for (let i = 0; i < c.id.length; i++) if (c.b[i] != null && (!st.xTime || c.t1[i])) idx.push(i);
  if (st.xTime) idx.sort((a, b) => c.t1[a] - c.t1[b]);
  let best = null, lo = Infinity, hi = -Infinity, vlo = Infinity, vhi = -Infinity; const bestLine = [];
  for (const i of idx) {
    const v = c.b[i], x = X[i];
    if (best == null || better(mode, v, best)) { best = v; bestLine.push([x, best]); }
    if (x < lo) lo = x; if (x > hi) hi = x; if (v < vlo) vlo = v; if (v > vhi) vhi = v;
  }
  if (bestLine.length) bestLine.push([hi, best]);
  const plot = canvasPlot(el, {x: extent([lo, hi], 0.01), y: extent([vlo, vhi]), xlabel: st.xTime ? 'time trial ended' : 'trial number', ylabel: st.page.spec.objective,
    xfmt: st.xTime ? clock : null,
    draw(g, sx, sy) {
      const many = idx.length > 2000;
      g.fillStyle = many ? 'rgba(47,111,222,.35)' : 'rgba(47,111,222,.8)';
      if (many) for (const i of idx) g.fillRect(sx(X[i]) - 1, sy(c.b[i]) - 1, 2, 2);
      else for (const i of idx) { g.beginPath(); g.arc(sx(X[i]), sy(c.b[i]), 3, 0, 7); g.fill(); }
      g.strokeStyle = '#d23c3c'; g.lineWidth = 2; g.beginPath();
      bestLine.forEach(([x, y], j) => { if (j) g.lineTo(sx(x), sy(bestLine[j - 1][1])); j ? g.lineTo(sx(x), sy(y)) : g.moveTo(sx(x), sy(y)); });
      g.stroke();
    }});
  if (idx.length <= 5000) hover(el, plot, idx.map(i => [X[i], c.b[i], `${c.id[i]}: ${fmt(c.b[i])} (${c.s[i]})`]));
  el.dataset.points = idx.length; el.dataset.best = best ?? '';
}

function drawCurves(c, objective) {
  const el = $('#curves .plot');
  c.curves = c.curves || [];
  const pts = c.curves.flatMap(k => k.pts || []);
  const legend = `<span><i style="background:#2f6fde"></i>top ${c.curves.filter(k => k.top).length}</span><span><i style="background:#c4cad6"></i>others (newest)</span><span>✕ failed</span><span>■ stopped</span><span>● paused/parked</span>` +
    (c.boundaries ? `<span>┆ ${esc(c.boundaries_kind)} boundaries</span>` : '') + (c.boundaries_note ? `<span>${esc(c.boundaries_note)}</span>` : '') + `<span>${c.curves.length} of ${c.of} curves</span>`;
  $('#cv-legend').innerHTML = legend;
  const xr = extent(pts.map(p => p[0]), 0.01);
  const plot = canvasPlot(el, {x: xr, y: extent(pts.map(p => p[1])), xlabel: c.unit, ylabel: objective,
    draw(g, sx, sy, {H, m}) {
      if (c.boundaries) { g.setLineDash([4, 4]); g.strokeStyle = '#9aa3b5'; for (const b of c.boundaries) { if (b > xr[1]) continue; g.beginPath(); g.moveTo(sx(b), m.t); g.lineTo(sx(b), H - m.b); g.stroke(); } g.setLineDash([]); }
      const draw = k => {
        g.strokeStyle = k.top ? hue(k.id) : '#c4cad6'; g.lineWidth = k.top ? 1.8 : 1; g.beginPath();
        k.pts.forEach(([x, y], i) => i ? g.lineTo(sx(x), sy(y)) : g.moveTo(sx(x), sy(y))); g.stroke();
        const [x, y] = k.pts[k.pts.length - 1] || []; if (x == null) return;
        g.fillStyle = STATE_COLORS[k.s] || '#555'; const X = sx(x), Y = sy(y);
        if (k.s === 'failed') { g.strokeStyle = STATE_COLORS.failed; g.beginPath(); g.moveTo(X - 4, Y - 4); g.lineTo(X + 4, Y + 4); g.moveTo(X + 4, Y - 4); g.lineTo(X - 4, Y + 4); g.stroke(); }
        else if (k.s === 'stopped' || k.s === 'stopped-at-rung') g.fillRect(X - 3, Y - 3, 6, 6);
        else if (k.s === 'paused' || k.s === 'parked') { g.beginPath(); g.arc(X, Y, 3.5, 0, 7); g.fill(); }
      };
      c.curves.filter(k => !k.top).forEach(draw); c.curves.filter(k => k.top).forEach(draw);
    }});
  hover(el, plot, c.curves.flatMap(k => k.pts.length ? [[...k.pts[k.pts.length - 1], `${k.id} (${k.s}${k.g ? ', ' + k.g : ''})`]] : []));
  el.dataset.curves = c.curves.length; el.dataset.top = c.curves.filter(k => k.top).length; el.dataset.boundaries = (c.boundaries || []).length;
}

// Axes of the space: numeric (log where the space says) or categorical.
function axesOf(st) {
  const axes = st.page.spec.space.filter(p => !p.architecture).map(p => {
    const cat = p.type === 'choice' || !!p.choices;
    const vals = st.sorted.map(r => r.p && r.p[p.name]).filter(v => v != null);
    if (cat) { const cs = p.choices || [...new Set(vals)].sort(); return {name: p.name, cat: true, choices: cs, pos: v => (cs.indexOf(String(v)) + 0.5) / cs.length}; }
    const log = !!p.log, T = v => log ? Math.log10(v) : v, mn = p.min ?? 0, mx = p.max ?? 0;
    const [lo, hi] = mx > mn ? [T(mn), T(mx)] : extent(vals.map(T), 0);
    return {name: p.name, log, lo: mx > mn ? mn : (log ? Math.pow(10, lo) : lo), hi: mx > mn ? mx : (log ? Math.pow(10, hi) : hi), pos: v => (T(v) - lo) / ((hi - lo) || 1)};
  });
  axes.push({name: st.page.spec.objective, objective: true, ...(() => { const [lo, hi] = extent(st.sorted.map(r => r.b), 0); return {lo, hi, pos: v => (v - lo) / ((hi - lo) || 1)}; })()});
  return axes;
}
const axisValue = (a, r) => a.objective ? r.b : r.p && r.p[a.name];
function brushed(st, r) {
  for (const [name, [lo, hi]] of Object.entries(st.brush)) {
    const a = st.axes.find(a => a.name === name); if (!a) continue;
    const v = axisValue(a, r); if (v == null) return false; const y = a.pos(v); if (y < lo || y > hi) return false;
  }
  return true;
}

function drawParallel(st) {
  const el = $('#parallel .plot');
  st.axes = axesOf(st);
  const axes = st.axes, W = el.clientWidth || 1000, H = 300, m = {l: 40, r: 70, t: 28, b: 14};
  // At most 5,000 lines: the best 1,000 and an even sample of the rest.
  let rows = st.sorted.filter(r => r.b != null);
  const n = rows.length;
  if (rows.length > 5000) {
    const mode = st.page.spec.mode; const byV = [...rows].sort((a, b) => mode === 'max' ? b.b - a.b : a.b - b.b);
    const rest = byV.slice(1000), step = rest.length / 4000; rows = byV.slice(0, 1000); for (let i = 0; i < rest.length; i += step) rows.push(rest[Math.floor(i)]);
  }
  $('#pc-note').textContent = rows.length < n ? `${rows.length} of ${n} trials drawn: the best 1,000 and an even sample` : `${n} trials with a value; drag on an axis to select`;
  const ax = i => m.l + i * (W - m.l - m.r) / Math.max(1, axes.length - 1), ay = p => H - m.b - p * (H - m.t - m.b);
  const plot = canvasPlot(el, {height: H, x: [0, 1], y: [0, 1], draw() {}});
  const g = plot.cv.getContext('2d'); g.clearRect(0, 0, W, H);
  const [vlo, vhi] = extent(rows.map(r => r.b), 0), mode = st.page.spec.mode;
  let sel = 0;
  const line = (r, color, w) => { g.strokeStyle = color; g.lineWidth = w; g.beginPath(); axes.forEach((a, i) => { const v = axisValue(a, r); if (v == null) return; const x = ax(i), y = ay(a.pos(v)); i ? g.lineTo(x, y) : g.moveTo(x, y); }); g.stroke(); };
  const inSel = [];
  for (const r of rows) { if (brushed(st, r)) inSel.push(r); else line(r, 'rgba(180,186,200,.25)', 1); }
  for (const r of inSel) { const t = (r.b - vlo) / ((vhi - vlo) || 1), q = mode === 'max' ? t : 1 - t; line(r, `hsla(${(220 - 190 * q).toFixed(0)} 70% 48% / .55)`, 1.2); sel++; }
  g.fillStyle = '#1d2330'; g.font = '11px system-ui'; g.textAlign = 'center';
  axes.forEach((a, i) => {
    const x = ax(i); g.strokeStyle = '#1d2330'; g.lineWidth = 1; g.beginPath(); g.moveTo(x, m.t); g.lineTo(x, H - m.b); g.stroke();
    g.textAlign = 'center'; g.font = '600 12px system-ui'; g.fillText(a.name, x, 12); g.font = '11px system-ui';
    const labs = a.cat ? a.choices.map(c => [c, a.pos(c)]) : [[a.lo, 0], [a.hi, 1]];
    g.textAlign = 'left'; g.fillStyle = '#6b7385'; for (const [v, p] of labs) g.fillText(a.cat ? String(v).slice(0, 12) : fmt(v), x + 5, ay(p) + 4); g.fillStyle = '#1d2330';
    const b = st.brush[a.name]; if (b) { g.fillStyle = 'rgba(47,111,222,.18)'; g.fillRect(x - 7, ay(b[1]), 14, ay(b[0]) - ay(b[1])); g.fillStyle = '#1d2330'; }
  });
  el.dataset.lines = rows.length; el.dataset.selected = sel; el.dataset.axes = axes.length;
  el.dataset.frame = JSON.stringify({top: m.t, bottom: H - m.b, axes: axes.map((_, i) => ax(i))}); // where to drag, for tests
  // Brushing: drag vertically on an axis.
  let drag = null;
  plot.cv.onmousedown = ev => {
    const r = plot.cv.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    const i = axes.findIndex((a, i) => Math.abs(ax(i) - x) < 14); if (i < 0) return;
    drag = {axis: axes[i].name, y0: y};
  };
  plot.cv.onmousemove = ev => {
    if (!drag) return; const r = plot.cv.getBoundingClientRect(), y = ev.clientY - r.top;
    const p = v => Math.min(1, Math.max(0, (H - m.b - v) / (H - m.t - m.b)));
    const a = p(drag.y0), b = p(y); if (Math.abs(a - b) > 0.01) st.brush[drag.axis] = [Math.min(a, b), Math.max(a, b)];
  };
  plot.cv.onmouseup = () => { if (!drag) return; drag = null; st.pageNo = 0; drawParallel(st); drawTable(st, `api/campaigns/${encodeURIComponent(st.page.name)}`); };
}

function drawImportance(st) {
  const el = $('#importance .plot'), imp = st.page.importance || [];
  if (!imp.length) { el.innerHTML = `<p class="empty">${esc(st.page.importance_note || 'not enough trials yet')}</p>`; el.dataset.params = 0; return; }
  const W = el.clientWidth || 500, rowH = 24, H = imp.length * rowH + 10, lw = 130;
  el.innerHTML = `<svg viewBox="0 0 ${W} ${H}" height="${H}">` + imp.map((p, i) => {
    const w = Math.max(1, (W - lw - 60) * p.share);
    return `<text x="${lw - 6}" y="${i * rowH + 17}" text-anchor="end" font-size="12">${esc(p.name)}</text><rect x="${lw}" y="${i * rowH + 5}" width="${w}" height="16" rx="3" fill="#2f6fde"><title>${esc(p.name)}: ${fmt(p.importance)}</title></rect><text x="${lw + w + 6}" y="${i * rowH + 17}" font-size="12" fill="#6b7385">${(100 * p.share).toFixed(1)}%</text>`;
  }).join('') + '</svg>';
  el.dataset.params = imp.length; el.dataset.first = imp[0].name;
}

function drawSlices(st) {
  const box = $('#slices .slices');
  const params = st.page.spec.space.filter(p => !p.architecture);
  const rows = st.sorted.filter(r => r.b != null);
  const sample = rows.length > 5000 ? rows.filter((_, i) => i % Math.ceil(rows.length / 5000) === 0) : rows;
  if (box.children.length !== params.length) box.innerHTML = params.map(p => `<div class="slice" data-param="${esc(p.name)}"><div class="muted">${esc(p.name)}</div><div class="plot"></div></div>`).join('');
  const yr = extent(sample.map(r => r.b));
  params.forEach((p, i) => {
    const el = box.children[i].querySelector('.plot');
    const cat = p.type === 'choice' || !!p.choices, cs = p.choices || [];
    const xv = r => { const v = r.p && r.p[p.name]; return v == null ? null : cat ? cs.indexOf(String(v)) : v; };
    const pts = sample.map(r => [xv(r), r.b, `${r.id}: ${p.name}=${r.p && r.p[p.name]} → ${fmt(r.b)}`]).filter(q => q[0] != null && (cat || isFinite(q[0])));
    const mn = p.min ?? 0, mx = p.max ?? 0;
    const xr = cat ? [-0.5, cs.length - 0.5] : mx > mn ? (p.log ? [mn, mx] : [mn - (mx - mn) * 0.03, mx + (mx - mn) * 0.03]) : extent(pts.map(q => q[0]));
    const plot = canvasPlot(el, {height: 180, x: xr, y: yr, xlog: !!p.log && !cat, xlabel: p.name, ylabel: st.page.spec.objective,
      xticks: cat ? cs.map((_, j) => j) : null, xfmt: cat ? j => String(cs[j] ?? '').slice(0, 10) : null,
      draw(g, sx, sy) { g.fillStyle = 'rgba(47,111,222,.5)'; for (const [x, y] of pts) { g.beginPath(); g.arc(sx(cat ? x + (Math.random() - 0.5) * 0.5 : x), sy(y), 2.2, 0, 7); g.fill(); } }});
    if (pts.length <= 3000) hover(el, plot, pts);
    el.dataset.points = pts.length;
  });
}

const COLS = [['id', 'trial'], ['n', '#', 1], ['s', 'state'], ['g', 'stage'], ['v', 'value', 1], ['b', 'best', 1], ['m', 'samples', 1], ['r', 'restarts', 1], ['x', 'rescales', 1], ['k', 'nodes', 1], ['t1', 'ended', 1], ['e', 'failure']];
// The table's columns: with several objectives, one per objective (its
// latest complete result), feasibility when there are constraints, and
// whether the trial is on the front, instead of one value and best.
function colsOf(st) {
  const sp = st.page.spec;
  if (!sp.objectives) return COLS;
  return [...COLS.slice(0, 4), ...sp.objectives.map((o, k) => ['o' + k, `${o.metric} (${o.mode})`, 1]), ...((sp.constraints || []).length ? [['fe', 'feasible']] : []),
    ['pf', 'front'], ...COLS.slice(6)];
}
const TABLE_PER = 50;
// The table's rows as filtered, brushed and sorted.
function tableRows(st) {
  const f = st.filter, state = st.state, key = st.sort.key, dir = st.sort.dir;
  if (st.front) for (const r of st.sorted) r.pf = st.front.has(r.id) ? 1 : null;
  const rows = st.sorted.filter(r => (!state || r.s === state) && (Object.keys(st.brush).length === 0 || brushed(st, r)) &&
    (!f || r.id.toLowerCase().includes(f) || (r.e || '').toLowerCase().includes(f) || JSON.stringify(r.p || {}).toLowerCase().includes(f)));
  return [...rows].sort((a, b) => { const x = a[key], y = b[key]; if (x == null) return 1; if (y == null) return -1; return (x < y ? -1 : x > y ? 1 : 0) * dir; });
}
// selectTrial selects a trial clicked in a chart: the table turns to its
// page (clearing the filters that hide it) and shows its detail.
function selectTrial(st, base, id) {
  if (!tableRows(st).some(r => r.id === id)) {
    st.filter = ''; st.state = ''; st.brush = {}; $('#t-filter').value = ''; $('#t-state').value = ''; drawParallel(st);
  }
  const i = tableRows(st).findIndex(r => r.id === id);
  if (i >= 0) st.pageNo = Math.floor(i / TABLE_PER);
  st.selected = id; drawTable(st, base);
  if (st.page.spec.objectives) drawPareto(st, base);
  $('#trials').scrollIntoView({block: 'nearest'});
  showTrial(st, base, id);
}
async function showTrial(st, base, id) {
  let d;
  try { d = await api(`${base}/trials/${encodeURIComponent(id)}`); } catch (e) { if (e !== STALE) showError(e); return; }
  $('#t-detail').innerHTML = `<h2>${esc(d.trial_id)} ${pill(d.state)}</h2>` + (d.failure ? `<pre class="detail" id="t-failure">${esc(d.failure)}</pre>` : '') +
    `<pre class="detail">${esc(JSON.stringify({params: d.params, metrics: d.metrics, samples: d.samples, restarts: d.restarts, rescales: d.rescales, nodes: d.nodes, checkpoint: d.checkpoint}, null, 2))}</pre>`;
}
function drawTable(st, base) {
  const key = st.sort.key, dir = st.sort.dir, COLS = colsOf(st);
  const rows = tableRows(st);
  const per = TABLE_PER, pages = Math.max(1, Math.ceil(rows.length / per)); st.pageNo = Math.min(st.pageNo, pages - 1);
  const shown = rows.slice(st.pageNo * per, st.pageNo * per + per);
  const params = st.page.spec.space.filter(p => !p.architecture).map(p => p.name);
  const cell = (r, k) => k === 's' ? pill(r.s) : k === 'pf' ? (r.pf ? '<b class="on-front" title="on the Pareto front">●</b>' : '') :
    k === 'fe' ? (r.fe ? `<span class="${r.fe === 'no' ? 'bad' : ''}">${r.fe}</span>` : '') : k === 'e' ? esc(r.e || '') : k === 't1' ? (r.t1 ? clock(r.t1) : '') : typeof r[k] === 'number' ? fmt(r[k]) : esc(r[k] ?? '');
  $('#t-table').innerHTML = `<table data-rows="${rows.length}"><thead><tr>${COLS.map(([k, l, num]) => `<th data-k="${k}" class="${num ? 'num' : ''}">${l}${k === key ? (dir > 0 ? ' ▲' : ' ▼') : ''}</th>`).join('')}${params.map(p => `<th>${esc(p)}</th>`).join('')}</tr></thead><tbody>` +
    shown.map(r => `<tr data-id="${esc(r.id)}" class="${r.id === st.selected ? 'sel' : ''}">${COLS.map(([k, , num]) => `<td class="${k === 'e' ? 'err' : num ? 'num' : ''}">${cell(r, k)}</td>`).join('')}${params.map(p => `<td>${r.p && r.p[p] != null ? esc(typeof r.p[p] === 'number' ? fmt(r.p[p]) : r.p[p]) : ''}</td>`).join('')}</tr>`).join('') +
    `</tbody></table><div class="pager"><button id="t-prev">‹</button> page ${st.pageNo + 1} of ${pages} · ${rows.length} trials${Object.keys(st.brush).length ? ' (brushed)' : ''} <button id="t-next">›</button></div>`;
  $('#t-table thead').onclick = e => { const k = e.target.closest('th')?.dataset.k; if (!k) return; st.sort = {key: k, dir: st.sort.key === k ? -st.sort.dir : 1}; drawTable(st, base); };
  $('#t-prev').onclick = () => { st.pageNo = Math.max(0, st.pageNo - 1); drawTable(st, base); };
  $('#t-next').onclick = () => { st.pageNo++; drawTable(st, base); };
  $('#t-table tbody').onclick = e => {
    const id = e.target.closest('tr')?.dataset.id; if (!id) return; st.selected = id; drawTable(st, base);
    if (st.page.spec.objectives) drawPareto(st, base);
    showTrial(st, base, id);
  };
}

function drawTimeline(t) {
  const el = $('#timeline .plot');
  t.trials = t.trials || [];
  const trials = t.trials.filter(x => x.spans && x.spans.length);
  $('#tl-note').textContent = `the newest ${t.trials.length} of ${t.of} trials`;
  if (!trials.length) { el.innerHTML = '<p class="empty">no trial has started yet</p>'; el.dataset.trials = 0; return; }
  const t0 = Math.min(...trials.map(x => x.spans[0].f)), t1 = t.now;
  const W = el.clientWidth || 1000, rowH = 14, lw = 70, H = trials.length * rowH + 26;
  const X = v => lw + (v - t0) / ((t1 - t0) || 1) * (W - lw - 10);
  let svg = `<svg viewBox="0 0 ${W} ${H}" height="${H}">`;
  for (const v of ticks(t0, t1, 6)) svg += `<line x1="${X(v)}" x2="${X(v)}" y1="0" y2="${H - 18}" stroke="#eef0f4"/><text x="${X(v)}" y="${H - 4}" font-size="10" text-anchor="middle" fill="#6b7385">${clock(v)}</text>`;
  let spans = 0, marks = 0;
  trials.forEach((x, i) => {
    const y = i * rowH;
    svg += `<text x="${lw - 6}" y="${y + 11}" font-size="11" text-anchor="end">${esc(x.id)}</text>`;
    x.spans.forEach((s, j) => {
      const end = j + 1 < x.spans.length ? x.spans[j + 1].f : (x.t1 || t1);
      const w = Math.max(1, X(end) - X(s.f));
      svg += `<rect x="${X(s.f)}" y="${y + 2}" width="${w}" height="${rowH - 4}" fill="${STATE_COLORS[s.s] || '#aaa'}" data-state="${esc(s.s)}"><title>${esc(x.id)}: ${esc(s.s)}${s.k ? ' on ' + s.k + ' nodes' : ''} from ${clock(s.f)}${s.w ? ' (' + esc(s.w) + ')' : ''}</title></rect>`;
      spans++;
      if (s.w === 'preempt') { svg += `<text x="${X(s.f)}" y="${y + 11}" font-size="10" text-anchor="middle" fill="#d23c3c">▲</text>`; marks++; }
      if (s.w === 'rescale') { svg += `<text x="${X(s.f)}" y="${y + 11}" font-size="9" text-anchor="middle" fill="#1d2330">◆</text>`; marks++; }
    });
  });
  el.innerHTML = svg + '</svg>';
  el.dataset.trials = trials.length; el.dataset.spans = spans; el.dataset.markers = marks;
}

// ---- several objectives --------------------------------------------------
// A campaign of several objectives or with constraints: the panels that
// follow one objective say they follow the first; the Pareto panel shows
// the front (the campaign's status computes it, as status and
// leaderboard show it) among every trial with a complete result.
function setupObjectives(st, base) {
  const sp = st.page.spec, objs = sp.objectives;
  if (!objs) return;
  const note = objs.length > 1 ? `${sp.objective} (${sp.mode}), the first of ${objs.length} objectives` : `${sp.objective} (${sp.mode})`;
  document.querySelectorAll('.first-of').forEach(el => { el.textContent = note; });
  $('#pareto').hidden = false;
  st.px = 0; st.py = Math.min(1, objs.length - 1);
  if (objs.length >= 3) {
    const opts = sel => objs.map((o, k) => `<option value="${k}"${k === sel ? ' selected' : ''}>${esc(o.metric)}</option>`).join('');
    $('#pf-axes').innerHTML = `<label>x <select id="pf-x">${opts(st.px)}</select></label><label>y <select id="pf-y">${opts(st.py)}</select></label>`;
    $('#pf-x').onchange = e => { st.px = +e.target.value; drawPareto(st, base); };
    $('#pf-y').onchange = e => { st.py = +e.target.value; drawPareto(st, base); };
  }
}

// The hypervolume as every window says it (gleaner.ParetoFront's
// HypervolumeText).
const g6 = v => String(+(+v).toPrecision(6));
function hypervolumeText(f) {
  if (!f || !f.reference_point) return 'hypervolume 0 (no feasible trial with every objective yet)';
  return `hypervolume ${g6(f.hypervolume)} at reference point (${f.reference_point.map(g6).join(', ')})${f.reference_derived ? ' (derived)' : ''}`;
}

// drawPareto plots every trial with a complete result in two objectives
// (x, y: the first two, or the ones picked); the front's trials stand
// out, the feasible ones joined by their attainment staircase up to the
// reference point, the area they dominate shaded when there are exactly
// two objectives (it is then the hypervolume); infeasible trials are
// crosses. With one objective and constraints, x is the trial number.
function drawPareto(st, base) {
  const el = $('#pareto .plot'), sp = st.page.spec, objs = sp.objectives, f = st.page.status.pareto || {trials: [], size: 0};
  const one = objs.length === 1, px = st.px, py = one ? 0 : st.py;
  const xo = one ? {metric: 'trial number', mode: 'min'} : objs[px], yo = objs[py];
  const onFront = new Map((f.trials || []).map(e => [e.trial_id, e]));
  const xOf = (vs, n) => one ? n : vs[px];
  // A front trial at the values the campaign ranked it by; the others at
  // their latest complete result.
  const pts = [];
  for (const r of st.sorted) {
    const e = onFront.get(r.id);
    if (e) pts.push({id: r.id, n: r.n, x: xOf(e.values, e.number), y: e.values[py], front: true, inf: !!e.infeasible, vs: e.values, s: r.s});
    else if (r.vs) pts.push({id: r.id, n: r.n, x: xOf(r.vs, r.n), y: r.vs[py], front: false, inf: r.inf, vs: r.vs, s: r.s});
  }
  for (const [id, e] of onFront) if (!st.rows.has(id)) pts.push({id, n: e.number, x: xOf(e.values, e.number), y: e.values[py], front: true, inf: !!e.infeasible, vs: e.values, s: e.state});
  const ref = f.reference_point, rx = ref && !one ? ref[px] : null, ry = ref ? ref[py] : null;
  // The staircase: the feasible front trials no other beats in both of
  // these two objectives, in minimisation terms (sign), best x first.
  const sx0 = xo.mode === 'max' ? -1 : 1, sy0 = yo.mode === 'max' ? -1 : 1;
  let stair = pts.filter(q => q.front && !q.inf && (rx == null || sx0 * q.x < sx0 * rx) && (ry == null || sy0 * q.y < sy0 * ry))
    .sort((a, b) => sx0 * a.x - sx0 * b.x || sy0 * a.y - sy0 * b.y);
  let lowest = Infinity;
  stair = stair.filter(q => { if (sy0 * q.y < lowest) { lowest = sy0 * q.y; return true; } return false; });
  const xr = extent([...pts.map(q => q.x), ...(rx != null ? [rx] : [])]), yr = extent([...pts.map(q => q.y), ...(ry != null ? [ry] : [])]);
  // Where the staircase starts and ends: the reference point, else the
  // plot's worst edge.
  const xEnd = rx != null ? rx : sx0 > 0 ? xr[1] : xr[0], yEnd = ry != null ? ry : sy0 > 0 ? yr[1] : yr[0];
  const plot = canvasPlot(el, {height: 300, x: xr, y: yr, xlabel: one ? 'trial number' : `${xo.metric} (${xo.mode})`, ylabel: `${yo.metric} (${yo.mode})`,
    draw(g, sx, sy) {
      if (stair.length) {
        const path = () => { g.beginPath(); g.moveTo(sx(stair[0].x), sy(yEnd)); stair.forEach((q, j) => { g.lineTo(sx(q.x), sy(q.y)); g.lineTo(sx(j + 1 < stair.length ? stair[j + 1].x : xEnd), sy(q.y)); }); };
        if (objs.length === 2 && ref) { path(); g.lineTo(sx(xEnd), sy(yEnd)); g.closePath(); g.fillStyle = 'rgba(210,60,60,.08)'; g.fill(); }
        path(); g.strokeStyle = '#d23c3c'; g.lineWidth = 1.5; g.stroke();
      }
      const cross = (q, color, r) => { const X = sx(q.x), Y = sy(q.y); g.strokeStyle = color; g.lineWidth = 1.5; g.beginPath(); g.moveTo(X - r, Y - r); g.lineTo(X + r, Y + r); g.moveTo(X + r, Y - r); g.lineTo(X - r, Y + r); g.stroke(); };
      for (const q of pts) if (!q.front) { if (q.inf) cross(q, '#9aa3b5', 3); else { g.fillStyle = 'rgba(47,111,222,.55)'; g.beginPath(); g.arc(sx(q.x), sy(q.y), 3, 0, 7); g.fill(); } }
      for (const q of pts) if (q.front) { if (q.inf) cross(q, '#d98b12', 4.5); else { g.fillStyle = '#d23c3c'; g.strokeStyle = '#fff'; g.lineWidth = 1.5; g.beginPath(); g.arc(sx(q.x), sy(q.y), 5, 0, 7); g.fill(); g.stroke(); } }
      if (ref && rx != null) { const X = sx(rx), Y = sy(ry); g.strokeStyle = '#1d2330'; g.lineWidth = 1.5; g.beginPath(); g.moveTo(X - 6, Y); g.lineTo(X + 6, Y); g.moveTo(X, Y - 6); g.lineTo(X, Y + 6); g.stroke(); }
      const sel = pts.find(q => q.id === st.selected);
      if (sel) { g.strokeStyle = '#1d2330'; g.lineWidth = 2; g.beginPath(); g.arc(sx(sel.x), sy(sel.y), 8, 0, 7); g.stroke(); }
    }});
  const label = q => `${q.id}${q.front ? ' · on the front' : ''}${q.inf ? ' · infeasible' : ''} (${q.s})\n` + objs.map((o, k) => `${o.metric} ${fmt(q.vs[k])}`).join('  ');
  hover(el, plot, pts.map(q => [q.x, q.y, label(q)]));
  plot.cv.onclick = ev => {
    const r = plot.cv.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top;
    let best = null, bd = 100;
    for (const q of pts) { const dx = plot.sx(q.x) - mx, dy = plot.sy(q.y) - my, d = dx * dx + dy * dy; if (d < bd) { bd = d; best = q; } }
    if (best) selectTrial(st, base, best.id);
  };
  const nFront = pts.filter(q => q.front).length, nInf = pts.filter(q => q.inf).length;
  $('#pf-legend').innerHTML = `<span><i style="background:#d23c3c"></i>on the Pareto front (${nFront}${f.size > nFront ? ' of ' + f.size : ''})</span><span><i style="background:#2f6fde"></i>other trials</span>` +
    `<span>✕ infeasible (${nInf})</span><span>— attainment staircase</span>${ref ? '<span>+ reference point</span>' : ''}` +
    (objs.length === 2 && ref ? '<span><i style="background:rgba(210,60,60,.2)"></i>dominated: the hypervolume</span>' : '') + (f.thinned ? `<span>${f.thinned} crowded trials left the front</span>` : '');
  $('#pf-hv').textContent = `${f.size} trials on the front, ${hypervolumeText(f)}`;
  if (!pts.length) $('#pf-hv').textContent = 'no trial has reported every objective yet';
  Object.assign(el.dataset, {points: pts.length, front: nFront, infeasible: nInf, staircase: stair.length, x: xo.metric, y: yo.metric,
    hypervolume: f.reference_point ? f.hypervolume : '',
    frontAt: JSON.stringify(pts.filter(q => q.front).map(q => [plot.sx(q.x), plot.sy(q.y), q.id]))}); // where to click, for tests
}

// ---- pool ----------------------------------------------------------------
function poolView(name) {
  crumbs(`/ pool <b>${esc(name)}</b>`);
  const st = {window: 3600};
  $('#main').innerHTML = `<h1>Pool ${esc(name)} <span id="p-link"></span></h1><div class="stats" id="p-stats"></div>
    <div class="grid">
      <section class="card wide" id="nodes"><header><h2>Nodes × time</h2><label class="controls">window <select id="p-window"><option value="600">10 min</option><option value="3600" selected>1 h</option><option value="21600">6 h</option><option value="86400">24 h</option><option value="604800">7 d</option></select></label></header>
        <div class="plot"></div><div class="legend"><span><i style="background:#e3e6ec"></i>idle in the pool</span><span><i style="background:repeating-linear-gradient(45deg,#fff,#fff 2px,#eef0f4 2px,#eef0f4 4px)"></i>not the pool's (busy)</span><span>colour: the trial holding it</span><span>▼ preempted</span><span>│ rescaled</span><span><i style="background:#f3e3b5"></i>idle until (scheduler's estimate)</span></div></section>
      <section class="card" id="harvest"><header><h2>Harvest</h2></header><div class="stats" id="hv-stats"></div><div class="plot"></div></section>
      <section class="card" id="throughput"><header><h2>Throughput curves</h2><span class="muted">measured ± spread, JPA prediction ± σ, ● current allocation</span></header><div class="slices"></div></section>
      <section class="card wide" id="solves"><header><h2>Allocation log</h2><span class="muted" id="sv-note"></span></header><div class="tbl"></div></section>
    </div>`;
  $('#p-window').onchange = e => { st.window = +e.target.value; };
  return poller(async () => {
    const p = await api(`api/pools/${encodeURIComponent(name)}?window=${st.window}`);
    asOf(p.as_of);
    const s = p.status; s.trials = s.trials || []; s.nodes = s.nodes || [];
    const inUse = new Set(s.trials.flatMap(t => t.nodes || []).filter(n => s.nodes.some(x => x.id === n))).size;
    $('#p-link').innerHTML = p.ui_url ? `<a href="${esc(p.ui_url)}" style="font-size:13px">in Temporal UI</a>` : '';
    const stat = (v, l) => `<div class="stat"><b>${v}</b><span>${l}</span></div>`;
    $('#p-stats').innerHTML = stat(s.nodes.length, 'nodes now') + stat(inUse, 'in use') + stat(s.trials.length, 'registered') + stat(s.solves, 'solves') +
      stat(s.last && s.last.status ? `${esc(s.last.status)} ${fmt(s.last.solve_ms)} ms` : '–', 'last solve') + stat(p.chunks, 'log chunks kept');
    drawNodes(p); drawHarvest(p); drawThroughput(p); drawSolves(p);
  }, 3000);
}

function drawNodes(p) {
  const el = $('#nodes .plot');
  p.spans = p.spans || []; p.markers = p.markers || [];
  const nodes = p.nodes || [], byNode = new Map(nodes.map((n, i) => [n.id, i]));
  const ahead = Math.max(0, ...nodes.map(n => n.idle_until || 0)) > p.now ? Math.min((p.now - p.from) * 0.25, Math.max(...nodes.map(n => n.idle_until || 0)) - p.now) : 0;
  const t0 = p.from, t1 = p.now + ahead, W = el.clientWidth || 1000, rowH = Math.max(6, Math.min(16, 420 / Math.max(1, nodes.length))), lw = 90, H = nodes.length * rowH + 26;
  const X = v => lw + (Math.max(t0, v) - t0) / ((t1 - t0) || 1) * (W - lw - 10);
  let svg = `<svg viewBox="0 0 ${W} ${H}" height="${H}"><defs><pattern id="busy" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="2" height="4" fill="#eef0f4"/></pattern></defs>`;
  svg += `<rect x="${lw}" y="0" width="${X(p.now) - lw}" height="${nodes.length * rowH}" fill="url(#busy)"/>`;
  for (const v of ticks(t0, t1, 6)) svg += `<text x="${X(v)}" y="${H - 4}" font-size="10" text-anchor="middle" fill="#6b7385">${clock(v)}</text>`;
  nodes.forEach((n, i) => { svg += `<text x="${lw - 6}" y="${i * rowH + rowH - 3}" font-size="${Math.min(11, rowH)}" text-anchor="end">${esc(n.id)}</text>`; });
  let held = 0, idle = 0;
  for (const s of p.spans) {
    const i = byNode.get(s.node); if (i == null) continue;
    const x = X(s.f), w = Math.max(1, X(s.t || p.now) - x);
    const fill = s.trial ? hue(s.trial) : '#e3e6ec';
    s.trial ? held++ : idle++;
    svg += `<rect x="${x}" y="${i * rowH + 1}" width="${w}" height="${rowH - 2}" fill="${fill}" data-trial="${esc(s.trial || '')}"><title>${esc(s.node)}: ${s.trial ? 'held by ' + esc(shortTrial(s.trial)) : 'idle in the pool'} ${clock(s.f)}–${s.t ? clock(s.t) : 'now'}</title></rect>`;
  }
  let marks = 0;
  for (const mk of p.markers) {
    const x = X(mk.at); if (mk.at < t0) continue;
    const rows = (mk.change === 'preempt' ? [] : mk.nodes || []).map(n => byNode.get(n)).filter(i => i != null);
    if (mk.change === 'preempt') { svg += `<text x="${x}" y="9" font-size="10" text-anchor="middle" fill="#d23c3c"><title>${esc(shortTrial(mk.trial))} preempted (${mk.before} → 0 nodes)</title>▼</text>`; marks++; continue; }
    if (mk.change === 'start') continue;
    for (const i of rows) svg += `<line x1="${x}" x2="${x}" y1="${i * rowH}" y2="${i * rowH + rowH}" stroke="#1d2330" stroke-width="1.5"><title>${esc(shortTrial(mk.trial))} ${esc(mk.change)} ${mk.before} → ${mk.after} nodes</title></line>`;
    marks++;
  }
  let est = 0;
  nodes.forEach((n, i) => { if (n.present && n.idle_until > p.now) { est++; svg += `<rect x="${X(p.now)}" y="${i * rowH + 1}" width="${Math.max(1, X(Math.min(n.idle_until, t1)) - X(p.now))}" height="${rowH - 2}" fill="#f3e3b5" opacity=".8"><title>${esc(n.id)}: idle until ${new Date(n.idle_until).toLocaleString()} (the scheduler's estimate)</title></rect>`; } });
  svg += `<line x1="${X(p.now)}" x2="${X(p.now)}" y1="0" y2="${nodes.length * rowH}" stroke="#d23c3c" stroke-dasharray="3 3"/>`;
  el.innerHTML = nodes.length ? svg + '</svg>' : '<p class="empty">the pool has had no node in this window</p>';
  Object.assign(el.dataset, {nodes: nodes.length, held, idle, markers: marks, estimates: est});
}

function drawHarvest(p) {
  const h = p.harvest, el = $('#harvest .plot');
  const stat = (v, l) => `<div class="stat"><b>${v}</b><span>${l}</span></div>`;
  $('#hv-stats').innerHTML = stat(fmt(h.held_node_hours), 'node-hours harvested') + stat(fmt(h.used_node_hours), 'used by trials') +
    stat(h.held_node_hours ? (100 * h.used_node_hours / h.held_node_hours).toFixed(1) + '%' : '–', 'utilisation') +
    stat(`${fmt(h.rescale_node_hours)} <span class="muted" style="font-size:12px">(${h.rescales})</span>`, 'lost to rescales') +
    stat(`${fmt(h.preempt_node_hours)} <span class="muted" style="font-size:12px">(${h.preemptions})</span>`, 'lost to preemptions');
  const pts = h.samples_per_s || [];
  canvasPlot(el, {height: 200, x: [p.from, p.now], y: [0, Math.max(1, ...pts.map(q => q[1])) * 1.08], xfmt: clock, xlabel: 'time', ylabel: 'samples/s (measured)',
    draw(g, sx, sy) { g.strokeStyle = '#1f9d55'; g.lineWidth = 2; g.beginPath(); pts.forEach(([x, y], i) => { if (i) g.lineTo(sx(x), sy(pts[i - 1][1])); i ? g.lineTo(sx(x), sy(y)) : g.moveTo(sx(x), sy(y)); }); if (pts.length) g.lineTo(sx(p.now), sy(pts[pts.length - 1][1])); g.stroke(); }});
  Object.assign(el.dataset, {points: pts.length, used: h.used_node_hours, harvested: h.held_node_hours});
  let note = el.querySelector('p.note');
  if (!note) {
    note = document.createElement('p'); note.className = 'muted note';
    note.textContent = 'No trial has measured its throughput at the count it holds yet (a trial measures over several reports at one count).';
    el.appendChild(note);
  }
  note.hidden = !(pts.length && pts.every(q => !q[1]));
}

function drawThroughput(p) {
  const box = $('#throughput .slices');
  const trials = (p.status.trials || []).filter(t => (t.profile && t.profile.length) || (t.predicted && t.predicted.length));
  box.innerHTML = trials.length ? trials.map(t => `<div class="tp" data-trial="${esc(t.registration.trial_id)}"><div class="muted" title="${esc(t.registration.trial_id)}">${esc(shortTrial(t.registration.trial_id))}${t.node_type ? ' · ' + esc(t.node_type) : ''}</div><div class="plot"></div></div>`).join('') : '<p class="empty">no registered trial has a throughput measured or predicted yet</p>';
  trials.forEach((t, i) => {
    const el = box.children[i].querySelector('.plot');
    const meas = (t.profile || []).filter(q => !t.node_type || !q.node_type || q.node_type === t.node_type), pred = t.predicted || [];
    const xs = [...meas.map(q => q.nodes), ...pred.map(q => q.nodes), (t.nodes || []).length], ys = [0, ...meas.map(q => q.throughput + (q.spread || 0)), ...pred.map(q => q.throughput + (q.sigma || 0))];
    const k = (t.nodes || []).length;
    canvasPlot(el, {height: 170, x: [0, Math.max(...xs) + 1], y: extent(ys), xlabel: 'nodes', ylabel: 'samples/s',
      draw(g, sx, sy) {
        if (pred.length) {
          g.fillStyle = 'rgba(217,139,18,.18)'; g.beginPath(); pred.forEach((q, j) => j ? g.lineTo(sx(q.nodes), sy(q.throughput + (q.sigma || 0))) : g.moveTo(sx(q.nodes), sy(q.throughput + (q.sigma || 0))));
          [...pred].reverse().forEach(q => g.lineTo(sx(q.nodes), sy(Math.max(0, q.throughput - (q.sigma || 0))))); g.fill();
          g.strokeStyle = '#d98b12'; g.lineWidth = 1.8; g.beginPath(); pred.forEach((q, j) => j ? g.lineTo(sx(q.nodes), sy(q.throughput)) : g.moveTo(sx(q.nodes), sy(q.throughput))); g.stroke();
        }
        g.strokeStyle = '#2f6fde'; g.fillStyle = '#2f6fde';
        for (const q of meas) { const x = sx(q.nodes); g.beginPath(); g.moveTo(x, sy(q.throughput - (q.spread || 0))); g.lineTo(x, sy(q.throughput + (q.spread || 0))); g.stroke(); g.fillRect(x - 3, sy(q.throughput) - 3, 6, 6); }
        if (k) { const q = pred.find(q => q.nodes === k) || meas.find(q => q.nodes === k); if (q) { g.fillStyle = '#d23c3c'; g.beginPath(); g.arc(sx(k), sy(q.throughput), 5, 0, 7); g.fill(); } else { g.strokeStyle = '#d23c3c'; g.beginPath(); g.moveTo(sx(k), 0); g.lineTo(sx(k), 400); g.stroke(); } }
      }});
    Object.assign(el.dataset, {measured: meas.length, predicted: pred.length, nodes: k});
  });
  box.dataset.trials = trials.length;
}

function drawSolves(p) {
  const el = $('#solves .tbl'), rows = [...(p.solves || [])].reverse();
  $('#sv-note').textContent = `${rows.length} solves in the window`;
  el.innerHTML = `<table data-rows="${rows.length}"><thead><tr><th>time</th><th class="num">epoch</th><th>trigger</th><th>solver</th><th class="num">solve ms</th><th class="num">objective</th><th class="num">nodes used</th><th>changes</th></tr></thead><tbody>` +
    rows.map(s => `<tr><td>${clock(s.at)}</td><td class="num">${s.epoch}</td><td>${esc(s.trigger || '')}</td><td>${esc(s.summary.formulation)} ${esc(s.summary.status)}</td><td class="num">${fmt(s.summary.solve_ms)}</td><td class="num">${fmt(s.summary.objective)}</td>
      <td class="num">${s.summary.nodes_used}/${s.summary.nodes}</td><td style="white-space:normal">${(s.changes || []).map(c => `<div><b title="${esc(c.trial)}">${esc(shortTrial(c.trial))}</b> ${esc(c.change)} ${(c.before || []).length} → ${(c.nodes || []).length}${c.reason ? ' <span class="muted">(' + esc(c.reason) + ')</span>' : ''}</div>`).join('') || '<span class="muted">no change</span>'}</td></tr>`).join('') + '</tbody></table>';
}
