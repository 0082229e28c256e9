// The UI's decisions without a browser (src/model.ts): a job's state and actions, the pasted
// settings, the age of a job in words, the fidelity report's words.

import assert from "node:assert/strict";
import { test } from "node:test";

import type { Job } from "@code2des/client";
import {
  WARNING_LABEL,
  actionsFor,
  ageText,
  checkSettings,
  secondsLeft,
  settingsFromPaste,
  stateOf,
  warningLabel,
  warningsText,
} from "../src/model.js";

function job(over: Partial<Job>): Job {
  return {
    code2desId: "0190e6d4-3a1b-7c2d-8e9f-0a1b2c3d4e5f",
    organizationId: 1,
    projectId: 1,
    pageImportId: "pi",
    figmaFileKey: "F",
    screenId: "s",
    placementTarget: null,
    status: "processing",
    attempt: 1,
    maxAttempts: 3,
    progress: null,
    warningCount: null,
    errorMessage: null,
    hasResult: false,
    resultExpiresAt: null,
    materializedAt: null,
    materializedNodeId: null,
    createdAt: "2026-01-01T00:00:00.000000Z",
    updatedAt: "2026-01-01T00:00:00.000000Z",
    createdBy: "u",
    updatedBy: "u",
    ...over,
  };
}

test("every state has its actions", () => {
  const cases: [Partial<Job>, string, string[]][] = [
    [{ status: "processing" }, "processing", ["cancel", "delete"]],
    [{ status: "completed", hasResult: true }, "completed", ["place", "delete"]],
    [{ status: "completed", hasResult: true, materializedNodeId: "1:2" }, "placed", ["show", "delete"]],
    [{ status: "failed", errorMessage: "page too large" }, "failed", ["retry", "delete"]],
    [{ status: "failed", errorMessage: "page too large", attempt: 3 }, "failed", ["delete"]],
    [{ status: "failed", errorMessage: "cancelled", attempt: 2 }, "cancelled", ["retry", "delete"]],
    [{ status: "failed", errorMessage: "timed out" }, "timed-out", ["retry", "delete"]],
    [{ status: "failed", errorMessage: null, attempt: 3, maxAttempts: 3 }, "failed", ["delete"]],
  ];
  for (const [over, state, actions] of cases) {
    const j = job(over);
    assert.equal(stateOf(j), state, JSON.stringify(over));
    assert.deepEqual(actionsFor(j), actions, JSON.stringify(over));
  }
});

test("the JSON seed --json prints is settings, the API URL taken from baseUrl", () => {
  const line =
    '{"baseUrl":"http://127.0.0.1:3000/organizations/4/projects/5/code2des","organizationId":4,"pageImportId":"page-import-1","projectId":5,"sub":"you","token":"eyJ.x.y"}';
  assert.deepEqual(settingsFromPaste(`  ${line}\n`), {
    apiUrl: "http://127.0.0.1:3000",
    token: "eyJ.x.y",
    organizationId: 4,
    projectId: 5,
    pageImportId: "page-import-1",
    sub: "you",
  });
  // A deployed API with a stage path, ids as strings, apiUrl instead of baseUrl.
  assert.equal(
    settingsFromPaste('{"baseUrl":"https://x.example/prod/organizations/1/projects/2/code2des","organizationId":"1","projectId":"2","token":"t"}').apiUrl,
    "https://x.example/prod",
  );
  assert.equal(settingsFromPaste('{"apiUrl":"https://x.example/","organizationId":1,"projectId":2,"token":"t"}').apiUrl, "https://x.example");
  // What the paste lacks comes from the settings already there.
  const kept = settingsFromPaste('{"token":"new"}', { apiUrl: "http://h:1", token: "old", organizationId: 1, projectId: 2, pageImportId: "p" });
  assert.deepEqual([kept.token, kept.apiUrl, kept.pageImportId], ["new", "http://h:1", "p"]);
});

test("a paste that is not settings says what is wrong", () => {
  assert.throws(() => settingsFromPaste("organizationId 1"), /not JSON/);
  assert.throws(() => settingsFromPaste("[1]"), /JSON object/);
  assert.throws(() => settingsFromPaste('{"organizationId":1,"projectId":2}'), /Missing apiUrl, token/);
  assert.throws(() => settingsFromPaste('{"baseUrl":"http://h/x","organizationId":1,"projectId":2,"token":"t"}'), /no \/organizations\//);
  assert.throws(() => settingsFromPaste('{"apiUrl":"file:///etc","organizationId":1,"projectId":2,"token":"t"}'), /http or https/);
  assert.throws(() => settingsFromPaste('{"apiUrl":"http://h","organizationId":0,"projectId":2,"token":"t"}'), /Missing organizationId/);
  assert.throws(() => checkSettings({ apiUrl: "not a url", token: "t", organizationId: 1, projectId: 1 }), /not a URL/);
});

test("ages in words, the countdown in whole seconds", () => {
  const now = Date.parse("2026-01-10T12:00:00Z");
  const ago = (s: number) => new Date(now - s * 1000).toISOString();
  assert.equal(ageText(ago(10), now), "just now");
  assert.equal(ageText(ago(300), now), "5 min ago");
  assert.equal(ageText(ago(3 * 3600), now), "3 h ago");
  assert.equal(ageText(ago(30 * 3600), now), "yesterday");
  assert.equal(ageText(ago(3 * 86400), now), "3 days ago");
  assert.equal(ageText(ago(30 * 86400), now), "2025-12-11");
  assert.equal(ageText(ago(-5), now), "just now", "a clock a little ahead is not the future");
  assert.equal(secondsLeft(now + 1200, now), 2);
  assert.equal(secondsLeft(now - 5, now), 0);
});

test("the report's count in words, and every code as a label", () => {
  assert.equal(warningsText(0), "No warnings");
  assert.equal(warningsText(1), "1 warning");
  assert.equal(warningsText(3), "3 warnings");
  // Every code has a label of its own (WARNING_LABEL's type lists openapi.yaml's codes).
  for (const [code, label] of Object.entries(WARNING_LABEL)) {
    assert.equal(warningLabel(code), label);
    assert.match(label, /^[A-Z][A-Za-z -]+$/, code);
  }
  assert.equal(warningLabel("unsupported_css"), "Unsupported CSS");
  assert.equal(warningLabel("empty_group"), "Empty group");
  // A code added after this plugin was built still reads; Object's own members are not labels.
  assert.equal(warningLabel("svg_flattened"), "Svg flattened");
  assert.equal(warningLabel("constructor"), "Constructor");
  assert.equal(warningLabel(""), "Warning");
});
