// The dashboard's shell: sign-in, hash routing (#/view/arg?filters) and
// live updates: by the server's event stream for views that name the
// events they show (a view's `events` filters; its `onEvent` may apply
// one in place, else the view is refreshed at once), and by short polling
// while the tab is visible, for what no event announces (webhook
// deliveries, a failed attempt's retry) and where there is no stream.
import { request, session, onUnauthorized, loadCapabilities, loadIdentity, forgetProbes, offers, ApiError } from './api.js';
import { follow } from './live.js';
import { h, replace } from './dom.js';
import overview from './overview.js';
import tenants from './tenants.js';
import groups from './groups.js';
import jobs from './jobs.js';
import job from './job.js';
import limits from './limits.js';
import schedules from './schedules.js';

const views = { overview, tenants, groups, jobs, job, limits, schedules };
const navOf = { job: 'jobs' };

// ?refresh=SECONDS sets the polling interval (default 2 s, at least 0.25 s).
const every = Math.max(250, 1000 * (parseFloat(new URLSearchParams(location.search).get('refresh')) || 2));

const main = document.getElementById('main');
let current = null;
let timer = null;
let live = true;
let routed = false;
let stream = null; // stop() of the open event stream
let streamOpen = false;
let soonTimer = null;

// Events coming in a burst cause one refresh, this long after the first.
const SOON = 500;

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, qs = ''] = raw.split('?');
  const [name, ...rest] = path.split('/');
  return { name: views[name] ? name : 'overview', arg: rest.map(decodeURIComponent).join('/'), query: new URLSearchParams(qs) };
}

const ctx = {
  every,
  refresh: () => tick(),
  navigate(hash) { if (location.hash === hash) route(); else location.hash = hash; },
};

function route() {
  const r = parseRoute();
  if (current && current.unmount) current.unmount();
  clearTimeout(timer);
  replace(main);
  for (const a of document.querySelectorAll('.top nav a')) {
    if (a.dataset.view === (navOf[r.name] || r.name)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  current = views[r.name].mount(main, r, ctx);
  document.title = `${current.title} · Sluice`;
  listen();
  if (routed) main.querySelector('h1')?.focus({ preventScroll: false });
  routed = true;
  tick();
}

async function tick() {
  clearTimeout(timer);
  const mine = current;
  if (!mine) return;
  try {
    await mine.update();
    clearError();
    document.getElementById('updated').textContent = `Updated ${new Date().toLocaleTimeString()}`;
  } catch (err) {
    if (mine === current) showError(err);
  }
  if (mine === current && live && !document.hidden) timer = setTimeout(tick, every);
}

// listen opens the event stream the current view asks for, closing the
// one before.
function listen() {
  if (stream) stream();
  stream = null;
  setStream(false);
  const mine = current;
  if (!mine || !mine.events || !live || !offers('GET', '/v1/events')) return;
  stream = follow(mine.events, (e) => {
    if (mine !== current) return;
    if (mine.onEvent && mine.onEvent(e)) return;
    soon();
  }, (state) => {
    if (mine !== current) return;
    const was = streamOpen;
    setStream(state === 'open', state);
    if (state === 'open' && !was) soon(); // catch up with what happened while it was closed
  });
}

// soon refreshes the view shortly, once for a burst of events.
function soon() {
  if (soonTimer) return;
  soonTimer = setTimeout(() => { soonTimer = null; tick(); }, SOON);
}

function setStream(open, state = 'closed') {
  streamOpen = open;
  const el = document.getElementById('stream');
  if (!el) return;
  el.hidden = state === 'closed';
  el.dataset.state = state;
  el.textContent = open ? 'Live events' : 'Reconnecting to live events…';
}

function showError(err) {
  if (err instanceof ApiError && err.status === 401) return; // the login form takes over
  let el = main.querySelector('#view-error');
  if (!el) {
    el = h('p', { id: 'view-error', class: 'note warn', role: 'alert' });
    main.querySelector('h1')?.after(el);
  }
  const what = err instanceof ApiError && err.status ? `${err.status}: ${err.message}` : err.message;
  el.textContent = `Could not refresh: ${what}`;
}

function clearError() { main.querySelector('#view-error')?.remove(); }

function showSession(mode, id) {
  const box = document.getElementById('session');
  box.hidden = false;
  let who = mode === 'open' ? 'No sign-in needed (server without tokens)' : 'Signed in';
  if (mode !== 'open' && id && id.name) who = `Signed in as ${id.name} (${id.roles.join(', ') || 'no roles'})`;
  document.getElementById('who').textContent = who;
  document.getElementById('logout').hidden = mode === 'open';
}

function showLogin(message, kind = 'error') {
  current = null;
  clearTimeout(timer);
  listen();
  document.getElementById('session').hidden = true;
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, 'aria-describedby': 'token-hint' });
  const error = h('p', { id: 'login-error', class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status', hidden: !message }, message || '');
  const form = h('form', { id: 'login-form', novalidate: false },
    h('div', { class: 'field' }, h('label', { for: 'token' }, 'Token'), input,
      h('span', { id: 'token-hint', class: 'hint' }, 'A bearer token from this server\'s auth.tokens. Admin tokens can act; producer and limiter tokens see their parts. It is kept in this browser tab only (session storage) and sent as Authorization: Bearer.')),
    h('button', { type: 'submit' }, 'Sign in'), error);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    const r = await request('/v1/queues/stats', { token }).catch((e) => ({ status: 0, data: { detail: e.message } }));
    if (r.status === 401 || r.status === 0) {
      error.hidden = false;
      error.className = 'notice error';
      error.textContent = r.status === 401 ? 'The server rejected this token (401).' : r.data.detail;
      input.focus();
      return;
    }
    session.set(token);
    forgetProbes();
    enter('token');
  });
  replace(main, h('section', { class: 'login panel', 'aria-labelledby': 'login-title' },
    h('h1', { id: 'login-title', tabindex: '-1' }, 'Sign in to Sluice'), form));
  input.focus();
}

async function enter(mode) {
  const id = await loadIdentity().catch(() => null);
  showSession(mode, id);
  route();
}

async function start() {
  try {
    await loadCapabilities();
  } catch (err) {
    replace(main, h('p', { class: 'notice error', role: 'alert' }, `Cannot reach the Sluice API: ${err.message}`));
    return;
  }
  const token = session.token;
  const r = await request('/v1/queues/stats', { token });
  if (r.status === 401) {
    if (token) session.clear();
    showLogin(token ? 'Your token was rejected (401): sign in again.' : '');
    return;
  }
  enter(token ? 'token' : 'open');
}

onUnauthorized(() => {
  session.clear();
  showLogin('The server answered 401: your token is no longer valid. Sign in again.');
});

window.addEventListener('hashchange', () => { if (current) route(); });
document.addEventListener('visibilitychange', () => { if (!document.hidden && live && current) tick(); });
document.getElementById('logout').addEventListener('click', () => {
  session.clear();
  forgetProbes();
  showLogin('Signed out: the token is gone from this tab.', 'ok');
});
document.getElementById('live').addEventListener('click', (ev) => {
  live = !live;
  ev.currentTarget.setAttribute('aria-pressed', String(live));
  ev.currentTarget.textContent = live ? 'Live' : 'Paused';
  if (live) tick(); else clearTimeout(timer);
  listen();
});

start();
