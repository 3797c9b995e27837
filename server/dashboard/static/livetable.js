// A compact table for many similar things (queues, rate-limit policies):
// one row each, built once and updated in place at every refresh, so the
// filter box, keyboard focus, sorting and an open detail row survive
// polling. The filter narrows rows by name without asking the server.
import { h, replace, plural, compare } from './dom.js';

// liveTable returns {el, update(entries)}. Options:
//   id, caption    the table's id and caption;
//   keyAttr        each row gets data-<keyAttr>="<key>";
//   noun           [one, many], for "3 of 60 queues";
//   columns        {key, label, num, sortable, value(data, key), text(data)
//                  or cell() => {nodes, set(data)}}: text() is written as
//                  the cell's text, cell() builds nodes once and updates;
//   sort           the starting {key, dir};
//   filter         {label, value, onChange(value)};
//   empty          what an empty table says;
//   rowAttrs(data) attributes set on the row at every update;
//   groupHead(g)   the heading of a group of rows (entries with a group
//                  stay together, in the order they first come);
//   detail(key)    an optional {tr, open(), set(data)} shown under the
//                  row while open() is true.
// entries are [{key, group, data}].
export function liveTable(o) {
  const rows = new Map();
  const groups = new Map();
  let sort = o.sort;
  let terms = words(o.filter.value || '');
  const input = h('input', {
    id: `${o.id}-filter`, name: 'filter', type: 'search', value: o.filter.value || '', autocomplete: 'off',
    placeholder: 'name contains…', 'aria-controls': o.id,
  });
  const count = h('span', { id: `${o.id}-count`, 'aria-live': 'polite' });
  const head = h('tr');
  const body = h('tbody');
  const el = h('div', { class: 'live-table' },
    h('div', { class: 'filter-row' },
      h('div', { class: 'field inline' }, h('label', { for: `${o.id}-filter` }, o.filter.label), input)),
    h('div', { class: 'table-wrap', role: 'region', 'aria-label': o.caption, tabindex: '0' },
      h('table', { id: o.id, class: 'compact' }, h('caption', {}, count), h('thead', {}, head), body)));

  input.addEventListener('input', () => {
    terms = words(input.value);
    o.filter.onChange(input.value.trim());
    layout();
  });

  function header() {
    replace(head, o.columns.map((c) => {
      const attrs = { scope: 'col', class: c.num ? 'num' : null };
      if (c.sortable === false) return h('th', attrs, c.label);
      attrs['aria-sort'] = sort.key === c.key ? (sort.dir > 0 ? 'ascending' : 'descending') : 'none';
      return h('th', attrs, h('button', {
        type: 'button', class: 'sort',
        onclick: () => {
          sort = { key: c.key, dir: sort.key === c.key ? -sort.dir : (c.num ? -1 : 1) };
          header();
          layout();
        },
      }, c.label));
    }));
  }

  function makeRow(e) {
    const tr = h('tr', { [`data-${o.keyAttr}`]: e.key });
    const setters = o.columns.map((c) => {
      const td = h('td', { class: c.num ? 'num' : null, 'data-col': c.key });
      tr.append(td);
      if (c.cell) {
        const made = c.cell(e.key);
        td.append(...[made.nodes].flat());
        return made.set;
      }
      return (d) => {
        const t = String(c.text(d) ?? '–');
        if (td.textContent !== t) td.textContent = t;
      };
    });
    return { key: e.key, tr, setters, detail: o.detail ? o.detail(e.key) : null };
  }

  function update(entries) {
    const seen = new Set();
    for (const e of entries) {
      seen.add(e.key);
      let r = rows.get(e.key);
      if (!r) {
        r = makeRow(e);
        rows.set(e.key, r);
      }
      r.group = e.group;
      r.data = e.data;
      if (o.rowAttrs) for (const [k, v] of Object.entries(o.rowAttrs(e.data))) setAttr(r.tr, k, v);
      r.setters.forEach((set) => set(e.data));
      if (r.detail && r.detail.set) r.detail.set(e.data);
      if (e.group !== undefined && !groups.has(e.group)) {
        groups.set(e.group, h('tr', { class: 'group' }, h('th', { scope: 'rowgroup', colspan: o.columns.length }, o.groupHead(e.group))));
      }
    }
    for (const k of [...rows.keys()]) if (!seen.has(k)) rows.delete(k);
    layout();
  }

  // layout puts the rows in order (by group, then the sort column),
  // hides those the filter leaves out, and moves nodes only when the
  // order changed, keeping focus where it was.
  function layout() {
    const col = o.columns.find((c) => c.key === sort.key) || o.columns[0];
    const val = col.value || col.text || ((d) => d[col.key]);
    const order = [...groups.keys()];
    const sorted = [...rows.values()].sort((a, b) => (order.indexOf(a.group) - order.indexOf(b.group))
      || compare(val(a.data, a.key), val(b.data, b.key)) * sort.dir || a.key.localeCompare(b.key));
    const seq = [];
    let shown = 0;
    let group;
    let groupHead = null;
    let groupShown = 0;
    const closeGroup = () => { if (groupHead) groupHead.hidden = groupShown === 0; };
    for (const r of sorted) {
      if (r.group !== undefined && r.group !== group) {
        closeGroup();
        group = r.group;
        groupHead = groups.get(group);
        groupShown = 0;
        seq.push(groupHead);
      }
      const match = terms.every((t) => r.key.toLowerCase().includes(t));
      r.tr.hidden = !match;
      seq.push(r.tr);
      if (r.detail) {
        r.detail.tr.hidden = !match || !r.detail.open();
        seq.push(r.detail.tr);
      }
      if (match) { shown++; groupShown++; }
    }
    closeGroup();
    if (!rows.size) seq.push(note(o.empty));
    else if (!shown) seq.push(note(`No ${o.noun[0]} name contains “${input.value.trim()}”.`));
    const now = [...body.children];
    if (now.length !== seq.length || now.some((n, i) => n !== seq[i])) {
      const focus = document.activeElement;
      body.replaceChildren(...seq);
      if (focus && focus !== document.activeElement && body.contains(focus)) focus.focus({ preventScroll: true });
    }
    const total = plural(rows.size, o.noun[0], o.noun[1]);
    const text = terms.length ? `${shown} of ${total} shown` : total;
    if (count.textContent !== text) count.textContent = text;
  }

  const noteCell = h('td', { colspan: o.columns.length, class: 'empty' });
  const noteRow = h('tr', { class: 'note-row' }, noteCell);
  function note(text) {
    if (noteCell.textContent !== text) noteCell.textContent = text;
    return noteRow;
  }

  header();
  layout();
  return { el, update };
}

// filterInHash keeps a view's filter in its URL (#/view?filter=...), so
// a reload or a shared link keeps it, without a hashchange that would
// mount the view again.
export function filterInHash(view) {
  return (value) => {
    const hash = value ? `#/${view}?${new URLSearchParams({ filter: value })}` : `#/${view}`;
    if (location.hash !== hash) history.replaceState(history.state, '', hash);
  };
}

function words(s) { return s.toLowerCase().split(/\s+/).filter(Boolean); }

function setAttr(el, k, v) {
  if (v === null || v === undefined || v === false) el.removeAttribute(k);
  else if (el.getAttribute(k) !== String(v)) el.setAttribute(k, String(v));
}
