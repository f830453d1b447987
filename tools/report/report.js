/* memtrack report page: draws the JSON document in #memtrack-data (schema: tools/report/report_html.h).
 *
 * Hand-written, no library: the chart and the flame graphs are SVG built as markup strings (one innerHTML per
 * redraw is far cheaper than thousands of createElement calls), and both stay bounded by pixels rather than by
 * the data: the chart draws at most the first, lowest, highest and last sample of each pixel column, the flame
 * graph skips frames narrower than half a pixel. So 20,000 samples or 20,000 frames cost no more to draw than
 * the screen can show. window.memtrackReport exposes the interactions for tests and for the console.
 */
(function () {
  'use strict';
  const started = performance.now();
  const html = document.documentElement;
  const main = document.getElementById('mt-report');
  const tip = document.getElementById('mt-tooltip');
  const api = {timings: {}};
  window.memtrackReport = api;

  // ---- formatting ------------------------------------------------------------------------------------------
  const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'})[c]);
  }
  function fmtInt(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '?';
    return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }
  function fmtBytes(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '?';
    let v = Math.abs(n), u = 0;
    while (v >= 1024 && u < BYTE_UNITS.length - 1) { v /= 1024; ++u; }
    const s = u === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0);
    return (n < 0 ? '-' : '') + s + ' ' + BYTE_UNITS[u];
  }
  function fmtPct(part, whole) {
    if (!(whole > 0)) return '?';
    const p = (100 * part) / whole;
    return (p >= 10 || p === 0 ? p.toFixed(1) : p >= 0.1 ? p.toFixed(2) : p.toPrecision(2)) + '%';
  }
  // head's bytes against base's: "+2.70 KiB, +19.2%", "-555 B, -100.0%", "+321 B, new", "no change".
  function fmtChange(head, base) {
    const d = head - base;
    if (d === 0) return 'no change';
    const amount = (d > 0 ? '+' : '-') + fmtBytes(Math.abs(d));
    return amount + ', ' + (base > 0 ? (d > 0 ? '+' : '') + ((100 * d) / base).toFixed(1) + '%' : 'new');
  }
  function timeUnit(spanNs) {
    if (spanNs >= 1e9) return [1e9, 's'];
    if (spanNs >= 1e6) return [1e6, 'ms'];
    if (spanNs >= 1e3) return [1e3, '\u00b5s'];
    return [1, 'ns'];
  }
  function trim(v) { return String(+v.toFixed(6)); }
  function fmtTime(ns) {
    if (typeof ns !== 'number' || !isFinite(ns)) return '?';
    const u = timeUnit(Math.abs(ns)), v = ns / u[0];
    return (u[0] === 1 ? String(Math.round(v)) : v.toFixed(Math.abs(v) < 10 ? 3 : Math.abs(v) < 100 ? 2 : 1)) + ' ' + u[1];
  }
  function fmtAddress(a) {
    if (typeof a === 'number' && isFinite(a)) return '0x' + a.toString(16);
    if (typeof a === 'string' && a) return a;
    return '';
  }
  function niceStep(span, count) {
    const raw = span / Math.max(1, count), p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }
  function ticks(lo, hi, count) {
    if (!(hi > lo)) return [lo];
    const step = niceStep(hi - lo, count), out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9 && out.length < 100; v += step) out.push(v);
    return out;
  }
  function shellJoin(argv) {
    return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(String(a)) ? String(a) : "'" + String(a).replace(/'/g, "'\\''") + "'")).join(' ');
  }
  function hashHue(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; ++i) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return (h >>> 0) % 1000 / 1000;
  }
  function srcLocation(file, line) {
    if (typeof file !== 'string' || !file) return '';
    return typeof line === 'number' && line > 0 ? file + ':' + line : file;
  }
  const isNum = (x) => typeof x === 'number' && isFinite(x);
  const numArray = (a) => (Array.isArray(a) ? a : null);

  // ---- page scaffolding ------------------------------------------------------------------------------------
  let data = null;
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function reason(key, fallback) {
    const m = data && data.missing && data.missing[key];
    return typeof m === 'string' && m ? m : fallback;
  }
  function missingBox(text, key) {
    const p = el('p', {class: 'mt-missing'}, text);
    if (key) p.setAttribute('data-missing', key);
    return p;
  }
  function section(id, title) {
    const s = el('section', {class: 'mt-section', id: id});
    s.appendChild(el('h2', {}, title));
    main.appendChild(s);
    return s;
  }
  // A section that throws shows why and reports it (console.error reaches <html data-errors>), the rest of
  // the page still renders.
  function guarded(sec, name, fn) {
    const t = performance.now();
    try {
      fn(sec);
    } catch (e) {
      sec.appendChild(el('p', {class: 'mt-error'}, 'This section could not be drawn: ' + (e && e.message)));
      console.error('memtrack report: ' + name + ': ' + ((e && e.stack) || e));
    }
    api.timings[name] = performance.now() - t;
  }
  function bar(parent) {
    const b = el('div', {class: 'mt-bar'});
    parent.appendChild(b);
    return b;
  }
  function button(parent, label, onClick, attrs) {
    const b = el('button', Object.assign({type: 'button'}, attrs || {}), label);
    b.addEventListener('click', onClick);
    parent.appendChild(b);
    return b;
  }
  function tabs(parent, items, onSelect) {
    // items: [{key, label, enabled, title}]; returns select(key).
    const row = bar(parent);
    row.setAttribute('role', 'tablist');
    const buttons = {};
    for (const it of items) {
      const b = button(row, it.label, () => select(it.key), {role: 'tab', 'data-key': it.key, 'aria-selected': 'false'});
      if (!it.enabled) { b.disabled = true; b.title = it.title || ''; }
      buttons[it.key] = b;
    }
    function select(key) {
      if (!buttons[key] || buttons[key].disabled) return false;
      for (const k in buttons) buttons[k].setAttribute('aria-selected', String(k === key));
      onSelect(key);
      return true;
    }
    return {row: row, select: select};
  }
  function showTip(content, x, y) {
    tip.innerHTML = content;
    tip.hidden = false;
    const r = tip.getBoundingClientRect();
    let left = x + 14, top = y + 14;
    if (left + r.width > window.innerWidth - 8) left = x - r.width - 14;
    if (top + r.height > window.innerHeight - 8) top = y - r.height - 14;
    tip.style.left = Math.max(4, left) + 'px';
    tip.style.top = Math.max(4, top) + 'px';
  }
  function hideTip() { tip.hidden = true; }

  // ---- header ----------------------------------------------------------------------------------------------
  function renderMeta() {
    const m = (data && data.meta) || {};
    const box = document.getElementById('mt-meta');
    const lines = [];
    if (Array.isArray(m.command) && m.command.length) {
      lines.push('Command: <code>' + esc(shellJoin(m.command)) + '</code>');
      document.title = 'memtrack report: ' + m.command.join(' ');
    }
    const facts = [];
    if (isNum(m.events)) facts.push(fmtInt(m.events) + ' events');
    if (isNum(m.duration_ns)) facts.push(fmtTime(m.duration_ns));
    const tl = data && data.timeline;
    if (tl && tl.peak && isNum(tl.peak.bytes)) facts.push('peak heap ' + fmtBytes(tl.peak.bytes));
    if (facts.length) lines.push(esc(facts.join(' \u00b7 ')));
    if (typeof m.artifact === 'string' && m.artifact) lines.push('Artifact: <code>' + esc(m.artifact) + '</code>');
    const b = data && data.baseline;
    if (b && typeof b === 'object' && typeof b.artifact === 'string') {
      const t = b.totals || {}, tb = t.base || {}, th = t.head || {};
      let line = 'Compared with the baseline <code>' + esc(b.artifact) + '</code>';
      if (isNum(tb.peak_bytes) && isNum(th.peak_bytes)) {
        line += ': peak heap ' + esc(fmtBytes(tb.peak_bytes) + ' \u2192 ' + fmtBytes(th.peak_bytes) + ' (' + fmtChange(th.peak_bytes, tb.peak_bytes) + ')');
      }
      lines.push(line);
    }
    box.innerHTML = lines.map((l) => '<div>' + l + '</div>').join('');
  }

  // ---- memory over time ------------------------------------------------------------------------------------
  const PROCESS_COLORS = ['#2f6fdf', '#d9822b', '#2e9d5b', '#7b4fd6', '#c0392b', '#1a9aa8', '#b0499b', '#7a6a2f'];
  // Marker colours are none of the series colours above (nor the peak's red), so each legend swatch names one thing.
  const MARKER_COLORS = {start: '#004d40', exec: '#e6ab02', exit: '#1b1b1b'};
  const RESIDENT_COLOR = '#1a9aa8';
  // Beyond this many process markers in view they are drawn per 4-pixel bucket with a count.
  const MARKER_LIMIT = 20;
  // The per-process view draws (and its legend lists) the processes with the highest peak heap, this many,
  // until "+K more" shows them all: one colour each (PROCESS_COLORS), not a legend burying the chart.
  const PROCESS_TOP = 8;

  // p (seriesPoints' result) cut into the runs between paused spans: a point inside a span [begin, end) is
  // dropped, and a run that a span interrupts ends at the span's begin (endX: its last value holds until
  // then; after the span the line starts again at the first sample after it). Points and spans in time order.
  function splitAtPauses(p, paused, sx) {
    const segs = [];
    let cur = null, j = 0;
    const close = (b) => { cur.endX = sx(b); segs.push(cur); cur = null; };
    for (let i = 0; i < p.pt.length; ++i) {
      const t = p.pt[i];
      while (j < paused.length && paused[j].end_ns <= t) { if (cur && paused[j].end_ns > paused[j].begin_ns) close(paused[j].begin_ns); ++j; }
      if (j < paused.length && paused[j].begin_ns <= t) { if (cur) close(paused[j].begin_ns); continue; }
      if (!cur) cur = {px: [], py: [], pt: [], endX: null};
      cur.px.push(p.px[i]); cur.py.push(p.py[i]); cur.pt.push(t);
    }
    if (cur) segs.push(cur);
    return segs;
  }
  // Whether a gapped series' value at t is unknown: t inside a paused span, or the series' last sample
  // before t is before the end of a span that began at or before t (the line is broken there).
  function pausedAt(paused, t, lastSampleT) {
    for (const p of paused) {
      if (p.begin_ns > t) break;
      if (p.end_ns > t || (p.end_ns > p.begin_ns && lastSampleT < p.end_ns)) return p;
    }
    return null;
  }

  function lowerBound(a, x, n) {  // first index with a[i] >= x
    let lo = 0, hi = n;
    while (lo < hi) { const mid = (lo + hi) >>> 1; if (a[mid] < x) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function makeSeries(name, color, t, v, area) {
    t = numArray(t); v = numArray(v);
    if (!t || !v) return null;
    return {name: name, color: color, t: t, v: v, n: Math.min(t.length, v.length), area: !!area};
  }

  // The points of s to draw between x0 and x1: all of them when there are few, otherwise per pixel column the
  // first, lowest, highest and last sample in time order, which keeps every peak and every step visible.
  function seriesPoints(s, x0, x1, sx, plotW) {
    const t = s.t, v = s.v;
    const lo = Math.max(0, lowerBound(t, x0, s.n) - 1), hi = Math.min(s.n - 1, lowerBound(t, x1, s.n));
    const px = [], py = [], pt = [];
    let max = 0;
    if (hi < lo) return {px: px, py: py, pt: pt, max: max};
    if (hi - lo + 1 <= 4 * plotW) {
      for (let i = lo; i <= hi; ++i) { px.push(sx(t[i])); py.push(v[i]); pt.push(t[i]); if (t[i] >= x0 && t[i] <= x1 && v[i] > max) max = v[i]; }
      return {px: px, py: py, pt: pt, max: max};
    }
    let col = null, iFirst = 0, iMin = 0, iMax = 0, iLast = 0;
    const flush = () => {
      const picks = [iFirst, iMin, iMax, iLast].sort((a, b) => a - b);
      let prev = -1;
      for (const i of picks) { if (i !== prev) { px.push(sx(t[i])); py.push(v[i]); pt.push(t[i]); prev = i; } }
    };
    for (let i = lo; i <= hi; ++i) {
      const c = Math.floor(sx(t[i]));
      if (t[i] >= x0 && t[i] <= x1 && v[i] > max) max = v[i];
      if (c !== col) {
        if (col !== null) flush();
        col = c; iFirst = iMin = iMax = iLast = i;
      } else {
        if (v[i] < v[iMin]) iMin = i;
        if (v[i] > v[iMax]) iMax = i;
        iLast = i;
      }
    }
    if (col !== null) flush();
    return {px: px, py: py, pt: pt, max: max};
  }

  // The timeline's series, markers, regions and peak, and the time range they span.
  function timelineModel(tl) {
    const base = tl.baseline && typeof tl.baseline === 'object' ? tl.baseline : null;
    const baseSeries = base ? makeSeries(typeof base.label === 'string' ? base.label : 'baseline live heap', '#5d6678', base.t_ns, base.heap, false) : null;
    if (baseSeries) { baseSeries.dash = true; baseSeries.step = true; }
    // Resident memory (optional): sampled, so a value holds until the next sample and is drawn as steps.
    const res = tl.resident && typeof tl.resident === 'object' ? tl.resident : null;
    const resSeries = res ? makeSeries('resident', RESIDENT_COLOR, res.t_ns, res.bytes, false) : null;
    if (resSeries) resSeries.step = true;
    const mappedSeries = makeSeries('mapped', '#d9822b', tl.t_ns, tl.mapped, false);
    // Mapped bytes 0 throughout (nothing mmap'd or brk'd outside the allocator): no line and no toggle.
    const whole = [makeSeries('live heap', '#2f6fdf', tl.t_ns, tl.heap, true), baseSeries, resSeries,
      mappedSeries && seriesMax(mappedSeries) > 0 ? mappedSeries : null].filter(Boolean);
    // The heap and mapped bytes change only at events: each sample's value holds until the next, so every
    // series is drawn as steps (step-after), never as a ramp between samples.
    for (const s of whole) s.step = true;
    const procs = (Array.isArray(tl.processes) ? tl.processes : []).filter((p) => p && typeof p === 'object');
    // Ranked by peak heap: the first PROCESS_TOP are drawn by default, and get the distinct colours.
    const peakOf = (p) => { let m = 0; const h = numArray(p.heap) || []; for (const v of h) if (v > m) m = v; return m; };
    const peaks = new Map(procs.map((p, i) => [i, peakOf(p)]));
    const order = procs.map((p, i) => i).sort((a, b) => peaks.get(b) - peaks.get(a) || a - b);
    const rankOf = new Map(order.map((i, r) => [i, r]));
    const perProcess = procs.map((p, i) => {
      // The label names the pid already ("pid 7 ./prog"); only a label without it gets "(pid N)" appended.
      const label = typeof p.label === 'string' ? p.label : '';
      const name = label && new RegExp('\\bpid ' + p.pid + '\\b').test(label) ? label : (label ? label + ' ' : '') + '(pid ' + p.pid + ')';
      const r = rankOf.get(i);
      const s = makeSeries(name, PROCESS_COLORS[r % PROCESS_COLORS.length], p.t_ns, p.heap, false);
      if (s) { s.pid = p.pid; s.step = true; s.rank = r; s.peak = peaks.get(i); }
      return s;
    }).filter(Boolean);
    // Each pid's resident memory, dashed, in the colour of its (first) heap series.
    const resProcs = res && Array.isArray(res.processes) ? res.processes : [];
    resProcs.forEach((p, i) => {
      const heap = perProcess.find((s) => s.pid === p.pid);
      const color = heap ? heap.color : PROCESS_COLORS[(procs.length + i) % PROCESS_COLORS.length];
      const s = makeSeries('resident (pid ' + p.pid + ')', color, p.t_ns, p.bytes, false);
      if (!s) return;
      s.step = true; s.dash = true; s.pid = p.pid;
      s.rank = heap ? heap.rank : procs.length + i;
      s.peak = 0;
      for (let k = 0; k < s.n; ++k) if (s.v[k] > s.peak) s.peak = s.v[k];
      perProcess.push(s);
    });
    // Paused spans: allocations were not recorded there (frees were), so the heap the events give is wrong
    // inside (it drops as blocks are freed and misses the blocks allocated): nothing is known of the heap,
    // mapped and per-process heap lines there, and they are broken over each span. Resident samples are read
    // from /proc whatever the pause, so the resident lines are not.
    const paused = (Array.isArray(tl.paused) ? tl.paused : []).filter((p) => p && isNum(p.begin_ns) && isNum(p.end_ns) && p.end_ns >= p.begin_ns)
      .sort((a, b) => a.begin_ns - b.begin_ns);
    for (const s of whole.concat(perProcess)) if (s !== baseSeries && !s.name.startsWith('resident')) s.gaps = paused.length > 0;
    const markers = (Array.isArray(tl.markers) ? tl.markers : []).filter((m) => m && isNum(m.t_ns));
    const regions = (Array.isArray(tl.regions) ? tl.regions : []).filter((r) => r && isNum(r.begin_ns) && isNum(r.end_ns));
    let peak = tl.peak && isNum(tl.peak.t_ns) && isNum(tl.peak.bytes) ? tl.peak : null;
    if (!peak && whole.length && whole[0].n) {
      // No exact peak given: the highest sample stands in (exact unless the series was downsampled).
      const h = whole[0];
      let best = 0;
      for (let i = 1; i < h.n; ++i) if (h.v[i] > h.v[best]) best = i;
      peak = {t_ns: h.t[best], bytes: h.v[best], derived: true};
    }

    let fullHi = 0;
    for (const s of whole.concat(perProcess)) if (s.n) fullHi = Math.max(fullHi, s.t[s.n - 1]);
    for (const m of markers) fullHi = Math.max(fullHi, m.t_ns);
    for (const r of regions) fullHi = Math.max(fullHi, r.end_ns);
    for (const p of paused) fullHi = Math.max(fullHi, p.end_ns);
    if (data.meta && isNum(data.meta.duration_ns)) fullHi = Math.max(fullHi, data.meta.duration_ns);
    let fullLo = Infinity;
    for (const s of whole.concat(perProcess)) if (s.n) fullLo = Math.min(fullLo, s.t[0]);
    fullLo = Math.min(isFinite(fullLo) ? fullLo : 0, 0);
    if (!(fullHi > fullLo)) fullHi = fullLo + 1;
    return {tl: tl, whole: whole, perProcess: perProcess, markers: markers, regions: regions, paused: paused, peak: peak,
            fullLo: fullLo, fullHi: fullHi};
  }

  // The view buttons, the mapped-bytes toggle and the reset button above the chart.
  function timelineControls(sec, c) {
    const controls = bar(sec);
    c.viewButtons = {
      whole: button(controls, 'Whole recording', () => timelineSetView(c, 'whole'), {'aria-pressed': 'false'}),
      process: button(controls, 'Per process', () => timelineSetView(c, 'process'), {'aria-pressed': 'false'}),
    };
    if (!c.whole.length) { c.viewButtons.whole.disabled = true; c.viewButtons.whole.title = 'No whole-recording series in this report'; }
    if (!c.perProcess.length) {
      c.viewButtons.process.disabled = true;
      c.viewButtons.process.title = reason('timeline.processes', 'No per-process series in this report');
    }
    controls.appendChild(el('span', {class: 'mt-spacer'}));
    c.resetButton = button(controls, 'Reset zoom', () => timelineZoom(c, c.fullLo, c.fullHi));
    c.resetButton.disabled = true;
  }

  const TIMELINE_MARGIN = {l: 74, r: 18, t: 20, b: 26};

  // The processes drawn in the per-process view: the PROCESS_TOP highest peaks (a pid's resident line goes
  // with its heap line), or all of them after "+K more".
  function processShown(c, s) {
    return c.state.allProcesses || s.rank < PROCESS_TOP;
  }
  function timelineShown(c) {
    return c.state.view === 'whole' ? c.whole.filter((s) => !SERIES_TOGGLES[s.name] || c.state[s.name]) : c.perProcess.filter((s) => processShown(c, s));
  }

  // The geometry of one drawing: the plot box, the x and y scales, the y ticks in one byte unit, and the points
  // of each shown series in view.
  function timelineScales(c) {
    const M = TIMELINE_MARGIN, laneH = c.laneH;
    const W = Math.max(480, c.sec.clientWidth - 34), H = 320;
    const plotW = W - M.l - M.r, plotB = H - M.b - laneH, plotH = plotB - M.t;
    const x0 = c.state.x0, x1 = c.state.x1;
    const sx = (t) => M.l + ((t - x0) / (x1 - x0)) * plotW;
    const series = timelineShown(c);
    const pts = series.map((s) => {
      const p = seriesPoints(s, x0, x1, sx, plotW);
      p.segs = s.gaps ? splitAtPauses(p, c.paused, sx) : [{px: p.px, py: p.py, pt: p.pt, endX: null}];
      if (s.gaps) {  // the highest value drawn, not one inside a pause
        p.max = 0;
        for (const g of p.segs) for (let i = 0; i < g.pt.length; ++i) if (g.pt[i] >= x0 && g.pt[i] <= x1 && g.py[i] > p.max) p.max = g.py[i];
      }
      return p;
    });
    let ymax = 0;
    for (const p of pts) ymax = Math.max(ymax, p.max);
    if (c.state.view === 'whole' && c.peak && c.peak.t_ns >= x0 && c.peak.t_ns <= x1) ymax = Math.max(ymax, c.peak.bytes);
    if (!(ymax > 0)) ymax = 1;
    let unit = 1, u = 0;
    while (ymax / unit >= 1024 && u < BYTE_UNITS.length - 1) { unit *= 1024; ++u; }
    const yt = ticks(0, (ymax * 1.08) / unit, 5);
    const ytop = Math.max(yt[yt.length - 1] * unit, ymax * 1.08);
    const sy = (b) => plotB - (b / ytop) * plotH;
    return {W: W, H: H, plotW: plotW, plotB: plotB, plotH: plotH, laneH: laneH, x0: x0, x1: x1, sx: sx, sy: sy,
            series: series, pts: pts, yt: yt, unit: unit, u: u, inv: (px) => x0 + ((px - M.l) / plotW) * (x1 - x0)};
  }

  function timelineAxes(parts, g) {
    const M = TIMELINE_MARGIN, sy = g.sy, unit = g.unit;
    parts.push('<defs><clipPath id="mt-plot-clip"><rect x="' + M.l + '" y="' + (M.t - 6) + '" width="' + g.plotW + '" height="' + (g.plotH + 6) + '"/></clipPath></defs>');
    // grid and y axis
    parts.push('<g class="mt-grid">');
    for (const v of g.yt) parts.push('<line x1="' + M.l + '" x2="' + (g.W - M.r) + '" y1="' + sy(v * unit).toFixed(1) + '" y2="' + sy(v * unit).toFixed(1) + '"/>');
    parts.push('</g><g class="mt-axis mt-y-axis">');
    for (const v of g.yt) parts.push('<text x="' + (M.l - 6) + '" y="' + (sy(v * unit) + 4).toFixed(1) + '" text-anchor="end">' + (v === 0 ? '0' : trim(v) + ' ' + BYTE_UNITS[g.u]) + '</text>');
    parts.push('<line x1="' + M.l + '" x2="' + M.l + '" y1="' + M.t + '" y2="' + g.plotB + '"/></g>');
    // x axis
    const tu = timeUnit(g.x1 - g.x0);
    const xt = ticks(g.x0 / tu[0], g.x1 / tu[0], Math.max(2, Math.floor(g.plotW / 110)));
    parts.push('<g class="mt-axis mt-x-axis"><line x1="' + M.l + '" x2="' + (g.W - M.r) + '" y1="' + g.plotB + '" y2="' + g.plotB + '"/>');
    for (const v of xt) {
      const x = g.sx(v * tu[0]);
      parts.push('<line x1="' + x.toFixed(1) + '" x2="' + x.toFixed(1) + '" y1="' + (g.plotB + g.laneH) + '" y2="' + (g.plotB + g.laneH + 4) + '"/>');
      parts.push('<text x="' + x.toFixed(1) + '" y="' + (g.plotB + g.laneH + 16) + '" text-anchor="middle">' + trim(v) + ' ' + tu[1] + '</text>');
    }
    parts.push('</g>');
  }

  // Each region: a faint band over the plot and a named bar in the lane under it.
  function timelineRegions(parts, regions, g) {
    const M = TIMELINE_MARGIN, plotB = g.plotB, laneH = g.laneH;
    parts.push('<g class="mt-regions">');
    regions.forEach((r, i) => {
      const a = Math.max(M.l, g.sx(r.begin_ns)), b = Math.min(g.W - M.r, g.sx(r.end_ns));
      if (b <= a - 0.5) return;
      const w = Math.max(1, b - a), hue = Math.round(hashHue(String(r.name)) * 360);
      parts.push('<rect x="' + a.toFixed(1) + '" y="' + M.t + '" width="' + w.toFixed(1) + '" height="' + g.plotH + '" fill="hsla(' + hue + ',60%,55%,0.08)"/>');
      parts.push('<rect class="mt-region" data-region="' + i + '" x="' + a.toFixed(1) + '" y="' + (plotB + 2) + '" width="' + w.toFixed(1) + '" height="' + (laneH - 4) + '" rx="2" fill="hsla(' + hue + ',60%,55%,0.45)"/>');
      const chars = Math.floor((w - 6) / 6.2);
      if (chars >= 2) {
        const name = String(r.name);
        parts.push('<text x="' + (a + 3).toFixed(1) + '" y="' + (plotB + laneH - 5) + '">' + esc(name.length > chars ? name.slice(0, chars - 1) + '\u2026' : name) + '</text>');
      }
    });
    parts.push('</g>');
  }

  // Each paused span: a grey band over the plot labelled "paused" where it is wide enough. Spans closer than
  // a pixel are one band, so thousands of pauses cost no more than the plot is wide.
  function timelinePaused(parts, paused, g) {
    const M = TIMELINE_MARGIN, bands = [];
    for (const p of paused) {
      const a = Math.max(M.l, g.sx(p.begin_ns)), b = Math.min(g.W - M.r, g.sx(p.end_ns));
      if (b < M.l || a > g.W - M.r) continue;
      const last = bands[bands.length - 1];
      if (last && a <= last.b + 1) { last.b = Math.max(last.b, b); ++last.n; } else bands.push({a: a, b: b, n: 1, first: p});
    }
    if (!bands.length) return;
    parts.push('<g class="mt-paused-spans" pointer-events="none">');
    for (const band of bands) {
      const w = Math.max(1, band.b - band.a);
      parts.push('<rect class="mt-paused" data-spans="' + band.n + '" x="' + band.a.toFixed(1) + '" y="' + M.t + '" width="' + w.toFixed(1) + '" height="' + g.plotH + '" fill="#8a94a6" fill-opacity="0.18"/>');
      if (w >= 44) parts.push('<text class="mt-paused-label" x="' + (band.a + w / 2).toFixed(1) + '" y="' + (M.t + 12) + '" text-anchor="middle" fill="#5d6678">' + (band.n > 1 ? band.n + ' pauses' : 'paused') + '</text>');
    }
    parts.push('</g>');
  }

  function timelineSeriesPaths(parts, g) {
    const plotB = g.plotB;
    parts.push('<g class="mt-series" clip-path="url(#mt-plot-clip)">');
    g.series.forEach((s, k) => {
      const p = g.pts[k];
      if (!p.px.length) return;
      // One subpath per run between paused spans (one run without pauses): the line is broken over a pause.
      const lines = [], areas = [];
      let drawn = 0;
      for (const seg of p.segs) {
        const n = seg.px.length;
        if (!n) continue;
        drawn += n;
        const coords = new Array(n);
        for (let i = 0; i < n; ++i) {
          const xy = seg.px[i].toFixed(1) + ',' + g.sy(seg.py[i]).toFixed(1);
          // A step: the previous value holds until this sample.
          coords[i] = s.step && i > 0 ? seg.px[i].toFixed(1) + ',' + g.sy(seg.py[i - 1]).toFixed(1) + 'L' + xy : xy;
        }
        let line = 'M' + coords.join('L'), lastX = seg.px[n - 1];
        if (seg.endX !== null && seg.endX > lastX) { line += 'L' + seg.endX.toFixed(1) + ',' + g.sy(seg.py[n - 1]).toFixed(1); lastX = seg.endX; }
        lines.push(line);
        if (s.area) areas.push(line + 'L' + lastX.toFixed(1) + ',' + plotB + 'L' + seg.px[0].toFixed(1) + ',' + plotB + 'Z');
      }
      if (!lines.length) return;
      if (s.area) parts.push('<path d="' + areas.join('') + '" fill="' + s.color + '" fill-opacity="0.13" stroke="none"/>');
      parts.push('<path class="mt-line" data-series="' + esc(s.name) + '" data-points="' + drawn + '" data-runs="' + lines.length + '" d="' + lines.join('') + '" fill="none" stroke="' + s.color + '" stroke-width="1.5" stroke-linejoin="round"' + (s.dash ? ' stroke-dasharray="5,3"' : '') + '/>');
    });
    parts.push('</g>');
  }

  // Process start, exec and exit lines; the peak (whole view) or each process's highest sample in view.
  function timelineMarkers(parts, c, g) {
    const M = TIMELINE_MARGIN, peak = c.peak;
    parts.push('<g class="mt-markers">');
    const inView = c.markers.filter((m) => m.t_ns >= g.x0 && m.t_ns <= g.x1);
    if (inView.length > MARKER_LIMIT) {
      // Many processes (a fork-heavy build): a density strip above the plot, one tick per kind (start, exec,
      // exit rows) and 4-pixel bucket with its count in its tooltip, so hundreds of dashed lines do not hide it.
      const buckets = new Map();
      for (const m of inView) {
        const key = m.kind + ':' + Math.floor(g.sx(m.t_ns) / 4);
        const b = buckets.get(key);
        if (b) { ++b.n; b.last = m.t_ns; } else buckets.set(key, {kind: m.kind, t: m.t_ns, last: m.t_ns, n: 1});
      }
      for (const b of buckets.values()) {
        const x = g.sx(b.t).toFixed(1), col = MARKER_COLORS[b.kind] || '#5d6678';
        const title = b.n + ' process ' + b.kind + (b.n === 1 ? '' : 's') + ' at ' + fmtTime(b.t) + (b.n > 1 ? '\u2013' + fmtTime(b.last) : '');
        parts.push('<line class="mt-marker-bucket" data-tip="' + esc(title) + '" data-kind="' + esc(b.kind) + '" data-count="' + b.n + '" x1="' + x + '" x2="' + x + '" y1="' + (M.t - 12 + (b.kind === 'start' ? 0 : b.kind === 'exec' ? 4 : 8)) + '" y2="' + (M.t - 8 + (b.kind === 'start' ? 0 : b.kind === 'exec' ? 4 : 8)) + '" stroke="' + col + '" stroke-opacity="' + Math.min(1, 0.5 + 0.1 * b.n).toFixed(2) + '" stroke-width="3"><title>' + esc(title) + '</title></line>');
      }
    }
    for (const m of inView.length > MARKER_LIMIT ? [] : inView) {
      const x = g.sx(m.t_ns).toFixed(1), col = MARKER_COLORS[m.kind] || '#5d6678';
      parts.push('<line class="mt-marker" data-kind="' + esc(m.kind) + '" x1="' + x + '" x2="' + x + '" y1="' + (M.t - 4) + '" y2="' + g.plotB + '" stroke="' + col + '" stroke-dasharray="3,3" stroke-width="1"/>');
      // The head, above the hover overlay (which starts at the plot's top), carries the marker's tooltip.
      const tipText = m.kind + ' pid ' + m.pid + (m.label ? ': ' + m.label : '') + ' at ' + fmtTime(m.t_ns);
      parts.push('<path class="mt-marker-head" data-tip="' + esc(tipText) + '" d="M' + (x - 4) + ',' + (M.t - 10) + 'l8,0l-4,6z" fill="' + col + '" stroke="transparent" stroke-width="4"/>');
    }
    parts.push('</g>');
    if (c.state.view === 'whole' && peak && peak.t_ns >= g.x0 && peak.t_ns <= g.x1) {
      const x = g.sx(peak.t_ns), y = g.sy(peak.bytes);
      const label = (peak.derived ? 'highest sample ' : 'peak ') + fmtBytes(peak.bytes) + ' at ' + fmtTime(peak.t_ns);
      const right = x > M.l + g.plotW * 0.7;
      parts.push('<g class="mt-peak"><circle cx="' + x.toFixed(1) + '" cy="' + y.toFixed(1) + '" r="4" fill="#c0392b"/>' +
        '<text x="' + (right ? x - 8 : x + 8).toFixed(1) + '" y="' + Math.max(M.t + 10, y - 6).toFixed(1) + '" text-anchor="' + (right ? 'end' : 'start') + '" font-weight="600" fill="#c0392b">' + esc(label) + '</text></g>');
    }
    if (c.state.view === 'process') {
      g.series.forEach((s, k) => {
        // Of the points drawn (a paused span's are not).
        let bx = -1, by = 0;
        for (const p of g.pts[k].segs) {
          for (let i = 0; i < p.px.length; ++i) if (p.px[i] >= M.l && p.px[i] <= M.l + g.plotW && (bx < 0 || p.py[i] > by)) { bx = p.px[i]; by = p.py[i]; }
        }
        if (bx >= 0) parts.push('<circle class="mt-process-peak" cx="' + bx.toFixed(1) + '" cy="' + g.sy(by).toFixed(1) + '" r="3.5" fill="' + s.color + '" stroke="#fff"/>');
      });
    }
  }

  // The hover and brush layer, on top of everything else.
  function timelineOverlay(parts, g) {
    const M = TIMELINE_MARGIN;
    parts.push('<line id="mt-crosshair" x1="0" x2="0" y1="' + M.t + '" y2="' + g.plotB + '" stroke="#5d6678" stroke-width="1" visibility="hidden" pointer-events="none"/>');
    parts.push('<g id="mt-hover-dots" pointer-events="none"></g>');
    parts.push('<rect id="mt-brush" x="0" y="' + M.t + '" width="0" height="' + g.plotH + '" fill="#2f6fdf" fill-opacity="0.15" visibility="hidden" pointer-events="none"/>');
    parts.push('<rect id="mt-overlay" x="' + M.l + '" y="' + M.t + '" width="' + g.plotW + '" height="' + (g.plotH + g.laneH) + '" fill="transparent" style="cursor:crosshair"/>');
  }

  function seriesMax(s) {
    let max = 0;
    for (let i = 0; i < s.n; ++i) if (s.v[i] > max) max = s.v[i];
    return max;
  }
  // The legend: each series shown with its highest value; in the whole view, mapped bytes as a toggle (off by
  // default: a big arena or mapped file dwarfs the heap, and the y axis scales to what is shown); in the
  // per-process view the processes by peak, the first PROCESS_TOP with a "+K more" button for the rest.
  // The whole view's series a legend button shows and hides (state key = series name): mapped bytes off by
  // default, resident memory on (both can dwarf the heap: hiding one rescales the chart to the rest).
  const SERIES_TOGGLES = {
    resident: {id: 'mt-show-resident', hide: 'Hide resident memory (the chart rescales to the rest)', show: 'Show resident memory (sampled from /proc)'},
    mapped: {id: 'mt-show-mapped', hide: 'Hide mapped bytes (the chart rescales to the heap)', show: 'Show mapped bytes (mmap\u2019d and brk memory)'},
  };
  function timelineLegend(c, series) {
    const tl = c.tl, peak = c.peak;
    const item = (s) => '<span style="--swatch:' + s.color + '">' + esc(s.name) + ' (max ' + fmtBytes(seriesMax(s)) + ')</span>';
    const out = [];
    if (c.state.view === 'whole') {
      for (const s of c.whole) {
        const toggle = SERIES_TOGGLES[s.name];
        if (!toggle) { out.push(item(s)); continue; }
        const on = c.state[s.name];
        out.push('<button type="button" class="mt-legend-toggle" id="' + toggle.id + '" aria-pressed="' + on + '" style="--swatch:' + s.color + '" title="' +
          (on ? toggle.hide : toggle.show) + '">' + s.name + ' (max ' + fmtBytes(seriesMax(s)) + ')' + (on ? '' : ': hidden, click to show') + '</button>');
      }
    } else {
      const heaps = c.perProcess.filter((s) => !s.dash).sort((a, b) => a.rank - b.rank);
      const shown = series.slice().sort((a, b) => a.rank - b.rank || (a.dash ? 1 : 0) - (b.dash ? 1 : 0));
      for (const s of shown) out.push(item(s));
      const more = heaps.filter((s) => s.rank >= PROCESS_TOP).length;
      if (more > 0) {
        out.push('<button type="button" class="mt-legend-more" id="mt-more-processes" aria-expanded="' + !!c.state.allProcesses + '">' +
          (c.state.allProcesses ? 'show the ' + PROCESS_TOP + ' highest only' : '+' + more + ' more') + '</button>');
      }
    }
    if (c.paused.length) out.push('<span class="mt-legend-paused" style="--swatch:rgba(138,148,166,0.45)">paused (not recorded)</span>');
    c.legend.innerHTML = out.join('') + (c.markers.length ? Object.keys(MARKER_COLORS).map((k) => '<span style="--swatch:' + MARKER_COLORS[k] + '">' + k + '</span>').join('') : '');
    const n = [];
    const total = series.reduce((a, s) => a + s.n, 0);
    n.push(fmtInt(total) + ' samples' + (isNum(tl.downsampled_from) && tl.downsampled_from > total ? ' (downsampled from ' + fmtInt(tl.downsampled_from) + ')' : '') + '.');
    if (!Array.isArray(tl.markers)) n.push(reason('timeline.markers', 'No process start/exec/exit markers: the artifact has no context section (recorded by an older memtrack).'));
    if (peak && peak.derived && c.state.view === 'whole') n.push(reason('timeline.peak', 'The report gives no exact peak; the highest sample is marked.'));
    if (series.some((s) => s.name.startsWith('resident'))) n.push('Resident: the memory the processes held in RAM (anonymous, file and shared pages, sampled from /proc; memtrack\u2019s own pages left out).');
    if (series.some((s) => s.step)) n.push('Lines are drawn as steps: a value holds until the next sample.');
    if (c.state.view === 'process') {
      const heaps = c.perProcess.filter((s) => !s.dash).length;
      if (data.missing && typeof data.missing['timeline.processes'] === 'string') n.push('Per-process series: ' + data.missing['timeline.processes'] + '.');
      if (heaps > PROCESS_TOP && !c.state.allProcesses) n.push('The ' + PROCESS_TOP + ' processes with the highest peak heap of ' + heaps + ' are drawn (+' + (heaps - PROCESS_TOP) + ' more shows all).');
      n.push('Dots mark each process\u2019s highest sample in view.');
    }
    if (c.paused.length) {
      n.push('Grey bands: recording was paused (' + fmtInt(c.paused.length) + (c.paused.length === 1 ? ' span' : ' spans') + '): allocations were not recorded there (frees were), so nothing is known of the heap inside a pause and its lines are broken, not drawn, over it; after a pause the heap may read low by the blocks allocated during it and still live.');
    }
    n.push('Hover for values; drag across the chart to zoom into a time range, double-click to reset.');
    c.notes.textContent = n.join(' ');
  }

  function timelineDraw(c) {
    const g = timelineScales(c);
    const parts = [];
    timelineAxes(parts, g);
    timelineRegions(parts, c.regions, g);
    timelinePaused(parts, c.paused, g);
    timelineSeriesPaths(parts, g);
    timelineMarkers(parts, c, g);
    timelineOverlay(parts, g);
    c.svg.setAttribute('width', g.W);
    c.svg.setAttribute('height', g.H);
    c.svg.setAttribute('viewBox', '0 0 ' + g.W + ' ' + g.H);
    c.svg.innerHTML = parts.join('');
    c.geo = g;
    timelineLegend(c, g.series);
  }

  function timelineSetView(c, v) {
    if (c.viewButtons[v].disabled) return false;
    c.state.view = v;
    for (const k in c.viewButtons) c.viewButtons[k].setAttribute('aria-pressed', String(k === v));
    timelineDraw(c);
    return true;
  }

  function timelineZoom(c, a, b) {
    if (!(b > a)) return;
    c.state.x0 = Math.max(c.fullLo, a);
    c.state.x1 = Math.min(c.fullHi, b);
    c.resetButton.disabled = c.state.x0 === c.fullLo && c.state.x1 === c.fullHi;
    timelineDraw(c);
  }

  // The tooltip at time t: each shown series' last sample at or before t, nearby markers, enclosing regions.
  function timelineDescribe(c, t) {
    const geo = c.geo;
    const lines = ['<b>' + esc(fmtTime(t)) + '</b>'];
    const dots = [];
    const pausedNow = pausedAt(c.paused, t, t);
    if (pausedNow) lines.push('<i>paused (' + esc(pausedNow.source || 'pause') + ', ' + esc(fmtTime(pausedNow.begin_ns)) + '\u2013' + esc(fmtTime(pausedNow.end_ns)) + '): allocations not recorded, the heap is not known here</i>');
    for (const s of timelineShown(c)) {
      const i = lowerBound(s.t, t + 0.5, s.n) - 1;
      if (i < 0) continue;
      if (s.gaps && pausedAt(c.paused, t, s.t[i])) {
        lines.push('<span style="color:' + s.color + '">\u25cf</span> ' + esc(s.name) + ': not known (paused)');
        continue;
      }
      lines.push('<span style="color:' + s.color + '">\u25cf</span> ' + esc(s.name) + ': <b>' + fmtBytes(s.v[i]) + '</b> (' + fmtInt(s.v[i]) + ' B)');
      dots.push('<circle cx="' + geo.sx(s.t[i]).toFixed(1) + '" cy="' + geo.sy(s.v[i]).toFixed(1) + '" r="3.5" fill="' + s.color + '"/>');
    }
    const slack = (6 * (c.state.x1 - c.state.x0)) / geo.plotW;
    for (const m of c.markers) {
      if (Math.abs(m.t_ns - t) <= slack) lines.push(esc(m.kind + ' pid ' + m.pid + (m.label ? ': ' + m.label : '') + ' at ' + fmtTime(m.t_ns)));
    }
    for (const r of c.regions) if (t >= r.begin_ns && t <= r.end_ns) lines.push('region ' + esc(r.name) + ' (' + esc(fmtTime(r.end_ns - r.begin_ns)) + ')');
    return {html: lines.join('<br>'), dots: dots.join('')};
  }

  function timelineHover(c, t, clientX, clientY) {
    const d = timelineDescribe(c, t);
    const x = c.geo.sx(t).toFixed(1);
    const cross = c.svg.querySelector('#mt-crosshair');
    cross.setAttribute('x1', x); cross.setAttribute('x2', x); cross.setAttribute('visibility', 'visible');
    c.svg.querySelector('#mt-hover-dots').innerHTML = d.dots;
    showTip(d.html, clientX, clientY);
    return tip.textContent;
  }

  function timelineUnhover(c) {
    const cross = c.svg.querySelector('#mt-crosshair');
    if (cross) cross.setAttribute('visibility', 'hidden');
    const dots = c.svg.querySelector('#mt-hover-dots');
    if (dots) dots.innerHTML = '';
    hideTip();
  }

  // Hovering shows values; dragging across the plot zooms into that time range, double-click resets.
  function timelineInteraction(c) {
    const M = TIMELINE_MARGIN, svg = c.svg;
    let brushFrom = null;
    const localX = (e) => e.clientX - svg.getBoundingClientRect().left;
    svg.addEventListener('mousedown', (e) => {
      if (e.target.id !== 'mt-overlay') return;
      brushFrom = localX(e);
      e.preventDefault();
    });
    svg.addEventListener('mousemove', (e) => {
      if (!c.geo) return;
      const x = Math.min(Math.max(localX(e), M.l), M.l + c.geo.plotW);
      if (brushFrom !== null) {
        const b = svg.querySelector('#mt-brush');
        b.setAttribute('x', Math.min(brushFrom, x)); b.setAttribute('width', Math.abs(x - brushFrom)); b.setAttribute('visibility', 'visible');
      }
      const markerTip = brushFrom === null && e.target.getAttribute ? e.target.getAttribute('data-tip') : null;
      if (markerTip) { timelineUnhover(c); showTip(esc(markerTip), e.clientX, e.clientY); }
      else if (e.target.id === 'mt-overlay' || brushFrom !== null) timelineHover(c, c.geo.inv(x), e.clientX, e.clientY);
      else timelineUnhover(c);
    });
    window.addEventListener('mouseup', (e) => {
      if (brushFrom === null) return;
      const a = brushFrom, b = Math.min(Math.max(localX(e), M.l), M.l + c.geo.plotW);
      brushFrom = null;
      svg.querySelector('#mt-brush').setAttribute('visibility', 'hidden');
      if (Math.abs(b - a) >= 5) timelineZoom(c, c.geo.inv(Math.min(a, b)), c.geo.inv(Math.max(a, b)));
    });
    svg.addEventListener('mouseleave', () => { if (brushFrom === null) timelineUnhover(c); });
    svg.addEventListener('dblclick', () => timelineZoom(c, c.fullLo, c.fullHi));
  }

  function renderTimeline(sec) {
    const tl = data.timeline;
    if (!tl || typeof tl !== 'object') {
      sec.appendChild(missingBox(reason('timeline', 'No memory timeline in this report: the report was generated without one (the recording may have no heap events).'), 'timeline'));
      return;
    }
    const c = timelineModel(tl);
    if (!c.whole.length && !c.perProcess.length) {
      sec.appendChild(missingBox(reason('timeline', 'The timeline has no samples (no t_ns/heap arrays).'), 'timeline'));
      return;
    }
    c.sec = sec;
    c.state = {view: c.whole.length ? 'whole' : 'process', x0: c.fullLo, x1: c.fullHi, mapped: false, resident: true, allProcesses: false};
    c.laneH = c.regions.length ? 18 : 0;
    c.geo = null;  // the last drawing's scales, for hover and brushing
    timelineControls(sec, c);
    c.svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    c.svg.setAttribute('class', 'mt-chart');
    c.svg.setAttribute('id', 'mt-chart');
    c.svg.setAttribute('role', 'img');
    c.svg.setAttribute('aria-label', 'Memory over time');
    sec.appendChild(c.svg);
    c.legend = el('div', {class: 'mt-legend', id: 'mt-timeline-legend'});
    sec.appendChild(c.legend);
    c.legend.addEventListener('click', (e) => {
      const b = e.target && e.target.closest ? e.target.closest('button') : null;
      if (!b) return;
      const toggled = Object.keys(SERIES_TOGGLES).find((name) => SERIES_TOGGLES[name].id === b.id);
      if (toggled) c.state[toggled] = !c.state[toggled];
      else if (b.id === 'mt-more-processes') c.state.allProcesses = !c.state.allProcesses;
      else return;
      timelineDraw(c);
    });
    c.notes = el('p', {class: 'mt-note'});
    sec.appendChild(c.notes);
    timelineInteraction(c);

    timelineSetView(c, c.state.view);
    const svg = c.svg;
    api.timeline = {
      setView: (v) => timelineSetView(c, v),
      zoom: (a, b) => timelineZoom(c, a, b),
      reset: () => timelineZoom(c, c.fullLo, c.fullHi),
      hoverAt: (t) => { const r = svg.getBoundingClientRect(); return timelineHover(c, t, r.left + c.geo.sx(t), r.top + 40); },
      unhover: () => timelineUnhover(c),
      redraw: () => timelineDraw(c),
      pointsDrawn: () => Array.from(svg.querySelectorAll('.mt-line')).map((p) => +p.getAttribute('data-points')),
    };
  }

  // ---- flame graphs ----------------------------------------------------------------------------------------
  const FLAME_KINDS = [
    {key: 'peak', label: 'Live at peak', bytes: 'live at the peak', count: 'blocks live at the peak'},
    {key: 'allocated', label: 'All allocations', bytes: 'allocated', count: 'allocations'},
    {key: 'leaked', label: 'Leaks', bytes: 'leaked', count: 'leaked blocks'},
    // Resident bytes of each site's live blocks at each process's highest page snapshot (memtrack top --by
    // resident): only in recordings with page snapshots.
    {key: 'resident', label: 'Resident at peak', bytes: 'resident at the page snapshots', count: 'allocations'},
  ];
  const ROW = 18;

  // Flattens a tree into pre-order arrays: a subtree is the index range [i, end[i]), children are sorted by
  // value (largest first), and a node's value is at least the sum of its children's so the layout never
  // overflows its parent. Iterative, so a deep stack cannot overflow the JS one.
  function flatten(root) {
    const name = [], lower = [], raw = [], rawBase = [], count = [], depth = [], parent = [], src = [];
    // A differential graph (memtrack report --baseline): every node also has the baseline's value.
    const diff = !!(root && isNum(root.base));
    const stack = [[root, -1, 0]];
    while (stack.length) {
      const [node, p, d] = stack.pop();
      const i = name.length;
      const nm = node && node.name != null ? String(node.name) : '[unknown]';
      name.push(nm); lower.push(nm.toLowerCase());
      raw.push(node && isNum(node.value) && node.value > 0 ? node.value : 0);
      rawBase.push(node && isNum(node.base) && node.base > 0 ? node.base : 0);
      count.push(node && isNum(node.count) ? node.count : null);
      depth.push(d); parent.push(p); src.push(node);
      const kids = node && Array.isArray(node.children) ? node.children.filter((c) => c && typeof c === 'object') : [];
      kids.sort((a, b) => (isNum(b.value) ? b.value : 0) - (isNum(a.value) ? a.value : 0));
      for (let k = kids.length - 1; k >= 0; --k) stack.push([kids[k], i, d + 1]);
    }
    const n = name.length;
    const value = new Float64Array(n), childSum = new Float64Array(n), x = new Float64Array(n), next = new Float64Array(n);
    const base = diff ? new Float64Array(n) : null, baseSum = diff ? new Float64Array(n) : null;
    const end = new Int32Array(n);
    for (let i = n - 1; i >= 0; --i) {
      value[i] = Math.max(raw[i], childSum[i]);
      if (parent[i] >= 0) childSum[parent[i]] += value[i];
      if (diff) {
        base[i] = Math.max(rawBase[i], baseSum[i]);
        if (parent[i] >= 0) baseSum[parent[i]] += base[i];
      }
    }
    for (let i = 1; i < n; ++i) { const p = parent[i]; x[i] = x[p] + next[p]; next[p] += value[i]; }
    const open = [];
    let maxDepth = 0;
    for (let i = 0; i < n; ++i) {
      while (open.length && depth[open[open.length - 1]] >= depth[i]) end[open.pop()] = i;
      open.push(i);
      if (depth[i] > maxDepth) maxDepth = depth[i];
    }
    while (open.length) end[open.pop()] = n;
    // The baseline's bytes in frames this recording has nothing in (gone, or shrunk to 0): no width, not drawn.
    let baseOnly = 0;
    if (diff) for (let i = 1; i < n; ++i) if (value[i] === 0 && value[parent[i]] > 0) baseOnly += base[i];
    return {n: n, name: name, lower: lower, count: count, depth: depth, parent: parent, src: src, value: value,
            base: base, baseOnly: baseOnly, x: x, end: end, maxDepth: maxDepth, focus: 0, matched: null};
  }

  function baselineName() {
    const b = data.baseline;
    return b && typeof b.artifact === 'string' ? b.artifact : 'the baseline';
  }

  function flameKindInfo(key) { return FLAME_KINDS.find((k) => k.key === key); }

  function flameGraph(c, key) {
    if (!c.graphs[key]) c.graphs[key] = flatten(c.fl[key]);
    return c.graphs[key];
  }

  function flamePrunedText(c, key) {
    const p = c.fl.pruned;
    if (!p || typeof p !== 'object') return reason('flame.pruned', 'The report does not say whether small frames were pruned.');
    const e = p[key] && typeof p[key] === 'object' ? p[key] : isNum(p.nodes) || isNum(p.bytes) ? p : null;
    if (!e) return 'The report does not say whether small frames of this graph were pruned.';
    if (!e.nodes) return 'No frames were pruned: every frame is in the graph.';
    const g = flameGraph(c, key), root = g.value[0];
    const below = isNum(e.threshold) ? ' below ' + trim(e.threshold * 100) + '% of the total' : '';
    return 'Pruned to keep the page small: ' + fmtInt(e.nodes) + ' frames' + below +
      (isNum(e.bytes) ? ', ' + fmtBytes(e.bytes) + ' (' + fmtPct(e.bytes, root) + ' of this graph)' : '') +
      '; their bytes stay in their callers\u2019 totals.';
  }

  // Differential: grey unchanged, red grown, blue shrunk, deeper the larger the change relative to the larger
  // side (a new frame is the deepest red).
  function diffColor(v, b) {
    if (v === b) return 'hsl(220,10%,80%)';
    const r = (v - b) / Math.max(v, b), light = Math.round(84 - 40 * Math.abs(r));
    return r > 0 ? 'hsl(4,80%,' + light + '%)' : 'hsl(214,80%,' + light + '%)';
  }

  function flameColor(g, i) {
    if (g.matched && g.matched[i]) return '#d63fd6';
    if (g.base) return diffColor(g.value[i], g.base[i]);
    const h = hashHue(g.name[i]);
    return 'hsl(' + Math.round(8 + h * 42) + ',' + Math.round(72 + h * 18) + '%,' + Math.round(58 + (1 - h) * 8) + '%)';
  }

  // The frames to draw at width W, as [index, left, width, class]: the focus's ancestors spanning the whole
  // width (dimmed; click one to zoom out to it), then the focus's subtree without frames under half a pixel.
  function flameLayout(g, W) {
    const f = g.focus, scale = W / g.value[f], x0 = g.x[f];
    const boxes = [];
    let maxD = g.depth[f], hidden = 0;
    for (let a = g.parent[f]; a >= 0; a = g.parent[a]) boxes.push([a, 0, W, 'mt-ancestor']);
    for (let i = f; i < g.end[f];) {
      const width = g.value[i] * scale;
      if (width < 0.5) { hidden += g.end[i] - i; i = g.end[i]; continue; }
      boxes.push([i, (g.x[i] - x0) * scale, width, '']);
      if (g.depth[i] > maxD) maxD = g.depth[i];
      ++i;
    }
    return {boxes: boxes, hidden: hidden, height: (maxD + 1) * ROW};
  }

  // One frame's rectangle and, when it fits, its (truncated) name.
  function flameFrameSvg(parts, g, box) {
    const i = box[0], left = box[1], width = box[2], cls = box[3];
    const y = g.depth[i] * ROW;
    parts.push('<rect data-i="' + i + '"' + (cls ? ' class="' + cls + '"' : '') + ' x="' + left.toFixed(1) + '" y="' + y + '" width="' + width.toFixed(1) + '" height="' + (ROW - 1) + '" fill="' + flameColor(g, i) + '"/>');
    const chars = Math.floor((width - 6) / 6.7);
    if (chars >= 3) {
      const nm = g.name[i];
      parts.push('<text x="' + (left + 3).toFixed(1) + '" y="' + (y + 12.5) + '"' + (cls ? ' class="' + cls + '"' : '') + '>' + esc(nm.length > chars ? nm.slice(0, chars - 1) + '\u2026' : nm) + '</text>');
    }
  }

  function flameDraw(c) {
    const g = c.current;
    if (!g) return;
    const info = flameKindInfo(g.key);
    const f = g.focus, svg = c.svg;
    c.resetButton.disabled = f === 0;
    if (!(g.value[0] > 0)) {
      svg.setAttribute('height', 0);
      svg.innerHTML = '';
      c.wrap.hidden = true;
      c.empty.hidden = false;
      c.empty.textContent = g.key === 'leaked' ? 'No leaks: every block was freed before the program ended.' : 'This graph is empty: no bytes ' + info.bytes + '.';
      if (g.base && g.base[0] > 0) c.empty.textContent += ' The baseline ' + baselineName() + ' had ' + fmtBytes(g.base[0]) + '.';
      c.status.textContent = '';
      return;
    }
    c.wrap.hidden = false;
    c.empty.hidden = true;
    const W = Math.max(480, c.wrap.clientWidth || c.sec.clientWidth - 34);
    const layout = flameLayout(g, W);
    c.hidden = layout.hidden;
    const parts = [];
    for (const box of layout.boxes) flameFrameSvg(parts, g, box);
    const H = layout.height;
    svg.setAttribute('width', W);
    svg.setAttribute('height', H);
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('data-kind', g.key);
    svg.setAttribute('data-focus', g.name[f]);
    svg.setAttribute('data-frames-drawn', String(layout.boxes.length));
    svg.innerHTML = parts.join('');
    flameStatus(c);
  }

  function flameStatus(c) {
    const g = c.current;
    if (!g || !(g.value[0] > 0)) return;
    const info = flameKindInfo(g.key), f = g.focus, s = [];
    s.push(fmtBytes(g.value[0]) + ' ' + info.bytes + ' in ' + fmtInt(g.n) + ' frames (icicle: callers above callees, width = bytes).');
    if (g.base) {
      s.push('Against the baseline ' + baselineName() + ': ' + fmtBytes(g.base[0]) + ' (' + fmtChange(g.value[0], g.base[0]) + '); width = this recording\u2019s bytes, colour = the change (red grew, blue shrank, grey unchanged).');
      if (g.baseOnly > 0) s.push(fmtBytes(g.baseOnly) + ' of the baseline are in frames with nothing here (gone, or shrunk to nothing): they have no width and are not drawn.');
    }
    if (f !== 0) {
      const path = [];
      for (let a = f; a > 0; a = g.parent[a]) path.unshift(g.name[a]);
      s.push('Zoomed into ' + path.join(' \u203a ') + ': ' + fmtBytes(g.value[f]) + ' (' + fmtPct(g.value[f], g.value[0]) + ').');
    }
    if (g.matched) {
      s.push(g.matchCount ? 'Search "' + c.query + '": ' + fmtInt(g.matchCount) + ' frames, ' + fmtBytes(g.matchBytes) + ' = ' + fmtPct(g.matchBytes, g.value[0]) + ' of the graph.'
                          : 'Search "' + c.query + '": no frame matches.');
    }
    if (c.hidden) s.push(fmtInt(c.hidden) + ' frames are too narrow to draw at this zoom; click a frame to zoom in.');
    else s.push('Click a frame to zoom into it.');
    c.status.textContent = s.join(' ');
    c.status.setAttribute('data-match-share', g.matched ? String(g.value[0] > 0 ? g.matchBytes / g.value[0] : 0) : '');
  }

  // Marks the frames whose name matches query; the share counts each matched subtree once (a match inside a
  // matched frame is already in its bytes).
  function flameApplySearch(g, query) {
    if (!query) { g.matched = null; return; }
    let test;
    const re = /^\/(.+)\/(i?)$/.exec(query);
    if (re) {
      try { const r = new RegExp(re[1], re[2]); test = (i) => r.test(g.name[i]); } catch (e) { test = () => false; }
    } else {
      const q = query.toLowerCase();
      test = (i) => g.lower[i].indexOf(q) !== -1;
    }
    const m = new Uint8Array(g.n);
    let count = 0, bytes = 0, coveredUntil = 0;
    for (let i = 0; i < g.n; ++i) {
      if (test(i)) {
        m[i] = 1; ++count;
        if (i >= coveredUntil) { bytes += g.value[i]; coveredUntil = g.end[i]; }
      }
    }
    g.matched = m; g.matchCount = count; g.matchBytes = bytes;
  }

  function flameShow(c, key) {
    c.current = flameGraph(c, key);
    c.current.key = key;
    flameApplySearch(c.current, c.query);
    c.pruned.textContent = flamePrunedText(c, key);
    flameDraw(c);
  }

  function flameZoomTo(c, target) {
    const g = c.current;
    if (!g) return false;
    let i = target;
    if (typeof target === 'string') i = g.name.indexOf(target);
    if (!(i >= 0 && i < g.n)) return false;
    g.focus = i;
    flameDraw(c);
    return true;
  }

  function flameSetQuery(c, q) {
    c.query = String(q || '').trim();
    if (c.current) { flameApplySearch(c.current, c.query); flameDraw(c); }
    const g = c.current;
    return g && g.matched ? {frames: g.matchCount, bytes: g.matchBytes, share: g.value[0] > 0 ? g.matchBytes / g.value[0] : 0} : null;
  }

  function flameTooltip(c, i) {
    const g = c.current, info = flameKindInfo(g.key), src = g.src[i] || {};
    let self = g.value[i];
    for (let k = i + 1; k < g.end[i]; k = g.end[k]) self -= g.value[k];
    const lines = ['<div class="mt-tip-name">' + esc(g.name[i]) + '</div>',
      '<b>' + fmtBytes(g.value[i]) + '</b> ' + esc(info.bytes) + ' (' + fmtInt(g.value[i]) + ' B), ' + fmtPct(g.value[i], g.value[0]) + ' of all' +
        (g.focus ? ', ' + fmtPct(g.value[i], g.value[g.focus]) + ' of the zoomed frame' : ''),
      'self (in this frame, not its callees): ' + fmtBytes(Math.max(0, self))];
    if (g.count[i] !== null) lines.push(esc(info.count) + ': ' + fmtInt(g.count[i]));
    if (g.base) {
      const b = g.base[i], bc = src.base_count;
      lines.push('baseline: <b>' + fmtBytes(b) + '</b> (' + fmtInt(b) + ' B)' + (isNum(bc) ? ', ' + esc(info.count) + ' ' + fmtInt(bc) : ''));
      const v = g.value[i];
      lines.push('change: <b>' + esc(b === 0 && v > 0 ? 'new (+' + fmtBytes(v) + ')' : v === 0 && b > 0 ? 'gone (-' + fmtBytes(b) + ')' : fmtChange(v, b)) + '</b>');
    }
    lines.push('module: ' + esc(typeof src.module === 'string' && src.module ? src.module : '?'));
    lines.push('source: ' + esc(srcLocation(src.file, src.line) || '?'));
    return lines.join('<br>');
  }

  // The tabs, the search box, the reset button, the status line, the graph and the pruning note.
  function flameControls(sec, c) {
    c.tabs = tabs(sec, FLAME_KINDS.map((k) => ({
      key: k.key, label: k.label, enabled: !!(c.fl[k.key] && typeof c.fl[k.key] === 'object'),
      title: reason('flame.' + k.key, 'No "' + k.label + '" graph in this report'),
    })), (key) => flameShow(c, key));
    c.tabs.row.appendChild(el('span', {class: 'mt-spacer'}));
    c.search = el('input', {type: 'search', placeholder: 'Search functions (text or /regex/)', 'aria-label': 'Search functions', id: 'mt-flame-search'});
    c.tabs.row.appendChild(c.search);
    c.resetButton = button(c.tabs.row, 'Reset zoom', () => flameZoomTo(c, 0));
    c.status = el('p', {class: 'mt-note', id: 'mt-flame-status'});
    sec.appendChild(c.status);
    c.wrap = el('div', {class: 'mt-flame-wrap'});
    sec.appendChild(c.wrap);
    c.svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    c.svg.setAttribute('class', 'mt-flame');
    c.svg.setAttribute('id', 'mt-flame');
    c.wrap.appendChild(c.svg);
    c.empty = el('p', {class: 'mt-missing'});
    c.empty.hidden = true;
    sec.appendChild(c.empty);
    c.pruned = el('p', {class: 'mt-note', id: 'mt-flame-pruned'});
    sec.appendChild(c.pruned);
    const b = data.baseline;
    if (b && typeof b === 'object') {
      const how = b.differential ? (typeof b.match === 'string' ? b.match : 'sites paired as memtrack diff pairs them')
        : reason('flame.baseline', 'the graphs are of this recording alone');
      c.baselineNote = el('p', {class: 'mt-note', id: 'mt-flame-baseline'}, 'Baseline ' + baselineName() + ': ' + how + '.');
      sec.insertBefore(c.baselineNote, c.status);
      if (b.differential) {
        const legend = el('div', {class: 'mt-legend', id: 'mt-flame-legend'});
        legend.innerHTML = [['grew', diffColor(2, 1)], ['new', diffColor(1, 0)], ['shrank', diffColor(1, 2)], ['unchanged', diffColor(1, 1)]]
          .map((e) => '<span style="--swatch:' + e[1] + '">' + e[0] + '</span>').join('');
        sec.insertBefore(legend, c.status);
      }
    }
  }

  // Hovering a frame shows its tooltip, clicking zooms into it; the search box applies after a short pause,
  // at once on Enter, and clears on Escape.
  function flameInteraction(c) {
    const svg = c.svg, search = c.search;
    svg.addEventListener('mousemove', (e) => {
      const i = e.target && e.target.getAttribute && e.target.getAttribute('data-i');
      if (i === null || i === undefined || !c.current) { hideTip(); return; }
      showTip(flameTooltip(c, +i), e.clientX, e.clientY);
    });
    svg.addEventListener('mouseleave', hideTip);
    svg.addEventListener('click', (e) => {
      const i = e.target && e.target.getAttribute && e.target.getAttribute('data-i');
      if (i !== null && i !== undefined) { hideTip(); flameZoomTo(c, +i); }
    });
    let pending = 0;
    search.addEventListener('input', () => {
      clearTimeout(pending);
      pending = setTimeout(() => flameSetQuery(c, search.value), 120);
    });
    search.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { clearTimeout(pending); flameSetQuery(c, search.value); }
      if (e.key === 'Escape') { clearTimeout(pending); search.value = ''; flameSetQuery(c, ''); }
    });
  }

  function renderFlame(sec) {
    const fl = data.flame;
    if (!fl || typeof fl !== 'object') {
      sec.appendChild(missingBox(reason('flame', 'No flame graphs in this report: the recording has no call stacks.'), 'flame'));
      return;
    }
    const c = {sec: sec, fl: fl, graphs: {}, current: null, query: '', hidden: 0};
    flameControls(sec, c);
    flameInteraction(c);

    const first = FLAME_KINDS.find((k) => fl[k.key] && typeof fl[k.key] === 'object');
    if (!(fl.resident && typeof fl.resident === 'object')) {
      c.residentNote = el('p', {class: 'mt-note', id: 'mt-flame-resident-missing'},
        'Resident at peak: ' + reason('flame.resident', 'not recorded (the report has no resident graph)') + '.');
      sec.insertBefore(c.residentNote, c.status);
    }
    if (first) c.tabs.select(first.key);
    else sec.appendChild(missingBox('The flame section has none of the graphs "peak", "allocated", "leaked" or "resident".', 'flame'));
    api.flame = {
      show: c.tabs.select,
      zoomTo: (target) => flameZoomTo(c, target),
      reset: () => flameZoomTo(c, 0),
      search: (q) => { c.search.value = q; return flameSetQuery(c, q); },
      tooltip: (name) => {
        const i = c.current ? c.current.name.indexOf(name) : -1;
        if (i < 0) return null;
        const r = c.svg.getBoundingClientRect();
        showTip(flameTooltip(c, i), r.left + 20, r.top + 20);
        return tip.textContent;
      },
      hiddenFrames: () => c.hidden,
      frameName: (i) => (c.current && i >= 0 && i < c.current.n ? c.current.name[i] : null),
      // A frame's bytes here and in the baseline (null without one), and its colour.
      frame: (name) => {
        const g = c.current, i = g ? g.name.indexOf(name) : -1;
        return i < 0 ? null : {value: g.value[i], base: g.base ? g.base[i] : null, color: flameColor(g, i)};
      },
      redraw: () => flameDraw(c),
    };
  }

  // ---- top sites -------------------------------------------------------------------------------------------
  const RANKINGS = [
    {key: 'peak', label: 'Peak'}, {key: 'allocated', label: 'Allocated'}, {key: 'count', label: 'Allocations'},
    {key: 'leaked', label: 'Leaked'}, {key: 'temporary', label: 'Temporary'},
  ];
  const COLUMNS = [
    {field: 'peak_bytes', label: 'Peak', bytes: true, rank: 'peak'},
    {field: 'allocated_bytes', label: 'Allocated', bytes: true, rank: 'allocated'},
    {field: 'allocations', label: 'Allocations', rank: 'count'},
    {field: 'leaked_bytes', label: 'Leaked', bytes: true, rank: 'leaked'},
    {field: 'leaked_blocks', label: 'Leaked blocks', rank: 'leaked'},
    {field: 'temporary', label: 'Temporary', rank: 'temporary'},
  ];
  function baseName(path) {
    return typeof path === 'string' && path ? path.slice(path.lastIndexOf('/') + 1) : '';
  }
  // A frame as `memtrack top` names it: its function, else "?? module +offset".
  function frameText(fr) {
    if (fr && typeof fr.function === 'string' && fr.function) return fr.function;
    const mod = baseName(fr && fr.module), addr = fmtAddress(fr && fr.address);
    if (mod) return '?? ' + mod + (addr ? ' +' + addr : '');
    return addr || '[unknown]';
  }
  // Template arguments shortened as heaptrack does ("std::vector<>::push_back"); the full name is the title.
  function shortTemplates(name) {
    let out = '', depth = 0;
    for (let i = 0; i < name.length; ++i) {
      const ch = name[i];
      // "operator<", "operator<<" and "operator->" are names, not template brackets.
      if (depth === 0 && (ch === '<' || ch === '>') && /operator\s*[<>=-]*$/.test(out)) { out += ch; continue; }
      // A template's '<' follows its name (an identifier character); any other '<' is text.
      if (ch === '<' && (depth > 0 || /[A-Za-z0-9_]$/.test(out))) { if (depth++ === 0) out += '<'; continue; }
      if (ch === '>' && depth > 0) { if (--depth === 0) out += '>'; continue; }
      if (depth === 0) out += ch;
    }
    return depth === 0 ? out : name;
  }
  // Functions that only pass an allocation on (the program's own xmalloc, glib's g_malloc, C++'s allocator
  // layers): a site is labelled by the first frame that is not one of them, as the place that asked.
  const WRAPPER = new RegExp('^(' + [
    'x(malloc|calloc|realloc|zalloc|nmalloc|nrealloc|2nrealloc|2realloc|charalloc|memdup|strdup|strndup|' +
      'icalloc|imalloc|irealloc|ireallocarray|reallocarray|imemdup)',         // gnulib, GCC's libiberty
    'g_(try_)?(malloc|malloc0|realloc|malloc_n|malloc0_n|realloc_n|strdup|strndup|memdup2?|slice_alloc0?)',  // glib
    'operator new(\\[\\])?(\\(.*)?',                                          // the C++ operators
    '(std|__gnu_cxx)::(__new_allocator|new_allocator|allocator|allocator_traits)<.*',
    'std::__allocated_ptr<.*', 'std::_Vector_base<.*>::_M_allocate(\\(.*)?',
    '(PyMem_|PyObject_|_PyObject_)\\w*(Malloc|Calloc|Realloc|New|alloc)\\w*',  // CPython
  ].join('|') + ')$');
  function isWrapper(fr) {
    return !!(fr && typeof fr.function === 'string' && WRAPPER.test(fr.function));
  }
  // The frame that labels a site: the innermost frame that is not an allocation wrapper (the innermost
  // when all are), and the wrappers skipped to reach it.
  function siteLabel(stack) {
    let k = 0;
    while (k < stack.length - 1 && isWrapper(stack[k])) ++k;
    return {frame: stack[k], via: stack.slice(0, k).map((fr) => fr.function)};
  }
  function renderTop(sec) {
    const top = data.top;
    if (!top || typeof top !== 'object') {
      sec.appendChild(missingBox(reason('top', 'No top-sites tables in this report: the recording has no call stacks.'), 'top'));
      return;
    }
    const holder = el('div');
    const t = tabs(sec, RANKINGS.map((r) => ({key: r.key, label: r.label, enabled: Array.isArray(top[r.key]),
      title: reason('top.' + r.key, 'No "' + r.label + '" ranking in this report')})), (key) => show(key));
    sec.appendChild(holder);
    function show(key) {
      const rows = top[key];
      if (!rows.length) {
        holder.innerHTML = '';
        holder.appendChild(missingBox(key === 'leaked' ? 'No leaks: no site has blocks left at exit.' : 'No sites in this ranking.'));
        return;
      }
      const total = isNum(top.total) ? top.total : null;
      const out = ['<p class="mt-note mt-top-count">' + esc(total !== null && total > rows.length
        ? 'The first ' + fmtInt(rows.length) + ' of ' + fmtInt(total) + ' sites (memtrack top FILE -n 0 lists all).'
        : fmtInt(rows.length) + ' of ' + fmtInt(total !== null ? total : rows.length) + ' sites.') + '</p>'];
      out.push('<table class="mt-top" data-ranking="' + key + '"><thead><tr><th class="mt-num">#</th><th>Site (labelled by its innermost frame that is not an allocation wrapper; the stack innermost first)</th>');
      for (const c of COLUMNS) out.push('<th class="mt-num' + (c.rank === key ? ' mt-ranked' : '') + '">' + c.label + '</th>');
      out.push('</tr></thead><tbody>');
      rows.forEach((r, k) => {
        // A stack lists indices into top.frames (each frame once for all rankings), or the frames themselves.
        const frames = Array.isArray(top.frames) ? top.frames : [];
        const stack = (Array.isArray(r.stack) ? r.stack : []).map((fr) => (typeof fr === 'number' ? frames[fr] : fr))
          .filter((fr) => fr && typeof fr === 'object');
        const label = stack.length ? siteLabel(stack) : null;
        const fr0 = label ? label.frame : null;
        const loc = fr0 ? srcLocation(fr0.file, fr0.line) : '';
        const name = fr0 ? frameText(fr0) : '[no stack]';
        const mod = fr0 && fr0.function ? baseName(fr0.module) : '';
        out.push('<tr><td class="mt-num">' + (k + 1) + '</td><td><details><summary><code class="mt-site-label" title="' + esc(name) + '">' +
          esc(shortTemplates(name)) + '</code>' + (mod ? ' <span class="mt-loc">in ' + esc(mod) + '</span>' : '') +
          (loc ? ' <span class="mt-loc">' + esc(loc) + '</span>' : '') +
          (label && label.via.length ? ' <span class="mt-loc mt-via">via ' + esc(label.via.map(shortTemplates).join(' \u2190 ')) + '</span>' : '') +
          '</summary><ol>');
        for (const fr of stack) {
          const where = [srcLocation(fr.file, fr.line), typeof fr.module === 'string' ? fr.module : '', fmtAddress(fr.address)].filter(Boolean).join(' \u00b7 ');
          out.push('<li><code>' + esc(frameText(fr)) + '</code>' + (where ? ' <span class="mt-loc">' + esc(where) + '</span>' : '') + '</li>');
        }
        out.push('</ol></details></td>');
        for (const c of COLUMNS) {
          const v = r[c.field];
          out.push('<td class="mt-num' + (c.rank === key ? ' mt-ranked' : '') + '"' + (c.bytes && isNum(v) ? ' title="' + fmtInt(v) + ' B"' : '') + '>' + (isNum(v) ? (c.bytes ? fmtBytes(v) : fmtInt(v)) : '') + '</td>');
        }
        out.push('</tr>');
      });
      out.push('</tbody></table>');
      holder.innerHTML = out.join('');
    }
    const first = RANKINGS.find((r) => Array.isArray(top[r.key]));
    if (first) t.select(first.key);
    else holder.appendChild(missingBox('The top section has no ranking.', 'top'));
    api.top = {show: t.select};
  }

  // ---- summary ---------------------------------------------------------------------------------------------
  function renderSummary(sec) {
    const s = data.summary;
    let pairs = null;
    if (Array.isArray(s)) pairs = s.filter((p) => Array.isArray(p) && p.length >= 2);
    else if (s && typeof s === 'object') pairs = Object.keys(s).map((k) => [k, s[k]]);
    if (!pairs) {
      sec.appendChild(missingBox(reason('summary', 'No summary in this report.'), 'summary'));
      return;
    }
    const out = ['<table class="mt-kv" id="mt-summary"><tbody>'];
    for (const [k, v] of pairs) {
      let text;
      if (isNum(v)) {
        text = Number.isInteger(v) ? fmtInt(v) : String(+v.toFixed(4));
        if (/bytes/i.test(String(k)) && Math.abs(v) >= 1024) text += ' (' + fmtBytes(v) + ')';
      } else {
        text = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
      }
      out.push('<tr><th>' + esc(k) + '</th><td class="' + (isNum(v) ? 'mt-num' : '') + '">' + esc(text) + '</td></tr>');
    }
    out.push('</tbody></table>');
    sec.insertAdjacentHTML('beforeend', out.join(''));
  }

  // ---- main ------------------------------------------------------------------------------------------------
  function fatal(text) {
    main.appendChild(el('p', {class: 'mt-error', id: 'mt-fatal'}, text));
  }
  const tParse = performance.now();
  try {
    data = JSON.parse(document.getElementById('memtrack-data').textContent);
  } catch (e) {
    fatal('The report data embedded in this page is not valid JSON (' + e.message + '); the generator that wrote it is broken.');
  }
  api.timings.parse = performance.now() - tParse;
  if (data !== null && (typeof data !== 'object' || Array.isArray(data))) {
    fatal('The report data embedded in this page is not a JSON object.');
    data = null;
  }
  if (data) {
    api.data = data;
    if (isNum(data.version) && data.version > 1) {
      main.appendChild(missingBox('This report was written by a newer memtrack (data version ' + data.version + '); this page reads version 1, so some parts may be missing.'));
    }
    guarded(document.getElementById('mt-header'), 'meta', renderMeta);
    guarded(section('mt-timeline', 'Memory over time'), 'timeline', renderTimeline);
    guarded(section('mt-flames', 'Flame graphs'), 'flame', renderFlame);
    guarded(section('mt-top', 'Top allocation sites'), 'top', renderTop);
    guarded(section('mt-stats', 'Summary'), 'summary', renderSummary);
    let resizeTimer = 0;
    window.addEventListener('resize', () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => {
        if (api.timeline) api.timeline.redraw();
        if (api.flame) api.flame.redraw();
      }, 150);
    });
  }
  document.body.getBoundingClientRect();  // the layout is part of the cost of showing the page
  const elapsed = performance.now() - started;
  api.renderMs = elapsed;
  html.setAttribute('data-render-ms', elapsed.toFixed(1));
  html.setAttribute('data-ready-ms', performance.now().toFixed(1));
  html.setAttribute('data-rendered', data ? 'yes' : 'no');
  html.setAttribute('data-timings', Object.keys(api.timings).map((k) => k + '=' + api.timings[k].toFixed(1)).join(' '));
  const version = data && data.meta && typeof data.meta.memtrack === 'string' ? ' ' + data.meta.memtrack : '';
  document.getElementById('mt-footer').textContent = 'Written by memtrack' + version + '. This page is self-contained: it loads nothing from the network. Drawn in ' + elapsed.toFixed(0) + ' ms.';
})();
