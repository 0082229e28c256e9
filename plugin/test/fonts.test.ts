// A font Figma cannot load falls back keeping its weight and slope (issue 39, item 6): the
// nearest face of its family, else Inter's at the same weight and slope, and the warning names
// both fonts. The builder (src/build.ts) against figma-api-stub, and the choice (src/fonts.ts).

import assert from "node:assert/strict";
import { test } from "node:test";

import type { Node } from "@code2des/client";
import { Builder, ImageStore } from "../src/build.js";
import { interStyle, parseStyle, substitute } from "../src/fonts.js";
import { FONTS, testFigma } from "./figma.js";

async function buildTexts(fonts: FontName[], figma = testFigma().figma) {
  const doc: Node = {
    type: "FRAME",
    children: fonts.map((fontName, i) => ({ type: "TEXT", name: `t${i}`, characters: "x", fontName })),
  };
  const built = await new Builder(figma, new ImageStore(figma)).build(doc);
  const used = (built.root as FrameNode).children.map((t) => {
    const f = (t as TextNode).fontName as FontName;
    return `${f.family} ${f.style}`;
  });
  return { used, warnings: built.warnings };
}

test("a missing face is stood in for by its family's nearest, the same slope, the weight as CSS picks it", async () => {
  const cases: [FontName, string][] = [
    // Above 500: the heavier first.
    [{ family: "Roboto", style: "Semi Bold" }, "Roboto Bold"],
    [{ family: "Roboto", style: "SemiBold Italic" }, "Roboto Bold Italic"],
    // Below 400: the lighter first.
    [{ family: "Roboto", style: "Extra Light" }, "Roboto Thin"],
    [{ family: "Roboto", style: "Extra Light Italic" }, "Roboto Thin Italic"],
    // 500 without a 500: the lighter, down from it.
    [{ family: "Helvetica", style: "Medium" }, "Helvetica Regular"],
    // Italic and oblique are one slope.
    [{ family: "Helvetica", style: "Italic" }, "Helvetica Oblique"],
    [{ family: "Helvetica", style: "Bold Italic" }, "Helvetica Bold Oblique"],
    // A family spelled otherwise is the same family.
    [{ family: "roboto", style: "Bold" }, "Roboto Bold"],
  ];
  const { used, warnings } = await buildTexts(cases.map(([f]) => f));
  assert.deepEqual(
    used,
    cases.map(([, want]) => want),
  );
  assert.deepEqual(
    warnings.map((w) => w.message),
    cases.map(([f, want]) => `font ${f.family} ${f.style} is not available; used ${want}`),
  );
});

test("a missing family is drawn in Inter at the same weight and slope", async () => {
  const cases: [FontName, string][] = [
    [{ family: "Playfair Display", style: "Bold Italic" }, "Inter Bold Italic"],
    [{ family: "Gone", style: "Semi Bold" }, "Inter Semi Bold"],
    [{ family: "Gone", style: "SemiBold" }, "Inter Semi Bold"],
    [{ family: "Gone", style: "Italic" }, "Inter Italic"],
    [{ family: "Gone", style: "Regular" }, "Inter Regular"],
    [{ family: "Gone", style: "Black" }, "Inter Black"],
    [{ family: "Gone", style: "Light Oblique" }, "Inter Light Italic"],
    [{ family: "Gone", style: "Heavy" }, "Inter Black"],
    // Inter's own missing face: its nearest.
    [{ family: "Inter", style: "Semi Bold Condensed" }, "Inter Semi Bold"],
  ];
  const { used, warnings } = await buildTexts(cases.map(([f]) => f));
  assert.deepEqual(
    used,
    cases.map(([, want]) => want),
  );
  assert.equal(warnings[0]?.message, "font Playfair Display Bold Italic is not available; used Inter Bold Italic");
});

test("without Figma's font list, Inter's face is named; if even that fails to load, Inter Regular", async () => {
  const t = testFigma();
  t.figma.listAvailableFontsAsync = async () => {
    throw new Error("no list");
  };
  const { used } = await buildTexts([{ family: "Gone", style: "Semi Bold Italic" }], t.figma);
  assert.deepEqual(used, ["Inter Semi Bold Italic"]);

  const bare = testFigma();
  const load = bare.figma.loadFontAsync.bind(bare.figma);
  bare.figma.loadFontAsync = async (f: FontName) => {
    if (f.family !== "Inter" || f.style !== "Regular") throw new Error("not here");
    await load(f);
  };
  const { used: last, warnings } = await buildTexts([{ family: "Roboto", style: "Bold" }], bare.figma);
  assert.deepEqual(last, ["Inter Regular"]);
  assert.equal(warnings[0]?.message, "font Roboto Bold is not available; used Inter Regular");
});

test("style names read as weight and slope, Inter's written as Figma names them", () => {
  assert.deepEqual(parseStyle("Semi Bold Italic"), { weight: 600, italic: true, rest: "" });
  assert.deepEqual(parseStyle("ExtraBold Condensed"), { weight: 800, italic: false, rest: "condensed" });
  assert.deepEqual(parseStyle("Oblique"), { weight: 400, italic: true, rest: "" });
  assert.deepEqual(parseStyle("Book"), { weight: 400, italic: false, rest: "" });
  assert.equal(interStyle(400, true), "Italic");
  assert.equal(interStyle(600, true), "Semi Bold Italic");
  assert.equal(interStyle(200, false), "Extra Light");
  assert.equal(interStyle(950, false), "Black");
  // A family whose regular face is named otherwise: "Book" is its 400.
  const dejavu = ["ExtraLight", "Book", "Oblique", "Bold", "Bold Oblique"].map((style) => ({ family: "DejaVu Sans", style }));
  assert.deepEqual(substitute({ family: "DejaVu Sans", style: "Regular" }, dejavu), { family: "DejaVu Sans", style: "Book" });
  assert.deepEqual(substitute({ family: "DejaVu Sans", style: "Italic" }, dejavu), { family: "DejaVu Sans", style: "Oblique" });
  // Every face the test Figma has stands for itself when another of its family is asked for.
  for (const f of FONTS) {
    const asked = { family: f.family, style: `${f.style} Condensed` };
    assert.deepEqual(substitute(asked, FONTS), f, `${f.family} ${f.style}`);
  }
});
