// Tenants: live jobs per tenant (active vs limit, waiting, pending),
// busiest first, sortable. Across every queue the rows come from
// GET /v1/tenants (counts and limits together, from the scheduler); for
// one queue, and on a server whose job store cannot list tenants, counts
// come from GET /v1/queues/counts and limits from the tenant API.
import { api, request, available, offers, enc, q } from './api.js';
import { h, replace, num, plural, table, sortRows, bar, notice, confirm, unlimited, toNumber, exactInt } from './dom.js';

const LIVE = 'scheduled,pending,waiting,active,retrying';
const PER_TENANT_LOOKUPS = 25; // GET /v1/tenants/{t} calls per refresh, at most
const TENANT_PAGE = 1000; // tenants read from GET /v1/tenants per refresh

// BUSY is the default order, busiest first: most active, then most
// waiting or pending. It sorts but is not shown as a column.
const BUSY = { key: 'busy', value: (r) => r.active * 1e9 + (r.waiting + r.pending) * 1e3 + r.later };

export default {
  mount(root, route, ctx) {
    const queue = route.query.get('queue') || '';
    let sort = { key: 'busy', dir: -1 };
    let last = null;
    const note = h('div');
    const out = h('div');
    const pick = h('select', { id: 'tenant-queue', name: 'queue' }, h('option', { value: '' }, 'All queues'));
    pick.addEventListener('change', () => ctx.navigate(`#/tenants${q({ queue: pick.value })}`));
    root.append(
      h('h1', { tabindex: '-1' }, 'Tenants'),
      h('p', { class: 'hint' }, 'Unfinished jobs per tenant, busiest first (most active, then most pending or waiting). Select a column to sort.'),
      h('div', { class: 'form-row' }, h('div', { class: 'field' }, h('label', { for: 'tenant-queue' }, 'Queue'), pick)),
      h('p'), note, out);
    api('/v1/queues/stats').then((s) => {
      for (const x of s.queues) pick.append(h('option', { value: x.queue, selected: x.queue === queue }, x.queue));
    }).catch(() => {});

    const onSort = (key) => {
      sort = { key, dir: sort.key === key ? -sort.dir : (key === 'tenant' ? 1 : -1) };
      render();
    };

    function render() {
      if (!last) return;
      const { rows, limitsOn } = last;
      const cols = columns(limitsOn, ctx);
      const sorted = sortRows(rows, [...cols, BUSY], sort);
      replace(out, table({
        id: 'tenants', caption: queue ? `Tenants in queue ${queue}` : 'Tenants in every queue', columns: cols, rows: sorted, sort, onSort,
        rowAttrs: (r) => ({ 'data-tenant': r.tenant }), empty: 'No unfinished jobs.',
      }));
      if (last.truncated) out.append(h('p', { class: 'note warn' }, `Stopped counting at its bound, after ${plural(last.scanned, 'unfinished job')}: each number is at least what is shown.`));
      if (last.more) out.append(h('p', { class: 'note', id: 'tenants-more' }, `Showing the ${plural(rows.length, 'busiest tenant')}.`));
    }

    async function update() {
      const listed = queue ? null : await listTenants();
      if (listed) {
        replace(note);
        last = { rows: listed.rows, limitsOn: true, more: listed.more };
        render();
        return;
      }
      const counts = await api(`/v1/queues/counts${q({ by: 'tenant', state: LIVE, queue })}`);
      const rows = counts.rows.map((r) => ({
        tenant: r.key,
        active: r.counts.active || 0,
        waiting: r.counts.waiting || 0,
        pending: r.counts.pending || 0,
        later: (r.counts.scheduled || 0) + (r.counts.retrying || 0),
        total: r.total,
        limit: null,
      }));
      const limitsOn = await fillLimits(rows, note);
      last = { rows, limitsOn, truncated: counts.truncated, scanned: counts.scanned };
      render();
    }
    return { title: 'Tenants', update };
  },
};

// listTenants reads the busiest tenants from GET /v1/tenants, with the
// scheduler's own counts and limits; null when the server cannot list
// tenants (its job store lacks it: 501).
async function listTenants() {
  if (!offers('GET', '/v1/tenants')) return null;
  const r = await tenantPage();
  if (!r) return null;
  const rows = r.tenants.map((t) => {
    const j = t.jobs || {};
    const row = {
      tenant: t.tenant,
      active: j.active || 0,
      waiting: j.waiting || 0,
      pending: j.pending || 0,
      later: (j.scheduled || 0) + (j.retrying || 0),
      limit: null,
    };
    row.total = row.active + row.waiting + row.pending + row.later;
    merge(row, t);
    return row;
  });
  return { rows, more: !!r.next };
}

// tenantPage is the first page of GET /v1/tenants, busiest first, or null.
async function tenantPage() {
  const probe = await available('tenant-list', '/v1/tenants?limit=1');
  if (!probe.ok) return null;
  const r = await request(`/v1/tenants${q({ order: 'busiest', limit: TENANT_PAGE })}`);
  return r.ok && r.data && Array.isArray(r.data.tenants) ? r.data : null;
}

// fillLimits adds each tenant's limit from the tenant API when the server
// has one, and says plainly when it does not.
async function fillLimits(rows, note) {
  const named = rows.filter((r) => r.tenant);
  if (offers('GET', '/v1/tenants')) {
    const page = await tenantPage();
    if (page) {
      const byName = new Map(page.tenants.map((t) => [t.tenant, t]));
      for (const row of named) {
        const t = byName.get(row.tenant);
        if (t) row.limit = limitOf(t);
      }
      replace(note);
      return true;
    }
  }
  if (!named.length) { replace(note); return false; }
  const probe = await available('tenant', `/v1/tenants/${enc(named[0].tenant)}`);
  if (!probe.ok) {
    replace(note, h('p', { class: 'note', id: 'tenant-limits-note' },
      `Tenant limits are not available on this server: GET /v1/tenants/{tenant} answers ${probe.status}${probe.detail ? ` (${probe.detail})` : ''}. `,
      'The counts below come from the job list; limits and changing them appear here once the server offers them.'));
    return false;
  }
  replace(note);
  const look = named.slice(0, PER_TENANT_LOOKUPS);
  const infos = await Promise.all(look.map((row) => request(`/v1/tenants/${enc(row.tenant)}`).catch(() => null)));
  look.forEach((row, i) => { if (infos[i] && infos[i].ok) merge(row, infos[i].data); });
  return true;
}

// merge takes a tenant document of the API (GET /v1/tenants/{tenant},
// or one row of GET /v1/tenants): its limit, and its active and waiting
// counts, which are the scheduler's own.
function merge(row, t) {
  if (!t) return;
  row.limit = limitOf(t);
  const j = t.jobs || {};
  if (typeof j.active === 'number') row.active = j.active;
  if (typeof j.waiting === 'number') row.waiting = j.waiting;
}

// limitOf is the limit in force: a positive number, or 0 for none (the
// API's -1, or a limit no tenant can reach, such as MaxInt64). A limit
// beyond 2^53 stays a BigInt, shown exactly.
function limitOf(t) {
  const lim = t.effective ? t.effective.limit : undefined;
  if (unlimited(lim)) return 0;
  if (typeof lim === 'bigint') return lim;
  return typeof lim === 'number' ? Math.max(lim, 0) : null;
}

function columns(limitsOn, ctx) {
  const cols = [
    { key: 'tenant', label: 'Tenant', render: (r) => (r.tenant ? h('a', { href: `#/jobs${q({ tenant: r.tenant })}` }, r.tenant) : h('span', { class: 'hint' }, '(no tenant)')) },
    { key: 'active', label: 'Active', num: true, render: (r) => num(r.active) },
    { key: 'limit', label: 'Limit', num: true, value: (r) => r.limit ?? -1, render: (r) => (r.limit === null ? (limitsOn ? 'none' : 'n/a') : r.limit === 0 ? 'none' : num(r.limit)) },
    { key: 'usage', label: 'Active vs limit', value: (r) => (r.limit ? r.active / Number(r.limit) : -1), render: usage },
    { key: 'waiting', label: 'Waiting', num: true, render: (r) => num(r.waiting) },
    { key: 'pending', label: 'Pending', num: true, render: (r) => num(r.pending) },
    { key: 'later', label: 'Scheduled / retrying', num: true, render: (r) => num(r.later) },
    { key: 'total', label: 'Unfinished', num: true, render: (r) => num(r.total) },
  ];
  const canSet = limitsOn && offers('PUT', '/v1/tenants/{tenant}/limit');
  cols.push({
    key: 'actions', label: 'Actions', sortable: false,
    render: (r) => (r.tenant
      ? h('button', { type: 'button', class: 'quiet', disabled: !canSet, title: canSet ? null : 'This server cannot change tenant limits yet', onclick: () => setLimit(r, ctx) }, 'Change limit')
      : ''),
  });
  return cols;
}

function usage(r) {
  if (!r.limit) return h('span', { class: 'hint' }, r.limit === 0 ? 'no limit' : '–');
  return bar([{ cls: r.active > r.limit ? 'over' : 'used', value: Math.min(r.active, toNumber(r.limit)), label: 'active' }], r.limit,
    `${num(r.active)} of ${num(r.limit)} active`);
}

async function setLimit(row, ctx) {
  const v = await confirm({
    title: `Change the limit of ${row.tenant}?`,
    message: 'How many of this tenant\'s jobs may run at once (0 means no limit). Applies to new starts at once.',
    ok: 'Change limit',
    fields: [{ name: 'concurrency', label: 'Concurrency', type: 'number', min: 0, value: row.limit ?? '', required: true }],
  });
  if (!v) return;
  const n = exactInt(v.concurrency);
  const r = await request(`/v1/tenants/${enc(row.tenant)}/limit`, { method: 'PUT', body: { concurrency: n } });
  notice(r.ok ? 'ok' : 'error', r.ok ? `Limit of ${row.tenant} set to ${n}.` : `Could not change the limit of ${row.tenant}: ${r.status} ${(r.data && r.data.detail) || ''}`);
  ctx.refresh();
}
