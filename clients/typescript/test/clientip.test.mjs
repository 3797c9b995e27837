// The client-IP table of the Go middleware (ratelimit/httplimit
// clientip_test.go), run against the TypeScript port: both must resolve
// every case alike.
import { test } from "node:test";
import assert from "node:assert/strict";
import { clientIP, MAX_FORWARDED_LEN } from "../dist/clientip.js";

const LOCAL = ["127.0.0.1", "::1"];
const PROXIES = ["127.0.0.1", "10.0.0.0/8"];
const LONG = "203.0.113.50," + " ".repeat(MAX_FORWARDED_LEN - "203.0.113.50,".length);
const chain = (n) => Array.from({ length: n }, (_, i) => `10.1.${i >> 8}.${(i + 1) & 255}`).join(", ");

const cases = [
  {name: "socket peer", remote: "192.0.2.1:1234", want: "192.0.2.1"},
  {name: "spoofed XFF from untrusted peer ignored", remote: "192.0.2.1:1234", xff: ["6.6.6.6"], want: "192.0.2.1"},
  {name: "spoofed X-Real-IP from untrusted peer ignored", remote: "192.0.2.1:1234", realIP: "6.6.6.6", want: "192.0.2.1"},
  {name: "untrusted peer even with trusted list", remote: "192.0.2.1:1234", xff: ["6.6.6.6"], trusted: LOCAL, want: "192.0.2.1"},
  {name: "trusted peer: right-most untrusted hop", remote: "127.0.0.1:5555", xff: ["6.6.6.6, 203.0.113.50"], trusted: LOCAL, want: "203.0.113.50"},
  {name: "trusted hops skipped", remote: "127.0.0.1:5555", xff: ["6.6.6.6, 203.0.113.50, 10.0.0.2,10.9.9.9"], trusted: PROXIES, want: "203.0.113.50"},
  {name: "all-trusted chain gives left-most", remote: "127.0.0.1:5555", xff: ["10.0.0.1, 10.0.0.2"], trusted: PROXIES, want: "10.0.0.1"},
  {name: "several XFF lines form one list", remote: "127.0.0.1:5555", xff: ["6.6.6.6", "203.0.113.50, 10.0.0.2"], trusted: PROXIES, want: "203.0.113.50"},
  {name: "empty list elements ignored", remote: "127.0.0.1:5555", xff: ["203.0.113.50, ,, 10.0.0.2"], trusted: PROXIES, want: "203.0.113.50"},
  {name: "hop with port", remote: "127.0.0.1:5555", xff: ["203.0.113.50:4711"], trusted: LOCAL, want: "203.0.113.50"},
  {name: "IPv6 hop with brackets and port", remote: "127.0.0.1:5555", xff: ["[2001:DB8::1]:80"], trusted: LOCAL, want: "2001:db8::1"},
  {name: "IPv6 hop in brackets", remote: "127.0.0.1:5555", xff: ["[2001:db8::1]"], trusted: LOCAL, want: "2001:db8::1"},
  {name: "garbage before the client is never read", remote: "127.0.0.1:5555", xff: ["bogus, 203.0.113.50"], trusted: LOCAL, want: "203.0.113.50"},
  {name: "garbage where the client should be", remote: "127.0.0.1:5555", xff: ["203.0.113.50, bogus"], trusted: LOCAL, want: "unknown"},
  {name: "XFF at the length bound", remote: "127.0.0.1:5555", xff: [LONG], trusted: LOCAL, want: "203.0.113.50"},
  {name: "over-long XFF unresolved", remote: "127.0.0.1:5555", xff: [LONG + " "], trusted: LOCAL, want: "unknown"},
  {name: "over-long XFF over lines unresolved", remote: "127.0.0.1:5555", xff: [LONG, ""], trusted: LOCAL, want: "unknown"},
  {name: "over-long XFF does not fall back to X-Real-IP", remote: "127.0.0.1:5555", xff: [LONG + " "], realIP: "6.6.6.6", trusted: LOCAL, want: "unknown"},
  {name: "32 hops read", remote: "127.0.0.1:5555", xff: [chain(32)], trusted: LOCAL, want: "10.1.0.32"},
  {name: "33 hops unresolved", remote: "127.0.0.1:5555", xff: [chain(33)], trusted: LOCAL, want: "unknown"},
  {name: "33 hops over lines unresolved", remote: "127.0.0.1:5555", xff: [chain(16), chain(17)], trusted: LOCAL, want: "unknown"},
  {name: "X-Real-IP from trusted peer", remote: "127.0.0.1:5555", realIP: " 203.0.113.7 ", trusted: LOCAL, want: "203.0.113.7"},
  {name: "XFF wins over X-Real-IP", remote: "127.0.0.1:5555", xff: ["203.0.113.50"], realIP: "203.0.113.7", trusted: LOCAL, want: "203.0.113.50"},
  {name: "bad X-Real-IP unresolved", remote: "127.0.0.1:5555", realIP: "localhost", trusted: LOCAL, want: "unknown"},
  {name: "trusted peer without headers is the client", remote: "127.0.0.1:5555", trusted: LOCAL, want: "127.0.0.1"},
  {name: "IPv6 peer canonical", remote: "[2001:0DB8:0:0:0:0:0:1]:1234", want: "2001:db8::1"},
  {name: "IPv6 zone stripped", remote: "[fe80::1%eth0]:1234", want: "fe80::1"},
  {name: "IPv4-mapped unmapped", remote: "[::ffff:192.0.2.1]:1234", want: "192.0.2.1"},
  {name: "IPv4-mapped proxy trusted by IPv4 prefix", remote: "[::ffff:127.0.0.1]:1234", xff: ["203.0.113.50"], trusted: LOCAL, want: "203.0.113.50"},
  {name: "IPv6 trusted proxy", remote: "[::1]:1234", xff: ["2001:db8:1:2:3:4:5:6"], trusted: LOCAL, want: "2001:db8:1:2:3:4:5:6"},
  {name: "IPv6 bucketed by /64", remote: "[2001:db8:1:2:3:4:5:6]:1234", v6: 64, want: "2001:db8:1:2::/64"},
  {name: "IPv6 bucketed from XFF", remote: "[::1]:1234", xff: ["2001:db8:1:2:ffff::9"], trusted: LOCAL, v6: 64, want: "2001:db8:1:2::/64"},
  {name: "IPv6 /128 keeps the address", remote: "[2001:db8::1]:1234", v6: 128, want: "2001:db8::1"},
  {name: "IPv4 not bucketed", remote: "192.0.2.1:1234", v6: 64, want: "192.0.2.1"},
  {name: "RemoteAddr without port", remote: "192.0.2.1", want: "192.0.2.1"},
  {name: "empty RemoteAddr", remote: "", want: "unknown"},
  {name: "unix socket peer", remote: "@", want: "unknown"},];

for (const c of cases) {
  test(`clientIP: ${c.name}`, () => {
    const headers = {};
    if (c.xff) headers["x-forwarded-for"] = c.xff;
    if (c.realIP) headers["x-real-ip"] = c.realIP;
    const got = clientIP({ headers, socket: { remoteAddress: c.remote } }, { trustedProxies: c.trusted, ipv6Prefix: c.v6 });
    assert.equal(got, c.want);
  });
}

test("clientIP reads Node's own peer form (IPv4-mapped, no port)", () => {
  assert.equal(clientIP({ headers: {}, socket: { remoteAddress: "::ffff:192.0.2.9" } }), "192.0.2.9");
  assert.equal(clientIP({ headers: { "x-forwarded-for": "203.0.113.9" }, socket: { remoteAddress: "::ffff:127.0.0.1" } }, { trustedProxies: ["127.0.0.1"] }), "203.0.113.9");
});

test("a bad trusted proxy is refused", () => {
  assert.throws(() => clientIP({ headers: {} }, { trustedProxies: ["10.0.0.0/33"] }), /prefix/);
  assert.throws(() => clientIP({ headers: {} }, { trustedProxies: ["proxy.local"] }), /not an address/);
});
