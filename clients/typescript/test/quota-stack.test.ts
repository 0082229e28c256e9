// A quota's 429 from the REAL local stack, waited out: scripts/test-plugin starts a third
// stack with `MAX_ACTIVE_JOBS_PER_ORG=1` in its environment (no worker: this test plays it).
// The second trigger of a tenant is refused 429 `active` with the server's Retry-After and
// RateLimit fields; `triggerWhenFree` waits, the test's worker finishes the first job
// meanwhile, and the same trigger, sent again with the same Idempotency-Key, is accepted: one
// job, never two. test/quota.test.ts covers the client's side against a stub.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Code2DesClient, QuotaExceededError } from "../src/index.js";
import { failWithoutArtifact, quotaStack, readManifest, seedTenant } from "./stack.js";

test("a 429 from the real stack (an active limit of 1) is waited out, and the same trigger then creates one job", async () => {
  const stack = quotaStack();
  const t = await seedTenant(stack);
  const jobs = new Code2DesClient({ baseUrl: stack.url, token: t.token }).project(t);
  const body = { pageImportId: t.pageImportId, figmaFileKey: "FILE-quota", screenId: "home" };

  const first = await jobs.trigger(body);
  // Every 202 tells the quotas: the organization's one slot is now taken.
  assert.deepEqual(
    first.rateLimit.policies.map((p) => [p.name, p.quota, p.windowSeconds, p.quotaUnit]),
    [
      ["active", 1, null, "concurrent-requests"],
      ["burst", 30, 60, "requests"],
    ],
  );
  assert.deepEqual(
    first.rateLimit.limits.map((l) => [l.name, l.remaining]),
    [
      ["active", 0],
      ["burst", 29],
    ],
  );
  assert.equal(first.rateLimit.limits[0]?.resetSeconds, null, "active has no window, so no t");

  const refusals: QuotaExceededError[] = [];
  const started = Date.now();
  const second = await jobs.triggerWhenFree(body, {
    onWait: (refusal) => {
      refusals.push(refusal);
      // The worker ends the first job while the client waits: its slot frees at once.
      if (refusals.length === 1) {
        void readManifest(stack, first.job.code2desId).then((m) => failWithoutArtifact(stack, m, "done elsewhere"));
      }
    },
  });
  assert.equal(refusals.length, 1, "one refusal, then accepted");
  const [r] = refusals;
  assert.ok(r);
  assert.equal(r.status, 429);
  assert.equal(r.code, "quota_exceeded");
  assert.equal(r.limit, "active");
  assert.equal(r.retryAfterMs, 2000, "the active limit's pace: Retry-After: 2");
  assert.match(r.requestId ?? "", /^[0-9a-f-]{36}$/);
  assert.deepEqual(
    r.rateLimit.limits.map((l) => [l.name, l.remaining]),
    [
      ["active", 0],
      ["burst", 29],
    ],
    "the refused call counted nothing",
  );
  assert.ok(Date.now() - started >= 2000, "the client waited Retry-After before sending again");

  assert.notEqual(second.job.code2desId, first.job.code2desId);
  assert.equal(second.job.status, "processing");
  assert.deepEqual(
    second.rateLimit.limits.map((l) => [l.name, l.remaining]),
    [
      ["active", 0],
      ["burst", 28],
    ],
  );
  // The same Idempotency-Key again: the same job, not refused although the slot is taken.
  const replay = await jobs.trigger(body, { idempotencyKey: second.idempotencyKey });
  assert.equal(replay.job.code2desId, second.job.code2desId);
  const page = await jobs.list({ figmaFileKey: "FILE-quota" });
  assert.equal(page.items.length, 2, "two jobs: the refused call made none");
});
