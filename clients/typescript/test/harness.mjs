// Starts a real `sluice serve` for the tests: the binary is built from this
// repository (test/build.mjs, or SLUICE_BIN), listens on a free loopback
// port and keeps its SQLite job store in a temp directory.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, "../../..");
export const config = join(repo, "clients/testdata/sluice-test.yaml");
export const defaultBin = join(here, "../.test-bin/sluice");

/** sluiceBin returns the server binary, building it when absent. */
export function sluiceBin() {
  if (process.env.SLUICE_BIN) return process.env.SLUICE_BIN;
  if (!existsSync(defaultBin)) {
    execFileSync("go", ["build", "-o", defaultBin, "./cmd/sluice"], { cwd: repo, stdio: "inherit" });
  }
  return defaultBin;
}

/** startServer starts `sluice serve` and resolves once it listens. */
export async function startServer(t) {
  const dir = mkdtempSync(join(tmpdir(), "sluice-ts-"));
  const child = spawn(sluiceBin(), ["serve", "--config", config, "--listen", "127.0.0.1:0", "--data-dir", dir], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stderr.on("data", (b) => (log += b));
  const url = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`sluice did not start in 60s:\n${log}`)), 60_000);
    child.stdout.on("data", (b) => {
      out += b;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`sluice exited with ${code}:\n${log}`));
    });
  });
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  t?.after?.(stop);
  return { url, stop, log: () => log };
}

/** eventually polls cond until it is truthy, or fails after the deadline. */
export async function eventually(cond, { timeoutMs = 30_000, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pause));
  }
}

/** unique returns a name no other test uses. */
export function unique(prefix) {
  return `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}
