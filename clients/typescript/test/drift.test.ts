// The generated client is openapi.yaml's, byte for byte: regenerate it into a temporary file
// with the pinned openapi-typescript and compare. Fails when either side was changed alone.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const pkg = fileURLToPath(new URL("..", import.meta.url));

test("src/schema.ts is what openapi-typescript generates from openapi.yaml", async () => {
  const dir = await mkdtemp(join(tmpdir(), "code2des-schema-"));
  try {
    const out = join(dir, "schema.ts");
    const cli = join(pkg, "node_modules", "openapi-typescript", "bin", "cli.js");
    await promisify(execFile)(process.execPath, [cli, join(pkg, "..", "..", "openapi.yaml"), "--output", out]);
    const fresh = await readFile(out, "utf8");
    const committed = await readFile(join(pkg, "src", "schema.ts"), "utf8");
    assert.ok(fresh.includes("export interface paths"), "the generator wrote a client");
    assert.equal(committed, fresh, "src/schema.ts is stale: run `npm run generate` in clients/typescript and commit it");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
