// Client-IP resolution, the same rules as the Go middleware
// (ratelimit/httplimit.ClientIP): forwarding headers are believed only
// from a trusted proxy, X-Forwarded-For is read right to left skipping
// trusted hops, and anything unparseable resolves to "unknown" rather
// than to an address the client chose.
import { BlockList, isIPv4, isIPv6 } from "node:net";

/** The client IP of a request whose address cannot be resolved. */
export const UNKNOWN = "unknown";
/** The longest X-Forwarded-For (all lines together) that is read. */
export const MAX_FORWARDED_LEN = 2048;
/** The most X-Forwarded-For entries that are read. */
export const MAX_FORWARDED_HOPS = 32;

/** Options of clientIP. */
export interface ClientIPOptions {
  /** CIDRs (or single addresses) of proxies whose forwarding headers are believed. Default none. */
  trustedProxies?: string[];
  /** When set (1..127), IPv6 clients are limited by this prefix, such as 64. */
  ipv6Prefix?: number;
}

/** The parts of a Node request that clientIP reads. */
export interface RequestLike {
  headers: Record<string, string | string[] | undefined>;
  socket?: { remoteAddress?: string | undefined } | null;
}

/** A compiled trust list. */
export class Trusted {
  readonly #list = new BlockList();
  readonly empty: boolean;
  constructor(cidrs: string[] = []) {
    for (const c of cidrs) {
      const [addr = "", bits] = c.split("/");
      const family = isIPv4(addr) ? "ipv4" : isIPv6(addr) ? "ipv6" : undefined;
      if (!family) throw new TypeError(`sluice: trustedProxies: ${JSON.stringify(c)} is not an address or CIDR`);
      const max = family === "ipv4" ? 32 : 128;
      const n = bits === undefined ? max : Number(bits);
      if (!Number.isInteger(n) || n < 0 || n > max) throw new TypeError(`sluice: trustedProxies: bad prefix length in ${JSON.stringify(c)}`);
      this.#list.addSubnet(addr, n, family);
    }
    this.empty = cidrs.length === 0;
  }
  has(addr: string): boolean {
    return !this.empty && this.#list.check(addr, isIPv4(addr) ? "ipv4" : "ipv6");
  }
}

/** clientIP returns the address a request is limited by (see the file comment). */
export function clientIP(req: RequestLike, opts: ClientIPOptions & { trusted?: Trusted } = {}): string {
  const trusted = opts.trusted ?? new Trusted(opts.trustedProxies);
  const a = resolve(req, trusted);
  if (a === undefined) return UNKNOWN;
  if (isIPv6(a) && opts.ipv6Prefix && opts.ipv6Prefix > 0 && opts.ipv6Prefix < 128) return maskV6(a, opts.ipv6Prefix);
  return a;
}

function resolve(req: RequestLike, trusted: Trusted): string | undefined {
  const peer = parseHost(req.socket?.remoteAddress ?? "");
  if (peer === undefined || !trusted.has(peer)) return peer;
  const xff = lines(req.headers["x-forwarded-for"]);
  if (xff.length > 0) return fromForwarded(xff, trusted);
  const real = lines(req.headers["x-real-ip"])[0];
  if (real !== undefined && real !== "") return parseHost(real.trim());
  return peer;
}

function lines(v: string | string[] | undefined): string[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

function fromForwarded(ls: string[], trusted: Trusted): string | undefined {
  const size = ls.reduce((n, l) => n + l.length, ls.length - 1);
  const hops = ls.reduce((n, l) => n + l.split(",").length - 1, ls.length - 1) + 1;
  if (size > MAX_FORWARDED_LEN || hops > MAX_FORWARDED_HOPS) return undefined;
  let last: string | undefined;
  const entries = ls.join(",").split(",").reverse();
  for (const raw of entries) {
    const e = raw.trim();
    if (e === "") continue; // empty list elements are allowed (RFC 9110 5.6.1)
    const a = parseHost(e);
    if (a === undefined) return undefined;
    if (!trusted.has(a)) return a;
    last = a;
  }
  return last;
}

/** parseHost parses "ip", "ip:port", "[ipv6]" or "[ipv6]:port" into canonical text. */
export function parseHost(s: string): string | undefined {
  let host = s;
  if (s.startsWith("[")) {
    const end = s.indexOf("]");
    if (end < 0) return undefined;
    const rest = s.slice(end + 1);
    if (rest !== "" && !/^:\d{1,5}$/.test(rest)) return undefined;
    host = s.slice(1, end);
    if (!isIPv6(host.split("%")[0]!)) return undefined;
  } else if ((s.match(/:/g) ?? []).length === 1) {
    const [h = "", port = ""] = s.split(":");
    if (!/^\d{1,5}$/.test(port) || !isIPv4(h)) return undefined;
    host = h;
  }
  host = host.split("%")[0]!; // zone
  if (isIPv4(host)) return host;
  if (!isIPv6(host)) return undefined;
  const canon = new URL(`http://[${host}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canon);
  if (mapped) {
    const hi = parseInt(mapped[1]!, 16), lo = parseInt(mapped[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return canon;
}

function maskV6(a: string, bits: number): string {
  const [head = "", tail = ""] = a.split("::");
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = a.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h;
  const words = groups.map((g) => parseInt(g, 16));
  for (let i = 0; i < 8; i++) {
    const keep = Math.max(0, Math.min(16, bits - i * 16));
    words[i] = keep === 0 ? 0 : (words[i]! >> (16 - keep)) << (16 - keep);
  }
  const canon = new URL(`http://[${words.map((w) => w.toString(16)).join(":")}]/`).hostname.slice(1, -1);
  return `${canon}/${bits}`;
}
