// Schedules: each recurring job with its timing, next tick and last run
// (job and state); pause, resume and run now when the server offers them.
import { api, request, offers, enc } from './api.js';
import { h, replace, table, sortRows, notice, confirm } from './dom.js';

export default {
  mount(root, route, ctx) {
    let sort = { key: 'name', dir: 1 };
    let last = null;
    const out = h('div');
    root.append(
      h('h1', { tabindex: '-1' }, 'Schedules'),
      h('p', { class: 'hint' }, 'Jobs enqueued on a cron expression or an interval, one job per tick however many servers run. Schedules from the config file (source "config") are changed there; any schedule can be paused, resumed or run now.'),
      out);
    const onSort = (key) => { sort = { key, dir: sort.key === key ? -sort.dir : 1 }; render(); };

    function render() {
      if (!last) return;
      const cols = columns(ctx);
      replace(out, table({
        id: 'schedules', caption: 'Schedules', columns: cols, rows: sortRows(last, cols, sort), sort, onSort,
        rowAttrs: (r) => ({ 'data-schedule': r.name }),
        empty: 'No schedules yet. Add one under schedules: in the config file, with PUT /v1/schedules/{name} or sluice schedule set.',
      }));
    }

    async function update() {
      const body = await api('/v1/schedules');
      last = body.schedules;
      render();
    }
    return { title: 'Schedules', update };
  },
};

function when(r) {
  let w = r.cron || `every ${duration(r.every_ms)}`;
  if (r.time_zone && r.time_zone !== 'UTC') w += ` (${r.time_zone})`;
  return w;
}

function duration(ms) {
  if (ms % 3600000 === 0) return `${ms / 3600000}h`;
  if (ms % 60000 === 0) return `${ms / 60000}m`;
  return `${ms / 1000}s`;
}

function time(t) { return t ? new Date(t).toLocaleString() : '—'; }

function lastRun(r) {
  const run = r.last_run;
  if (!run) return h('span', { class: 'hint' }, 'never');
  const state = run.state || 'cleaned up';
  return h('span', {}, h('a', { href: `#/job/${enc(run.job_id)}` }, time(run.at)), ' ',
    h('span', { class: `badge s-${state}` }, state));
}

function columns(ctx) {
  const canPause = offers('POST', '/v1/schedules/{name}/pause');
  const canTrigger = offers('POST', '/v1/schedules/{name}/trigger');
  return [
    { key: 'name', label: 'Schedule', render: (r) => r.name },
    { key: 'when', label: 'When', value: when, render: when },
    { key: 'job', label: 'Job', value: (r) => `${r.job.queue}/${r.job.kind}`, render: (r) => `${r.job.queue} / ${r.job.kind}` },
    { key: 'source', label: 'Source', render: (r) => r.source },
    {
      key: 'next', label: 'Next run', value: (r) => (r.paused ? '~' : (r.next[0] || '')),
      render: (r) => (r.paused ? h('span', { class: 'badge s-waiting' }, 'paused') : time(r.next[0])),
    },
    { key: 'last', label: 'Last run', value: (r) => (r.last_run ? r.last_run.at : ''), render: lastRun },
    {
      key: 'actions', label: 'Actions', sortable: false,
      render: (r) => h('span', { class: 'actions' },
        h('button', {
          type: 'button', class: 'quiet', disabled: !canPause, 'data-action': r.paused ? 'resume' : 'pause',
          onclick: () => act(r, r.paused ? 'resume' : 'pause', ctx),
        }, r.paused ? 'Resume' : 'Pause'),
        ' ',
        h('button', { type: 'button', class: 'quiet', disabled: !canTrigger, 'data-action': 'trigger', onclick: () => trigger(r, ctx) }, 'Run now')),
    },
  ];
}

async function act(r, what, ctx) {
  const res = await request(`/v1/schedules/${enc(r.name)}/${what}`, { method: 'POST' });
  notice(res.ok ? 'ok' : 'error', res.ok ? `Schedule ${r.name} ${what === 'pause' ? 'paused' : 'resumed'}.`
    : `Could not ${what} ${r.name}: ${res.status} ${(res.data && res.data.detail) || ''}`);
  ctx.refresh();
}

async function trigger(r, ctx) {
  const ok = await confirm({ title: `Run ${r.name} now?`, message: `One ${r.job.kind} job is enqueued on ${r.job.queue} at once, outside the schedule's ticks.`, ok: 'Run now' });
  if (!ok) return;
  const res = await request(`/v1/schedules/${enc(r.name)}/trigger`, { method: 'POST' });
  notice(res.ok ? 'ok' : 'error', res.ok ? `Enqueued job ${res.data.job.id}.` : `Could not run ${r.name}: ${res.status} ${(res.data && res.data.detail) || ''}`);
  ctx.refresh();
}
