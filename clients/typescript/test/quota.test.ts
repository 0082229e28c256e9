// 429 and the quota headers (issue 23), against a local HTTP stub that answers as the server
// will: a refused trigger or retry is 429 with `{"error":{"code":"quota_exceeded","message",
// "limit"},"requestId"}`, `Retry-After`, `RateLimit-Policy` and `RateLimit`
// (draft-ietf-httpapi-ratelimit-headers-11); every 202 carries the two RateLimit headers too.
// The stub plays what the real stack answers rarely or slowly (a burst window's wait, a 429
// without Retry-After, a gateway's throttle); test/quota-stack.test.ts waits out a real 429.
// These tests need no stack and run anywhere.

import assert from "node:assert/strict";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, describe, test } from "node:test";

import {
  ApiError,
  Code2DesClient,
  type Job,
  QuotaExceededError,
  parseRateLimit,
  parseRateLimitPolicy,
  readRateLimit,
  whenFree,
} from "../src/index.js";

const ORG = 7;
const PROJECT = 9;
const BASE = `/organizations/${ORG}/projects/${PROJECT}/code2des`;
const JOB_ID = "0190e6d4-3a1b-7c2d-8e9f-0a1b2c3d4e5f";
const POLICY = '"active";q=20, "burst";q=30;w=60';

function job(attempt = 1): Job {
  const now = new Date().toISOString();
  return {
    code2desId: JOB_ID,
    organizationId: ORG,
    projectId: PROJECT,
    pageImportId: "pi",
    figmaFileKey: "FILE",
    screenId: "home",
    placementTarget: null,
    status: "processing",
    attempt,
    maxAttempts: 3,
    progress: null,
    warningCount: null,
    errorMessage: null,
    hasResult: false,
    resultExpiresAt: null,
    materializedAt: null,
    materializedNodeId: null,
    createdAt: now,
    updatedAt: now,
    createdBy: "stub",
    updatedBy: "stub",
  };
}

interface Seen {
  at: number;
  method: string;
  url: string;
  idempotencyKey: string | undefined;
  body: string;
}

/** What the stub answers next, in order; each entry is used once. */
type Answer = { status: number; headers?: Record<string, string>; body?: unknown };

let server: Server;
let url: string;
let seen: Seen[];
let script: Answer[];

before(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      seen.push({
        at: performance.now(),
        method: req.method ?? "",
        url: req.url ?? "",
        idempotencyKey: req.headers["idempotency-key"] as string | undefined,
        body,
      });
      const a = script.shift() ?? { status: 500, body: { error: { code: "internal_error", message: "stub: no answer left" }, requestId: "x" } };
      res.writeHead(a.status, { "content-type": "application/json", ...a.headers });
      res.end(a.body === undefined ? "" : JSON.stringify(a.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  seen = [];
  script = [];
});

const jobs = () => new Code2DesClient({ baseUrl: url, token: "t" }).project({ organizationId: ORG, projectId: PROJECT });

function refusal(limit: "active" | "burst", headers: Record<string, string>): Answer {
  return {
    status: 429,
    headers: { "ratelimit-policy": POLICY, ...headers },
    body: {
      error: { code: "quota_exceeded", message: `the ${limit} quota is used up`, limit },
      requestId: "0190e6d4-0000-7000-8000-000000000001",
    },
  };
}

function accepted(attempt = 1): Answer {
  return {
    status: 202,
    headers: { location: `${BASE}/${JOB_ID}`, "ratelimit-policy": POLICY, ratelimit: '"active";r=19;t=0' },
    body: job(attempt),
  };
}

describe("a 429 from trigger and retry", () => {
  test("trigger: a typed QuotaExceededError with the delay, the limit and the quota headers", async () => {
    script = [refusal("active", { "retry-after": "12", ratelimit: '"active";r=0;t=12' })];
    const e = await jobs()
      .trigger({ pageImportId: "pi", figmaFileKey: "FILE", screenId: "home" })
      .then(() => assert.fail("a 429 must reject"), (err: unknown) => err);
    assert.ok(e instanceof QuotaExceededError);
    assert.ok(e instanceof ApiError, "still an ApiError: callers that catch ApiError see it");
    assert.equal(e.status, 429);
    assert.equal(e.code, "quota_exceeded");
    assert.equal(e.limit, "active");
    assert.equal(e.retryAfterMs, 12_000);
    assert.equal(e.message, "the active quota is used up");
    assert.equal(e.requestId, "0190e6d4-0000-7000-8000-000000000001");
    assert.deepEqual(e.rateLimit, {
      policies: [
        { name: "active", quota: 20, windowSeconds: null, quotaUnit: "requests", partitionKey: null },
        { name: "burst", quota: 30, windowSeconds: 60, quotaUnit: "requests", partitionKey: null },
      ],
      limits: [{ name: "active", remaining: 0, resetSeconds: 12, partitionKey: null }],
    });
  });

  test("triggerWhenFree waits Retry-After, then sends the same trigger with the same Idempotency-Key", async () => {
    script = [refusal("active", { "retry-after": "1", ratelimit: '"active";r=0;t=1' }), accepted()];
    const waits: { limit: string | null; inMs: number }[] = [];
    const started = Date.now();
    const answer = await jobs().triggerWhenFree(
      { pageImportId: "pi", figmaFileKey: "FILE", screenId: "home" },
      { onWait: (e, retryAt) => waits.push({ limit: e.limit, inMs: retryAt - started }) },
    );
    assert.equal(seen.length, 2, "refused once, then accepted");
    const [first, second] = seen as [Seen, Seen];
    assert.equal(first.method, "POST");
    assert.equal(first.url, BASE);
    assert.match(first.idempotencyKey ?? "", /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "a UUID v4 was made");
    assert.equal(second.idempotencyKey, first.idempotencyKey, "the same key: at most one job");
    assert.equal(second.body, first.body, "the same body");
    assert.ok(second.at - first.at >= 995, `sent again ${(second.at - first.at).toFixed(0)} ms later, Retry-After said 1 s`);
    assert.equal(waits.length, 1);
    assert.equal(waits[0]?.limit, "active");
    assert.ok((waits[0]?.inMs ?? 0) >= 990);
    assert.equal(answer.idempotencyKey, first.idempotencyKey);
    assert.equal(answer.job.code2desId, JOB_ID);
    assert.equal(answer.location, `${BASE}/${JOB_ID}`);
    assert.deepEqual(answer.rateLimit.limits, [{ name: "active", remaining: 19, resetSeconds: 0, partitionKey: null }]);
    assert.equal(answer.rateLimit.policies.length, 2, "a 202 carries the policy too");
  });

  test("a given Idempotency-Key is the one resent", async () => {
    script = [refusal("burst", { "retry-after": "1" }), refusal("burst", { "retry-after": "1" }), accepted()];
    const answer = await jobs().triggerWhenFree({ pageImportId: "pi", figmaFileKey: "FILE", screenId: "home" }, { idempotencyKey: "my-key" });
    assert.deepEqual(
      seen.map((s) => s.idempotencyKey),
      ["my-key", "my-key", "my-key"],
    );
    assert.equal(answer.idempotencyKey, "my-key");
  });

  test("retryWhenFree: without Retry-After, the named limit's reset (RateLimit t) is the delay", async () => {
    script = [refusal("burst", { ratelimit: '"active";r=3;t=0, "burst";r=0;t=1' }), accepted(2)];
    const delays: number[] = [];
    const r = await jobs().retryWhenFree(JOB_ID, { attempt: 1, onWait: (e) => delays.push(e.retryAfterMs) });
    assert.deepEqual(delays, [1000]);
    assert.equal(seen.length, 2);
    assert.deepEqual(
      seen.map((s) => [s.method, s.url, s.body]),
      [
        ["POST", `${BASE}/${JOB_ID}/retry`, '{"attempt":1}'],
        ["POST", `${BASE}/${JOB_ID}/retry`, '{"attempt":1}'],
      ],
    );
    assert.ok((seen[1]?.at ?? 0) - (seen[0]?.at ?? 0) >= 995);
    assert.equal(r.created, true);
    assert.equal(r.job.attempt, 2);
  });

  test("a 429 that is not the API's (a gateway's throttle) still waits its Retry-After", async () => {
    script = [{ status: 429, headers: { "retry-after": "1" }, body: { message: "Too Many Requests" } }, accepted()];
    const refusals: QuotaExceededError[] = [];
    await jobs().triggerWhenFree({ pageImportId: "pi", figmaFileKey: "FILE", screenId: "s" }, { onWait: (e) => refusals.push(e) });
    assert.equal(refusals[0]?.code, "http_429");
    assert.equal(refusals[0]?.limit, null);
    assert.equal(refusals[0]?.retryAfterMs, 1000);
    assert.deepEqual(refusals[0]?.rateLimit, { policies: [], limits: [] });
  });

  test("the wait stops on its signal, and maxWaits gives up with the last refusal", async () => {
    script = [refusal("active", { "retry-after": "30" })];
    const stop = new AbortController();
    const waiting = jobs().triggerWhenFree(
      { pageImportId: "pi", figmaFileKey: "FILE", screenId: "s" },
      { signal: stop.signal, onWait: () => setTimeout(() => stop.abort(new Error("closed")), 50) },
    );
    await assert.rejects(waiting, /closed/);
    assert.equal(seen.length, 1, "nothing sent after the abort");

    seen = [];
    script = [refusal("active", { "retry-after": "1" })];
    await assert.rejects(
      jobs().triggerWhenFree({ pageImportId: "pi", figmaFileKey: "FILE", screenId: "s" }, { maxWaits: 0 }),
      (e: unknown) => e instanceof QuotaExceededError && e.limit === "active",
    );
    assert.equal(seen.length, 1);
  });

  test("whenFree passes other errors through at once", async () => {
    script = [{ status: 409, body: { error: { code: "attempts_exhausted", message: "no more" }, requestId: "r" } }];
    const t0 = performance.now();
    await assert.rejects(
      whenFree(() => jobs().retry(JOB_ID)),
      (e: unknown) => e instanceof ApiError && !(e instanceof QuotaExceededError) && e.code === "attempts_exhausted",
    );
    assert.ok(performance.now() - t0 < 900, "no wait");
  });
});

describe("RateLimit and RateLimit-Policy (Structured Field lists)", () => {
  test("the server's headers", () => {
    assert.deepEqual(parseRateLimitPolicy(POLICY), [
      { name: "active", quota: 20, windowSeconds: null, quotaUnit: "requests", partitionKey: null },
      { name: "burst", quota: 30, windowSeconds: 60, quotaUnit: "requests", partitionKey: null },
    ]);
    assert.deepEqual(parseRateLimit('"active";r=0;t=12'), [{ name: "active", remaining: 0, resetSeconds: 12, partitionKey: null }]);
    assert.deepEqual(readRateLimit(new Headers()), { policies: [], limits: [] });
  });

  test("tokens as names, qu and pk, unknown parameters, optional whitespace", () => {
    assert.deepEqual(parseRateLimitPolicy('default;q=100;w=10;qu="content-bytes";pk=:Y2xpZW50:;x=?1 ,\t"b";q=1'), [
      { name: "default", quota: 100, windowSeconds: 10, quotaUnit: "content-bytes", partitionKey: "Y2xpZW50" },
      { name: "b", quota: 1, windowSeconds: null, quotaUnit: "requests", partitionKey: null },
    ]);
    assert.deepEqual(parseRateLimit('"a";r=5;t=1;r=4, "b";r=1'), [
      { name: "a", remaining: 4, resetSeconds: 1, partitionKey: null },
      { name: "b", remaining: 1, resetSeconds: null, partitionKey: null },
    ]);
  });

  test("members without their quota are left out; a header that does not parse is ignored whole", () => {
    assert.deepEqual(parseRateLimitPolicy('"a";w=60, "b";q=-1, "c";q=1.5, "d";q=2'), [
      { name: "d", quota: 2, windowSeconds: null, quotaUnit: "requests", partitionKey: null },
    ]);
    for (const bad of ['"active";r=0;t=12,', '"active" r=0', '"unterminated;r=0', "active;r=0;;", '"a";R=1', "1;r=1,"]) {
      assert.deepEqual(parseRateLimit(bad), [], bad);
    }
    assert.deepEqual(parseRateLimit('("a" "b");r=1, "c";r=2'), [{ name: "c", remaining: 2, resetSeconds: null, partitionKey: null }], "an inner list names no policy");
  });
});
