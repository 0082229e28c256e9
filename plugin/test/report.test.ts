// The fidelity report as the main thread keeps it on a design's root (src/report.ts): the
// converter's warnings and the Builder's together, a result that counts without listing, the
// 100 kB Figma allows one plugin-data entry, and plugin data that does not have the shape.

import assert from "node:assert/strict";
import { test } from "node:test";

import type { ResultWarning } from "@code2des/client";
import type { BuildWarning } from "../src/build.js";
import { REPORT_BUDGET, REPORT_KEY, composeReport, fitReport, readReport, reportTotal, storeReport, utf8Length } from "../src/report.js";
import { testFigma } from "./figma.js";

const converter: ResultWarning[] = [
  { code: "font_substituted", message: "Helvetica Neue is not available; drawn with Inter", path: "body > h1", node: "Title", indices: [0, 2] },
  { code: "canvas_skipped", message: "a canvas", path: "body > canvas", node: null, indices: null },
];
const plugin: BuildWarning[] = [{ code: "empty_group", message: 'empty group "x" built as an empty frame', node: "x", indices: [3] }];

test("the converter's warnings, then the plugin's, each marked with its source", () => {
  const r = composeReport(converter, 2, plugin);
  assert.deepEqual(r, {
    entries: [
      { source: "converter", code: "font_substituted", message: "Helvetica Neue is not available; drawn with Inter", path: "body > h1", node: "Title", indices: [0, 2] },
      { source: "converter", code: "canvas_skipped", message: "a canvas", path: "body > canvas" },
      { source: "plugin", code: "empty_group", message: 'empty group "x" built as an empty frame', node: "x", indices: [3] },
    ],
    unlisted: 0,
    dropped: 0,
  });
  assert.equal(reportTotal(r), 3);
  // A result from before the list: a count, no list.
  const old = composeReport([], 4, []);
  assert.deepEqual(old, { entries: [], unlisted: 4, dropped: 0 });
  assert.equal(reportTotal(old), 4);
  assert.equal(reportTotal(composeReport([], null, [])), 0);
});

test("kept on the root and read back; what has not the shape is left out", () => {
  const t = testFigma();
  const root = t.figma.createFrame();
  assert.equal(readReport(root), null, "a design built before reports were kept");
  const r = composeReport(converter, 2, plugin);
  storeReport(root, r);
  assert.deepEqual(readReport(root), r);
  root.setPluginData(REPORT_KEY, "{not json");
  assert.equal(readReport(root), null);
  root.setPluginData(
    REPORT_KEY,
    JSON.stringify({
      entries: [
        { source: "plugin", code: "paint_skipped", message: "m", indices: [1, -1] },
        { code: 3, message: "no code" },
        { source: "???", code: "video_skipped", message: "v", path: "", indices: [0] },
      ],
      unlisted: -2,
      dropped: "x",
    }),
  );
  assert.deepEqual(readReport(root), {
    entries: [
      { source: "plugin", code: "paint_skipped", message: "m" },
      { source: "converter", code: "video_skipped", message: "v", indices: [0] },
    ],
    unlisted: 0,
    dropped: 0,
  });
});

test("a report past Figma's 100 kB per entry keeps what fits and counts the rest", () => {
  // 1 000 warnings (the artifact's most) with long paths: about 2 MB.
  const many: ResultWarning[] = Array.from({ length: 1000 }, (_, i) => ({
    code: "unsupported_css",
    message: `a transform on element ${i}: its bounding box is drawn — ${"é".repeat(300)}`,
    path: `body > main > ${"div > ".repeat(200)}span:nth-child(${i})`,
    node: `node ${i}`,
    indices: [0, i % 40],
  }));
  const r = composeReport(many, 1000, plugin);
  const json = fitReport(r);
  assert.ok(utf8Length(json) <= REPORT_BUDGET, `${utf8Length(json)} bytes`);
  assert.ok(utf8Length(json) > REPORT_BUDGET - 3000, "as much as fits");
  const kept = JSON.parse(json) as typeof r;
  assert.ok(kept.entries.length > 10 && kept.entries.length < 1000);
  assert.deepEqual(kept.entries, r.entries.slice(0, kept.entries.length), "the first ones, whole");
  assert.equal(kept.entries.length + kept.dropped, 1001);
  assert.equal(reportTotal(kept), reportTotal(r), "the count is the whole report's");
  // A small one is kept as it is.
  assert.equal(fitReport(composeReport(converter, 2, [])), JSON.stringify(composeReport(converter, 2, [])));
});

test("UTF-8 lengths: ASCII, two and three bytes, and a surrogate pair", () => {
  for (const s of ["", "abc", "é", "€", "😀", "a€😀é"]) assert.equal(utf8Length(s), Buffer.byteLength(s, "utf8"), s);
});
