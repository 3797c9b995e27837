// Jobs: a filterable, paged list, newest first unless asked otherwise.
// Every filter (queue, state, tenant, kind, group) and the order are the
// API's own: the server filters, the view only shows what it returns.
import { api, q } from './api.js';
import { h, replace, plural, table, time, badge } from './dom.js';
import { STATES, STATE_EVENTS } from './overview.js';

const PAGE = 50;
const FILL_CALLS = 10; // GET /v1/jobs calls to fill one page, at most
const FILTERS = ['queue', 'state', 'tenant', 'kind', 'group', 'order'];

export default {
  mount(root, route, ctx) {
    const f = {};
    for (const k of [...FILTERS, 'cursor']) f[k] = route.query.get(k) || '';
    const history = (route.query.get('back') || '').split(',').filter(Boolean);
    const out = h('div');
    const pager = h('div', { class: 'pager' });
    root.append(h('h1', { tabindex: '-1' }, 'Jobs'), filterForm(f, ctx), out, pager);

    async function update() {
      const page = await load(f);
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
        rowAttrs: (j) => ({ 'data-job': j.id, 'data-state': j.state }),
        // A filtered page may end early, even empty, where the server
        // bounds the jobs one call looks at; the next page goes on.
        empty: page.next ? 'No matching jobs in this stretch of the queue: see the next page.' : 'No jobs match.',
      }));
      replace(pager,
        f.cursor ? h('a', { class: 'button quiet', href: link(f, '', []) }, 'First page') : null,
        history.length ? h('a', { class: 'button quiet', href: link(f, history[history.length - 1], history.slice(0, -1)) }, 'Previous page') : null,
        page.next ? h('a', { class: 'button quiet', href: link(f, page.next, f.cursor ? [...history, f.cursor] : history), id: 'next-page' }, 'Next page') : null);
    }
    // Any change of state among the listed jobs refreshes the page; the
    // state filter is not an event filter, so it is applied on reload.
    const events = { queue: f.queue, tenant: f.tenant, kind: f.kind, group: f.group, type: STATE_EVENTS };
    return { title: 'Jobs', update, events };
  },
};

function caption(f, page) {
  const parts = ['queue', 'state', 'tenant', 'kind', 'group'].filter((k) => f[k]).map((k) => `${k} ${f[k]}`);
  const order = f.order === 'oldest' ? 'oldest first' : 'newest first';
  return `${plural(page.jobs.length, 'job')}${parts.length ? ` (${parts.join(', ')})` : ''}, ${order}`;
}

function link(f, cursor, back) {
  const params = {};
  for (const k of FILTERS) params[k] = f[k];
  return `#/jobs${q({ ...params, cursor, back: back.join(',') })}`;
}

// load reads one page; the view's default order is newest first, the
// API's is oldest first, so the order is always sent. A store that bounds
// the work of a filtered call (Redis) may answer short with a cursor: the
// view asks again from there, a few calls at most, to fill the page.
async function load(f) {
  const base = {
    queue: f.queue, state: f.state, tenant: f.tenant, kind: f.kind, group: f.group,
    order: f.order === 'oldest' ? 'oldest' : 'newest',
  };
  const jobs = [];
  let cursor = f.cursor;
  let next = '';
  for (let calls = 0; calls < FILL_CALLS; calls++) {
    const page = await api(`/v1/jobs${q({ ...base, limit: PAGE - jobs.length, cursor })}`);
    jobs.push(...page.jobs);
    next = page.next || '';
    cursor = next;
    if (!next || jobs.length >= PAGE) break;
  }
  return { jobs, next };
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
  const order = h('select', { id: 'f-order', name: 'order' },
    h('option', { value: '' }, 'Newest first'), h('option', { value: 'oldest', selected: f.order === 'oldest' }, 'Oldest first'));
  const form = h('form', { class: 'panel form-row', role: 'search', 'aria-label': 'Filter jobs', id: 'job-filter' },
    field('queue', 'Queue', queue), field('state', 'State', state),
    field('tenant', 'Tenant', text('tenant')), field('kind', 'Kind', text('kind')), field('group', 'Group', text('group')),
    field('order', 'Order', order),
    h('button', { type: 'submit' }, 'Filter'),
    h('a', { href: '#/jobs', class: 'button quiet' }, 'Clear'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const d = new FormData(form);
    ctx.navigate(`#/jobs${q({
      queue: d.get('queue'), state: d.get('state'), tenant: d.get('tenant').trim(), kind: d.get('kind').trim(),
      group: d.get('group').trim(), order: d.get('order'),
    })}`);
  });
  return form;
}
