// Real converted pages (issues 30, 39): the samples and three real pages as the reference worker
// converts them (paragraphs of styled segments included), built by
// the main-thread builder under figma-api-stub, node by node as the document says.
// scripts/test-plugin converts samples/*.html with the convert example of its build into
// C2D_CONVERTED; run alone, this test converts them itself with the first convert example it
// finds in the workspace's target directory.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import type { Node } from "@code2des/client";
import { Builder, ImageStore } from "../src/build.js";
import { type Images, compareTree, countNodes, testFigma } from "./figma.js";

const ROOT = join(import.meta.dirname, "..", "..");
// The samples, and three real pages nobody here wrote (samples/real: Debian's documentation).
const PAGES = ["article", "form", "landing", "postgresql-geometric", "python-annotations", "rustdoc-cell"];
const capture = (p: string) => join(ROOT, "samples", ["article", "form", "landing"].includes(p) ? "" : "real", `${p}.html`);

function converted(): string {
  if (process.env.C2D_CONVERTED) return process.env.C2D_CONVERTED;
  const exe = ["ci", "release", "debug"]
    .map((p) => join(ROOT, "target", p, "examples", "convert"))
    .find((p) => existsSync(p));
  assert.ok(exe, "no convert example: cargo build -p code2des-convert --example convert (or run scripts/test-plugin)");
  const out = mkdtempSync(join(tmpdir(), "c2d-converted-"));
  execFileSync(exe, ["--out", out, ...PAGES.map(capture)], { stdio: "ignore" });
  return out;
}

function load(dir: string): { document: Node; images: Images } {
  const out = JSON.parse(readFileSync(join(dir, "document.json"), "utf8")) as {
    document: Node;
    images: Record<string, string>;
  };
  const images: Images = { raster: new Map(), svg: new Map() };
  for (const [ref, file] of Object.entries(out.images)) {
    const bytes = readFileSync(join(dir, file));
    if (file.endsWith(".svg")) images.svg.set(ref, bytes.toString("utf8"));
    else images.raster.set(ref, new Uint8Array(bytes));
  }
  return { document: out.document, images };
}

test("the sample pages, converted for real, are built node by node", async () => {
  const dir = converted();
  assert.deepEqual(readdirSync(dir).sort(), PAGES);
  for (const page of PAGES) {
    const { document, images } = load(join(dir, page));
    const t = testFigma();
    const store = new ImageStore(t.figma);
    for (const [ref, bytes] of images.raster) store.addRaster(ref, bytes);
    for (const [ref, svg] of images.svg) store.addSvg(ref, svg);
    const built = await new Builder(t.figma, store).build(document);
    const { diffs, compared } = compareTree(document, built.root, t, images, built.beside);
    assert.deepEqual(diffs, [], page);
    assert.ok(countNodes(document) > 30, `${page}: a real page, not a stub`);
    assert.equal(compared, countNodes(document), page);
    assert.equal(built.nodes, countNodes(document), page);
    // One root on the page, and beside it the components its instances swap in (the landing's
    // icons, one for each card).
    const beside = document.type === "FRAME" ? document.components ?? [] : [];
    assert.equal(t.figma.currentPage.children.length, 1 + beside.length, `${page}: one root on the page, its components beside it`);
    if (page === "landing") assert.equal(built.beside.length, 6, "the landing's six icons");
  }
});
