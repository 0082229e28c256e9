// The main-thread builder (src/build.ts) against figma-api-stub: the Figma tree it builds
// matches the document node by node, for every node type SPEC section 4 allows.

import assert from "node:assert/strict";
import { test } from "node:test";

import type { Node } from "@code2des/client";
import { png } from "../../clients/typescript/test/stack.js";
import { Builder, ImageStore } from "../src/build.js";
import { type Images, compareTree, countNodes, testFigma } from "./figma.js";
import { EVERY_TYPE, IMAGES } from "./fixtures.js";

async function build(doc: Node, images: Images) {
  const t = testFigma();
  const store = new ImageStore(t.figma);
  for (const [ref, bytes] of images.raster) store.addRaster(ref, bytes);
  for (const [ref, svg] of images.svg) store.addSvg(ref, svg);
  const built = await new Builder(t.figma, store).build(doc);
  return { t, built };
}

test("every node type is built, node by node as the document says", async () => {
  const { t, built } = await build(EVERY_TYPE, IMAGES);
  const { diffs, compared } = compareTree(EVERY_TYPE, built.root, t, IMAGES);
  assert.deepEqual(diffs, []);
  // Every document node was compared (the empty group as its stand-in frame).
  assert.equal(compared, countNodes(EVERY_TYPE));
  assert.equal(built.nodes, countNodes(EVERY_TYPE));
  assert.deepEqual(
    [...new Set(flatten(built.root).map((n) => n.type))].sort(),
    ["ELLIPSE", "FRAME", "GROUP", "LINE", "RECTANGLE", "TEXT", "VECTOR"],
    "the plugin API's own node types (an SVG becomes a FRAME of vectors)",
  );
  assert.equal(t.figma.currentPage.children.length, 1, "one root on the page, nothing left behind");
  assert.equal(t.figma.currentPage.children[0], built.root);
  assert.deepEqual(built.warnings.sort(), [
    'empty group "Empty group" built as an empty frame',
    "font No Such Font Regular is not available; used Inter Regular",
  ]);
});

test("the comparison catches a tree that differs from its document", async () => {
  // Guards the guard: compareTree must see a wrong child, a wrong position and a wrong image.
  const { t, built } = await build(EVERY_TYPE, IMAGES);
  const frame = built.root as FrameNode;
  const hero = frame.children.find((n) => n.name === "Hero") as RectangleNode;
  hero.x += 1;
  hero.fills = [{ type: "IMAGE", imageHash: t.figma.createImage(png(1, 1)).hash, scaleMode: "FILL" }];
  frame.children.find((n) => n.name === "Rule")?.remove();
  const { diffs } = compareTree(EVERY_TYPE, built.root, t, IMAGES);
  assert.ok(diffs.some((d) => d.includes("Hero") || d.includes("x is 81")), diffs.join("\n"));
  assert.ok(diffs.some((d) => d.includes("is not image hero")), diffs.join("\n"));
  assert.ok(diffs.some((d) => d.includes("child count")), diffs.join("\n"));
});

test("a group's members keep the group's parent's coordinates", async () => {
  const doc: Node = {
    type: "FRAME",
    width: 500,
    height: 500,
    children: [{ type: "GROUP", x: 100, y: 50, children: [{ type: "RECTANGLE", name: "r", x: 10, y: 20, width: 5, height: 5 }] }],
  };
  const { built } = await build(doc, { raster: new Map(), svg: new Map() });
  const group = (built.root as FrameNode).children[0] as GroupNode;
  assert.equal(group.type, "GROUP");
  const rect = group.children[0] as RectangleNode;
  assert.deepEqual([rect.x, rect.y], [110, 70]);
});

test("an image the UI never sent fails the build with its ref", async () => {
  const doc: Node = { type: "RECTANGLE", fills: [{ type: "IMAGE", imageRef: "nowhere" }] };
  await assert.rejects(build(doc, { raster: new Map(), svg: new Map() }), /image "nowhere" was not received/);
  const svg: Node = { type: "SVG", imageRef: "lost" };
  await assert.rejects(build(svg, { raster: new Map(), svg: new Map() }), /SVG image "lost" was not received/);
});

function flatten(n: SceneNode): SceneNode[] {
  return [n, ...("children" in n ? n.children.flatMap(flatten) : [])];
}

test("the members of the converted pages (issue 30) are materialized", async () => {
  const doc: Node = {
    type: "FRAME",
    name: "Page",
    width: 400,
    height: 300,
    children: [
      {
        type: "FRAME",
        name: "Card",
        x: 10,
        y: 20,
        width: 200,
        height: 100,
        fills: [
          {
            type: "GRADIENT_LINEAR",
            gradientTransform: [
              [1, 0, 0],
              [0, 1, 0],
            ],
            gradientStops: [
              { position: 0, color: { r: 1, g: 0, b: 0, a: 1 } },
              { position: 1, color: { r: 0, g: 0, b: 1, a: 0.5 } },
            ],
          },
        ],
        strokes: [{ type: "SOLID", color: { r: 0, g: 0, b: 0 } }],
        strokeWeight: 2,
        strokeAlign: "INSIDE",
        strokeTopWeight: 0,
        strokeRightWeight: 2,
        strokeBottomWeight: 2,
        strokeLeftWeight: 1,
        topLeftRadius: 12,
        topRightRadius: 4,
        bottomRightRadius: 0,
        bottomLeftRadius: 0,
        effects: [
          { type: "DROP_SHADOW", color: { r: 0, g: 0, b: 0, a: 0.25 }, offset: { x: 0, y: 4 }, radius: 6, spread: -1 },
          { type: "INNER_SHADOW", color: { r: 1, g: 1, b: 1, a: 1 }, offset: { x: 1, y: 1 }, radius: 0 },
        ],
        layoutMode: "HORIZONTAL",
        itemSpacing: 12,
        paddingTop: 16,
        paddingRight: 20,
        paddingBottom: 16,
        paddingLeft: 20,
        primaryAxisAlignItems: "MIN",
        counterAxisAlignItems: "CENTER",
        children: [
          { type: "RECTANGLE", name: "a", x: 20, y: 35, width: 30, height: 30, cornerRadius: 3 },
          {
            type: "TEXT",
            name: "Label",
            x: 62,
            y: 40,
            width: 80,
            height: 24,
            characters: "Hello",
            fontSize: 16,
            fontName: { family: "Inter", style: "Regular" },
            lineHeight: { unit: "PIXELS", value: 24 },
            letterSpacing: { unit: "PIXELS", value: 1.5 },
            textDecoration: "UNDERLINE",
            textCase: "UPPER",
            textAutoResize: "WIDTH_AND_HEIGHT",
          },
        ],
      },
      {
        type: "TEXT",
        name: "Auto",
        characters: "x",
        lineHeight: { unit: "AUTO" },
      },
    ],
  };
  const { built } = await build(doc, { raster: new Map(), svg: new Map() });
  assert.deepEqual(built.warnings, []);
  const card = (built.root as FrameNode).children[0] as FrameNode;
  assert.equal((card.fills as Paint[])[0]?.type, "GRADIENT_LINEAR");
  const g = (card.fills as GradientPaint[])[0];
  assert.deepEqual(g?.gradientStops[1], { position: 1, color: { r: 0, g: 0, b: 1, a: 0.5 } });
  assert.deepEqual(g?.gradientTransform, [
    [1, 0, 0],
    [0, 1, 0],
  ]);
  assert.equal(card.strokeAlign, "INSIDE");
  assert.deepEqual(
    [card.strokeTopWeight, card.strokeRightWeight, card.strokeBottomWeight, card.strokeLeftWeight],
    [0, 2, 2, 1],
  );
  assert.deepEqual(
    [card.topLeftRadius, card.topRightRadius, card.bottomRightRadius, card.bottomLeftRadius],
    [12, 4, 0, 0],
  );
  assert.deepEqual(
    card.effects.map((e) => e.type),
    ["DROP_SHADOW", "INNER_SHADOW"],
  );
  assert.deepEqual(card.effects[0], {
    type: "DROP_SHADOW",
    color: { r: 0, g: 0, b: 0, a: 0.25 },
    offset: { x: 0, y: 4 },
    radius: 6,
    spread: -1,
    visible: true,
    blendMode: "NORMAL",
  });
  assert.equal(card.layoutMode, "HORIZONTAL");
  assert.deepEqual(
    [card.itemSpacing, card.paddingTop, card.paddingRight, card.paddingBottom, card.paddingLeft],
    [12, 16, 20, 16, 20],
  );
  assert.deepEqual([card.primaryAxisAlignItems, card.counterAxisAlignItems], ["MIN", "CENTER"]);
  assert.deepEqual([card.primaryAxisSizingMode, card.counterAxisSizingMode], ["FIXED", "FIXED"]);
  assert.deepEqual([card.width, card.height], [200, 100]);
  const label = card.children[1] as TextNode;
  assert.deepEqual(label.lineHeight, { unit: "PIXELS", value: 24 });
  assert.deepEqual(label.letterSpacing, { unit: "PIXELS", value: 1.5 });
  assert.equal(label.textDecoration, "UNDERLINE");
  assert.equal(label.textCase, "UPPER");
  assert.equal(label.textAutoResize, "WIDTH_AND_HEIGHT");
  const auto = (built.root as FrameNode).children[1] as TextNode;
  assert.deepEqual(auto.lineHeight, { unit: "AUTO" });
});
