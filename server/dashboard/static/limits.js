// Rate limits: one row per scene and policy, grouped by scene: allowed
// vs denied per second as a sparkline, denials, shadow denials, store
// errors and failure-mode answers over the last minute; a filter box
// narrows many policies; a form to try a decision.
import { api, request, enc, ApiError } from './api.js';
import { h, replace, num, rate, kv, plus, limitNum, unlimited, exactInt } from './dom.js';
import { sparkline, recent, colors } from './chart.js';
import { liveTable, filterInHash } from './livetable.js';

const NO_SERIES = { allowed: [], denied: [], shadow_denied: [], store_errors: [], failure_mode: [] };

export default {
  mount(root, route, ctx) {
    const note = h('div');
    const list = h('div', { id: 'scenes' });
    const tryBox = h('section', { class: 'panel', id: 'try', 'aria-labelledby': 'try-title' });
    root.append(
      h('h1', { tabindex: '-1' }, 'Rate limits'),
      h('p', { class: 'hint' }, 'Decisions this server made in the last minute, per scene and policy; per-second figures average the last 10 seconds. Totals count since it started. ',
        h('a', { href: '#try', onclick: (ev) => { ev.preventDefault(); document.getElementById('try-scene')?.focus(); } }, 'Try a decision')),
      note, h('aside', { 'aria-label': 'Try a decision' }, tryBox), list);
    let scenes = null;
    let table = null;

    async function update() {
      if (!scenes) {
        try {
          scenes = (await api('/v1/limits')).scenes;
        } catch (err) {
          if (err instanceof ApiError && err.status === 403) {
            replace(note, h('p', { class: 'note warn' }, `This token cannot read rate limits: ${err.message}`));
            return;
          }
          throw err;
        }
        tryForm(tryBox, scenes, ctx);
        table = policyTable(scenes, route);
        replace(list, table.el);
      }
      const act = await api('/v1/activity/limits');
      const byKey = new Map(act.policies.map((p) => [`${p.scene}/${p.policy}`, p]));
      const secs = Math.round((act.interval_ms * ((act.policies[0] && act.policies[0].series.allowed.length) || 60)) / 1000);
      table.update(scenes.flatMap((sc) => sc.policies.map((p) => {
        const key = `${sc.name}/${p.name}`;
        return { key, group: sc.name, data: { sc, p, a: byKey.get(key), secs } };
      })));
    }
    return { title: 'Rate limits', update };
  },
};

function policyTable(scenes, route) {
  const byName = new Map(scenes.map((sc) => [sc.name, sc]));
  const w = (d) => (d.a ? d.a.window : {});
  const failures = (d) => plus(w(d).failure_open, w(d).failure_closed);
  const stat = (key, label, value, alert) => ({
    key, label, num: true, value,
    cell: () => {
      const span = h('span', { class: 'n' });
      return {
        nodes: span,
        set(d) {
          const v = value(d);
          const t = typeof v === 'string' ? v : num(v);
          if (span.textContent !== t) span.textContent = t;
          span.parentElement.dataset.alert = alert && v > 0 ? 'true' : 'false';
        },
      };
    },
  });
  return liveTable({
    id: 'policies', caption: 'Scenes and policies', keyAttr: 'policy', noun: ['policy', 'policies'],
    sort: { key: 'policy', dir: 1 },
    filter: { label: 'Filter policies', value: route.query.get('filter') || '', onChange: filterInHash('limits') },
    empty: 'No scenes configured: add limits.scenes to the config.',
    groupHead: (name) => {
      const sc = byName.get(name);
      return [`Scene ${name}`, h('span', { class: 'hint' }, `subject: ${sc.subject.join(', ')} · fails ${sc.failure_mode}`)];
    },
    columns: [
      { key: 'policy', label: 'Policy', value: (d) => d.p.name, cell: policyCell },
      {
        key: 'chart', label: 'Last minute', sortable: false,
        cell: () => {
          const box = h('span', { class: 'spark-cell' });
          return { nodes: box, set: (d) => replace(box, decisionSpark(d)) };
        },
      },
      stat('allowed-rate', 'Allowed /s', (d) => rate(recent(series(d).allowed))),
      stat('denied-rate', 'Denied /s', (d) => rate(recent(series(d).denied))),
      stat('allowed', 'Allowed (1 min)', (d) => w(d).allowed || 0),
      stat('denied', 'Denied (1 min)', (d) => w(d).denied || 0, true),
      stat('shadow', 'Shadow denials', (d) => w(d).shadow_denied || 0),
      stat('errors', 'Store errors', (d) => w(d).store_errors || 0, true),
      stat('failure', 'Failure mode', failures, true),
      stat('total', 'Since start', (d) => (d.a ? plus(d.a.totals.allowed, d.a.totals.denied) : 0)),
    ],
  });
}

const series = (d) => (d.a ? d.a.series : NO_SERIES);

function policyCell() {
  const name = h('span', { class: 'name' });
  const sub = h('span', { class: 'hint sub' });
  let drawn = false;
  return {
    nodes: [name, sub],
    set({ sc, p }) {
      if (drawn) return; // a policy's definition comes once, at mount
      drawn = true;
      replace(name, p.name, p.shadow ? [' ', h('span', { class: 'badge shadow' }, 'shadow')] : null);
      // The scene's heading names its failure mode; a policy says its own
      // only where it differs.
      const mode = p.failure_mode === sc.failure_mode ? '' : ` · fails ${p.failure_mode}`;
      sub.textContent = `${p.limits.map(describe).join(' and ')}${mode}`;
    },
  };
}

function decisionSpark(d) {
  const w = d.a ? d.a.window : {};
  const s = series(d);
  const lines = [
    { name: 'allowed', values: s.allowed, color: colors.c1 },
    { name: 'denied', values: s.denied, color: colors.c3 },
  ];
  if (d.p.shadow || (w.shadow_denied || 0) > 0) lines.push({ name: 'shadow denied', values: s.shadow_denied, color: colors.c4, dashed: true });
  if ((w.store_errors || 0) > 0) lines.push({ name: 'store errors', values: s.store_errors, color: colors.c2, dashed: true });
  return sparkline({ label: `Decisions per second for ${d.sc.name}/${d.p.name}, last ${d.secs} s`, series: lines, unit: '/s', width: 100 });
}

// describe writes a limit as configured: "20 per 1s (fixed-window)"; a
// quota or burst no call can reach (MaxInt64) is "no limit".
function describe(l) {
  if (unlimited(l.quota)) return `no limit (${l.window}, ${l.algorithm})`;
  return `${num(l.quota)} per ${l.window} (${l.algorithm}${l.burst ? `, burst ${limitNum(l.burst)}` : ''})`;
}

// tryForm builds "Try a decision": pick a scene and policy, fill in the
// subject fields, and consume (or peek) through the real endpoint.
function tryForm(box, scenes, ctx) {
  if (!scenes.length) return;
  const scene = h('select', { id: 'try-scene', name: 'scene' }, scenes.map((s) => h('option', { value: s.name }, s.name)));
  const policy = h('select', { id: 'try-policy', name: 'policy' });
  const subject = h('div', { class: 'subject-fields' });
  const cost = h('input', { id: 'try-cost', name: 'cost', type: 'number', min: 0, value: 1, size: 5 });
  const peek = h('input', { id: 'try-peek', name: 'peek', type: 'checkbox' });
  const result = h('div', { id: 'try-result', 'aria-live': 'polite' });

  function fill() {
    const sc = scenes.find((s) => s.name === scene.value);
    replace(policy, sc.policies.map((p) => h('option', { value: p.name }, p.name)));
    replace(subject, sc.subject.map((f) => h('div', { class: 'field' },
      h('label', { for: `try-subject-${f}` }, f), h('input', { id: `try-subject-${f}`, name: `subject.${f}`, type: 'text', required: true, size: 14, autocomplete: 'off' }))));
  }
  scene.addEventListener('change', fill);
  fill();

  const form = h('form', { id: 'try-form', 'aria-describedby': 'try-hint' },
    h('div', { class: 'form-row' },
      h('div', { class: 'field' }, h('label', { for: 'try-scene' }, 'Scene'), scene),
      h('div', { class: 'field' }, h('label', { for: 'try-policy' }, 'Policy'), policy),
      subject,
      h('div', { class: 'field' }, h('label', { for: 'try-cost' }, 'Cost'), cost),
      h('div', { class: 'field inline' }, peek, h('label', { for: 'try-peek' }, 'Peek (count nothing)')),
      h('button', { type: 'submit', id: 'try-submit' }, 'Decide'),
      h('button', { type: 'button', id: 'try-inspect', onclick: () => operate('inspect') }, 'Inspect'),
      h('button', { type: 'button', id: 'try-reset', class: 'danger', onclick: () => operate('reset') }, 'Reset…')));
  // Inspect reads the subject's counters, leases and override; Reset
  // forgets its counters and leases after a confirmation. Both need the
  // admin role and the server logs every reset as an audit line.
  async function operate(op) {
    const d = new FormData(form);
    const subj = {};
    for (const [k, v] of d) if (k.startsWith('subject.')) subj[k.slice(8)] = v;
    const who = `${d.get('scene')}/${d.get('policy')} ${JSON.stringify(subj)}`;
    if (op === 'reset' && !window.confirm(`Reset every counter and lease of ${who}? This cannot be undone.`)) return;
    const r = await request(`/v1/limits/${enc(d.get('scene'))}/${enc(d.get('policy'))}/${op}`, { method: 'POST', body: { subject: subj } });
    const b = r.data || {};
    if (r.status !== 200) {
      replace(result, h('p', { class: 'notice error', role: 'alert' }, `${r.status}: ${b.detail || 'error'}`));
      return;
    }
    replace(result, op === 'reset'
      ? h('p', { class: 'notice ok', id: 'try-reset-done' }, `Reset ${who}: ${num(b.removed)} counters and leases removed.`)
      : h('div', { class: 'notice ok', id: 'try-inspection' }, h('strong', {}, `Counters of ${who}`), kv([
        b.unlimited ? ['Override', 'unlimited'] : null,
        b.override && !b.unlimited ? ['Override', 'limits replaced'] : null,
        b.in_flight ? ['In flight', `${num(b.in_flight.held)} of ${num(b.in_flight.max)} held`] : null,
        ...(b.limits || []).map((l) => [describe(l), `${num(l.used)} used, ${num(l.remaining)} left`]),
      ])));
    ctx.refresh();
  }
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const d = new FormData(form);
    const subj = {};
    for (const [k, v] of d) if (k.startsWith('subject.')) subj[k.slice(8)] = v;
    const path = `/v1/limits/${enc(d.get('scene'))}/${enc(d.get('policy'))}${peek.checked ? '/peek' : ''}`;
    const r = await request(path, { method: 'POST', body: { subject: subj, cost: exactInt(d.get('cost')) } });
    replace(result, verdict(r));
    ctx.refresh();
  });
  replace(box, h('h2', { id: 'try-title' }, 'Try a decision ', h('span', { class: 'hint', id: 'try-hint' },
    'Sends POST /v1/limits/{scene}/{policy} like any service would: a real decision that counts (unless you peek).')),
  form, result);
}

function verdict(r) {
  const d = r.data || {};
  if (r.status !== 200 && r.status !== 429) {
    return h('p', { class: 'notice error', role: 'alert' }, `${r.status}: ${d.detail || 'error'}`);
  }
  let label = d.allowed ? 'Allowed' : 'Denied';
  if (d.shadow_denied) label = 'Allowed (shadow mode: the limit denied)';
  if (d.failure_mode) label += ` (store failed: fail-${d.failure_mode})`;
  return h('div', { class: `notice ${d.allowed ? 'ok' : 'error'}`, id: 'try-verdict', 'data-allowed': String(!!d.allowed) },
    h('div', {},
      h('strong', {}, `${label} — HTTP ${r.status}`),
      kv([
        ['RateLimit', r.headers.get('RateLimit') || '–'],
        ['RateLimit-Policy', r.headers.get('RateLimit-Policy') || '–'],
        !d.allowed ? ['Retry after', `${Math.ceil((d.retry_after_ms || 0) / 1000)} s`] : null,
        ...(d.limits || []).map((l) => [describe(l), `${l.allowed ? 'ok' : 'over'}: ${num(l.used)} used, ${unlimited(l.quota) ? 'no limit' : `${num(l.remaining)} left`}`]),
      ])));
}
