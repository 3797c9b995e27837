// A Next.js API route guarded the FastGPT way (pages/api/export-usage.ts):
// a per-IP limit on the route, then the member's own limit on the action.
// Quotas live in sluice.yaml: scene ip, policy "login"; scene member,
// policy "export-usage".
import type { IncomingMessage, ServerResponse } from "node:http";
import { LimitedError, Sluice } from "@sluicehq/sluice";
import { sendError, withIPLimit } from "@sluicehq/sluice/middleware";

/** makeRoute returns the route handler; the default export of a pages/api file. */
export function makeRoute(sluice: Sluice, trustedProxies: string[] = []) {
  return withIPLimit<IncomingMessage, ServerResponse>(
    // useIPFrequencyLimit({ id, limit, seconds }) in FastGPT: the numbers are
    // checked against the server's policy on the first request.
    { client: sluice, id: "login", limit: 3, seconds: 60, trustedProxies },
    async (req, res) => {
      const member = String(req.headers["x-member-id"] ?? "");
      try {
        await sluice.limits.assert("member", "export-usage", { member });
      } catch (err) {
        if (err instanceof LimitedError) return sendError(res, err); // 429, the server's headers
        throw err;
      }
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ exported: member }));
    },
  );
}

// In a Next.js app: export default makeRoute(new Sluice({ url: process.env.SLUICE_URL, token: process.env.SLUICE_TOKEN }));
