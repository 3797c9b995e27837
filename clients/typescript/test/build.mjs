// Builds the server binary the tests start, from this repository.
import { execFileSync } from "node:child_process";
import { defaultBin, repo } from "./harness.mjs";

if (!process.env.SLUICE_BIN) {
  execFileSync("go", ["build", "-o", defaultBin, "./cmd/sluice"], { cwd: repo, stdio: "inherit" });
}
