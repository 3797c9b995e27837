// The HTTP API, as every other client uses it: JSON over fetch, the
// bearer token from the login form, problems (RFC 9457) turned into
// ApiError with the server's own message.

const TOKEN_KEY = 'sluice.token';

export const session = {
  get token() { return sessionStorage.getItem(TOKEN_KEY) || ''; },
  set(token) { sessionStorage.setItem(TOKEN_KEY, token); },
  clear() { sessionStorage.removeItem(TOKEN_KEY); },
};

export class ApiError extends Error {
  constructor(status, detail, body) {
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

const listeners = new Set();
// onUnauthorized registers a callback for 401 answers: the token is gone
// or wrong, and the login form must come back.
export function onUnauthorized(fn) { listeners.add(fn); }

// request answers whatever the server said: {ok, status, data, headers}.
export async function request(path, { method = 'GET', body, token = session.token, signal } = {}) {
  const headers = { Accept: 'application/json, application/problem+json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, cache: 'no-store', credentials: 'omit', signal };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = stringifyJSON(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, 'the server did not answer; is sluice running?');
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try { data = parseJSON(text); } catch { data = text; }
  }
  if (res.status === 401 && token === session.token) listeners.forEach((fn) => fn());
  return { ok: res.ok, status: res.status, data, headers: res.headers };
}

// The server's integers are 64-bit; JSON.parse turns every number into a
// double, exact only up to 2^53, so a quota of 9007199254740993 would
// show as ...992 and MaxInt64 as 9223372036854775808. parseJSON keeps
// such integers exact as BigInt: outside strings, an integer of 16 or
// more digits that a double cannot hold is swapped for a marked string
// before parsing and turned into a BigInt after. The mark holds a fresh
// random part, so no string the server sends can pass for one.
const LONG_INT = /"(?:[^"\\]|\\.)*"|(?<![\w.+-])-?\d{16,}(?![\w.])/g;

function freshMark() {
  const r = crypto.getRandomValues(new Uint32Array(2));
  return `\u0001int${r[0].toString(36)}${r[1].toString(36)}:`;
}

export function parseJSON(text) {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  const mark = freshMark();
  let found = false;
  const marked = text.replace(LONG_INT, (m) => {
    if (m[0] === '"' || Number.isSafeInteger(Number(m))) return m;
    found = true;
    return `"\\u0001${mark.slice(1)}${m}"`;
  });
  if (!found) return JSON.parse(text);
  return JSON.parse(marked, (k, v) => (typeof v === 'string' && v.startsWith(mark) ? BigInt(v.slice(mark.length)) : v));
}

// stringifyJSON is JSON.stringify that writes BigInts as plain integers.
export function stringifyJSON(value, space) {
  const mark = freshMark();
  let found = false;
  const out = JSON.stringify(value, (k, v) => {
    if (typeof v !== 'bigint') return v;
    found = true;
    return mark + v;
  }, space);
  if (!found) return out;
  return out.replaceAll(new RegExp(`"\\\\u0001${mark.slice(1)}(-?\\d+)"`, 'g'), '$1');
}

// api is request that throws ApiError unless the answer is 2xx.
export async function api(path, opts) {
  const r = await request(path, opts);
  if (!r.ok) {
    const detail = r.data && typeof r.data === 'object' ? r.data.detail || r.data.title : '';
    throw new ApiError(r.status, detail || `HTTP ${r.status}`, r.data);
  }
  return r.data;
}

// q builds a query string from the set values of params.
export function q(params) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') s.set(k, v);
  }
  const str = s.toString();
  return str ? `?${str}` : '';
}

export const enc = encodeURIComponent;

// Capabilities: the server's own OpenAPI document says which routes it
// has, so actions a server lacks (retry, pause) are never offered. Routes
// that exist but answer 501 (tenants, groups before they land) are found
// by probing them once.
let routes = null;
const probes = new Map();

export async function loadCapabilities() {
  const doc = await api('/v1/openapi.json');
  routes = new Set();
  for (const [path, ops] of Object.entries(doc.paths || {})) {
    for (const method of Object.keys(ops)) routes.add(`${method.toUpperCase()} ${path}`);
  }
}

// offers reports whether the server documents method path (with {name}
// placeholders as in the document).
export function offers(method, path) { return !!routes && routes.has(`${method} ${path}`); }

// available probes a read route once and caches whether it answers (not
// 404, 405 or 501). It resolves to {ok, status, detail}.
export function available(key, path) {
  if (!probes.has(key)) {
    probes.set(key, request(path).then((r) => {
      const missing = r.status === 404 && /^no route/.test((r.data && r.data.detail) || '');
      const ok = !(r.status === 501 || r.status === 405 || missing);
      return { ok, status: r.status, detail: (r.data && r.data.detail) || '' };
    }).catch((err) => ({ ok: false, status: err.status || 0, detail: err.message })));
  }
  return probes.get(key);
}

export function forgetProbes() { probes.clear(); identity = null; }

// Identity: what the signed-in token may do, from GET /v1/whoami. Actions
// that need a role the token lacks are not offered; on a server without
// that route every action is offered and the server's 403 says no.
let identity = null;

export async function loadIdentity() {
  identity = null;
  if (!offers('GET', '/v1/whoami')) return null;
  const r = await request('/v1/whoami');
  if (r.ok && r.data && Array.isArray(r.data.roles)) identity = r.data;
  return identity;
}

// can reports whether the token may use routes that need role (an admin
// may use every route).
export function can(role) {
  if (!identity) return true;
  return identity.roles.includes('admin') || identity.roles.includes(role);
}
