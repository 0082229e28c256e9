// The client against the REAL local stacks started by scripts/test-plugin: one with the
// reference worker (`--demo-worker`), one without, where these tests play the worker (S3 and
// the signed webhook) to put jobs in every state. Identity is a bearer token from `seed`.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { before, describe, test } from "node:test";

import {
  ApiError,
  Code2DesClient,
  type Job,
  type Node,
  type Progress,
  type Result,
  type ResultAnswer,
  type ResultWarning,
  type WarningCode,
  parseRetryAfter,
} from "../src/index.js";
import {
  GIF_1X1,
  JPEG_1X1,
  SVG_LOGO,
  type StackEnv,
  type Tenant,
  demoStack,
  failWithoutArtifact,
  finish,
  plainStack,
  png,
  readManifest,
  reportProgress,
  seedTenant,
  webhook,
} from "./stack.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function clientFor(stack: StackEnv, t: Tenant, fetchImpl?: typeof fetch) {
  const client = new Code2DesClient({ baseUrl: stack.url, token: t.token, fetch: fetchImpl });
  return { client, jobs: client.project({ organizationId: t.organizationId, projectId: t.projectId }) };
}

async function rejectsWith(p: Promise<unknown>, status: number, code: string): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ApiError, `expected an ApiError, got ${String(e)}`);
    assert.equal(e.status, status, `${e.code}: ${e.message}`);
    assert.equal(e.code, code, e.message);
    assert.match(e.requestId ?? "", /^[0-9a-f-]{36}$/, "requestId is the log's request id");
    assert.ok(e.message.length > 0);
    return e;
  }
  assert.fail(`expected ${status} ${code}, got an answer`);
}

/** The body of a 200 answer (fails on a 304). */
function body(a: ResultAnswer): Result {
  if (a.notModified) assert.fail("expected a result, got 304");
  return a.result;
}

/** A fetch that records each request's time, method, URL and the answer's headers. */
function recordingFetch() {
  const calls: { at: number; method: string; url: string; status: number; headers: Headers }[] = [];
  const f: typeof fetch = async (input, init) => {
    const req = new Request(input, init);
    const at = performance.now();
    const res = await fetch(req);
    calls.push({ at, method: req.method, url: req.url, status: res.status, headers: res.headers });
    return res;
  };
  return { calls, fetch: f };
}

describe("with the reference worker (--demo-worker)", () => {
  let stack: StackEnv;
  let tenant: Tenant;
  before(async () => {
    stack = demoStack();
    tenant = await seedTenant(stack);
  });

  test("trigger, wait, result, placement: one job's whole life", async () => {
    const { jobs } = clientFor(stack, tenant);
    const { job, location } = await jobs.trigger({
      pageImportId: tenant.pageImportId,
      figmaFileKey: "FILEkey123",
      screenId: "home",
    });
    assert.equal(job.status, "processing");
    assert.equal(job.attempt, 1);
    assert.equal(job.hasResult, false);
    assert.equal(location, `/organizations/${tenant.organizationId}/projects/${tenant.projectId}/code2des/${job.code2desId}`);
    assert.ok(!("nonce" in job), "the nonce never reaches the user API");

    const done = await jobs.waitForJob(job.code2desId, { signal: AbortSignal.timeout(30_000) });
    assert.equal(done.status, "completed");
    assert.equal(done.hasResult, true);

    const r = body(await jobs.result(job.code2desId));
    assert.equal(r.kind, "result");
    assert.equal(r.code2desId, job.code2desId);
    assert.deepEqual(r.deferredImages, []);
    // The generated types describe the node tree: no casts needed to walk it. The seeded page
    // import's capture is the landing sample, converted for real by the reference worker.
    const doc = r.document;
    assert.ok(doc);
    assert.equal(doc.type, "FRAME");
    assert.equal(doc.name, "Northwind Cloud: ship faster", "the root is named by the page's title");
    const texts: string[] = [];
    const refs: string[] = [];
    const walk = (n: Node) => {
      if (n.type === "TEXT") texts.push(n.characters ?? "");
      if (n.type === "SVG") refs.push(n.imageRef);
      if ("fills" in n) for (const f of n.fills ?? []) if (f.type === "IMAGE") refs.push(f.imageRef);
      if ("children" in n) for (const c of n.children ?? []) walk(c);
    };
    walk(doc);
    assert.ok(texts.some((t) => t.includes("Northwind")), `the page's words are text layers: ${texts.slice(0, 5)}`);
    assert.ok(refs.length > 0, "the landing page's pictures are referenced");
    for (const ref of refs) {
      const image = r.images[ref];
      assert.ok(image, `image ${ref} is inlined`);
      assert.equal(Buffer.from(image.data, "base64").length, image.size);
    }
    assert.ok(
      refs.some((ref) => r.images[ref]?.mimeType === "image/png"),
      "the hero picture travels as a PNG",
    );

    const placed = await jobs.place(job.code2desId, "12:34");
    assert.equal(placed.materializedNodeId, "12:34");
    assert.ok(placed.materializedAt);
    const again = await jobs.place(job.code2desId, "56:78");
    assert.equal(again.materializedNodeId, "12:34", "later placements return the FIRST root");
    assert.equal(again.materializedAt, placed.materializedAt);
  });
});

describe("against the stack, playing the worker", () => {
  let stack: StackEnv;
  let tenant: Tenant;
  before(async () => {
    stack = plainStack();
    tenant = await seedTenant(stack);
  });

  async function processingJob(jobs: ReturnType<typeof clientFor>["jobs"], figmaFileKey = "FILEkey123") {
    const { job } = await jobs.trigger({ pageImportId: tenant.pageImportId, figmaFileKey, screenId: "s" });
    return { job, manifest: await readManifest(stack, job.code2desId) };
  }

  test("every error is an ApiError with status, code, message and requestId", async () => {
    const { jobs } = clientFor(stack, tenant);
    const e400 = await rejectsWith(jobs.list({ limit: 0 }), 400, "invalid_request");
    assert.match(e400.message, /^limit/, "a 400 names the field first");
    await rejectsWith(jobs.get(randomUUID()), 404, "not_found");

    const anonymous = new Code2DesClient({ baseUrl: stack.url }).project({
      organizationId: tenant.organizationId,
      projectId: tenant.projectId,
    });
    await rejectsWith(anonymous.list(), 401, "unauthorized");

    // Another tenant's token sees nothing of this one: 404, not 403.
    const other = await seedTenant(stack);
    const { jobs: outsider } = clientFor(stack, { ...tenant, token: other.token });
    await rejectsWith(outsider.list(), 404, "not_found");

    const { job } = await processingJob(jobs);
    await rejectsWith(jobs.result(job.code2desId), 409, "not_ready");
    await rejectsWith(jobs.place(job.code2desId, "1:2"), 409, "job_not_completed");
    await rejectsWith(
      jobs.trigger({ pageImportId: "no-such-import", figmaFileKey: "F", screenId: "s" }),
      404,
      "not_found",
    );
  });

  test("Idempotency-Key: a retried trigger answers the first call's job", async () => {
    const { jobs } = clientFor(stack, tenant);
    const key = randomUUID();
    const body = { pageImportId: tenant.pageImportId, figmaFileKey: "IDEM", screenId: "s" };
    const a = await jobs.trigger(body, { idempotencyKey: key });
    const b = await jobs.trigger(body, { idempotencyKey: key });
    assert.equal(b.job.code2desId, a.job.code2desId);
    await rejectsWith(jobs.trigger({ ...body, screenId: "other" }, { idempotencyKey: key }), 422, "idempotency_key_reused");
  });

  test("list: newest first, page by page with nextCursor, filtered", async () => {
    const fresh = await seedTenant(stack);
    const { jobs } = clientFor(stack, fresh);
    const made: string[] = [];
    for (const key of ["A", "B", "A"]) {
      const { job } = await jobs.trigger({ pageImportId: fresh.pageImportId, figmaFileKey: key, screenId: "s" });
      made.push(job.code2desId);
    }
    const page = await jobs.list({ limit: 2 });
    assert.deepEqual(
      page.items.map((j) => j.code2desId),
      [made[2], made[1]],
    );
    assert.ok(page.nextCursor);
    const all: string[] = [];
    for await (const j of jobs.listAll({ limit: 1 })) all.push(j.code2desId);
    assert.deepEqual(all, [...made].reverse());
    const onlyA = await jobs.list({ figmaFileKey: "A", status: "processing" });
    assert.deepEqual(
      onlyA.items.map((j) => j.code2desId),
      [made[2], made[0]],
    );
    assert.equal(onlyA.nextCursor, null);
    await rejectsWith(jobs.list({ cursor: "not-a-cursor-we-issued" }), 400, "invalid_request");
  });

  test("waitForJob polls no faster than every 2 s and resolves when the job fails", async () => {
    const rec = recordingFetch();
    const { jobs } = clientFor(stack, tenant, rec.fetch);
    const { job, manifest } = await processingJob(jobs);
    const polls: (Progress | null)[] = [];
    const waiting = jobs.waitForJob(job.code2desId, {
      onProgress: (p) => polls.push(p),
      signal: AbortSignal.timeout(30_000),
    });
    await sleep(4500);
    const hook = await failWithoutArtifact(stack, manifest, "the capture could not be read");
    assert.equal(hook.status, 200);
    const done = await waiting;
    assert.equal(done.status, "failed");
    assert.equal(done.errorMessage, "the capture could not be read");
    const gets = rec.calls.filter((c) => c.method === "GET" && c.url.endsWith(job.code2desId));
    assert.ok(gets.length >= 3, `polled ${gets.length} times in ~4.5 s`);
    assert.equal(polls.length, gets.length - 1, "progress reported after every poll that found it processing");
    for (let i = 1; i < gets.length; i++) {
      const gap = (gets[i]?.at ?? 0) - (gets[i - 1]?.at ?? 0);
      assert.ok(gap >= 1995, `poll ${i} came ${gap.toFixed(0)} ms after the previous one`);
    }
    // A failure without an artifact: result is 409 job_failed with the job's message.
    const e = await rejectsWith(jobs.result(job.code2desId), 409, "job_failed");
    assert.match(e.message, /the capture could not be read/);
  });

  test("a failed job's failure artifact: kind failure, document null", async () => {
    const { jobs } = clientFor(stack, tenant);
    const { job, manifest } = await processingJob(jobs);
    const hook = await finish(stack, manifest, { kind: "failure", errorMessage: "page too large", warningCount: 2 });
    assert.equal(hook.status, 200, JSON.stringify(hook.json));
    const failed = await jobs.get(job.code2desId);
    assert.equal(failed.status, "failed");
    assert.equal(failed.errorMessage, "page too large");
    assert.equal(failed.hasResult, true);
    const r = body(await jobs.result(job.code2desId));
    assert.equal(r.kind, "failure");
    assert.equal(r.document, null);
    assert.deepEqual(r.images, {});
  });

  test("the fidelity report: the worker's warnings, indices included, typed as ResultWarning", async () => {
    const { jobs } = clientFor(stack, tenant);
    const { job, manifest } = await processingJob(jobs);
    const warnings: ResultWarning[] = [
      { code: "font_substituted", message: "Helvetica is not available; drawn with Inter", path: "body > h1", node: "Welcome", indices: [0, 2] },
      { code: "canvas_skipped", message: "a canvas", indices: [] },
      { code: "node_limit", message: "the rest of the page is left out", path: "body > footer" },
    ];
    const texts = ["a", "b", "Welcome"].map((characters) => ({ type: "TEXT", name: characters, characters }));
    const document = { type: "FRAME", name: "page", children: [{ type: "FRAME", children: texts }] };
    const hook = await finish(stack, manifest, { kind: "result", document, warnings });
    assert.equal(hook.status, 200, JSON.stringify(hook.json));
    assert.equal((await jobs.get(job.code2desId)).warningCount, 3);
    const r = await jobs.fullResult(job.code2desId);
    assert.equal(r.warningCount, 3);
    assert.deepEqual(r.warnings, warnings);
    const codes: WarningCode[] = r.warnings.map((w) => w.code);
    assert.deepEqual(codes, ["font_substituted", "canvas_skipped", "node_limit"]);
    // An artifact that counts its warnings without listing them (older workers): an empty list.
    const older = await processingJob(jobs);
    assert.equal((await finish(stack, older.manifest, { kind: "result", document, warningCount: 2 })).status, 200);
    const o = await jobs.fullResult(older.job.code2desId);
    assert.deepEqual([o.warningCount, o.warnings], [2, []]);
  });

  test("fullResult fetches the images past the response budget with ?images=", async () => {
    const { jobs } = clientFor(stack, tenant);
    const { job, manifest } = await processingJob(jobs);
    // Three ~3 MB PNGs: base64 of two of them is past the 5.75 MiB inline budget.
    const big = [png(1000, 1000, 1), png(1000, 1000, 2), png(1000, 1000, 3)];
    const document = {
      type: "FRAME",
      name: "big",
      children: big.map((_, i) => ({ type: "RECTANGLE", name: `r${i}`, fills: [{ type: "IMAGE", imageRef: `big${i}` }] })),
    };
    const images = Object.fromEntries(big.map((bytes, i) => [`big${i}`, { bytes, mimeType: "image/png" as const }]));
    assert.equal((await finish(stack, manifest, { kind: "result", document, images })).status, 200);
    const first = body(await jobs.result(job.code2desId));
    assert.ok(first.deferredImages.length > 0, "the first answer defers some images");
    const full = await jobs.fullResult(job.code2desId);
    assert.deepEqual(full.deferredImages, []);
    for (const [i, bytes] of big.entries()) {
      const got = full.images[`big${i}`];
      assert.ok(got, `big${i} fetched`);
      assert.ok(Buffer.from(got.data, "base64").equals(Buffer.from(bytes)), `big${i} bytes`);
    }
  });

  test("every raster format and an SVG survive the round trip through the result route", async () => {
    const { jobs } = clientFor(stack, tenant);
    const { job, manifest } = await processingJob(jobs);
    const images = {
      p: { bytes: png(3, 2), mimeType: "image/png" as const },
      j: { bytes: JPEG_1X1, mimeType: "image/jpeg" as const },
      g: { bytes: GIF_1X1, mimeType: "image/gif" as const },
      s: { bytes: SVG_LOGO, mimeType: "image/svg+xml" as const },
    };
    const document = {
      type: "FRAME",
      children: [
        { type: "RECTANGLE", fills: [{ type: "IMAGE", imageRef: "p" }] },
        { type: "ELLIPSE", fills: [{ type: "IMAGE", imageRef: "j", scaleMode: "FIT" }] },
        { type: "RECTANGLE", fills: [{ type: "IMAGE", imageRef: "g" }] },
        { type: "SVG", imageRef: "s" },
      ],
    };
    assert.equal((await finish(stack, manifest, { kind: "result", document, images })).status, 200);
    const r = body(await jobs.result(job.code2desId));
    for (const [ref, img] of Object.entries(images)) {
      const got = r.images[ref];
      assert.equal(got?.mimeType, img.mimeType, ref);
      assert.ok(Buffer.from(got?.data ?? "", "base64").equals(Buffer.from(img.bytes)), ref);
    }
  });

  describe("SPEC section 7: retry, cancel, delete, progress, Retry-After, ETag", () => {

    test("waitForJob honours Retry-After and reports the worker's progress", async () => {
      const rec = recordingFetch();
      const { jobs } = clientFor(stack, tenant, rec.fetch);
      const { job, manifest } = await processingJob(jobs);
      assert.equal(job.progress, null);
      assert.equal(job.maxAttempts, 3);
      const seen: Progress[] = [];
      const waiting = jobs.waitForJob(job.code2desId, {
        onProgress: (p) => p && seen.push(p),
        signal: AbortSignal.timeout(30_000),
      });
      assert.equal((await reportProgress(stack, manifest, 30, "layout")).status, 200);
      await sleep(2500);
      assert.equal((await reportProgress(stack, manifest, 60, "images")).status, 200);
      // A lower percent is ignored (answered 200): progress never goes backwards.
      assert.equal((await reportProgress(stack, manifest, 10, "late")).status, 200);
      await sleep(2500);
      const doc = { type: "FRAME", name: "p", children: [{ type: "TEXT", characters: "hi" }] };
      assert.equal((await finish(stack, manifest, { kind: "result", document: doc })).status, 200);
      const done = await waiting;
      assert.equal(done.status, "completed");

      const gets = rec.calls.filter((c) => c.method === "GET" && c.url.endsWith(job.code2desId));
      for (const g of gets.slice(0, -1)) {
        assert.equal(g.headers.get("retry-after"), "2", "a processing job's GET answers Retry-After: 2");
      }
      assert.equal(gets.at(-1)?.headers.get("retry-after"), null, "a finished job's GET has no Retry-After");
      for (let i = 1; i < gets.length; i++) {
        const gap = (gets[i]?.at ?? 0) - (gets[i - 1]?.at ?? 0);
        assert.ok(gap >= 1995, `poll ${i} came ${gap.toFixed(0)} ms after the previous one`);
      }
      assert.ok(seen.length >= 2, `progress seen ${JSON.stringify(seen)}`);
      const percents = seen.map((p) => p.percent);
      assert.deepEqual([...percents].sort((a, b) => a - b), percents, "never backwards");
      assert.ok(percents.includes(60) && !percents.includes(10));
      assert.ok(seen.some((p) => p.stage === "images" && typeof p.updatedAt === "string"));
    });

    test("result: ETag, immutable Cache-Control, 304 on If-None-Match", async () => {
      const rec = recordingFetch();
      const { jobs } = clientFor(stack, tenant, rec.fetch);
      const { job, manifest } = await processingJob(jobs);
      const doc = { type: "FRAME", children: [{ type: "RECTANGLE", fills: [{ type: "IMAGE", imageRef: "p" }] }] };
      const images = { p: { bytes: png(4, 4), mimeType: "image/png" as const } };
      assert.equal((await finish(stack, manifest, { kind: "result", document: doc, images })).status, 200);
      const first = await jobs.result(job.code2desId);
      if (first.notModified) assert.fail("no If-None-Match was sent");
      assert.ok(first.etag, "a completed job's result has an ETag");
      assert.ok(!first.etag.includes(manifest.nonce), "the ETag reveals no nonce");
      assert.equal(first.cacheControl, "private, max-age=86400, immutable");
      const again = await jobs.result(job.code2desId, { ifNoneMatch: first.etag });
      assert.deepEqual(again, { notModified: true, etag: first.etag });
      assert.equal(rec.calls.at(-1)?.status, 304);
      const stale = await jobs.result(job.code2desId, { ifNoneMatch: '"not-this-one"' });
      assert.equal(stale.notModified, false);
    });

    test("cancel: a processing job fails `cancelled`; terminal jobs are 409 already_terminal", async () => {
      const { jobs } = clientFor(stack, tenant);
      const { job, manifest } = await processingJob(jobs);
      const cancelled = await jobs.cancel(job.code2desId);
      assert.equal(cancelled.status, "failed");
      assert.equal(cancelled.errorMessage, "cancelled");
      assert.equal((await jobs.cancel(job.code2desId)).errorMessage, "cancelled", "cancelling again answers 200");
      const late = await finish(stack, manifest, { kind: "result", document: { type: "FRAME" } });
      assert.equal(late.status, 409, "the worker's late webhook loses");

      const other = await processingJob(jobs);
      await finish(stack, other.manifest, { kind: "result", document: { type: "FRAME" } });
      await rejectsWith(jobs.cancel(other.job.code2desId), 409, "already_terminal");
    });

    test("retry: the next attempt once per attempt, then attempts_exhausted", async () => {
      const { jobs } = clientFor(stack, tenant);
      const { job, manifest } = await processingJob(jobs);
      await rejectsWith(jobs.retry(job.code2desId, { attempt: 1 }), 409, "not_failed");
      await failWithoutArtifact(stack, manifest, "first try failed");

      const r2 = await jobs.retry(job.code2desId, { attempt: 1 });
      assert.equal(r2.created, true);
      assert.equal(r2.job.status, "processing");
      assert.equal(r2.job.attempt, 2);
      assert.equal(r2.job.errorMessage, null);
      assert.equal(r2.job.progress, null);
      assert.equal(r2.job.hasResult, false);
      assert.ok(r2.location?.endsWith(job.code2desId));
      const again = await jobs.retry(job.code2desId, { attempt: 1 });
      assert.equal(again.created, false, "a second retry of attempt 1 answers 200 with attempt 2");
      assert.equal(again.job.attempt, 2);

      const m2 = await readManifest(stack, job.code2desId, 2);
      assert.notEqual(m2.nonce, manifest.nonce, "a fresh nonce");
      const fenced = await webhook(stack, { ...manifest, status: "failed", error_message: "old" });
      assert.equal(fenced.status, 409, "attempt 1's webhook is fenced");

      await failWithoutArtifact(stack, m2, "second try failed");
      const r3 = await jobs.retry(job.code2desId);
      assert.equal(r3.job.attempt, 3);
      await failWithoutArtifact(stack, await readManifest(stack, job.code2desId, 3), "third try failed");
      await rejectsWith(jobs.retry(job.code2desId), 409, "attempts_exhausted");

      const completed = await processingJob(jobs);
      await finish(stack, completed.manifest, { kind: "result", document: { type: "FRAME" } });
      await rejectsWith(jobs.retry(completed.job.code2desId), 409, "not_failed");
    });

    test("delete: 204, then the job is absent everywhere and its webhook is 410", async () => {
      const { jobs } = clientFor(stack, tenant);
      const { job, manifest } = await processingJob(jobs, `del-${randomUUID()}`);
      await jobs.delete(job.code2desId);
      await rejectsWith(jobs.get(job.code2desId), 404, "not_found");
      await rejectsWith(jobs.delete(job.code2desId), 404, "not_found");
      await rejectsWith(jobs.cancel(job.code2desId), 404, "not_found");
      await rejectsWith(jobs.retry(job.code2desId), 404, "not_found");
      await rejectsWith(jobs.result(job.code2desId), 404, "not_found");
      await rejectsWith(jobs.place(job.code2desId, "1:2"), 404, "not_found");
      const listed = await jobs.list({ figmaFileKey: job.figmaFileKey });
      assert.deepEqual(listed.items, []);
      assert.equal((await failWithoutArtifact(stack, manifest, "x")).status, 410);
    });
  });
});

test("parseRetryAfter reads delay-seconds and HTTP dates", () => {
  assert.equal(parseRetryAfter("2"), 2000);
  assert.equal(parseRetryAfter(null), null);
  assert.equal(parseRetryAfter("soon"), null);
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:05 GMT", now), 5000);
  assert.equal(parseRetryAfter("Wed, 31 Dec 2025 23:59:00 GMT", now), 0);
});

// Compile-time: a Job's fields are typed as openapi.yaml says (tsc runs before the tests).
const _typed = (j: Job): [string, number, string | null] => [j.status, j.attempt, j.errorMessage];
void _typed;
