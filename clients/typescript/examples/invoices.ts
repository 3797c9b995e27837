// Invoices through the server's queue: the Go examples/queue program in
// TypeScript. A producer enqueues invoices (one unique key each, and one
// again as a duplicate); a worker renders them: ACME-3 fails its first
// attempt (a flaky PDF service) and is retried, BROKEN can never be
// rendered and fails for good. Then it prints what happened to each.
import { JobFailure, Sluice, Worker, permanent, type Job, type JobContext } from "@sluicehq/sluice";

const INVOICES = ["ACME-1", "ACME-2", "ACME-3", "GLOBEX-1", "BROKEN"];

async function produce(sluice: Sluice, queue: string, log: (s: string) => void): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, inv] of INVOICES.entries()) {
    const { job } = await sluice.jobs.enqueue({
      queue, kind: "render-invoice", payload: inv, tenant: inv.split("-")[0], priority: i % 2,
      max_attempts: 3, unique_key: `${queue}:invoice:${inv}`,
    });
    ids.push(job.id);
  }
  const dup = await sluice.jobs.enqueue({ queue, kind: "render-invoice", payload: "ACME-1", unique_key: `${queue}:invoice:ACME-1` });
  log(`enqueued ${ids.length} invoices; enqueuing ACME-1 again: duplicate=${dup.duplicate} (job ${dup.job.id})`);
  return ids;
}

function render(payload: unknown, ctx: JobContext): string {
  const inv = String(payload);
  if (inv === "BROKEN") throw permanent(new Error("invoice has no lines"));
  if (inv === "ACME-3" && ctx.job.attempt === 1) throw new JobFailure("pdf service timed out", { retryInMs: 10 });
  return `${inv.toLowerCase()}.pdf`;
}

/** run enqueues, works until every invoice has finished, and reports. */
export async function run(sluice: Sluice, queue = "billing", log: (s: string) => void = console.log): Promise<Job[]> {
  const ids = await produce(sluice, queue, log);
  const worker = new Worker({ client: sluice, queues: [queue], concurrency: 4, pollMs: 200, handleSignals: false, handlers: { "render-invoice": render } });
  const running = worker.run();
  let jobs: Job[];
  try {
    jobs = await Promise.all(ids.map((id) => sluice.jobs.wait(id, { timeoutMs: 60_000 })));
  } finally {
    worker.stop();
    await running;
  }
  for (const j of jobs) {
    let line = `${String(j.payload).padEnd(8)} ${String(j.state).padEnd(9)} after ${j.attempt} attempt(s)`;
    if (j.result !== undefined && j.result !== null) line += ` -> ${j.result}`;
    if (j.last_error) line += ` (last error: ${j.last_error})`;
    log(line);
  }
  return jobs;
}

// node dist-examples/invoices.js [url]
if (import.meta.url === `file://${process.argv[1]}`) {
  await run(new Sluice({ url: process.argv[2] ?? "http://127.0.0.1:8080" }));
}
