// Small DOM helpers. Everything the server sends is put in the page as
// text (textContent, attributes), never parsed as HTML.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k in el && typeof v !== 'string' && k !== 'list') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// replace swaps el's children for children.
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

const nf = new Intl.NumberFormat('en');
// num formats a count. The API's integers beyond 2^53 arrive as BigInt
// (see parseJSON in api.js), which Intl formats exactly.
export function num(n) { return n === undefined || n === null ? '–' : nf.format(n); }

// plural is a count with its noun: "1 job", "2 jobs", "1,000 jobs".
export function plural(n, one, many = `${one}s`) {
  return `${num(n)} ${Number(n) === 1 ? one : many}`;
}

// MAX_INT64 is the largest number the server's 64-bit integers hold; a
// limit set to it limits nothing.
export const MAX_INT64 = 2n ** 63n - 1n;

// unlimited reports whether a limit is so high it can never be reached.
export function unlimited(n) {
  return typeof n === 'bigint' ? n >= MAX_INT64 : typeof n === 'number' && n >= 2 ** 63;
}

// limitNum formats a limit: "no limit" when it cannot be reached.
export function limitNum(n) { return unlimited(n) ? 'no limit' : num(n); }

// toNumber turns a BigInt into a Number for arithmetic where exactness
// does not matter (ratios, durations, chart scales).
export function toNumber(n) { return typeof n === 'bigint' ? Number(n) : n; }

// exactInt reads an integer typed into a form, as a BigInt past 2^53 so
// that it is sent exactly (see stringifyJSON in api.js).
export function exactInt(text) {
  const v = Number(text || 0);
  return /^-?\d+$/.test(text) && !Number.isSafeInteger(v) ? BigInt(text) : v;
}

// plus adds two API integers, exactly when either is a BigInt.
export function plus(a, b) {
  if (typeof a === 'bigint' || typeof b === 'bigint') return BigInt(a || 0) + BigInt(b || 0);
  return (a || 0) + (b || 0);
}

export function rate(n) {
  if (n === undefined || n === null) return '–';
  return n >= 10 ? nf.format(Math.round(n)) : n.toFixed(1).replace(/\.0$/, '');
}

export function ms(v) {
  if (v === undefined || v === null) return '–';
  v = toNumber(v);
  if (v < 1) return `${v.toFixed(2)} ms`;
  if (v < 1000) return `${Math.round(v)} ms`;
  return duration(v);
}

export function duration(msv) {
  msv = toNumber(msv);
  if (msv === undefined || msv === null || Number.isNaN(msv)) return '–';
  const s = msv / 1000;
  if (s < 1) return `${Math.round(msv)} ms`;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  const hr = Math.floor(m / 60);
  if (hr < 48) return `${hr} h ${m % 60} min`;
  return `${Math.floor(hr / 24)} d ${hr % 24} h`;
}

// time shows a timestamp as "12 s ago" with the exact time in a <time>.
export function time(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  const diff = Date.now() - d.getTime();
  const text = Math.abs(diff) < 1000 ? 'now' : diff > 0 ? `${duration(diff)} ago` : `in ${duration(-diff)}`;
  return h('time', { datetime: iso, title: d.toLocaleString() }, text);
}

export function badge(state) {
  return h('span', { class: `badge s-${state}`, 'data-state-badge': state }, state);
}

// notice shows the result of an action at the top of the view; errors
// are announced assertively, successes politely.
export function notice(kind, message) {
  const main = document.getElementById('main');
  main.querySelector('#notice')?.remove();
  const close = h('button', { type: 'button', class: 'link', onclick: () => box.remove() }, 'Dismiss');
  const box = h('div', { id: 'notice', class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' },
    h('span', { id: 'notice-text' }, message), close);
  main.prepend(box);
  return box;
}

// confirm asks before an action, in a modal <dialog>. fields are extra
// inputs ({name, label, type, value, min, required}); it resolves to their
// values, or null when cancelled.
export function confirm({ title, message, ok = 'Confirm', danger = false, fields = [] }) {
  const dlg = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-message').textContent = message;
  const okBtn = document.getElementById('confirm-ok');
  okBtn.textContent = ok;
  okBtn.className = danger ? 'danger' : '';
  const box = document.getElementById('confirm-fields');
  replace(box, fields.map((f) => h('div', { class: 'field' },
    h('label', { for: `confirm-${f.name}` }, f.label),
    h('input', { id: `confirm-${f.name}`, name: f.name, type: f.type || 'text', value: f.value ?? '', min: f.min, required: f.required }))));
  return new Promise((resolve) => {
    dlg.returnValue = '';
    dlg.addEventListener('close', () => {
      if (dlg.returnValue !== 'ok') return resolve(null);
      const values = {};
      for (const f of fields) values[f.name] = document.getElementById(`confirm-${f.name}`).value;
      resolve(values);
    }, { once: true });
    dlg.showModal();
    (fields.length ? document.getElementById(`confirm-${fields[0].name}`) : document.getElementById('confirm-cancel')).focus();
  });
}

// table renders a sortable table. columns: {key, label, num, render(row),
// value(row)}; sort: {key, dir}; onSort(key) is called by the header
// buttons. rowAttrs(row) adds attributes to each <tr>.
export function table({ id, caption, columns, rows, sort, onSort, rowAttrs, empty = 'Nothing to show.' }) {
  const head = h('tr', {}, columns.map((c) => {
    const attrs = { scope: 'col', class: c.num ? 'num' : '' };
    if (!onSort || c.sortable === false) return h('th', attrs, c.label);
    attrs['aria-sort'] = sort && sort.key === c.key ? (sort.dir > 0 ? 'ascending' : 'descending') : 'none';
    return h('th', attrs, h('button', { type: 'button', class: 'sort', onclick: () => onSort(c.key) }, c.label));
  }));
  const body = rows.length
    ? rows.map((r) => h('tr', rowAttrs ? rowAttrs(r) : {}, columns.map((c) => {
      const v = c.render ? c.render(r) : r[c.key];
      return h('td', { class: `${c.num ? 'num' : ''} ${c.wrap ? 'wrap' : ''}`.trim() || null, 'data-col': c.key }, v ?? '–');
    })))
    : [h('tr', {}, h('td', { colspan: columns.length, class: 'empty' }, empty))];
  return h('div', { class: 'table-wrap', role: 'region', 'aria-label': caption, tabindex: '0' },
    h('table', { id }, h('caption', {}, caption), h('thead', {}, head), h('tbody', {}, body)));
}

// sortRows sorts a copy of rows by sort.key using the column's value().
export function sortRows(rows, columns, sort) {
  const col = columns.find((c) => c.key === sort.key);
  if (!col) return rows;
  const val = col.value || ((r) => r[col.key]);
  return [...rows].sort((a, b) => {
    const x = val(a); const y = val(b);
    return compare(x, y) * sort.dir;
  });
}

const numeric = (v) => typeof v === 'number' || typeof v === 'bigint';

// compare orders numbers (and BigInts, exactly) by value, anything else
// as text.
export function compare(x, y) {
  if (numeric(x) && numeric(y)) return x < y ? -1 : x > y ? 1 : 0;
  return String(x ?? '').localeCompare(String(y ?? ''));
}

// bar is a stacked horizontal bar: parts {cls, value, label}; total is
// the full width. The text equivalent goes into aria-label.
export function bar(parts, total, label) {
  const el = h('div', { class: 'bar', role: 'img', 'aria-label': label });
  for (const p of parts) {
    if (!p.value || !total) continue;
    const seg = h('span', { class: p.cls, title: `${p.label}: ${p.value}` });
    seg.style.width = `${Math.min(100, (100 * toNumber(p.value)) / toNumber(total))}%`; // CSSOM: allowed by the CSP, unlike style=""
    el.append(seg);
  }
  return el;
}

export function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v ?? '–')]));
}

export function announce(text) {
  const el = document.getElementById('announce');
  el.textContent = '';
  setTimeout(() => { el.textContent = text; }, 50);
}
