// Groups: progress of each job group (completed / failed / remaining)
// counted from the job list; cancel a group when the server offers it.
import { api, request, available, offers, enc, q } from './api.js';
import { h, replace, num, plural, table, sortRows, bar, notice, confirm } from './dom.js';

export default {
  mount(root, route, ctx) {
    let sort = { key: 'progress', dir: 1 };
    let last = null;
    const note = h('div');
    const out = h('div');
    root.append(
      h('h1', { tabindex: '-1' }, 'Groups'),
      h('p', { class: 'hint' }, 'Jobs that share a group, such as the pages of one crawl: how many are done, failed or still to run. Finished jobs count until the cleaner removes them (queues.retention).'),
      note, out);
    const onSort = (key) => { sort = { key, dir: sort.key === key ? -sort.dir : 1 }; render(); };

    function render() {
      if (!last) return;
      const cols = columns(last.groupsOn, ctx);
      replace(out, table({
        id: 'groups', caption: 'Groups', columns: cols, rows: sortRows(last.rows, cols, sort), sort, onSort,
        rowAttrs: (r) => ({ 'data-group': r.group }), empty: 'No jobs with a group yet. Enqueue jobs with "group": "name".',
      }));
      if (last.truncated) out.append(h('p', { class: 'note warn' }, `Stopped counting at its bound, after ${plural(last.scanned, 'job')}: each number is at least what is shown.`));
    }

    async function update() {
      const counts = await api('/v1/queues/counts?by=group');
      const rows = counts.rows.filter((r) => r.key).map((r) => {
        const c = r.counts;
        const done = (c.completed || 0) + (c.failed || 0) + (c.cancelled || 0);
        return {
          group: r.key, completed: c.completed || 0, failed: c.failed || 0, cancelled: c.cancelled || 0,
          active: c.active || 0, remaining: r.total - done, total: r.total,
        };
      });
      let groupsOn = false;
      if (rows.length) {
        const probe = await available('group', `/v1/groups/${enc(rows[0].group)}`);
        groupsOn = probe.ok;
        replace(note, probe.ok ? null : h('p', { class: 'note', id: 'groups-note' },
          `The groups API is not available on this server: GET /v1/groups/{group} answers ${probe.status}${probe.detail ? ` (${probe.detail})` : ''}. `,
          'Progress below is counted from the job list; cancelling a whole group appears once the server offers it.'));
      } else replace(note);
      last = { rows, groupsOn, truncated: counts.truncated, scanned: counts.scanned };
      render();
    }
    return { title: 'Groups', update };
  },
};

function columns(groupsOn, ctx) {
  const canCancel = groupsOn && offers('POST', '/v1/groups/{group}/cancel');
  return [
    { key: 'group', label: 'Group', render: (r) => h('a', { href: `#/jobs${q({ group: r.group })}` }, r.group) },
    { key: 'progress', label: 'Progress', value: (r) => (r.total ? (r.total - r.remaining) / r.total : 0), render: progress },
    { key: 'completed', label: 'Completed', num: true, render: (r) => num(r.completed) },
    { key: 'failed', label: 'Failed', num: true, render: (r) => num(r.failed) },
    { key: 'cancelled', label: 'Cancelled', num: true, render: (r) => num(r.cancelled) },
    { key: 'remaining', label: 'Remaining', num: true, render: (r) => num(r.remaining) },
    { key: 'total', label: 'Total', num: true, render: (r) => num(r.total) },
    { key: 'state', label: 'State', value: (r) => (r.remaining ? 0 : 1), render: stateOf },
    {
      key: 'actions', label: 'Actions', sortable: false,
      render: (r) => h('button', {
        type: 'button', class: 'quiet', disabled: !canCancel || !r.remaining,
        title: canCancel ? null : 'This server cannot cancel groups yet', onclick: () => cancelGroup(r, ctx),
      }, 'Cancel group'),
    },
  ];
}

function progress(r) {
  const done = r.total - r.remaining;
  return h('div', {},
    bar([
      { cls: 'completed', value: r.completed, label: 'completed' },
      { cls: 'failed', value: r.failed, label: 'failed' },
      { cls: 'cancelled', value: r.cancelled, label: 'cancelled' },
    ], r.total, `${done} of ${r.total} done: ${r.completed} completed, ${r.failed} failed, ${r.cancelled} cancelled, ${r.remaining} remaining`),
    h('span', { class: 'bar-legend' }, `${Math.floor((100 * done) / (r.total || 1))}% done`));
}

function stateOf(r) {
  if (r.remaining) return h('span', { class: `badge ${r.active ? 's-active' : 's-pending'}` }, r.active ? 'running' : 'queued');
  return r.failed ? h('span', { class: 'badge bad' }, 'done with failures') : h('span', { class: 'badge ok' }, 'complete');
}

async function cancelGroup(r, ctx) {
  const ok = await confirm({
    title: `Cancel group ${r.group}?`,
    message: `Its ${plural(r.remaining, 'unfinished job')} will not run; running ones are asked to stop.`,
    ok: 'Cancel group', danger: true,
  });
  if (!ok) return;
  const res = await request(`/v1/groups/${enc(r.group)}/cancel`, { method: 'POST' });
  notice(res.ok ? 'ok' : 'error', res.ok ? `Group ${r.group} cancelled.` : `Could not cancel group ${r.group}: ${res.status} ${(res.data && res.data.detail) || ''}`);
  ctx.refresh();
}
