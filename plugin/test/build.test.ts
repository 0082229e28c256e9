// The main-thread builder (src/build.ts) against figma-api-stub: the Figma tree it builds
// matches the document node by node, for every node type SPEC section 4 allows; every document
// node's child indices find the layer it became (src/report.ts), also after the designer's edits.

import assert from "node:assert/strict";
import { test } from "node:test";

import type { Node } from "@code2des/client";
import { png } from "../../clients/typescript/test/stack.js";
import { Builder, ImageStore, INDICES_KEY, JOB_KEY } from "../src/build.js";
import { findLayer, layersByIndex, missingLayers } from "../src/report.js";
import { type Images, type RangeStyle, compareTree, countNodes, testFigma } from "./figma.js";
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
  assert.deepEqual(
    built.warnings.map((w) => [w.code, w.message, w.node, w.indices]),
    [
      ["font_substituted", "font No Such Font Regular is not available; used Inter Regular", "Missing font", [1]],
      ["empty_group", 'empty group "Empty group" built as an empty frame', "Empty group", [8]],
    ],
  );
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
        layoutWrap: "WRAP",
        counterAxisSpacing: 8,
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
  assert.deepEqual([card.layoutWrap, card.counterAxisSpacing], ["WRAP", 8]);
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

// --- which layer each document node became ---------------------------------------------------

/**
 * A nested document whose every node has a unique name: groups in groups, an SVG (built from
 * createNodeFromSvg) with a child (built after it, beside it), empty groups (built as frames),
 * a leaf with children and an auto-layout frame.
 */
const NESTED: Node = {
  type: "FRAME",
  name: "root",
  width: 400,
  height: 400,
  children: [
    { type: "TEXT", name: "t0", characters: "a" },
    {
      type: "GROUP",
      name: "g1",
      children: [
        { type: "RECTANGLE", name: "g1.r0", width: 10, height: 10 },
        { type: "SVG", name: "g1.svg1", imageRef: "logo", x: 20, width: 20, height: 20, children: [{ type: "ELLIPSE", name: "g1.svg1.e0", width: 4, height: 4 }] },
        { type: "GROUP", name: "g1.empty2", x: 3, y: 3 },
        {
          type: "GROUP",
          name: "g1.g3",
          children: [
            { type: "GROUP", name: "g1.g3.empty0" },
            { type: "VECTOR", name: "g1.g3.v1", vectorPaths: [{ data: "M 0 0 L 1 1" }] },
          ],
        },
      ],
    },
    {
      type: "FRAME",
      name: "f2",
      width: 100,
      height: 100,
      layoutMode: "VERTICAL",
      children: [
        {
          type: "RECTANGLE",
          name: "f2.r0",
          width: 5,
          height: 5,
          children: [
            { type: "TEXT", name: "f2.r0.t0", characters: "x" },
            { type: "LINE", name: "f2.r0.l1", width: 10 },
          ],
        },
        { type: "SVG", name: "f2.svg1", imageRef: "logo", width: 48, height: 48 },
        { type: "GROUP", name: "f2.empty2" },
      ],
    },
  ],
};

const LOGO: Images = { raster: new Map(), svg: IMAGES.svg };

/** Every node of a document with its child indices from the root, depth first. */
function everyIndex(doc: Node, at: number[] = []): [number[], Node][] {
  return [[at, doc], ...(doc.children ?? []).flatMap((c, i) => everyIndex(c, [...at, i]))];
}

/** The Figma type a document node is built as (build.ts). */
const builtType = (d: Node) => (d.type === "SVG" || (d.type === "GROUP" && (d.children ?? []).length === 0) ? "FRAME" : d.type);

test("every document node's indices find the layer it became: nested groups, SVGs, empty groups, a leaf's children", async () => {
  const { t, built } = await build(NESTED, LOGO);
  assert.deepEqual(compareTree(NESTED, built.root, t, LOGO).diffs, []);
  const all = everyIndex(NESTED);
  assert.equal(all.length, 16);
  const seen = new Set<string>();
  for (const [indices, d] of all) {
    const layer = findLayer(built.root, indices);
    assert.ok(layer, `[${indices}] ${d.name}: found`);
    assert.equal(layer.name, d.name, `[${indices}] is ${d.name}`);
    assert.equal(layer.type, builtType(d), `[${indices}] ${d.name} is a ${builtType(d)}`);
    assert.equal(layer.getPluginData(INDICES_KEY), JSON.stringify(indices));
    seen.add(layer.id);
  }
  assert.equal(seen.size, all.length, "a layer each");
  assert.equal(layersByIndex(built.root).size, all.length, "every layer the Builder made is marked, nothing else");
  // The cases the Builder builds specially, by where they end up in Figma.
  const root = built.root as FrameNode;
  const g1 = root.children[1] as GroupNode;
  assert.deepEqual(
    g1.children.map((n) => [n.name, n.type]),
    [["g1.r0", "RECTANGLE"], ["g1.svg1", "FRAME"], ["g1.svg1.e0", "ELLIPSE"], ["g1.empty2", "FRAME"], ["g1.g3", "GROUP"]],
    "the SVG's child follows it in the group; the empty group is a frame",
  );
  assert.equal(findLayer(built.root, [1, 1, 0])?.parent, g1, "[1, 1, 0]: the SVG's child, a sibling of the SVG");
  assert.deepEqual((root.children[2] as FrameNode).children.map((n) => n.name), ["f2.r0", "f2.r0.t0", "f2.r0.l1", "f2.svg1", "f2.empty2"]);
  assert.equal(findLayer(built.root, [0, 5]), null, "indices the document does not have find nothing");
});

test("a warning's layer is found after the designer's edits, and is missing once deleted", async () => {
  const { t, built } = await build(NESTED, LOGO);
  const root = built.root as FrameNode;
  const layer = (indices: number[]) => findLayer(root, indices) as SceneNode;
  const svg = layer([1, 1]);
  const line = layer([2, 0, 1]);
  // Renamed, moved to another parent inside the design, wrapped in a new group, reordered.
  svg.name = "Logo (renamed)";
  (layer([2]) as FrameNode).appendChild(svg);
  const wrap = t.figma.group([layer([0])], root);
  wrap.name = "designer's group";
  // (figma-api-stub refuses insertChild within the same parent, which Figma allows: out and back.)
  const last = root.children[root.children.length - 1] as SceneNode;
  t.figma.currentPage.appendChild(last);
  root.insertChild(0, last);
  assert.equal(layer([1, 1]).id, svg.id);
  assert.equal(layer([2, 0, 1]).id, line.id);
  assert.equal(layer([0]).parent, wrap);
  assert.equal(layer([]), root);

  // Deleted: not found, and the report knows which of its entries lost their layer.
  line.remove();
  assert.equal(findLayer(root, [2, 0, 1]), null);
  const report = {
    entries: [
      { source: "converter" as const, code: "unsupported_css", message: "a", indices: [1, 1] },
      { source: "converter" as const, code: "canvas_skipped", message: "no node" },
      { source: "plugin" as const, code: "empty_group", message: "b", indices: [2, 0, 1] },
      { source: "converter" as const, code: "node_limit", message: "the root", indices: [] },
    ],
    unlisted: 0,
    dropped: 0,
  };
  assert.deepEqual(missingLayers(root, report), [2]);
  // Moved out of the design: not this design's any more.
  t.figma.currentPage.appendChild(svg);
  assert.equal(findLayer(root, [1, 1]), null);
});

test("another design dropped inside this one keeps its own indices", async () => {
  const { t, built } = await build(NESTED, LOGO);
  const outer = built.root as FrameNode;
  outer.setPluginData(JOB_KEY, "outer-job");
  const store = new ImageStore(t.figma);
  const inner = await new Builder(t.figma, store).build({ type: "FRAME", name: "inner", children: [{ type: "TEXT", name: "inner.t0", characters: "i" }] }, outer);
  inner.root.setPluginData(JOB_KEY, "inner-job");
  // The inner design sits after the outer one's own layers: the outer's [0] is still its text.
  assert.equal(findLayer(outer, [0])?.name, "t0");
  assert.equal(findLayer(inner.root, [0])?.name, "inner.t0");
  // Its layers are not the outer design's: the outer finds its own [0] first, whatever the order.
  t.figma.currentPage.appendChild(inner.root);
  outer.insertChild(0, inner.root);
  assert.equal(findLayer(outer, [0])?.name, "t0");
  assert.ok(![...layersByIndex(outer).values()].some((n) => n.name.startsWith("inner")));
});

test("a missing font is one warning, at its first text layer, counting the layers", async () => {
  const doc: Node = {
    type: "FRAME",
    children: [
      { type: "TEXT", name: "ok", characters: "a", fontName: { family: "Roboto", style: "Regular" } },
      { type: "TEXT", name: "first", characters: "b", fontName: { family: "Gone", style: "Bold" } },
      { type: "FRAME", children: [{ type: "TEXT", name: "second", characters: "c", fontName: { family: "Gone", style: "Bold" } }] },
    ],
  };
  const { built } = await build(doc, { raster: new Map(), svg: new Map() });
  assert.deepEqual(built.warnings, [
    { code: "font_substituted", message: "font Gone Bold is not available; used Inter Bold (2 text layers)", node: "first", indices: [1] },
  ]);
});

test("the document's styles are local styles, used again by name and value at the next import (issue 39)", async () => {
  const doc = {
    type: "FRAME",
    name: "page",
    width: 200,
    height: 100,
    styles: [
      { id: "S:1", name: "Color/Text", type: "PAINT", paints: [{ type: "SOLID", color: { r: 0.1, g: 0.1, b: 0.1 } }] },
      {
        id: "S:2",
        name: "Text/Body",
        type: "TEXT",
        fontName: { family: "Inter", style: "Regular" },
        fontSize: 16,
        lineHeight: { unit: "PIXELS", value: 24 },
        letterSpacing: { unit: "PIXELS", value: 0 },
        textCase: "ORIGINAL",
        textDecoration: "NONE",
      },
    ],
    children: [
      {
        type: "TEXT",
        name: "p",
        characters: "Hello",
        fontName: { family: "Inter", style: "Regular" },
        fontSize: 16,
        fills: [{ type: "SOLID", color: { r: 0.1, g: 0.1, b: 0.1 } }],
        fillStyleId: "S:1",
        textStyleId: "S:2",
      },
    ],
  } as Node;
  const t = testFigma();
  const store = new ImageStore(t.figma);
  const first = await new Builder(t.figma, store).build(doc);
  const text = (first.root as FrameNode).children[0] as TextNode & { fillStyleId: string; textStyleId: string };
  assert.equal(t.figma.getStyleById(text.fillStyleId)?.name, "Color/Text");
  assert.equal(t.figma.getStyleById(text.textStyleId)?.name, "Text/Body");
  const again = await new Builder(t.figma, store).build(doc);
  const second = (again.root as FrameNode).children[0] as TextNode & { fillStyleId: string; textStyleId: string };
  assert.equal(t.figma.getLocalPaintStyles().length, 1, "the colour style is used again, not made twice");
  assert.equal(t.figma.getLocalTextStyles().length, 1, "the text style is used again, not made twice");
  assert.equal(second.fillStyleId, text.fillStyleId);
  // A style of the same name with another value is a new style (the file's is not overwritten).
  const changed = structuredClone(doc) as Node & { styles: { paints?: unknown[] }[] };
  const paint = changed.styles[0];
  assert.ok(paint);
  paint.paints = [{ type: "SOLID", color: { r: 1, g: 0, b: 0 } }];
  await new Builder(t.figma, store).build(changed);
  assert.equal(t.figma.getLocalPaintStyles().length, 2);
});

test("a component is built once and its instances show their own text and images (issue 39)", async () => {
  const images: Images = { raster: new Map([["a", png(4, 4)], ["b", png(5, 5)], ["c", png(6, 6)]]), svg: new Map() };
  const text = (characters: string, height: number): Node => ({
    type: "TEXT",
    name: characters,
    x: 10,
    y: 50,
    width: 180,
    height,
    characters,
    fontSize: 16,
    fontName: { family: "Inter", style: "Regular" },
    textAutoResize: "HEIGHT",
    segments:
      characters.length > 4
        ? [
            { start: 0, end: 4, fontName: { family: "Inter", style: "Bold" }, fontSize: 16, fills: [], textDecoration: "NONE", textCase: "ORIGINAL", letterSpacing: { unit: "PIXELS", value: 0 }, lineHeight: { unit: "AUTO" } },
            { start: 4, end: characters.length, fontName: { family: "Inter", style: "Regular" }, fontSize: 16, fills: [], textDecoration: "NONE", textCase: "ORIGINAL", letterSpacing: { unit: "PIXELS", value: 0 }, lineHeight: { unit: "AUTO" } },
          ]
        : undefined,
  });
  const card = (i: number, ref: string, words: string, height: number): Node => ({
    ...(i === 0 ? { type: "COMPONENT", id: "component-1" } : { type: "INSTANCE", componentId: "component-1" }),
    name: `Card ${i + 1}`,
    x: 10 + i * 210,
    y: 10,
    width: 200,
    height: 60 + height,
    fills: [{ type: "SOLID", color: { r: 1, g: 1, b: 1 } }],
    children: [{ type: "RECTANGLE", name: "Photo", x: 10, y: 10, width: 30, height: 30, fills: [{ type: "IMAGE", imageRef: ref }] }, text(words, height)],
  }) as Node;
  const doc: Node = {
    type: "FRAME",
    name: "Page",
    width: 700,
    height: 200,
    children: [card(0, "a", "Fast setup", 20), card(1, "b", "Rollback in one click, kept for ever", 40), card(2, "c", "Logs", 20)],
  };
  const { t, built } = await build(doc, images);
  const { diffs, compared } = compareTree(doc, built.root, t, images);
  assert.deepEqual(diffs, []);
  assert.equal(compared, countNodes(doc));
  assert.equal(built.nodes, countNodes(doc));
  const [component, second, third] = (built.root as FrameNode).children as [ComponentNode, InstanceNode, InstanceNode];
  assert.equal(component.type, "COMPONENT");
  assert.deepEqual([second.type, third.type], ["INSTANCE", "INSTANCE"]);
  assert.equal(second.mainComponent, component);
  assert.equal(third.mainComponent, component);
  // The overrides: its own words, runs, image and height; the component keeps its own.
  assert.equal((second.children[1] as TextNode).characters, "Rollback in one click, kept for ever");
  assert.equal((third.children[1] as TextNode).characters, "Logs");
  assert.equal((component.children[1] as TextNode).characters, "Fast setup");
  // The instance's own size; the text inside it is Figma's to size (a layer inside an instance
  // cannot be resized: the stub refuses it as Figma does).
  assert.equal(second.height, 100);
  assert.throws(() => (second.children[1] as TextNode).resize(10, 10), /inside item/);
  assert.deepEqual(built.warnings, []);
  // Every instance layer is found by its document indices (a warning names it so).
  const layers = layersByIndex(built.root);
  assert.equal(layers.get("[1,1]"), second.children[1]);

  // A document whose instance names no component built before it: its layers as a frame, said.
  const orphan: Node = { type: "FRAME", width: 300, height: 100, children: [card(1, "b", "Alone", 20)] };
  const lone = await build(orphan, images);
  const made = (lone.built.root as FrameNode).children[0] as FrameNode;
  assert.equal(made.type, "FRAME");
  assert.equal((made.children[1] as TextNode).characters, "Alone");
  assert.deepEqual(lone.built.warnings.map((w) => [w.code, w.indices]), [["instance_unresolved", [0]]]);
});

test("an instance's text in other runs than its component's, or in one, shows its own type and colours (issue 39)", async () => {
  const black = [{ type: "SOLID", color: { r: 0, g: 0, b: 0 } }] as const;
  const blue = [{ type: "SOLID", color: { r: 0, g: 0, b: 0.8 } }] as const;
  const run = (start: number, end: number, code: boolean) => ({
    start,
    end,
    fontName: { family: code ? "Roboto" : "Inter", style: "Regular" },
    fontSize: 16,
    fills: code ? [...blue] : [...black],
    textDecoration: "NONE" as const,
    textCase: "ORIGINAL" as const,
    letterSpacing: { unit: "PIXELS" as const, value: 0 },
    lineHeight: { unit: "PIXELS" as const, value: 20 },
  });
  // Prose then code; code then prose; code alone, as one style (the converter's one-run text).
  const texts: Node[] = [
    { characters: "Use o.x here", segments: [run(0, 4, false), run(4, 7, true), run(7, 12, false)] },
    // A text's own type and fill are its longest run's, as the converter gives them.
    { characters: "vars(o) is it", segments: [run(0, 7, true), run(7, 13, false)], fontName: { family: "Roboto", style: "Regular" }, fills: [...blue] },
    { characters: "eval()", fontName: { family: "Roboto", style: "Regular" }, fills: [...blue] },
  ].map((t) => ({
    type: "TEXT",
    name: t.characters,
    x: 0,
    y: 0,
    width: 300,
    height: 20,
    fontSize: 16,
    fontName: { family: "Inter", style: "Regular" },
    fills: [...black],
    lineHeight: { unit: "PIXELS", value: 20 },
    textAutoResize: "HEIGHT",
    ...t,
  })) as Node[];
  const doc: Node = {
    type: "FRAME",
    name: "Page",
    width: 400,
    height: 100,
    children: texts.map((text, i) => ({
      ...(i === 0 ? { type: "COMPONENT", id: "item" } : { type: "INSTANCE", componentId: "item" }),
      name: "List item",
      x: 10,
      y: 10 + i * 25,
      width: 300,
      height: 20,
      children: [text],
    })) as Node[],
  };
  const { t, built } = await build(doc, { raster: new Map(), svg: new Map() });
  const { diffs } = compareTree(doc, built.root, t, { raster: new Map(), svg: new Map() });
  assert.deepEqual(diffs, []);
  const [, second, third] = (built.root as FrameNode).children as [ComponentNode, InstanceNode, InstanceNode];
  const ranges = (n: SceneNode) => (n as TextNode & { ranges?: RangeStyle[] }).ranges ?? [];
  // Its own runs where the component has others: code first, then prose.
  const own = ranges(second.children[0] as SceneNode);
  const [code, prose] = [own[0], own[8]];
  assert.deepEqual([code?.fontName?.family, prose?.fontName?.family], ["Roboto", "Inter"]);
  assert.deepEqual([code?.fills, prose?.fills], [blue, black]);
  // One style over all: none of the component's runs is left in it.
  const one = third.children[0] as TextNode;
  assert.deepEqual([one.fontName, one.fills], [{ family: "Roboto", style: "Regular" }, blue]);
  assert.deepEqual(ranges(one).filter((r) => r.fontName !== undefined || r.fills !== undefined), []);
});

test("icons beside the screen are components, swapped into each instance (issue 39 item 4)", async () => {
  const svg = (fill: string) => `<svg xmlns="http://www.w3.org/2000/svg" width="22" height="22"><rect width="22" height="22" fill="${fill}"/></svg>`;
  const images: Images = { raster: new Map(), svg: new Map([["s1", svg("red")], ["s2", svg("green")], ["s3", svg("blue")]]) };
  const drawing = (ref: string): Node => ({ type: "SVG", name: "Icon", width: 22, height: 22, imageRef: ref });
  const icon = (k: number): Node => ({
    type: "COMPONENT",
    id: `icon-${k}`,
    name: `Icon ${k}`,
    x: 780,
    y: (k - 1) * 62,
    width: 22,
    height: 22,
    fills: [],
    children: [drawing(`s${k}`)],
  });
  const card = (i: number): Node =>
    ({
      ...(i === 0 ? { type: "COMPONENT", id: "card" } : { type: "INSTANCE", componentId: "card" }),
      name: `Card ${i + 1}`,
      x: 10 + i * 210,
      y: 10,
      width: 200,
      height: 80,
      children: [
        { type: "INSTANCE", componentId: `icon-${i + 1}`, name: "Icon", x: 10, y: 10, width: 22, height: 22, children: [drawing(`s${i + 1}`)] },
        { type: "TEXT", name: "Title", x: 10, y: 40, width: 180, height: 20, characters: `Card ${i + 1}`, fontSize: 16, fontName: { family: "Inter", style: "Regular" } },
      ],
    }) as Node;
  const doc: Node = { type: "FRAME", name: "Page", width: 700, height: 200, components: [icon(1), icon(2), icon(3)], children: [card(0), card(1), card(2)] };
  const { t, built } = await build(doc, images);
  const { diffs, compared } = compareTree(doc, built.root, t, images, built.beside);
  assert.deepEqual(diffs, []);
  assert.equal(compared, countNodes(doc));
  assert.equal(built.nodes, countNodes(doc));
  assert.deepEqual(built.warnings, []);
  // Beside the screen, in its parent, not in it.
  const icons = built.beside as ComponentNode[];
  assert.deepEqual(icons.map((c) => [c.type, c.name, c.x, c.y, c.parent === built.root.parent]), [
    ["COMPONENT", "Icon 1", 780, 0, true],
    ["COMPONENT", "Icon 2", 780, 62, true],
    ["COMPONENT", "Icon 3", 780, 124, true],
  ]);
  // The card component holds an instance of the first icon; each card instance shows its own,
  // swapped in, drawn from that icon's SVG.
  const cards = (built.root as FrameNode).children as (ComponentNode | InstanceNode)[];
  const nested = cards.map((c) => c.children[0] as InstanceNode);
  assert.deepEqual(nested.map((n) => n.type), ["INSTANCE", "INSTANCE", "INSTANCE"]);
  assert.deepEqual(nested.map((n) => n.mainComponent), icons);
  assert.deepEqual(nested.map((n) => t.svgSource.get(n.children[0] as object)), [svg("red"), svg("green"), svg("blue")]);
});

test("a document of several viewports (issue 40 item 3) is placed as it is: one root, a frame per width side by side", async () => {
  const page = (name: string, x: number, width: number, textY: number) => ({
    type: "FRAME",
    name,
    x,
    width,
    height: 300,
    fills: [{ type: "SOLID", color: { r: 1, g: 1, b: 1 } }],
    clipsContent: true,
    children: [
      {
        type: "TEXT",
        name: "h1",
        y: textY,
        width: Math.min(width, 400),
        height: 24,
        characters: "Welcome",
        fontName: { family: "Inter", style: "Regular" },
        fontSize: 16,
        fills: [{ type: "SOLID", color: { r: 0.1, g: 0.1, b: 0.1 } }],
        textStyleId: "S:1",
      },
    ],
  });
  const doc = {
    type: "FRAME",
    name: "Landing",
    width: 1440 + 80 + 390,
    height: 300,
    fills: [],
    clipsContent: false,
    styles: [
      {
        id: "S:1",
        name: "Text/Body",
        type: "TEXT",
        fontName: { family: "Inter", style: "Regular" },
        fontSize: 16,
        lineHeight: { unit: "PIXELS", value: 24 },
        letterSpacing: { unit: "PIXELS", value: 0 },
        textCase: "ORIGINAL",
        textDecoration: "NONE",
      },
    ],
    children: [page("Desktop · 1440", 0, 1440, 40), page("Mobile · 390", 1520, 390, 24)],
  } as Node;
  const { t, built } = await build(doc, { raster: new Map(), svg: new Map() });
  const { diffs, compared } = compareTree(doc, built.root, t, { raster: new Map(), svg: new Map() });
  assert.deepEqual(diffs, []);
  assert.equal(compared, 5);
  assert.equal(t.figma.currentPage.children.length, 1, "one root on the page");
  const root = built.root as FrameNode;
  assert.deepEqual(root.fills, [], "the root has no fill of its own");
  assert.equal(root.clipsContent, false);
  assert.deepEqual(
    root.children.map((f) => [f.type, f.name, f.x, f.y, f.width]),
    [
      ["FRAME", "Desktop · 1440", 0, 0, 1440],
      ["FRAME", "Mobile · 390", 1520, 0, 390],
    ],
  );
  const texts = root.children.map((f) => (f as FrameNode).children[0] as TextNode & { textStyleId: string });
  assert.equal(t.figma.getLocalTextStyles().length, 1, "the frames share the document's one style");
  assert.equal(texts[0]?.textStyleId, texts[1]?.textStyleId);
});

test("a NODE hyperlink goes to the layer built of the node its id names, before or after it (issue 39)", async () => {
  const font = { family: "Inter", style: "Regular" };
  const run = (start: number, end: number, hyperlink?: { type: "URL" | "NODE"; value: string }) => ({
    start,
    end,
    fontName: font,
    fontSize: 16,
    fills: [{ type: "SOLID" as const, color: { r: 0, g: 0, b: 0 } }],
    textDecoration: "NONE" as const,
    textCase: "ORIGINAL" as const,
    letterSpacing: { unit: "PIXELS" as const, value: 0 },
    lineHeight: { unit: "AUTO" as const },
    ...(hyperlink ? { hyperlink } : {}),
  });
  const doc: Node = {
    type: "FRAME",
    name: "Page",
    id: "anchor-1",
    width: 400,
    height: 300,
    children: [
      { type: "TEXT", name: "Contents", characters: "Usage", fontName: font, y: 0, hyperlink: { type: "NODE", value: "anchor-2" } },
      {
        type: "TEXT",
        name: "See",
        characters: "See Usage, or the top",
        fontName: font,
        y: 40,
        segments: [run(0, 4), run(4, 9, { type: "NODE", value: "anchor-2" }), run(9, 14), run(14, 21, { type: "NODE", value: "anchor-1" })],
      },
      { type: "FRAME", name: "Usage section", id: "anchor-2", y: 100, width: 400, height: 100, children: [{ type: "TEXT", characters: "Usage", fontName: font }] },
      { type: "TEXT", name: "Lost", characters: "Gone", fontName: font, y: 220, hyperlink: { type: "NODE", value: "anchor-9" } },
    ],
  };
  const { t, built } = await build(doc, { raster: new Map(), svg: new Map() });
  const root = built.root as FrameNode;
  const [contents, see, section, lost] = root.children as [TextNode, TextNode & { ranges: { hyperlink?: unknown }[] }, FrameNode, TextNode];
  // Figma's own ids, not the document's: the link is to the layer built later in the tree.
  assert.deepEqual(contents.hyperlink, { type: "NODE", value: section.id });
  assert.deepEqual(see.ranges[4]?.hyperlink, { type: "NODE", value: section.id });
  assert.deepEqual(see.ranges[15]?.hyperlink, { type: "NODE", value: root.id });
  assert.equal(see.ranges[10]?.hyperlink, undefined);
  assert.notEqual(section.id, "anchor-2");
  // A link to no node of the document (the route refuses such a document) is left out, said.
  assert.equal(lost.hyperlink ?? null, null);
  assert.deepEqual(
    built.warnings.map((w) => [w.code, w.node]),
    [["link_unresolved", "Lost"]],
  );
  const { diffs } = compareTree({ ...doc, children: doc.children?.slice(0, 3) }, built.root, t, { raster: new Map(), svg: new Map() });
  assert.ok(diffs.every((d) => d.includes("child count")), diffs.join("\n"));
});

test("CSS that Figma draws (issue 39 item 7): dashes, dots, blends, blurs, rotation, text shadows and decoration", async () => {
  const doc: Node = {
    type: "FRAME",
    name: "Page",
    width: 400,
    height: 300,
    children: [
      {
        type: "FRAME",
        name: "dashed",
        width: 100,
        height: 50,
        strokes: [{ type: "SOLID", color: { r: 1, g: 0, b: 0 } }],
        strokeWeight: 3,
        strokeAlign: "INSIDE",
        dashPattern: [9, 9],
        x: 50,
        rotation: -30,
      },
      {
        type: "RECTANGLE",
        name: "dotted",
        width: 100,
        height: 50,
        strokes: [{ type: "SOLID", color: { r: 0, g: 0, b: 1 } }],
        strokeWeight: 4,
        dashPattern: [0, 8],
        strokeCap: "ROUND",
        blendMode: "MULTIPLY",
      },
      { type: "ELLIPSE", name: "pill", width: 160, height: 60, effects: [{ type: "LAYER_BLUR", radius: 6 }] },
      {
        type: "TEXT",
        name: "Shadowed",
        characters: "Shadowed wavy",
        fontName: { family: "Inter", style: "Regular" },
        effects: [{ type: "DROP_SHADOW", color: { r: 1, g: 0, b: 0, a: 1 }, offset: { x: 3, y: 3 }, radius: 2 }],
        textDecoration: "UNDERLINE",
        textDecorationStyle: "WAVY",
        textDecorationThickness: { unit: "PIXELS", value: 2 },
        segments: [
          {
            start: 0,
            end: 9,
            fontName: { family: "Inter", style: "Regular" },
            fontSize: 12,
            fills: [],
            textDecoration: "NONE",
            textCase: "ORIGINAL",
            letterSpacing: { unit: "PIXELS", value: 0 },
            lineHeight: { unit: "AUTO" },
          },
          {
            start: 9,
            end: 13,
            fontName: { family: "Inter", style: "Regular" },
            fontSize: 12,
            fills: [],
            textDecoration: "UNDERLINE",
            textDecorationStyle: "WAVY",
            textDecorationOffset: { unit: "PIXELS", value: 4 },
            textDecorationThickness: { unit: "AUTO" },
            textDecorationColor: { r: 1, g: 0, b: 0, a: 0.5 },
            textDecorationSkipInk: false,
            textCase: "ORIGINAL",
            letterSpacing: { unit: "PIXELS", value: 0 },
            lineHeight: { unit: "AUTO" },
          },
        ],
      },
    ],
  };
  const { built } = await build(doc, { raster: new Map(), svg: new Map() });
  assert.deepEqual(built.warnings, []);
  const [dashed, dotted, pill, text] = (built.root as FrameNode).children as [FrameNode, RectangleNode, EllipseNode, TextNode & { ranges: RangeStyle[] }];
  assert.deepEqual([...dashed.dashPattern], [9, 9]);
  // Turned about its top-left, which stays where the document puts it.
  assert.deepEqual([dashed.x, dashed.rotation], [50, -30]);
  assert.deepEqual([[...dotted.dashPattern], dotted.strokeCap, dotted.blendMode], [[0, 8], "ROUND", "MULTIPLY"]);
  assert.deepEqual(pill.effects, [{ type: "LAYER_BLUR", blurType: "NORMAL", radius: 6, visible: true }]);
  assert.deepEqual(text.effects[0], {
    type: "DROP_SHADOW",
    color: { r: 1, g: 0, b: 0, a: 1 },
    offset: { x: 3, y: 3 },
    radius: 2,
    spread: 0,
    visible: true,
    blendMode: "NORMAL",
  });
  assert.deepEqual([text.textDecorationStyle, text.textDecorationThickness], ["WAVY", { unit: "PIXELS", value: 2 }]);
  const wavy = text.ranges[10];
  assert.deepEqual(wavy, {
    ...wavy,
    textDecoration: "UNDERLINE",
    textDecorationStyle: "WAVY",
    textDecorationOffset: { unit: "PIXELS", value: 4 },
    textDecorationThickness: { unit: "AUTO" },
    textDecorationColor: { value: { type: "SOLID", color: { r: 1, g: 0, b: 0 }, opacity: 0.5 } },
    textDecorationSkipInk: false,
  });
  assert.equal(text.ranges[0]?.textDecorationStyle, undefined);
});

test("auto layout as CSS sizes it (issue 39 item 2): items that FILL, a frame that HUGs, a badge kept ABSOLUTE", async () => {
  const label = (name: string, x: number, width: number): Node => ({
    type: "TEXT",
    name,
    x,
    y: 12,
    width,
    height: 20,
    characters: name,
    fontSize: 14,
    fontName: { family: "Inter", style: "Regular" },
    textAutoResize: "WIDTH_AND_HEIGHT",
  });
  const item = (name: string, x: number, width: number, fill: boolean): Node => ({
    type: "FRAME",
    name,
    x,
    y: 0,
    width,
    height: 44,
    layoutMode: "HORIZONTAL",
    paddingTop: 12,
    paddingBottom: 12,
    paddingLeft: 16,
    paddingRight: 16,
    ...(fill ? { layoutSizingHorizontal: "FILL" as const } : { layoutSizingHorizontal: "HUG" as const }),
    layoutSizingVertical: "FILL",
    children: [label(name, 16, width - 32)],
  });
  const doc: Node = {
    type: "FRAME",
    name: "Page",
    width: 640,
    height: 120,
    children: [
      {
        type: "FRAME",
        name: "Navigation",
        x: 0,
        y: 0,
        width: 640,
        height: 44,
        layoutMode: "HORIZONTAL",
        itemSpacing: 8,
        paddingLeft: 0,
        paddingRight: 0,
        paddingTop: 0,
        paddingBottom: 0,
        primaryAxisAlignItems: "MIN",
        counterAxisAlignItems: "MIN",
        layoutSizingVertical: "HUG",
        children: [
          { type: "RECTANGLE", name: "Badge", x: 600, y: -6, width: 12, height: 12, layoutPositioning: "ABSOLUTE" },
          item("Home", 0, 80, false),
          item("Search", 88, 472, true),
          item("Help", 568, 72, false),
        ],
      },
    ],
  };
  const { t, built } = await build(doc, { raster: new Map(), svg: new Map() });
  assert.deepEqual(built.warnings, []);
  const { diffs, compared } = compareTree(doc, built.root, t, { raster: new Map(), svg: new Map() });
  assert.deepEqual(diffs, []);
  assert.equal(compared, countNodes(doc));
  const nav = (built.root as FrameNode).children[0] as FrameNode;
  const [badge, home, search] = nav.children as (SceneNode & LayoutMixin & AutoLayoutChildrenMixin)[];
  // Set after the frame's resize, which makes a frame FIXED again: the HUG holds.
  assert.equal(nav.layoutSizingVertical, "HUG");
  assert.equal(nav.layoutSizingHorizontal, "FIXED");
  assert.deepEqual([badge?.layoutPositioning, badge?.x, badge?.y], ["ABSOLUTE", 600, -6]);
  assert.deepEqual([home?.layoutSizingHorizontal, home?.layoutSizingVertical], ["HUG", "FILL"]);
  assert.deepEqual([search?.layoutSizingHorizontal, search?.layoutPositioning], ["FILL", "AUTO"]);

  // The stub refuses what Figma refuses: FILL before the parent has auto layout, and a HUG
  // set before the resize is lost to it (the order the builder keeps).
  const alone = t.figma.createFrame();
  assert.throws(() => {
    (alone as FrameNode).layoutSizingHorizontal = "FILL";
  }, /FILL outside an auto layout frame/);
  alone.layoutMode = "VERTICAL";
  alone.layoutSizingVertical = "HUG";
  alone.resize(10, 10);
  assert.equal(alone.layoutSizingVertical, "FIXED");
});
