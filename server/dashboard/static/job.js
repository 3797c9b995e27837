// One job: its fields, payload and result pretty-printed, attempts with
// their errors, the lease holder, its progress, its webhook and the
// deliveries to it; cancel and retry with confirmation, offered to tokens
// that may take them. The job's events keep it live: a progress report
// moves the bar in place, any other event reloads the job.
import { api, request, offers, can, enc, q, ApiError, stringifyJSON } from './api.js';
import { h, replace, time, badge, kv, duration, ms, notice, confirm, table, announce, plural } from './dom.js';
import { flowGraph } from './flowgraph.js';

export default {
  mount(root, route, ctx) {
    const id = route.arg;
    const head = h('div', { class: 'actions' });
    const body = h('div');
    root.append(
      h('p', {}, h('a', { href: '#/jobs' }, '← Jobs')),
      h('h1', { tabindex: '-1' }, 'Job ', h('span', { class: 'mono' }, id)), head, body);
    let lastState = null;
    let lastKey = '';

    async function update() {
      let j;
      let hooks;
      let flow = null;
      try {
        [j, hooks] = await Promise.all([api(`/v1/jobs/${enc(id)}`), loadDeliveries(id)]);
        if (j.flow) flow = await loadFlow(j.flow);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) {
          replace(head);
          replace(body, h('p', { class: 'note warn' }, `No job ${id}: it never existed or the cleaner removed it after its retention.`));
          return;
        }
        throw err;
      }
      const key = stringifyJSON([j, hooks, flow]);
      if (key === lastKey) return; // unchanged: keep focus and selection where they are
      lastKey = key;
      if (lastState && lastState !== j.state) announce(`Job state is now ${j.state}`);
      lastState = j.state;
      replace(head, h('span', { id: 'job-state' }, badge(j.state)),
        j.cancel_requested && !isFinal(j.state) ? h('span', { class: 'badge s-retrying' }, 'cancel requested') : null,
        actions(j, ctx));
      replace(body, ending(j), h('div', { class: 'cols' },
        h('section', { class: 'panel', 'aria-labelledby': 'job-details' }, h('h2', { id: 'job-details' }, 'Details'), details(j)),
        h('section', { class: 'panel', 'aria-labelledby': 'job-lease' }, h('h2', { id: 'job-lease' }, 'Lease'), lease(j))),
      j.hold ? h('section', { class: 'panel', 'aria-labelledby': 'job-hold-h' }, h('h2', { id: 'job-hold-h' }, 'Waiting for a budget'), hold(j.hold)) : null,
      j.progress ? h('section', { class: 'panel', 'aria-labelledby': 'job-progress-h' }, h('h2', { id: 'job-progress-h' }, 'Progress'), progress(j)) : null,
      flowPanel(j, flow),
      j.webhook ? h('section', { class: 'panel', 'aria-labelledby': 'job-webhook-h' }, h('h2', { id: 'job-webhook-h' }, 'Webhook'), webhook(j.webhook)) : null,
      h('section', { class: 'panel', 'aria-labelledby': 'job-attempts' }, h('h2', { id: 'job-attempts' }, 'Attempts'), attempts(j)),
      h('div', { class: 'cols' },
        h('section', { class: 'panel', 'aria-labelledby': 'job-payload' }, h('h2', { id: 'job-payload' }, 'Payload'), pretty(j.payload, j.payload_base64, 'payload')),
        h('section', { class: 'panel', 'aria-labelledby': 'job-result' }, h('h2', { id: 'job-result' }, 'Result'), pretty(j.result, j.result_base64, 'result'))),
      h('section', { class: 'panel', 'aria-labelledby': 'job-hooks' }, h('h2', { id: 'job-hooks' }, 'Webhook deliveries'), deliveries(hooks)));
    }
    return { title: `Job ${id}`, update, events: { job: id }, onEvent: (e) => e.type === 'job.progress' && showProgress(root, e.data) };
  },
};

const isFinal = (s) => s === 'completed' || s === 'failed' || s === 'cancelled';

// ending says why a finished job ended as it did, from its last_error:
// the error of its last failed attempt, or the reason it was cancelled
// (such as "parent job 25 failed" for a flow's job); for a job cancelled
// by a parent, a link to that parent, the job to retry. Null while the
// job is unfinished, and for a job that completed without errors.
function ending(j) {
  if (!isFinal(j.state)) return null;
  const err = j.last_error || '';
  if (j.state === 'completed' && !err) return null;
  const lead = {
    failed: err ? 'It failed: ' : 'It failed; no error was recorded.',
    cancelled: err ? 'It was cancelled: ' : 'It was cancelled; no reason was recorded.',
    completed: 'It completed after failed attempts; the last error: ',
  }[j.state];
  const parent = j.state === 'cancelled' && (j.parents || []).find((p) =>
    (p.state === 'failed' || p.state === 'cancelled') && err.startsWith(`parent job ${p.id} `));
  return h('div', { class: j.state === 'completed' ? 'note' : 'note warn', id: 'job-ending' },
    h('p', {}, lead, err ? h('span', { id: 'job-last-error' }, err) : null),
    parent ? h('p', {}, 'To run it again, retry its parent ',
      h('a', { href: `#/job/${enc(parent.id)}`, id: 'job-ending-parent' }, `job ${parent.id}`),
      ': that puts this job back to wait for it.') : null);
}

// flowPanel draws the job's flow (flowgraph.js), or nothing for a job
// that waits for none and that none waits for.
function flowPanel(j, flow) {
  const g = flowGraph(j, flow);
  if (!g) return null;
  return h('section', { class: 'panel', 'aria-labelledby': 'job-flow-title' }, h('h2', { id: 'job-flow-title' }, 'Flow'), g);
}

// loadFlow reads the job's flow; null when it is gone or not readable.
async function loadFlow(id) {
  const r = await request(`/v1/flows/${enc(id)}`);
  return r.ok ? r.data : null;
}

function details(j) {
  return kv([
    ['Queue', h('a', { href: `#/jobs${q({ queue: j.queue })}` }, j.queue)],
    ['Kind', j.kind],
    ['Tenant', j.tenant ? h('a', { href: `#/jobs${q({ tenant: j.tenant })}` }, j.tenant) : '–'],
    ['Group', j.group ? h('a', { href: `#/jobs${q({ group: j.group })}` }, j.group) : '–'],
    ['Priority', String(j.priority)],
    ['Attempts', `${j.attempt} of ${j.max_attempts}${j.stalls ? ` (${j.stalls} stalled)` : ''}`],
    ['Timeout', j.timeout_ms ? duration(j.timeout_ms) : 'none'],
    j.unique_key ? ['Unique key', h('span', { class: 'mono' }, j.unique_key)] : null,
    ['Enqueued', time(j.created_at)],
    j.run_at ? ['Runs at', time(j.run_at)] : null,
    ['Started', time(j.started_at)],
    ['Finished', time(j.finished_at)],
    ['Updated', time(j.updated_at)],
  ]);
}

// progress shows the latest report of the job's handler (kept after the
// job ends): a bar for its percent, its data pretty-printed. The page's
// refresh keeps it live while the job runs.
function progress(j) {
  const p = j.progress;
  const pct = typeof p.percent === 'number' ? p.percent : null;
  return h('div', { id: 'job-progress' },
    pct === null ? null : h('p', {},
      h('progress', { max: '100', value: String(pct), 'aria-label': 'Progress' }), ' ',
      h('span', { id: 'job-progress-percent' }, `${Math.round(pct * 10) / 10}%`)),
    p.data ? h('pre', { id: 'job-progress-data', tabindex: '0' }, stringifyJSON(p.data, 2)) : null,
    h('p', { class: 'hint', id: 'job-progress-at' }, 'Reported ', time(p.updated_at), isFinal(j.state) ? ' (the last report before the job ended).' : '.'));
}

// showProgress moves the progress already shown to report p (a
// job.progress event's data); false when the page has no place for it
// yet, so the job is reloaded instead.
function showProgress(root, p) {
  const bar = root.querySelector('#job-progress progress');
  const pct = root.querySelector('#job-progress-percent');
  const data = root.querySelector('#job-progress-data');
  if (!p || (typeof p.percent === 'number') !== !!bar || !!p.data !== !!data) return false;
  if (bar) {
    bar.value = p.percent;
    pct.textContent = `${Math.round(p.percent * 10) / 10}%`;
  }
  if (data) data.textContent = stringifyJSON(p.data, 2);
  const at = root.querySelector('#job-progress-at');
  if (at && p.updated_at) replace(at, 'Reported ', time(p.updated_at), '.');
  return true;
}

// webhook shows the receiver given with the job. Header values are never
// shown (the API redacts them): only their names.
const DEFAULT_HOOK_EVENTS = 'job.completed, job.failed, job.cancelled (the default)';

function webhook(w) {
  const names = Object.keys(w.headers || {}).sort();
  const meta = w.metadata === undefined || w.metadata === null ? '' : stringifyJSON(w.metadata);
  return h('div', { id: 'job-webhook' }, kv([
    ['URL', h('span', { class: 'mono', id: 'job-webhook-url' }, w.url)],
    ['Events', h('span', { id: 'job-webhook-events' }, (w.events && w.events.length) ? w.events.join(', ') : DEFAULT_HOOK_EVENTS)],
    ['Headers', names.length ? h('span', { id: 'job-webhook-headers' }, `${names.join(', ')} (values hidden)`) : 'none'],
    ['Metadata', meta ? h('pre', { id: 'job-webhook-metadata', tabindex: '0' }, meta) : 'none'],
  ]), h('p', { class: 'hint' }, 'Deliveries to it are logged below as @job; those to its group\'s webhook as @group.'));
}

// hold says which budget holds a waiting job back and when room is
// expected: the job spends no attempt while it waits.
function hold(b) {
  return h('div', { id: 'job-hold' }, kv([
    ['Budget', h('span', { class: 'mono', id: 'job-hold-budget' }, b.budget)],
    ['Limit', b.scope ? `${b.limit} (${b.scope})` : b.limit],
    ['Room expected', time(b.until)],
  ]), h('p', { class: 'hint' }, b.limit === 'in-flight'
    ? 'At the latest then: a place frees as soon as a running job on the budget ends. No attempt is spent meanwhile.'
    : 'The job starts in its turn once the budget has room; no attempt is spent meanwhile.'));
}

function lease(j) {
  if (j.state !== 'active') return h('p', { class: 'hint' }, j.worker_id ? `Last held by ${j.worker_id}.` : 'Not leased: no worker holds this job.');
  return kv([
    ['Held by', h('span', { class: 'mono', id: 'lease-holder' }, j.worker_id || '–')],
    ['Lease ends', time(j.lease_until)],
    ['Running for', j.started_at ? duration(Date.now() - Date.parse(j.started_at)) : '–'],
  ]);
}

// attempts lists every attempt: failed ones from the job's error history,
// the current or last one from started_at. The queue keeps the start of
// the latest attempt only, so only its duration is known.
function attempts(j) {
  const started = j.started_at ? Date.parse(j.started_at) : null;
  const rows = (j.errors || []).map((e) => ({
    attempt: e.attempt, at: e.at, outcome: 'failed', error: e.error,
    duration: e.attempt === j.attempt && started ? Date.parse(e.at) - started : null,
  }));
  if (j.attempt > 0 && started && !rows.some((r) => r.attempt === j.attempt)) {
    const running = j.state === 'active';
    const end = running ? Date.now() : Date.parse(j.finished_at || j.updated_at);
    rows.push({
      attempt: j.attempt, at: running ? null : j.finished_at || j.updated_at, outcome: running ? 'running' : j.state,
      error: j.state === 'failed' ? j.last_error : '', duration: end - started,
    });
  }
  rows.sort((a, b) => b.attempt - a.attempt);
  return table({
    id: 'attempts', caption: `${j.attempt} attempt${j.attempt === 1 ? '' : 's'} spent of ${j.max_attempts}`,
    columns: [
      { key: 'attempt', label: '#', num: true },
      { key: 'outcome', label: 'Outcome', render: (r) => badge(r.outcome === 'running' ? 'active' : r.outcome) },
      { key: 'at', label: 'Ended', render: (r) => time(r.at) },
      { key: 'duration', label: 'Duration', num: true, render: (r) => (r.duration === null || r.duration < 0 ? '–' : duration(r.duration)) },
      { key: 'error', label: 'Error', wrap: true, render: (r) => (r.error ? h('pre', {}, r.error) : '–') },
    ],
    rows, empty: 'Not run yet.',
  });
}

function pretty(json, b64, what) {
  if (json !== undefined && json !== null) return h('pre', { id: `job-${what}-json`, tabindex: '0' }, stringifyJSON(json, 2));
  if (b64) return h('div', {}, h('p', { class: 'hint' }, `Not JSON: ${what} bytes as base64.`), h('pre', { tabindex: '0' }, b64));
  return h('p', { class: 'hint' }, `No ${what}.`);
}

// loadDeliveries reads the newest page of the job's delivery log:
// {list} or {note} when the server keeps none.
async function loadDeliveries(id) {
  if (!offers('GET', '/v1/jobs/{id}/deliveries')) return { note: 'This server does not record webhook deliveries.' };
  const r = await request(`/v1/jobs/${enc(id)}/deliveries${q({ limit: 50 })}`);
  if (r.status === 501 || r.status === 403) return { note: `No delivery log here: ${(r.data && r.data.detail) || r.status}.` };
  if (!r.ok) throw new ApiError(r.status, (r.data && r.data.detail) || `HTTP ${r.status}`, r.data);
  return { list: r.data.deliveries, more: !!r.data.next };
}

// Outcomes look like the job states they resemble, and always say their
// name: colour is never the only sign.
const OUTCOME = { delivered: 'completed', retry: 'retrying', failed: 'failed', gone: 'cancelled', refused: 'failed' };

function deliveries(hooks) {
  if (hooks.note) return h('p', { class: 'hint', id: 'deliveries-note' }, hooks.note);
  const t = table({
    id: 'deliveries', caption: 'Attempts to deliver this job\'s events, newest first',
    columns: [
      { key: 'time', label: 'Time', render: (d) => time(d.at) },
      { key: 'subscription', label: 'Subscription', render: (d) => h('span', { title: d.url }, d.subscription) },
      { key: 'event', label: 'Event', render: (d) => d.event_type },
      { key: 'attempt', label: 'Attempt', num: true },
      { key: 'outcome', label: 'Outcome', render: (d) => h('span', { class: `badge s-${OUTCOME[d.outcome] || 'pending'}` }, d.outcome) },
      { key: 'status', label: 'HTTP', num: true, render: (d) => (d.status ? String(d.status) : '–') },
      { key: 'latency', label: 'Latency', num: true, render: (d) => ms(d.latency_ms) },
      { key: 'error', label: 'Error', wrap: true, render: (d) => d.error || '–' },
    ],
    rows: hooks.list, rowAttrs: (d) => ({ 'data-outcome': d.outcome }),
    empty: 'No deliveries recorded: no subscription takes this job\'s events, or it has not finished yet.',
  });
  return hooks.more ? [t, h('p', { class: 'hint' }, 'Showing the newest 50.')] : t;
}

function actions(j, ctx) {
  const box = h('span', { class: 'actions' });
  if (!isFinal(j.state) && can('producer')) {
    box.append(h('button', { type: 'button', class: 'danger', id: 'cancel-job', onclick: () => cancelJob(j, ctx) }, j.state === 'active' ? 'Cancel (ask the worker to stop)' : 'Cancel job'));
  }
  if ((j.state === 'failed' || j.state === 'cancelled') && !j.group && can('admin') && offers('POST', '/v1/jobs/{id}/retry')) {
    box.append(h('button', { type: 'button', id: 'retry-job', onclick: () => retryJob(j, ctx) }, 'Retry job'));
  }
  return box;
}

async function cancelJob(j, ctx) {
  const ok = await confirm({
    title: `Cancel job ${j.id}?`,
    message: j.state === 'active'
      ? `Worker ${j.worker_id} is running it: it is asked to stop at its next heartbeat, and the job ends cancelled unless it completes first.`
      : 'It will never run.',
    ok: 'Cancel job', danger: true,
  });
  if (!ok) return;
  const r = await request(`/v1/jobs/${enc(j.id)}/cancel`, { method: 'POST' });
  if (r.ok) {
    notice('ok', r.data.state === 'cancelled' ? `Job ${j.id} cancelled.` : `Cancel requested: job ${j.id} is ${r.data.state}; its worker stops at the next heartbeat.`);
  } else {
    notice('error', `Could not cancel job ${j.id}: ${r.status} ${(r.data && r.data.detail) || ''}`);
  }
  ctx.refresh();
}

function kept(n) {
  if (!n) return 'It has no recorded errors.';
  return n === 1 ? 'Its recorded error stays in the history.' : `Its ${plural(n, 'recorded error')} stay in the history.`;
}

async function retryJob(j, ctx) {
  const ok = await confirm({
    title: `Retry job ${j.id}?`,
    message: `It runs again with ${plural(j.max_attempts, 'fresh attempt')}, under the same id. ${kept((j.errors || []).length)}`,
    ok: 'Retry job',
  });
  if (!ok) return;
  const r = await request(`/v1/jobs/${enc(j.id)}/retry`, { method: 'POST' });
  notice(r.ok ? 'ok' : 'error', r.ok ? `Job ${j.id} queued again: it is ${r.data.state}.` : `Could not retry job ${j.id}: ${r.status} ${(r.data && r.data.detail) || ''}`);
  ctx.refresh();
}
