// The editability figures on a small page and hand-made documents: the one issue 39 aims at
// (one wrapping TEXT node a paragraph with styled segments and a hyperlink, auto layout, GRID,
// styles, instances) scores every goal; today's kind (a layer a line, "\n" from the source,
// bare tags) does not.
//   node --test scripts/fidelity/     (needs /usr/bin/chromium, or $CHROMIUM, and DejaVu fonts)

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { SvgWriter, origin, laidOut } from "./svg.mjs";
import { pageEditability, measureEditability, wrapLines, wrappingNodes, wrapInput, bareTag, outline, editBelow, EDIT_FLOORS } from "./editability.mjs";

const PAGE = `<!doctype html><body style="margin:0;font:16px/20px 'DejaVu Sans';color:rgb(0,0,0)">
<p id="p" style="width:300px;margin:0">Hello <a href="#pre" style="color:rgb(0,0,255)">world</a> and <b>bold</b> text that wraps onto a second line here.</p>
<pre id="pre" style="margin:0;font:14px/18px 'DejaVu Sans Mono'">a = 1
b = 2</pre>
<div id="flex" style="display:flex;flex-direction:column;width:300px;height:40px"><div>x</div></div>
<div id="grid" style="display:grid;width:300px;height:20px"><div>y</div></div>
<div id="cards"><div class="card"><div>1</div></div><div class="card"><div>2</div></div><div class="card"><div>3</div></div></div>
</body>`;

let browser;
let facts;
before(async () => {
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
  const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
  await page.setContent(PAGE);
  facts = await page.evaluate(pageEditability);
  facts.boxes = await page.evaluate(() => {
    const b = (el) => {
      const r = el.getBoundingClientRect();
      return { x: r.left, y: r.top, width: r.width, height: r.height };
    };
    return {
      p: b(document.getElementById("p")),
      pre: b(document.getElementById("pre")),
      flex: b(document.getElementById("flex")),
      grid: b(document.getElementById("grid")),
      cards: [...document.querySelectorAll(".card")].map(b),
      lines: [...document.getElementById("p").getClientRects()].length,
    };
  });
  await page.close();
});
after(() => browser?.close());

async function measure(doc) {
  const nodes = wrappingNodes(doc);
  const page = await browser.newPage();
  await page.setContent("<body style='margin:0'></body>");
  const lines = nodes.length ? await page.evaluate(wrapLines, nodes.map(wrapInput)) : [];
  await page.close();
  return measureEditability(facts, doc, new Map(nodes.map((n, i) => [n, lines[i]])));
}

const black = [{ type: "SOLID", color: { r: 0, g: 0, b: 0 } }];
const blue = [{ type: "SOLID", color: { r: 0, g: 0, b: 1 } }];
const text = (characters, box, extra = {}) => ({
  type: "TEXT",
  name: characters.slice(0, 20),
  characters,
  ...box,
  fontName: { family: "DejaVu Sans", style: "Regular" },
  fontSize: 16,
  lineHeight: { unit: "PIXELS", value: 20 },
  letterSpacing: { unit: "PIXELS", value: 0 },
  fills: black,
  textAutoResize: "WIDTH_AND_HEIGHT",
  ...extra,
});

test("the page's paragraphs, containers and groups", () => {
  assert.equal(facts.paragraphs.length, 2 + 1 + 1 + 3); // p, pre, flex item, grid item, 3 cards
  const p = facts.paragraphs.find((q) => q.path.endsWith("p#p"));
  assert.ok(p.lines.length >= 2, "the paragraph wraps");
  assert.deepEqual(
    p.runs.map((r) => p.chars.slice(r.start, r.end)),
    ["Hello", "world", "and", "bold", "textthatwrapsontoasecondlinehere."],
  );
  assert.equal(facts.flex.length, 1);
  assert.equal(facts.flex[0].direction, "VERTICAL");
  assert.equal(facts.grid.length, 1);
  assert.deepEqual(facts.groups.map((g) => g.size), [3]);
});

test("the document issue 39 aims at meets every goal", async () => {
  const b = facts.boxes;
  const chars = "Hello world and bold text that wraps onto a second line here.";
  const at = (w) => [chars.indexOf(w), chars.indexOf(w) + w.length];
  const [ws, we] = at("world");
  const [bs, be] = at("bold");
  const styles = { fillStyleId: "S:black", textStyleId: "S:body" };
  const doc = {
    type: "FRAME",
    name: "page",
    x: 0,
    y: 0,
    width: 800,
    height: 600,
    children: [
      text(chars, { x: b.p.x, y: b.p.y, width: b.p.width, height: b.p.height }, {
        textAutoResize: "HEIGHT",
        segments: [
          { start: ws, end: we, fills: blue, textDecoration: "UNDERLINE", hyperlink: { type: "NODE", value: "anchor-1" }, fillStyleId: "S:link" },
          { start: bs, end: be, fontName: { family: "DejaVu Sans", style: "Bold" } },
        ],
        ...styles,
      }),
      text("a = 1\nb = 2", { x: b.pre.x, y: b.pre.y, width: b.pre.width, height: b.pre.height }, {
        fontName: { family: "DejaVu Sans Mono", style: "Book" },
        fontSize: 14,
        ...styles,
      }),
      { type: "FRAME", name: "Navigation", layoutMode: "VERTICAL", ...b.flex, children: [text("x", { x: 0, y: 0, width: 10, height: 20 }, styles)] },
      { type: "FRAME", name: "Cells", layoutMode: "GRID", ...b.grid, children: [text("y", { x: 0, y: 0, width: 10, height: 20 }, styles)] },
      { type: "COMPONENT", id: "C1", name: "Card", ...b.cards[0], children: [text("1", { x: 0, y: 0, width: 10, height: 20 }, styles)] },
      ...b.cards.slice(1).map((c, i) => ({ type: "INSTANCE", componentId: "C1", name: "Card", ...c, children: [text(String(i + 2), { x: 0, y: 0, width: 10, height: 20 }, styles)] })),
    ],
  };
  const e = await measure(doc);
  assert.equal(e.paragraphs.share, 1, JSON.stringify(e.misses.paragraphs));
  assert.equal(e.lines.share, 1, JSON.stringify(e.misses.lines));
  assert.equal(e.runs.share, 1, JSON.stringify(e.misses.runs));
  assert.equal(e.strayNewlines.n, 0);
  assert.equal(e.flex.share, 1);
  assert.equal(e.grid.share, 1);
  assert.equal(e.bareTags.share, 0);
  assert.equal(e.sharedStyle.share, 1);
  assert.equal(e.components.share, 1);
  // The in-page link "#pre" drawn as a URL is no link to the layer: its run is missed.
  const url = structuredClone(doc);
  url.children[0].segments[0].hyperlink = { type: "URL", value: "#x" };
  const u = await measure(url);
  assert.equal(u.misses.runs.length, 1, JSON.stringify(u.misses.runs));
  assert.match(JSON.stringify(u.misses.runs), /world/);
});

test("today's kind of document misses them", async () => {
  const b = facts.boxes;
  const p = facts.paragraphs.find((q) => q.path.endsWith("p#p"));
  // A layer a word, each where Chromium drew it, one of them with a newline from the source.
  const doc = {
    type: "FRAME",
    name: "page",
    x: 0,
    y: 0,
    width: 800,
    height: 600,
    children: [
      text("Hello\nworld", { x: b.p.x, y: b.p.y, width: 120, height: 20 }),
      text("and bold text that wraps onto a second line here.", { x: b.p.x, y: b.p.y + 20, width: 300, height: 20 }),
      { type: "FRAME", name: "div", ...b.flex, children: [] },
      { type: "FRAME", name: "div.grid", ...b.grid, children: [] },
    ],
  };
  const e = await measure(doc);
  assert.ok(p.lines.length >= 2);
  assert.equal(e.paragraphs.n, 0);
  assert.equal(e.strayNewlines.n, 1);
  assert.equal(e.flex.share, 0);
  assert.equal(e.grid.share, 0);
  assert.equal(e.bareTags.share, 1);
  assert.equal(e.sharedStyle.share, 0);
  assert.equal(e.components.share, 0);
  assert.match(outline(doc), /^FRAME "page"\n {2}TEXT "Hello\\nworld" WIDTH_AND_HEIGHT holds "\\n"\n/);
});

test("bare-tag names", () => {
  for (const n of ["div", "span.btn", "td", "DIV#main", "section.a.b"]) assert.ok(bareTag(n), n);
  for (const n of ["Card", "in", "Hello world", "logo-container", "div something", "item-row"]) assert.ok(!bareTag(n), n);
});

/** Three narrow words in a wrapping TEXT node of DejaVu Sans 16 px, with `more` of its fields. */
const threeWords = (more = {}) => ({
  type: "TEXT",
  characters: "iiii iiii iiii",
  width: 0,
  fontSize: 16,
  fontName: { family: "DejaVu Sans", style: "Book" },
  textAutoResize: "HEIGHT",
  ...more,
});

/** The width of threeWords' words on one line in Chromium, and a pixel: they just fit. */
const threeWordsWidth = (page) =>
  page.evaluate(() => {
    const s = document.createElement("span");
    s.style.font = "16px 'DejaVu Sans'";
    s.textContent = "iiii iiii iiii";
    document.body.appendChild(s);
    return s.getBoundingClientRect().width + 1;
  });

test("a wrapping text breaks in the case it is drawn in (textCase), as Figma draws it", async () => {
  const node = (textCase) => threeWords(textCase ? { textCase } : {});
  const page = await browser.newPage();
  await page.setContent("<body style='margin:0'></body>");
  // As wide as the words in lower case: upper case ("IIII") is wider, and wraps.
  const [lower] = await page.evaluate(wrapLines, [wrapInput(node())]);
  const width = await threeWordsWidth(page);
  const [plain, upper] = await page.evaluate(wrapLines, [{ ...node(), width }, { ...node("UPPER"), width }].map(wrapInput));
  await page.close();
  assert.equal(lower.length > 1, true, "a width of 0 breaks every word");
  assert.equal(plain.length, 1);
  assert.ok(upper.length > 1, JSON.stringify(upper));
});

test("a text's paragraphIndent narrows its first line when it wraps, and moves it in the drawing", async () => {
  const node = (paragraphIndent) => threeWords(paragraphIndent ? { paragraphIndent } : {});
  const page = await browser.newPage();
  await page.setContent("<body style='margin:0'></body>");
  // As wide as the three words (and a pixel): 10 px in (half a word), the last no longer fits
  // on the first line.
  const width = await threeWordsWidth(page);
  const [flush, indented] = await page.evaluate(wrapLines, [{ ...node(), width }, { ...node(10), width }].map(wrapInput));
  await page.close();
  assert.deepEqual(flush, ["iiii iiii iiii"]);
  assert.deepEqual(indented, ["iiii iiii ", "iiii"]);
  // The writer draws the first line 10 px in, the second at the box's left.
  const text = { ...node(10), width };
  const w = new SvgWriter(new Map(), () => {}, new Map([[origin(text), indented]]));
  const xs = [...w.text(text).matchAll(/<text [^>]*x="([^"]+)"/g)].map((m) => m[1]);
  assert.deepEqual(xs, ["10", "0"]);
});

test("--check holds each editability figure at its goal, or at the page's own floor", () => {
  const fig = (n, total) => ({ n, total, share: total === 0 ? null : n / total });
  const good = {
    paragraphs: fig(30, 30),
    lines: fig(29, 30),
    runs: fig(73, 73),
    strayNewlines: { n: 0, chars: 0, total: 40 },
    flex: fig(1, 1),
    sizing: fig(1, 1),
    grid: fig(0, 0),
    bareTags: fig(1, 35),
    sharedStyle: fig(48, 48),
    components: fig(1, 1),
  };
  assert.deepEqual(editBelow("article", good), []);
  // Below a goal, above it, a stray newline: each said, with the page and the figure.
  const bad = { ...good, lines: fig(28, 30), bareTags: fig(4, 35), strayNewlines: { n: 1, chars: 1, total: 40 } };
  assert.deepEqual(editBelow("article", bad), ["article lines 0.933 < 0.95", "article strayNewlines 1 > 0", "article bareTags 0.114 > 0.1"]);
  // A page's own floor where it does not reach the goal yet; nothing measured is not below.
  const floors = { "rustdoc-cell": { components: 0.5 } };
  const rustdoc = { ...good, components: fig(1, 2), flex: fig(0, 0) };
  assert.deepEqual(editBelow("rustdoc-cell", rustdoc, floors), []);
  assert.deepEqual(editBelow("rustdoc-cell", { ...rustdoc, components: fig(0, 2) }, floors), ["rustdoc-cell components 0.000 < 0.5"]);
  assert.deepEqual(editBelow("article", rustdoc, floors), ["article components 0.500 < 0.9"]);
  // Every page reaches every goal: none has a floor of its own, and rustdoc's 1 of 2 is below.
  assert.deepEqual(EDIT_FLOORS, {});
  assert.deepEqual(editBelow("rustdoc-cell", rustdoc), ["rustdoc-cell components 0.500 < 0.9"]);
});

test("a flex container held at its max-width is lifted to see which items grow with it", async () => {
  const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
  await page.setContent(`<body style="margin:0;font:16px/20px 'DejaVu Sans'">
    <div style="display:flex;width:300px;max-width:300px"><div style="width:100%">grows</div><span>stays</span></div>
    <div style="display:flex;width:300px;max-width:300px"><div style="width:120px">fixed</div></div></body>`);
  const found = await page.evaluate(pageEditability);
  await page.close();
  const grows = found.flex.map((f) => f.items.map((it) => it.grows));
  assert.deepEqual(grows, [[true, false], [false]]);
});

test("a row that wraps is judged by its frame's WRAP, and drawn in Figma's rows", async () => {
  const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
  await page.setContent(`<body style="margin:0">
    <div style="display:flex;flex-wrap:wrap;width:100px;gap:4px"><i style="display:block;width:60px;height:10px"></i><i style="display:block;width:60px;height:10px"></i></div></body>`);
  const found = await page.evaluate(pageEditability);
  await page.close();
  assert.equal(found.flex[0].wrap, true);
  const box = found.flex[0].box;
  const frame = (more) => ({ type: "FRAME", name: "Tags", layoutMode: "HORIZONTAL", x: box.x, y: box.y, width: box.w, height: box.h, children: [], ...more });
  const doc = (more) => ({ type: "FRAME", name: "page", x: 0, y: 0, width: 800, height: 600, children: [frame(more)] });
  const judged = (more) => measureEditability({ ...found, paragraphs: [], groups: [] }, doc(more), new Map()).flex;
  assert.equal(judged({}).n, 0, "a row that does not wrap is not the page's");
  assert.equal(judged({ layoutWrap: "WRAP", counterAxisSpacing: 4 }).n, 1);

  // The drawing breaks rows where the next child would pass the room inside the padding
  // (204 px): 80 + 10 + 70, then 50 + 10 + 90 + 10 + 30; rows 30 and 24 px tall, 6 apart.
  const kid = (width, height) => ({ type: "FRAME", name: `${width}`, x: 0, y: 0, width, height });
  const wrapping = {
    type: "FRAME", layoutMode: "HORIZONTAL", layoutWrap: "WRAP", width: 220, height: 76,
    paddingLeft: 8, paddingRight: 8, paddingTop: 8, paddingBottom: 8,
    itemSpacing: 10, counterAxisSpacing: 6, counterAxisAlignItems: "CENTER",
    children: [kid(80, 20), kid(70, 30), kid(50, 20), kid(90, 24), kid(30, 10)],
  };
  const at = laidOut(wrapping, wrapping.children).map((k) => [k.x, k.y]);
  assert.deepEqual(at, [[8, 13], [98, 8], [8, 46], [68, 44], [168, 51]]);
  const centred = laidOut({ ...wrapping, primaryAxisAlignItems: "CENTER" }, wrapping.children).map((k) => k.x);
  assert.deepEqual(centred, [8 + 22, 98 + 22, 8 + 7, 68 + 7, 168 + 7]);
  // A frame taller than its rows: the block of rows is aligned as the children are (CENTER).
  const taller = laidOut({ ...wrapping, height: 84 }, wrapping.children).map((k) => k.y);
  assert.deepEqual(taller, [17, 12, 50, 48, 55]);
});
