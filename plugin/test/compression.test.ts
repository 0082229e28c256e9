// Compressed results (issue 31) where the plugin reads them: in Chromium, from an `<iframe
// sandbox="allow-scripts">` (Origin: null, as Figma runs the UI), through @code2des/client as
// installed from its packed tarball and bundled by esbuild as build.mjs bundles the UI. The API
// is the stand-in of clients/typescript/test/compressed.ts on another loopback port (so every
// call is cross-origin, with CORS as the API answers it): br and gzip answers decoded by the
// browser, the ETag read through Access-Control-Expose-Headers, 304 on If-None-Match, the
// deferred image through a second compressed answer, and what Chromium itself asks for in
// Accept-Encoding (the page sets none). No stack needed; Chromium as for test/ui.test.ts.

import assert from "node:assert/strict";
import { readFile, readdir } from "node:fs/promises";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";
import { type Browser, type Frame, chromium } from "playwright-core";

import {
  CACHE_CONTROL,
  ETAG,
  type Encoding,
  JOB_ID,
  ORG,
  PROJECT,
  type ResultServer,
  fullResult,
  photoImages,
  startResultServer,
} from "../../clients/typescript/test/compressed.js";

const here = fileURLToPath(new URL("..", import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

// The iframe's script: the packed client, exposed to the test as `c2d`.
const ENTRY = `
import { Code2DesClient } from "@code2des/client";
globalThis.c2d = {
  async result(baseUrl, organizationId, projectId, id, ifNoneMatch) {
    const jobs = new Code2DesClient({ baseUrl, token: "t" }).project({ organizationId, projectId });
    return jobs.result(id, ifNoneMatch === null ? {} : { ifNoneMatch });
  },
  async fullResult(baseUrl, organizationId, projectId, id) {
    const jobs = new Code2DesClient({ baseUrl, token: "t" }).project({ organizationId, projectId });
    return jobs.fullResult(id);
  },
};
`;

let api: ResultServer;
let host: Server;
let hostUrl: string;
let browser: Browser;

before(async () => {
  const bundle = await esbuild.build({
    stdin: { contents: ENTRY, resolveDir: here, sourcefile: "compression-entry.js" },
    bundle: true,
    format: "iife",
    target: "es2020",
    write: false,
    logLevel: "warning",
  });
  const script = (bundle.outputFiles[0]?.text ?? "").replaceAll("</script", "<\\/script");
  const page = `<!doctype html><meta charset="utf-8"><body>
<script>
const frame = document.createElement("iframe");
frame.setAttribute("sandbox", "allow-scripts");
frame.srcdoc = ${JSON.stringify(`<!doctype html><script>${script}</script>`).replaceAll("</", "<\\/")};
document.body.append(frame);
</script>`;
  host = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(page));
  await new Promise<void>((resolve) => host.listen(0, "127.0.0.1", resolve));
  hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}/`;
  api = await startResultServer();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
  });
});

after(async () => {
  await browser?.close();
  await api?.close();
  await new Promise((resolve) => host?.close(resolve));
});

beforeEach(() => {
  api.seen = [];
  api.force = null;
  api.chunked = false;
});

/**
 * The plugin's iframe in a fresh browser context: its own HTTP cache, since the result's
 * `immutable` Cache-Control would otherwise answer a repeated GET without asking the API.
 */
async function iframe(): Promise<Frame> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(hostUrl);
  const frame = await (await page.waitForSelector("iframe")).contentFrame();
  assert.ok(frame);
  await frame.waitForFunction(() => "c2d" in globalThis);
  assert.equal(await frame.evaluate(() => self.origin), "null");
  return frame;
}

type Answer = { notModified: boolean; etag: string | null; cacheControl?: string | null; result?: unknown };

function result(frame: Frame, ifNoneMatch: string | null = null): Promise<Answer> {
  return frame.evaluate(
    ([url, org, project, id, inm]) =>
      (globalThis as unknown as { c2d: { result: (...a: unknown[]) => Promise<Answer> } }).c2d.result(url, org, project, id, inm),
    [api.url, ORG, PROJECT, JOB_ID, ifNoneMatch] as const,
  );
}

/** The GETs that reached the API (the CORS preflights left out). */
const gets = () => api.seen.filter((s) => s.method === "GET");

describe("compressed results in the plugin's iframe (Chromium, the packed client)", () => {
  test("Chromium's own Accept-Encoding is sent (never identity) and the negotiated answer is decoded", async () => {
    const frame = await iframe();
    const a = await result(frame);
    const get = gets().at(-1);
    const sent = String(get?.headers["accept-encoding"] ?? "");
    console.log(`Chromium asked for Accept-Encoding: ${sent}; the stand-in answered ${get?.encoding}`);
    assert.match(sent, /\bgzip\b/);
    assert.doesNotMatch(sent, /identity/);
    assert.equal(get?.headers.origin, "null");
    assert.notEqual(get?.encoding, "identity");
    assert.equal(a.notModified, false);
    assert.deepEqual(a.result, fullResult());
    await frame.page().context().close();
  });

  for (const encoding of ["br", "gzip"] as const satisfies Encoding[]) {
    test(`Content-Encoding: ${encoding}: the result and its ETag, then 304 on If-None-Match`, async () => {
      api.force = encoding;
      const frame = await iframe();
      const a = await result(frame);
      assert.equal(gets().at(-1)?.encoding, encoding);
      assert.equal(a.notModified, false);
      assert.deepEqual(a.result, fullResult());
      assert.equal(a.etag, ETAG, "ETag is exposed to the iframe through CORS");
      assert.equal(a.cacheControl, CACHE_CONTROL);
      const again = await result(frame, a.etag);
      assert.deepEqual(again, { notModified: true, etag: ETAG });
      assert.equal(gets().at(-1)?.status, 304, "the conditional GET reached the API");
      await frame.page().context().close();
    });

    test(`Content-Encoding: ${encoding}, chunked: fullResult with the deferred image`, async () => {
      api.force = encoding;
      api.chunked = true;
      const frame = await iframe();
      const r = (await frame.evaluate(
        ([url, org, project, id]) =>
          (globalThis as unknown as { c2d: { fullResult: (...a: unknown[]) => Promise<unknown> } }).c2d.fullResult(url, org, project, id),
        [api.url, ORG, PROJECT, JOB_ID] as const,
      )) as ReturnType<typeof fullResult>;
      assert.deepEqual(r.images, { ...fullResult().images, ...photoImages() });
      assert.deepEqual(r.deferredImages, []);
      assert.deepEqual(r.document, fullResult().document);
      assert.deepEqual(
        gets().map((s) => s.encoding),
        [encoding, encoding],
      );
      await frame.page().context().close();
    });
  }

  test("the plugin's src/ sets no Accept-Encoding and reads no Content-Length", async () => {
    const dir = new URL("../src/", import.meta.url);
    for (const name of await readdir(dir)) {
      const text = await readFile(new URL(name, dir), "utf8");
      assert.doesNotMatch(text, /accept-encoding/i, `src/${name} names Accept-Encoding`);
      assert.doesNotMatch(text, /content-length/i, `src/${name} names Content-Length`);
    }
  });
});
