// Overview: per queue, jobs by state and live charts of throughput and
// enqueue-to-start latency.
import { api, request, offers, can, enc, ApiError } from './api.js';
import { h, replace, num, rate, ms, notice, confirm, time } from './dom.js';
import { lineChart, legend, recent, latest, colors } from './chart.js';

export const STATES = ['pending', 'scheduled', 'waiting', 'active', 'retrying', 'completed', 'failed', 'cancelled'];

export default {
  mount(root, route, ctx) {
    const list = h('div', { id: 'queues', class: 'queues' });
    const info = h('div');
    root.append(
      h('h1', { tabindex: '-1' }, 'Overview'),
      h('p', { class: 'hint' }, `Jobs by state per queue, and what this server handed out in the last minute. Updates every ${ctx.every / 1000} s.`),
      info, list);
    const cards = new Map();

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
      const queues = new Map();
      for (const s of (stats instanceof ApiError ? [] : stats.queues)) queues.set(s.queue, { stats: s });
      for (const a of (act ? act.queues : [])) queues.set(a.queue, { ...(queues.get(a.queue) || {}), act: a });
      if (!queues.size) {
        replace(list, h('p', { class: 'empty' }, 'No jobs yet. Enqueue one with POST /v1/jobs, or `sluice job enqueue`.'));
        cards.clear();
        return;
      }
      if (!cards.size) replace(list);
      for (const [name, data] of [...queues].sort((a, b) => a[0].localeCompare(b[0]))) {
        let card = cards.get(name);
        if (!card) {
          card = queueCard(name, cards.size, ctx);
          cards.set(name, card);
          list.append(card.el);
        }
        card.update(data, act);
      }
    }
    return { title: 'Overview', update };
  },
};

function queueCard(name, i, ctx) {
  const id = `q-${i}`;
  const total = h('span', { class: 'hint' });
  const paused = h('span', { class: 'paused', hidden: true });
  const actions = h('div', { class: 'actions' },
    h('a', { href: `#/jobs?queue=${enc(name)}` }, 'List jobs'));
  const tiles = new Map();
  const tileBox = h('div', { class: 'tiles' }, STATES.map((st) => {
    const n = h('span', { class: 'n' }, '0');
    tiles.set(st, n);
    return h('a', { class: 'tile', 'data-state': st, href: `#/jobs?queue=${enc(name)}&state=${st}`, 'aria-label': `${st} jobs in ${name}` },
      n, h('span', { class: 'label' }, st));
  }));
  const thru = h('figure', { class: 'chart' }, h('figcaption', {}, 'Jobs started and finished per second'));
  const lat = h('figure', { class: 'chart' }, h('figcaption', {}, 'Enqueue-to-start latency'));
  const el = h('section', { class: 'panel', 'data-queue': name, 'aria-labelledby': id },
    h('header', {}, h('div', { class: 'title' }, h('h2', { id }, `Queue ${name}`), paused), total, actions),
    h('div', { class: 'queue-body' }, tileBox, h('div', { class: 'charts' }, thru, lat)));
  let pause = null;

  function update({ stats, act }, report) {
    let sum = 0;
    for (const st of STATES) {
      const v = stats ? stats.counts[st] || 0 : 0;
      sum += v;
      tiles.get(st).textContent = num(v);
    }
    total.textContent = stats ? `${num(sum)} jobs stored` : 'no stored jobs';
    const until = stats ? stats.paused_until : null;
    showPaused(paused, until);
    if (!pause && can('admin') && (offers('POST', '/v1/queues/{queue}/pause') || offers('POST', '/v1/queues/{queue}/resume'))) {
      pause = pauseButton(name, ctx);
      actions.append(pause.el);
    }
    if (pause) pause.set(until);
    const secs = report ? Math.round((report.interval_ms * (act ? act.series.started.length : 60)) / 1000) : 60;
    const s = act ? act.series : { started: [], finished: [], failed: [], latency_p50_ms: [], latency_p99_ms: [] };
    const tp = [
      { name: 'started/s', values: s.started, color: colors.c1, now: recent(s.started) },
      { name: 'finished/s', values: s.finished, color: colors.c5, now: recent(s.finished) },
      { name: 'failed/s', values: s.failed, color: colors.c3, dashed: true, now: recent(s.failed) },
    ];
    replace(thru, h('figcaption', {}, 'Jobs started and finished per second'),
      lineChart({ label: `Jobs started and finished per second in ${name}, last ${secs} s`, series: tp, seconds: secs, unit: '/s' }),
      legend(tp, (v) => `${rate(v)} (10 s avg)`));
    const lt = [
      { name: 'p50', values: s.latency_p50_ms, color: colors.c1, now: latest(s.latency_p50_ms) },
      { name: 'p99', values: s.latency_p99_ms, color: colors.c2, now: latest(s.latency_p99_ms) },
    ];
    replace(lat, h('figcaption', {}, 'Enqueue-to-start latency (ms, trailing 10 s)'),
      lineChart({ label: `Enqueue-to-start latency in ${name}, last ${secs} s`, series: lt, seconds: secs, unit: ' ms' }),
      legend(lt, ms));
  }
  return { el, update };
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
  const el = h('button', { type: 'button', class: 'quiet', 'data-action': 'pause' }, 'Pause');
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
      el.textContent = paused ? 'Resume' : 'Pause';
      el.setAttribute('aria-label', `${paused ? 'Resume' : 'Pause'} queue ${name}`);
      el.disabled = !offers('POST', `/v1/queues/{queue}/${paused ? 'resume' : 'pause'}`);
    },
  };
}
