// Firecrawl's shape: each team (tenant) may run a few scrapes at once, a
// crawl is a group with its own concurrency cap and crawl delay, and one
// completion job reports the crawl once every page has finished.
import { Sluice, Worker, permanent, type Group } from "@sluicehq/sluice";

/** startCrawl creates the crawl group and enqueues one job per URL. */
export async function startCrawl(sluice: Sluice, opts: { team: string; crawlId: string; urls: string[]; queue?: string }): Promise<void> {
  const queue = opts.queue ?? "scrape";
  // A team's concurrency: how many of its jobs run at once across all crawls.
  await sluice.tenants.setLimit(opts.team, 2);
  await sluice.groups.create({
    id: opts.crawlId, tenant: opts.team, max_concurrency: 2, min_interval_ms: 10,
    completion_kind: "crawl-finished", completion_queue: queue,
  });
  await sluice.jobs.batch(opts.urls.map((url) => ({ queue, kind: "scrape", tenant: opts.team, group: opts.crawlId, payload: { url } })));
}

/** scrapeWorker scrapes pages and handles each crawl's completion job. */
export function scrapeWorker(sluice: Sluice, onCrawl: (report: unknown) => void, queue = "scrape"): Worker {
  return new Worker({
    client: sluice,
    queues: [queue],
    concurrency: 8,
    handlers: {
      scrape: async (payload, ctx) => {
        const { url } = payload as { url: string };
        const res = await fetch(url, { signal: ctx.signal }); // cancelling the crawl aborts the fetch
        if (res.status === 404) throw permanent(new Error(`${url}: 404`));
        if (!res.ok) throw new Error(`${url}: ${res.status}`); // retried with back-off
        const body = await res.text();
        return { url, bytes: body.length, title: /<title>(.*?)<\/title>/.exec(body)?.[1] ?? "" };
      },
      "crawl-finished": async (report) => {
        onCrawl(report);
        return "reported";
      },
    },
  });
}

/** crawlStatus is what a status endpoint would answer. */
export async function crawlStatus(sluice: Sluice, crawlId: string): Promise<Group> {
  return sluice.groups.get(crawlId);
}
