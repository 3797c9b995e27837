// Tiny line charts in SVG, drawn by hand: a chart is a few <path>s over a
// light grid, with a text equivalent for screen readers.

const NS = 'http://www.w3.org/2000/svg';

function s(tag, attrs, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
export function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function fmtAxis(v) {
  if (v >= 1000) return `${(v / 1000).toFixed(v % 1000 ? 1 : 0)}k`;
  if (v < 1 && v > 0) return v.toFixed(2);
  return String(Math.round(v * 10) / 10);
}

// lineChart draws series ({name, values, color, dashed}) over the same
// x axis (one point per interval, the last one "now").
// label is the accessible name; seconds the span of the x axis.
// The API's last point is the current, partial second: it is left out, so
// the line does not dip at its right end.
export function lineChart({ label, series: all, seconds = 60, height = 110, unit = '' }) {
  const series = all.map((x) => ({ ...x, values: x.values.slice(0, -1) }));
  const W = 320; const H = height;
  const L = 32; const R = 6; const T = 8; const B = 16;
  const n = Math.max(2, ...series.map((x) => x.values.length));
  let max = 0;
  for (const x of series) for (const v of x.values) if (v !== null && v > max) max = v;
  const top = niceMax(max);
  const px = (i) => L + (i * (W - L - R)) / (n - 1);
  const py = (v) => T + (H - T - B) * (1 - v / top);
  const svg = s('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `${label}. ${summary(series, unit)}` });
  svg.append(s('title', {}, label));
  for (const g of [0, 0.5, 1]) {
    const y = py(top * g);
    svg.append(s('line', { class: 'grid', x1: L, x2: W - R, y1: y, y2: y }));
    svg.append(s('text', { x: L - 4, y: y + 3, 'text-anchor': 'end' }, fmtAxis(top * g)));
  }
  svg.append(s('text', { x: L, y: H - 3 }, `−${seconds} s`));
  svg.append(s('text', { x: W - R, y: H - 3, 'text-anchor': 'end' }, 'now'));
  for (const x of series) {
    const d = path(x.values, px, py);
    if (d) {
      svg.append(s('path', { d, fill: 'none', stroke: x.color, 'stroke-width': 1.8, 'stroke-linejoin': 'round', 'stroke-linecap': 'round', 'stroke-dasharray': x.dashed ? '4 3' : null }));
    }
    x.values.forEach((v, i) => { // a lone point between gaps has no line: show a dot
      if (v !== null && (i === 0 || x.values[i - 1] === null) && (i === x.values.length - 1 || x.values[i + 1] === null)) {
        svg.append(s('circle', { cx: px(i), cy: py(v), r: 2, fill: x.color }));
      }
    });
  }
  return svg;
}

// sparkline draws series ({name, values, color, dashed}) as a small
// chart without axes, for a table cell: the shape of the last minute at a
// glance, with the same text equivalent as lineChart. All series share
// one scale; a flat zero line sits on the bottom edge.
export function sparkline({ label, series: all, unit = '', width = 80, height = 24 }) {
  const series = all.map((x) => ({ ...x, values: x.values.slice(0, -1) }));
  const n = Math.max(2, ...series.map((x) => x.values.length));
  let max = 0;
  for (const x of series) for (const v of x.values) if (v !== null && v > max) max = v;
  const top = max > 0 ? max : 1;
  const px = (i) => 1 + (i * (width - 2)) / (n - 1);
  const py = (v) => height - 2 - (height - 4) * (v / top);
  const svg = s('svg', { class: 'spark', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `${label}. ${summary(series, unit)}` });
  svg.append(s('title', {}, `${label}: ${summary(series, unit)}`));
  svg.append(s('line', { class: 'base', x1: 0, x2: width, y1: height - 1.5, y2: height - 1.5 }));
  for (const x of series) {
    const d = path(x.values, px, py);
    if (d) {
      svg.append(s('path', { d, fill: 'none', stroke: x.color, 'stroke-width': 1.5, 'stroke-linejoin': 'round', 'stroke-linecap': 'round', 'stroke-dasharray': x.dashed ? '3 2' : null }));
    }
  }
  return svg;
}

function path(values, px, py) {
  let d = ''; let pen = false;
  values.forEach((v, i) => {
    if (v === null || v === undefined) { pen = false; return; }
    d += `${pen ? 'L' : 'M'}${px(i).toFixed(1)} ${py(v).toFixed(1)} `;
    pen = true;
  });
  return d.trim();
}

// latest is the last non-null value of a series.
export function latest(values) {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null && values[i] !== undefined) return values[i];
  return null;
}

// recent averages the last k complete points (the newest point is the
// current, partial second, so it is left out).
export function recent(values, k = 10) {
  const done = values.slice(0, -1).slice(-k);
  if (!done.length) return 0;
  return done.reduce((a, b) => a + (b || 0), 0) / done.length;
}

function summary(series, unit) {
  return series.map((x) => {
    const v = latest(x.values);
    return `${x.name}: ${v === null ? 'no data' : `${Math.round(v * 100) / 100}${unit}`} latest`;
  }).join('; ');
}

export function legend(series, fmt = (v) => String(v)) {
  const ul = document.createElement('ul');
  ul.className = 'legend';
  for (const x of series) {
    const li = document.createElement('li');
    const sw = document.createElement('span');
    sw.className = `swatch${x.dashed ? ' dashed' : ''}`;
    sw.style.background = x.color;
    sw.style.color = x.color;
    li.append(sw, `${x.name}`);
    if (x.now !== undefined) li.append(`: ${fmt(x.now)}`);
    ul.append(li);
  }
  return ul;
}

export const colors = { c1: '#1f5fbf', c2: '#b35c00', c3: '#a4221b', c4: '#6b3fa0', c5: '#1b6e32' };
