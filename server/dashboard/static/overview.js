// Overview: one row per queue with its jobs by state, sparklines of the
// last minute's throughput and enqueue-to-start latency, pause and resume;
// a row opens to the full charts. A filter box narrows many queues.
import { api, request, offers, can, enc, ApiError } from './api.js';
import { h, replace, num, rate, ms, notice, confirm, time, plural } from './dom.js';
import { lineChart, sparkline, legend, recent, latest, colors } from './chart.js';
import { liveTable, filterInHash } from './livetable.js';

export const STATES = ['pending', 'scheduled', 'waiting', 'active', 'retrying', 'completed', 'failed', 'cancelled', 'blocked'];

// STATE_EVENTS are the events that move a job between states: the
// counts follow them as they come (progress reports move none).
export const STATE_EVENTS = 'job.enqueued,job.started,job.completed,job.failed,job.cancelled,group.completed';

const NO_SERIES = { started: [], finished: [], failed: [], latency_p50_ms: [], latency_p99_ms: [] };

export default {
  mount(root, route, ctx) {
    const info = h('div');
    const details = new Map();
    const table = liveTable({
      id: 'queues', caption: 'Queues', keyAttr: 'queue', noun: ['queue', 'queues'],
      columns: columns(ctx, details),
      sort: { key: 'queue', dir: 1 },
      filter: { label: 'Filter queues', value: route.query.get('filter') || '', onChange: filterInHash('overview') },
      empty: 'No jobs yet. Enqueue one with POST /v1/jobs, or `sluice job enqueue`.',
      rowAttrs: (d) => ({ 'data-paused': d.stats && d.stats.paused_until ? 'true' : null }),
      detail: (name) => {
        const d = queueCharts(name);
        details.set(name, d);
        return d;
      },
    });
    root.append(
      h('h1', { tabindex: '-1' }, 'Overview'),
      h('p', { class: 'hint' }, `Jobs by state per queue, and what this server handed out in the last minute. Updates every ${ctx.every / 1000} s. `,
        'Select a count to list those jobs, or the arrow before a queue\'s name for its full charts.'),
      info, table.el);

    async function update() {
      const [stats, act] = await Promise.all([
        api('/v1/queues/stats').catch((e) => e),
        api('/v1/activity/queues').catch(() => null),
      ]);
      if (stats instanceof ApiError) {
        if (stats.status === 503 || stats.status === 403) {
          replace(info, h('p', { class: 'note warn' }, `Queue counts are not available: ${stats.status} ${stats.message}`));
        } else throw stats;
      } else replace(info);
      const secs = act ? Math.round((act.interval_ms * ((act.queues[0] && act.queues[0].series.started.length) || 60)) / 1000) : 60;
      const queues = new Map();
      for (const s of (stats instanceof ApiError ? [] : stats.queues)) queues.set(s.queue, { stats: s, secs });
      for (const a of (act ? act.queues : [])) queues.set(a.queue, { secs, ...(queues.get(a.queue) || {}), act: a });
      table.update([...queues].map(([key, data]) => ({ key, data })));
    }
    // Counts follow the event stream; the charts keep their regular samples.
    return { title: 'Overview', update, events: { type: STATE_EVENTS } };
  },
};

function columns(ctx, details) {
  const count = (st) => ({
    key: st, label: st[0].toUpperCase() + st.slice(1), num: true,
    value: (d) => (d.stats ? d.stats.counts[st] || 0 : 0),
    cell: (name) => {
      const a = h('a', { href: `#/jobs?queue=${enc(name)}&state=${st}`, class: 'count', 'data-state': st }, '0');
      return {
        nodes: a,
        set(d) {
          const v = d.stats ? d.stats.counts[st] || 0 : 0;
          const t = num(v);
          if (a.textContent !== t) a.textContent = t;
          a.classList.toggle('zero', !v);
          a.setAttribute('aria-label', `${plural(v, `${st} job`)} in ${name}`);
        },
      };
    },
  });
  return [
    { key: 'queue', label: 'Queue', value: (d, name) => name, cell: (name) => queueCell(name, details) },
    ...STATES.map(count),
    {
      key: 'throughput', label: 'Started /s', num: true, value: (d) => recent(series(d).started),
      cell: (name) => sparkCell((d) => {
        const s = series(d);
        const lines = [ // drawn in this order: started on top
          { name: 'failed/s', values: s.failed, color: colors.c3, dashed: true },
          { name: 'finished/s', values: s.finished, color: colors.c5 },
          { name: 'started/s', values: s.started, color: colors.c1 },
        ];
        return [sparkline({ label: `Jobs started, finished and failed per second in ${name}, last ${d.secs} s`, series: lines, unit: '/s' }),
          rate(recent(s.started))];
      }),
    },
    {
      key: 'latency', label: 'Latency p99', num: true, value: (d) => latest(series(d).latency_p99_ms) ?? -1,
      cell: (name) => sparkCell((d) => {
        const s = series(d);
        const lines = [
          { name: 'p50', values: s.latency_p50_ms, color: colors.c1 },
          { name: 'p99', values: s.latency_p99_ms, color: colors.c2 },
        ];
        return [sparkline({ label: `Enqueue-to-start latency in ${name}, last ${d.secs} s`, series: lines, unit: ' ms' }),
          ms(latest(s.latency_p99_ms))];
      }),
    },
    { key: 'actions', label: 'Actions', sortable: false, cell: (name) => actionsCell(name, ctx) },
  ];
}

const series = (d) => (d.act ? d.act.series : NO_SERIES);

// queueCell is the queue's name (a link to its jobs) with a toggle for
// its full charts, how many jobs it stores, and its pause.
function queueCell(name, details) {
  const paused = h('span', { class: 'paused', hidden: true });
  const total = h('span', { class: 'hint total', title: 'Jobs stored in this queue' });
  const toggle = h('button', { type: 'button', class: 'disclose', 'data-action': 'charts', 'aria-expanded': 'false', 'aria-label': `Charts of queue ${name}`, title: 'Show the full charts' });
  toggle.addEventListener('click', () => {
    const d = details.get(name);
    toggle.setAttribute('aria-expanded', String(d.toggle()));
    toggle.setAttribute('aria-controls', d.tr.id);
  });
  return {
    nodes: [toggle, h('a', { href: `#/jobs?queue=${enc(name)}`, class: 'name', title: `List the jobs of ${name}` }, name), ' ', total, paused],
    set(d) {
      const t = d.stats ? plural(d.stats.total, 'job') : 'no jobs';
      if (total.textContent !== t) total.textContent = t;
      showPaused(paused, d.stats ? d.stats.paused_until : null);
    },
  };
}

// sparkCell redraws a sparkline and its figure at every update.
function sparkCell(draw) {
  const box = h('span', { class: 'spark-cell' });
  return { nodes: box, set(d) { const [svg, text] = draw(d); replace(box, svg, h('span', { class: 'spark-n' }, text)); } };
}

function actionsCell(name, ctx) {
  const box = h('span', { class: 'actions' });
  let pause = null;
  return {
    nodes: box,
    set(d) {
      if (!pause && can('admin') && (offers('POST', '/v1/queues/{queue}/pause') || offers('POST', '/v1/queues/{queue}/resume'))) {
        pause = pauseButton(name, ctx);
        box.append(pause.el);
      }
      if (pause) pause.set(d.stats ? d.stats.paused_until : null);
    },
  };
}

let chartIds = 0;

// queueCharts is the row under a queue with its two full charts, drawn
// only while it is open.
function queueCharts(name) {
  const thru = h('figure', { class: 'chart' });
  const lat = h('figure', { class: 'chart' });
  const cell = h('td', { colspan: STATES.length + 4 }, h('div', { class: 'charts' }, thru, lat));
  const tr = h('tr', { class: 'detail', id: `charts-${++chartIds}`, hidden: true, 'data-charts': name }, cell);
  let open = false;
  let last = null;

  function draw() {
    if (!open || !last) return;
    const s = series(last);
    const secs = last.secs;
    const tp = [
      { name: 'started/s', values: s.started, color: colors.c1, now: recent(s.started) },
      { name: 'finished/s', values: s.finished, color: colors.c5, now: recent(s.finished) },
      { name: 'failed/s', values: s.failed, color: colors.c3, dashed: true, now: recent(s.failed) },
    ];
    replace(thru, h('figcaption', {}, `Jobs started and finished per second in ${name}`),
      lineChart({ label: `Jobs started and finished per second in ${name}, last ${secs} s`, series: tp, seconds: secs, unit: '/s' }),
      legend(tp, (v) => `${rate(v)} (10 s avg)`));
    const lt = [
      { name: 'p50', values: s.latency_p50_ms, color: colors.c1, now: latest(s.latency_p50_ms) },
      { name: 'p99', values: s.latency_p99_ms, color: colors.c2, now: latest(s.latency_p99_ms) },
    ];
    replace(lat, h('figcaption', {}, `Enqueue-to-start latency in ${name} (ms, trailing 10 s)`),
      lineChart({ label: `Enqueue-to-start latency in ${name}, last ${secs} s`, series: lt, seconds: secs, unit: ' ms' }),
      legend(lt, ms));
  }
  return {
    tr,
    open: () => open,
    set(d) { last = d; draw(); },
    toggle() {
      open = !open;
      tr.hidden = !open;
      draw();
      return open;
    },
  };
}

// A pause this far off was asked for "until resumed" (the server pauses
// for a hundred years then).
const INDEFINITE_MS = 50 * 365 * 24 * 3600 * 1000;

function showPaused(el, until) {
  el.hidden = !until;
  if (!until) { replace(el); return; }
  const forever = Date.parse(until) - Date.now() > INDEFINITE_MS;
  replace(el, h('span', { class: 'badge s-waiting', 'data-paused': 'true' }, 'paused'), ' ',
    forever ? 'until resumed' : ['resumes ', time(until)]);
}

function pauseButton(name, ctx) {
  const el = h('button', { type: 'button', class: 'quiet small', 'data-action': 'pause' }, 'Pause');
  let paused = false;
  el.addEventListener('click', async () => {
    const verb = paused ? 'resume' : 'pause';
    if (!offers('POST', `/v1/queues/{queue}/${verb}`)) return;
    const v = await confirm({
      title: `${paused ? 'Resume' : 'Pause'} queue ${name}?`,
      message: paused
        ? 'Workers will lease its jobs again at once.'
        : 'Workers stop leasing its jobs; running jobs finish. Leave the minutes empty to pause until you resume it.',
      ok: paused ? 'Resume' : 'Pause',
      danger: !paused,
      fields: paused ? [] : [{ name: 'minutes', label: 'Pause for (minutes, optional)', type: 'number', min: 1 }],
    });
    if (!v) return;
    const minutes = Number(v.minutes || 0);
    const body = minutes > 0 ? { duration_ms: Math.round(minutes * 60000) } : undefined;
    const r = await request(`/v1/queues/${enc(name)}/${verb}`, { method: 'POST', body });
    let text = `Could not ${verb} ${name}: ${r.status} ${(r.data && r.data.detail) || ''}`;
    if (r.ok) {
      text = !r.data.paused ? `Queue ${name} resumed.`
        : Date.parse(r.data.paused_until) - Date.now() > INDEFINITE_MS ? `Queue ${name} paused until resumed.`
          : `Queue ${name} paused until ${new Date(r.data.paused_until).toLocaleString()}.`;
    }
    notice(r.ok ? 'ok' : 'error', text);
    ctx.refresh();
  });
  return {
    el,
    set(until) {
      paused = !!until;
      const label = paused ? 'Resume' : 'Pause';
      if (el.textContent !== label) el.textContent = label;
      el.setAttribute('aria-label', `${label} queue ${name}`);
      el.disabled = !offers('POST', `/v1/queues/{queue}/${paused ? 'resume' : 'pause'}`);
    },
  };
}
