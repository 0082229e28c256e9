// Compressed results (issue 31): the result route answers `Content-Encoding: br` or `gzip` when
// the request's Accept-Encoding allows it. fetch decodes both, in Node.js as in browsers, so the
// client needs no code for it; these tests prove it through the client's own calls against the
// stand-in of test/compressed.ts (no stack needed): the decoded result, its ETag and
// Cache-Control, a 304 on If-None-Match, deferred images fetched across compressed answers,
// chunked bodies without Content-Length, and that the client leaves Accept-Encoding to fetch.
// The plugin's test/compression.test.ts does the same in Chromium, from a sandboxed iframe.

import assert from "node:assert/strict";
import { readFile, readdir } from "node:fs/promises";
import { after, before, beforeEach, describe, test } from "node:test";

import { Code2DesClient, type ProjectJobs, type Result } from "../src/index.js";
import {
  CACHE_CONTROL,
  ETAG,
  JOB_ID,
  ORG,
  PROJECT,
  type ResultServer,
  fullResult,
  negotiate,
  photoImages,
  startResultServer,
} from "./compressed.js";

let server: ResultServer;
let jobs: ProjectJobs;

before(async () => {
  server = await startResultServer();
  jobs = new Code2DesClient({ baseUrl: server.url, token: "t" }).project({ organizationId: ORG, projectId: PROJECT });
});
after(() => server.close());
beforeEach(() => {
  server.seen = [];
  server.force = null;
  server.chunked = false;
});

// The fixture is a Result as openapi.yaml types it.
const expected: Result = fullResult();

describe("compressed results through the client (Node.js fetch)", () => {
  test("the stand-in negotiates as the route will: br, then gzip, then identity; q=0 refuses", () => {
    assert.equal(negotiate("gzip, deflate, br, zstd"), "br");
    assert.equal(negotiate("gzip, deflate"), "gzip");
    assert.equal(negotiate("br;q=0, gzip"), "gzip");
    assert.equal(negotiate("identity"), "identity");
    assert.equal(negotiate(undefined), "identity");
    assert.equal(negotiate("*"), "br");
  });

  test("the client sends fetch's own Accept-Encoding (never identity), and a negotiated answer is decoded", async () => {
    const a = await jobs.result(JOB_ID);
    const seen = server.seen.at(-1);
    const sent = String(seen?.headers["accept-encoding"] ?? "");
    assert.match(sent, /\bgzip\b/, `Accept-Encoding: ${sent}`);
    assert.doesNotMatch(sent, /identity/);
    // Node 20's fetch asks for gzip and deflate (newer ones add br): gzip or br comes back.
    assert.ok(seen?.encoding === "gzip" || seen?.encoding === "br", `answered ${seen?.encoding}`);
    assert.ok(!a.notModified);
    assert.deepEqual(a.result, expected);
  });

  for (const encoding of ["br", "gzip"] as const) {
    test(`Content-Encoding: ${encoding}: the result, its ETag and Cache-Control`, async () => {
      server.force = encoding;
      const a = await jobs.result(JOB_ID);
      const seen = server.seen.at(-1);
      assert.equal(seen?.encoding, encoding);
      // Content-Length is the compressed size, a fraction of the JSON the client read.
      assert.ok(seen && seen.wireBytes * 5 < seen.jsonBytes, `${seen?.wireBytes} wire bytes for ${seen?.jsonBytes}`);
      assert.ok(!a.notModified);
      assert.deepEqual(a.result, expected);
      assert.equal(a.etag, ETAG);
      assert.equal(a.cacheControl, CACHE_CONTROL);
    });

    test(`Content-Encoding: ${encoding}, chunked with no Content-Length`, async () => {
      server.force = encoding;
      server.chunked = true;
      const a = await jobs.result(JOB_ID);
      assert.ok(!a.notModified);
      assert.deepEqual(a.result, expected);
      assert.equal(a.etag, ETAG);
    });

    test(`Content-Encoding: ${encoding}: If-None-Match with its ETag is 304, no body`, async () => {
      server.force = encoding;
      const first = await jobs.result(JOB_ID);
      assert.ok(!first.notModified);
      const again = await jobs.result(JOB_ID, { ifNoneMatch: first.etag ?? "" });
      assert.deepEqual(again, { notModified: true, etag: ETAG });
      assert.equal(server.seen.at(-1)?.headers["if-none-match"], ETAG);
      assert.equal(server.seen.at(-1)?.status, 304);
    });

    test(`Content-Encoding: ${encoding}: fullResult fetches the deferred image through a second compressed answer`, async () => {
      server.force = encoding;
      const r = await jobs.fullResult(JOB_ID);
      assert.deepEqual(r.images, { ...expected.images, ...photoImages() });
      assert.deepEqual(r.deferredImages, []);
      assert.deepEqual(r.document, expected.document);
      assert.deepEqual(
        server.seen.map((s) => [s.url.replace(/^.*\/result/, "result"), s.encoding]),
        [
          ["result", encoding],
          ["result?images=photo", encoding],
        ],
      );
    });
  }

  test("src/ sets no Accept-Encoding and reads no Content-Length (fetch owns both)", async () => {
    const dir = new URL("../src/", import.meta.url);
    // schema.ts is generated from openapi.yaml; the hand-written files are the ones to watch.
    for (const name of (await readdir(dir)).filter((n) => n.endsWith(".ts") && n !== "schema.ts")) {
      const text = await readFile(new URL(name, dir), "utf8");
      assert.doesNotMatch(text, /accept-encoding/i, `src/${name} names Accept-Encoding`);
      assert.doesNotMatch(text, /content-length/i, `src/${name} names Content-Length`);
    }
  });
});
