// Jobs: a filterable, paged list. Queue and state are filtered by the
// API; tenant, kind and group are filtered here while paging through it
// (and passed along too, so a server that filters by them does it first).
import { api, q } from './api.js';
import { h, replace, num, table, time, badge } from './dom.js';
import { STATES } from './overview.js';

const PAGE = 50;
const SCAN_PAGE = 500;
const SCAN_LIMIT = 5000; // jobs read per refresh when filtering here

export default {
  mount(root, route, ctx) {
    const f = {};
    for (const k of ['queue', 'state', 'tenant', 'kind', 'group', 'cursor']) f[k] = route.query.get(k) || '';
    const history = (route.query.get('back') || '').split(',').filter(Boolean);
    const local = !!(f.tenant || f.kind || f.group);
    const out = h('div');
    const pager = h('div', { class: 'pager' });
    root.append(h('h1', { tabindex: '-1' }, 'Jobs'), filterForm(f, ctx), out, pager);

    async function update() {
      const page = await load(f, local);
      const cols = [
        { key: 'id', label: 'Job', render: (j) => h('a', { href: `#/job/${encodeURIComponent(j.id)}`, class: 'mono' }, j.id) },
        { key: 'state', label: 'State', render: (j) => badge(j.state) },
        { key: 'queue', label: 'Queue' },
        { key: 'kind', label: 'Kind' },
        { key: 'tenant', label: 'Tenant' },
        { key: 'group', label: 'Group' },
        { key: 'attempt', label: 'Attempt', num: true, render: (j) => `${j.attempt}/${j.max_attempts}` },
        { key: 'created_at', label: 'Enqueued', render: (j) => time(j.created_at) },
        { key: 'updated_at', label: 'Updated', render: (j) => time(j.updated_at) },
      ];
      replace(out, table({
        id: 'jobs', caption: caption(f, page), columns: cols, rows: page.jobs,
        rowAttrs: (j) => ({ 'data-job': j.id, 'data-state': j.state }), empty: 'No jobs match.',
      }));
      replace(pager,
        f.cursor ? h('a', { class: 'button quiet', href: link(f, '', []) }, 'First page') : null,
        history.length ? h('a', { class: 'button quiet', href: link(f, history[history.length - 1], history.slice(0, -1)) }, 'Previous page') : null,
        page.next ? h('a', { class: 'button quiet', href: link(f, page.next, f.cursor ? [...history, f.cursor] : history), id: 'next-page' }, 'Next page') : null,
        local ? h('span', { class: 'hint' }, `Read ${num(page.scanned)} jobs to find these: tenant, kind and group are filtered in the browser.`) : null);
    }
    return { title: 'Jobs', update };
  },
};

function caption(f, page) {
  const parts = ['queue', 'state', 'tenant', 'kind', 'group'].filter((k) => f[k]).map((k) => `${k} ${f[k]}`);
  return `${num(page.jobs.length)} jobs${parts.length ? ` (${parts.join(', ')})` : ''}, oldest first`;
}

function link(f, cursor, back) {
  return `#/jobs${q({ queue: f.queue, state: f.state, tenant: f.tenant, kind: f.kind, group: f.group, cursor, back: back.join(',') })}`;
}

async function load(f, local) {
  const base = { queue: f.queue, state: f.state, tenant: f.tenant, kind: f.kind, group: f.group };
  if (!local) {
    const page = await api(`/v1/jobs${q({ ...base, limit: PAGE, cursor: f.cursor })}`);
    return { jobs: page.jobs, next: page.next || '', scanned: page.jobs.length };
  }
  const match = (j) => (!f.tenant || j.tenant === f.tenant) && (!f.kind || j.kind === f.kind) && (!f.group || j.group === f.group);
  const jobs = []; let cursor = f.cursor; let scanned = 0; let next = '';
  do {
    const page = await api(`/v1/jobs${q({ ...base, limit: SCAN_PAGE, cursor })}`);
    scanned += page.jobs.length;
    jobs.push(...page.jobs.filter(match));
    next = page.next || '';
    cursor = next;
  } while (next && jobs.length < PAGE && scanned < SCAN_LIMIT);
  return { jobs, next, scanned };
}

function filterForm(f, ctx) {
  const field = (name, label, el) => h('div', { class: 'field' }, h('label', { for: `f-${name}` }, label), el);
  const text = (name) => h('input', { id: `f-${name}`, name, type: 'text', value: f[name], size: 12, autocomplete: 'off' });
  const queue = h('select', { id: 'f-queue', name: 'queue' }, h('option', { value: '' }, 'All'));
  if (f.queue) queue.append(h('option', { value: f.queue, selected: true }, f.queue));
  api('/v1/queues/stats').then((s) => {
    for (const x of s.queues) if (x.queue !== f.queue) queue.append(h('option', { value: x.queue }, x.queue));
  }).catch(() => {});
  const state = h('select', { id: 'f-state', name: 'state' }, h('option', { value: '' }, 'All'),
    STATES.map((s) => h('option', { value: s, selected: s === f.state }, s)));
  const form = h('form', { class: 'panel form-row', role: 'search', 'aria-label': 'Filter jobs', id: 'job-filter' },
    field('queue', 'Queue', queue), field('state', 'State', state),
    field('tenant', 'Tenant', text('tenant')), field('kind', 'Kind', text('kind')), field('group', 'Group', text('group')),
    h('button', { type: 'submit' }, 'Filter'),
    h('a', { href: '#/jobs', class: 'button quiet' }, 'Clear'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const d = new FormData(form);
    ctx.navigate(`#/jobs${q({ queue: d.get('queue'), state: d.get('state'), tenant: d.get('tenant').trim(), kind: d.get('kind').trim(), group: d.get('group').trim() })}`);
  });
  return form;
}
