// The live event stream (GET /v1/events, Server-Sent Events) read with
// fetch rather than EventSource, which cannot send the bearer token. A
// dropped stream is reopened with Last-Event-ID, so the server replays
// what it still holds; a stream the server refuses (a token without the
// producer role, a server without an event log) is left closed and the
// views go on polling.
import { session, q } from './api.js';

const RETRY_MS = 2000; // the server's own "retry:" overrides it
const GIVE_UP = new Set([400, 401, 403, 404, 405, 501, 503]);

// follow opens the stream with filters ({queue, tenant, group, job,
// kind, type}) and calls onEvent with each event ({id, type, ...}) and
// onState with 'open', 'retrying' or 'closed'. It returns stop().
export function follow(filters, onEvent, onState = () => {}) {
  let stopped = false;
  let last = '';
  let retry = RETRY_MS;
  let ctrl = null;
  let timer = null;

  async function connect() {
    ctrl = new AbortController();
    const headers = { Accept: 'text/event-stream' };
    if (session.token) headers.Authorization = `Bearer ${session.token}`;
    if (last) headers['Last-Event-ID'] = last;
    let res;
    try {
      res = await fetch(`/v1/events${q(filters)}`, { headers, cache: 'no-store', credentials: 'omit', signal: ctrl.signal });
    } catch {
      return again();
    }
    if (!res.ok) {
      if (GIVE_UP.has(res.status)) { onState('closed', res.status); return undefined; }
      return again();
    }
    onState('open');
    try {
      await read(res.body, (ev) => {
        if (ev.retry) retry = ev.retry;
        if (ev.id) last = ev.id;
        if (!ev.data || ev.type === 'gap' || ev.type === 'error') return;
        let e;
        try { e = JSON.parse(ev.data); } catch { return; }
        onEvent(e);
      });
    } catch { /* dropped: reopened below */ }
    return again();
  }

  function again() {
    if (stopped) return;
    onState('retrying');
    timer = setTimeout(connect, retry);
  }

  connect();
  return function stop() {
    stopped = true;
    clearTimeout(timer);
    if (ctrl) ctrl.abort();
    onState('closed');
  };
}

// read parses an event stream into {id, type, data, retry} records.
async function read(body, emit) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let ev = { data: '' };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.search(/\r\n|\n|\r/)) >= 0) {
      if (buf[nl] === '\r' && nl === buf.length - 1) break; // a "\n" may follow in the next chunk
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf.startsWith('\r\n', nl) ? 2 : 1));
      if (line === '') {
        if (ev.data || ev.retry || ev.id) emit(ev);
        ev = { data: '' };
        continue;
      }
      if (line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (field === 'data') ev.data += (ev.data ? '\n' : '') + val;
      else if (field === 'event') ev.type = val;
      else if (field === 'id') ev.id = val;
      else if (field === 'retry' && /^\d+$/.test(val)) ev.retry = Number(val);
    }
  }
}
