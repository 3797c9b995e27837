// Rate limits: per scene and policy, allowed vs denied per second, shadow
// denials, store errors and failure-mode answers over the last minute; a
// form to try a decision.
import { api, request, enc, ApiError } from './api.js';
import { h, replace, num, rate, kv } from './dom.js';
import { lineChart, legend, recent, colors } from './chart.js';

export default {
  mount(root, route, ctx) {
    const note = h('div');
    const list = h('div', { id: 'scenes' });
    const tryBox = h('section', { class: 'panel', id: 'try', 'aria-labelledby': 'try-title' });
    root.append(
      h('h1', { tabindex: '-1' }, 'Rate limits'),
      h('p', { class: 'hint' }, 'Decisions this server made in the last minute, per scene and policy. Totals count since it started. ',
        h('a', { href: '#try', onclick: (ev) => { ev.preventDefault(); document.getElementById('try-scene')?.focus(); } }, 'Try a decision')),
      note, h('div', { class: 'limits-layout' }, list, h('aside', { 'aria-label': 'Try a decision' }, tryBox)));
    let scenes = null;
    const cards = new Map();

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
        if (!scenes.length) replace(list, h('p', { class: 'empty' }, 'No scenes configured: add limits.scenes to the config.'));
        for (const sc of scenes) list.append(sceneSection(sc, cards));
      }
      const act = await api('/v1/activity/limits');
      const byKey = new Map(act.policies.map((p) => [`${p.scene}/${p.policy}`, p]));
      const secs = Math.round((act.interval_ms * ((act.policies[0] && act.policies[0].series.allowed.length) || 60)) / 1000);
      for (const [key, card] of cards) card.update(byKey.get(key), secs);
    }
    return { title: 'Rate limits', update };
  },
};

function sceneSection(sc, cards) {
  const id = `scene-${sc.name}`;
  const grid = h('div', { class: 'grid' });
  for (const p of sc.policies) {
    const card = policyCard(sc, p);
    cards.set(`${sc.name}/${p.name}`, card);
    grid.append(card.el);
  }
  return h('section', { class: 'scene', 'aria-labelledby': id, 'data-scene': sc.name },
    h('h2', { id }, `Scene ${sc.name} `, h('span', { class: 'hint' }, `subject: ${sc.subject.join(', ')} · fails ${sc.failure_mode}`)),
    grid);
}

function describe(l) {
  return `${num(l.quota)} per ${l.window} (${l.algorithm}${l.burst ? `, burst ${l.burst}` : ''})`;
}

function policyCard(sc, p) {
  const stats = h('div', { class: 'stats' });
  const fig = h('figure', { class: 'chart' });
  const el = h('article', { class: 'panel', 'data-policy': `${sc.name}/${p.name}`, 'aria-label': `Policy ${sc.name}/${p.name}` },
    h('header', {}, h('h3', {}, p.name, p.shadow ? [' ', h('span', { class: 'badge shadow' }, 'shadow')] : null),
      h('span', { class: 'hint' }, `fails ${p.failure_mode}`)),
    h('p', { class: 'hint' }, p.limits.map(describe).join(' and ')),
    stats, fig);

  function stat(key, label, value, alert) {
    return h('span', { class: 'stat', 'data-stat': key, 'data-alert': alert ? 'true' : null }, h('span', { class: 'n' }, value), h('span', { class: 'label' }, label));
  }

  function update(a, secs) {
    const w = a ? a.window : {};
    const t = a ? a.totals : {};
    const s = a ? a.series : { allowed: [], denied: [], shadow_denied: [], store_errors: [], failure_mode: [] };
    replace(stats,
      stat('allowed-rate', 'allowed/s', rate(recent(s.allowed))),
      stat('denied-rate', 'denied/s', rate(recent(s.denied))),
      stat('allowed', 'allowed (1 min)', num(w.allowed || 0)),
      stat('denied', 'denied (1 min)', num(w.denied || 0), w.denied > 0),
      stat('shadow', 'shadow denials', num(w.shadow_denied || 0)),
      stat('errors', 'store errors', num(w.store_errors || 0), w.store_errors > 0),
      stat('failure', 'failure-mode answers', num((w.failure_open || 0) + (w.failure_closed || 0)), (w.failure_open || 0) + (w.failure_closed || 0) > 0),
      stat('total', 'decisions since start', num((t.allowed || 0) + (t.denied || 0))));
    const series = [
      { name: 'allowed', values: s.allowed, color: colors.c1 },
      { name: 'denied', values: s.denied, color: colors.c3 },
    ];
    if (p.shadow || (w.shadow_denied || 0) > 0) series.push({ name: 'shadow denied', values: s.shadow_denied, color: colors.c4, dashed: true });
    if ((w.store_errors || 0) > 0) series.push({ name: 'store errors', values: s.store_errors, color: colors.c2, dashed: true });
    replace(fig, lineChart({ label: `Decisions per second for ${sc.name}/${p.name}, last ${secs} s`, series, seconds: secs, unit: '/s' }), legend(series));
  }
  return { el, update };
}

// tryForm builds "Try a decision": pick a scene and policy, fill in the
// subject fields, and consume (or peek) through the real endpoint.
function tryForm(box, scenes, ctx) {
  if (!scenes.length) return;
  const scene = h('select', { id: 'try-scene', name: 'scene' }, scenes.map((s) => h('option', { value: s.name }, s.name)));
  const policy = h('select', { id: 'try-policy', name: 'policy' });
  const subject = h('div', { class: 'form-row' });
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
      h('div', { class: 'field' }, h('label', { for: 'try-cost' }, 'Cost'), cost),
      h('div', { class: 'field inline' }, peek, h('label', { for: 'try-peek' }, 'Peek (count nothing)'))),
    h('p'), subject, h('p'),
    h('button', { type: 'submit', id: 'try-submit' }, 'Decide'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const d = new FormData(form);
    const subj = {};
    for (const [k, v] of d) if (k.startsWith('subject.')) subj[k.slice(8)] = v;
    const path = `/v1/limits/${enc(d.get('scene'))}/${enc(d.get('policy'))}${peek.checked ? '/peek' : ''}`;
    const r = await request(path, { method: 'POST', body: { subject: subj, cost: Number(d.get('cost') || 0) } });
    replace(result, verdict(r));
    ctx.refresh();
  });
  replace(box, h('h2', { id: 'try-title' }, 'Try a decision'),
    h('p', { class: 'hint', id: 'try-hint' }, 'Sends POST /v1/limits/{scene}/{policy} like any service would: a real decision that counts (unless you peek).'),
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
        ...(d.limits || []).map((l) => [`${l.quota} per ${l.window}`, `${l.allowed ? 'ok' : 'over'}: ${l.used} used, ${l.remaining} left`]),
      ])));
}
