// Every TypeScript snippet of the repository's Markdown compiles against
// the built package under `strict`, as a user's project would: the
// snippet imports "@sluicehq/sluice" through the package's own exports,
// and tsc --noEmit checks it. A snippet that needs `!` to compile (a field
// typed optional that the server always sends) fails here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { repo } from "./harness.mjs";

const pkg = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/** The Markdown files whose snippets are checked, relative to the repository. */
function markdownFiles() {
  const docs = fs.readdirSync(path.join(repo, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`);
  return ["README.md", "clients/typescript/README.md", ...docs.sort()];
}

/** snippets returns the ```ts blocks of a Markdown text with their first line numbers. */
export function snippets(text) {
  const out = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i])) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end])) end++;
    out.push({ line: start + 1, code: lines.slice(start, end).join("\n") });
    i = end;
  }
  return out;
}

/** project lays out a throwaway project holding the snippets as ES modules. */
function project(blocks) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-snippets-"));
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
  fs.mkdirSync(path.join(dir, "node_modules", "@sluicehq"), { recursive: true });
  fs.symlinkSync(pkg, path.join(dir, "node_modules", "@sluicehq", "sluice"), "dir");
  const files = blocks.map((b) => {
    const name = `${b.file.replaceAll("/", "_").replace(/\.md$/, "")}_line${b.line}.mts`;
    fs.writeFileSync(path.join(dir, name), `${b.code}\nexport {};\n`);
    return name;
  });
  const tsconfig = {
    compilerOptions: {
      strict: true, noEmit: true, target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext",
      lib: ["ES2022", "DOM"], types: ["node"], typeRoots: [path.join(pkg, "node_modules", "@types")],
    },
    files,
  };
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(tsconfig, null, 2));
  return dir;
}

test("the Markdown's TypeScript snippets compile under strict", (t) => {
  assert.ok(fs.existsSync(path.join(pkg, "dist", "index.d.ts")), "build the package first (npm run build)");
  const blocks = markdownFiles().flatMap((file) =>
    snippets(fs.readFileSync(path.join(repo, file), "utf8")).map((b) => ({ ...b, file })));
  for (const file of ["README.md", "docs/clients.md", "clients/typescript/README.md"]) {
    assert.ok(blocks.some((b) => b.file === file), `no TypeScript snippet found in ${file}`);
  }
  const dir = project(blocks);
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const tsc = path.join(pkg, "node_modules", "typescript", "bin", "tsc");
  try {
    execFileSync(process.execPath, [tsc, "-p", dir], { cwd: dir, encoding: "utf8", stdio: "pipe" });
  } catch (err) {
    assert.fail(`tsc --noEmit under strict failed on the snippets (named file_line<N>.mts, N the snippet's first line):\n${err.stdout}${err.stderr}`);
  }
});

test("snippets finds the ts blocks and their lines", () => {
  const md = "text\n```ts\nconst a = 1;\n```\n```sh\nls\n```\n```typescript\nlet b = 2;\nb++;\n```\n";
  assert.deepEqual(snippets(md), [{ line: 3, code: "const a = 1;" }, { line: 9, code: "let b = 2;\nb++;" }]);
});
