// Editability (issue 39, item 10; docs/FIDELITY.md, "Editability"): how close the converted
// document's layers come to the ones a designer would have built. What the page holds
// (paragraphs and their lines and styled runs, flex and grid containers, repeated sibling
// structures) is read in Chromium by `pageEditability` (page.evaluate), never from the
// converter; `measureEditability` looks for each in the document, placed in page pixels as
// the SVG writer draws it. The figures:
//
//   paragraphs        a block's inline content (a block-level element's text reached through
//                     inline descendants only; a block-level child splits it) is exactly one
//                     TEXT node holding all of its text
//   lines             the paragraph's lines as the document draws them (its TEXT nodes' lines,
//                     grouped by height on the page, left to right) are Chromium's lines
//   styled runs       each run of the paragraph's text with one style (size, weight, italic,
//                     colour, underline/strike-through, case, link) is drawn with that style,
//                     a link as a hyperlink
//   stray newlines    TEXT nodes holding a "\n" where Chromium broke no line
//   flex → auto layout every flex container's frame (same box) has auto layout in its direction,
//                     wrapping (layoutWrap WRAP) where the container is a row that wraps
//   auto layout sizing every flex container's auto layout frame resizes as the page's
//                     container does, tried on the page: the items that grow when the container
//                     is made longer are FILL (and only they), and the frame HUGs on each axis
//                     where the container grows with its largest item
//   grid → GRID       every grid container's frame has layoutMode GRID
//   bare-tag names    non-TEXT layers named by an HTML tag ("div", "span.btn", "td#x")
//   shared style      nodes whose fill (and TEXT nodes' type) refer to a shared style
//   components        repeated sibling groups whose every member is an instance of one component

import { origin, place } from "./svg.mjs";
import { cssColor } from "./match.mjs";

/** The goals of issue 39 (item 10): `min` shares at least, `max` at most. */
export const EDIT_GOALS = {
  paragraphs: { min: 0.95 },
  lines: { min: 0.95 },
  runs: { min: 0.95 },
  strayNewlines: { max: 0 },
  flex: { min: 0.9 },
  sizing: { min: 0.9 },
  grid: { min: 0.9 },
  bareTags: { max: 0.1 },
  sharedStyle: { min: 0.95 },
  components: { min: 0.9 },
};

/**
 * Where a page does not reach a goal yet, its floor for --check is what it measures, and
 * docs/FIDELITY.md ("Floors") says why. None now: rustdoc's three experimental items, the last
 * one's badge wrapped under its name, are one component since a name and its badge are a
 * wrapping row (issue 39); its floor was 0.5.
 */
export const EDIT_FLOORS = {};

/**
 * The editability figures of `page` (its `editability`, as measureEditability answers them)
 * below their floors: each goal, or the page's own floor where EDIT_FLOORS gives one. A figure
 * with nothing to measure (no flex container on the page) is not below anything.
 */
export function editBelow(page, figures, floors = EDIT_FLOORS) {
  const own = floors[page] ?? {};
  const out = [];
  for (const [k, goal] of Object.entries(EDIT_GOALS)) {
    const f = figures[k];
    if (!f) continue;
    if (k === "strayNewlines") {
      if (f.n > goal.max) out.push(`${page} ${k} ${f.n} > ${goal.max}`);
      continue;
    }
    if (f.share === null) continue;
    if (goal.min !== undefined && f.share < (own[k] ?? goal.min)) out.push(`${page} ${k} ${f.share.toFixed(3)} < ${own[k] ?? goal.min}`);
    if (goal.max !== undefined && f.share > (own[k] ?? goal.max)) out.push(`${page} ${k} ${f.share.toFixed(3)} > ${own[k] ?? goal.max}`);
  }
  return out;
}

const TOL = 4;

/** Runs in the page: { paragraphs, flex, grid, groups }, boxes in page pixels. */
export function pageEditability() {
  const box = (r) => ({ x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height });
  const skipped = (el) => el.closest("script, style, head, template, noscript, svg, select, textarea, option");
  const style = new Map();
  const cs = (el) => {
    if (!style.has(el)) style.set(el, getComputedStyle(el));
    return style.get(el);
  };
  const shown = (el) => cs(el).display !== "none" && cs(el).visibility === "visible";
  const isInline = (el) => cs(el).display === "inline" || cs(el).display === "contents";
  const describe = (el) => {
    const parts = [];
    for (let e = el; e && e !== document.documentElement; e = e.parentElement) {
      let p = e.tagName.toLowerCase();
      if (e.id) p += `#${e.id}`;
      else if (e.classList.length) p += `.${e.classList[0]}`;
      parts.unshift(p);
      if (p.startsWith("body")) break;
    }
    return parts.join(" > ") || "html";
  };
  const transform = (s, t) =>
    t === "uppercase" ? s.toUpperCase() : t === "lowercase" ? s.toLowerCase() : t === "capitalize" ? s.replace(/(^|\s)(\S)/g, (_, a, b) => a + b.toUpperCase()) : s;

  // --- links: where each goes, as a capture can tell. The page's address is the one its
  // saving browser noted ("saved from url"), else its <base href> or canonical address. A
  // fragment of the page names a layer of the document (NODE) when an element of the page has
  // it (an id, an <a name>; "" and "top" are the page itself), and goes nowhere otherwise (DEAD:
  // the browser stays where it is; the page's address with it when there is one). A reference
  // that resolves to http(s) or mailto is a URL. A `javascript:` one does nothing in a capture,
  // which runs no script (DEAD). A relative reference on a page without an address goes
  // somewhere the capture does not say (NONE): a link the design cannot hold, counted as missed.
  const address = (() => {
    const walker = document.createTreeWalker(document, NodeFilter.SHOW_COMMENT);
    for (let c = walker.nextNode(), k = 0; c && k < 8; c = walker.nextNode(), k++) {
      const m = /^\s*saved from url=\(\d+\)(\S+)/.exec(c.data);
      if (m) return m[1];
    }
    const base = document.querySelector("base[href]")?.getAttribute("href");
    const canonical = document.querySelector("link[rel~=canonical]")?.getAttribute("href");
    for (const a of [base, canonical]) if (a && /^https?:/i.test(a)) return a;
    return null;
  })();
  const named = (f) => {
    const has = (x) => document.getElementById(x) || document.querySelector(`a[name="${CSS.escape(x)}"]`);
    let decoded = f;
    try {
      decoded = decodeURIComponent(f);
    } catch {}
    return f === "" || has(f) || has(decoded) || f.toLowerCase() === "top";
  };
  const inPage = (f) => {
    if (named(f)) return { type: "NODE" };
    if (!address) return { type: "DEAD" };
    const u = new URL(address);
    u.hash = f;
    return { type: "URL", value: u.href };
  };
  const target = (href) => {
    const h = href.trim();
    if (h.startsWith("#")) return inPage(h.slice(1));
    if (/^(https?|mailto):/i.test(h)) return { type: "URL", value: h };
    if (/^javascript:/i.test(h)) return { type: "DEAD" };
    let url = null;
    try {
      url = address ? new URL(h, address) : null;
    } catch {}
    if (!url || !/^https?:$/.test(url.protocol)) return { type: "NONE", href: h };
    const page = new URL(address);
    page.hash = "";
    const bare = new URL(url);
    bare.hash = "";
    return url.hash && bare.href === page.href ? inPage(url.hash.slice(1)) : { type: "URL", value: url.href };
  };

  // --- paragraphs: each block-level element's inline content, split at block-level children.
  const paragraphs = [];
  const styleOf = (textNode, root) => {
    const el = textNode.parentElement;
    const c = cs(el);
    const deco = new Set();
    for (let e = el; e; e = e.parentElement) {
      for (const d of cs(e).textDecorationLine.split(/\s+/)) if (d === "underline" || d === "line-through") deco.add(d);
      if (e === root) break;
    }
    const a = el.closest("a[href]");
    return {
      fontSize: parseFloat(c.fontSize),
      fontWeight: Number(c.fontWeight) || 400,
      italic: c.fontStyle !== "normal",
      color: c.color,
      decoration: [...deco].sort().join(" ") || "none",
      link: a && root.contains(a) ? target(a.getAttribute("href")) : null,
    };
  };
  const key = (s) => JSON.stringify(s);
  const collect = (root) => {
    let cur = null;
    const flush = () => {
      if (cur && cur.chars.length) {
        const xs = cur.rects;
        const x0 = Math.min(...xs.map((r) => r.x));
        const y0 = Math.min(...xs.map((r) => r.y));
        const x1 = Math.max(...xs.map((r) => r.x + r.w));
        const y1 = Math.max(...xs.map((r) => r.y + r.h));
        // Across, the element's content box (a paragraph layer is as wide as its block), and
        // the words where they overflow it; down, the words' glyphs grown to their line boxes.
        const c = cs(root);
        const r = root.getBoundingClientRect();
        const left = r.left + scrollX + parseFloat(c.borderLeftWidth) + parseFloat(c.paddingLeft);
        const right = r.right + scrollX - parseFloat(c.borderRightWidth) - parseFloat(c.paddingRight);
        const lh = parseFloat(c.lineHeight);
        const glyphs = Math.min(...xs.map((q) => q.h));
        const lead = Number.isFinite(lh) ? Math.max(0, (lh - glyphs) / 2) : 0;
        const bx0 = Math.min(x0, left);
        const bx1 = Math.max(x1, right);
        paragraphs.push({
          path: describe(root),
          tag: root.tagName.toLowerCase(),
          box: { x: bx0, y: y0 - lead, w: bx1 - bx0, h: y1 - y0 + 2 * lead },
          text: cur.text.replace(/\s+/g, " ").trim(),
          chars: cur.chars,
          lines: cur.lines,
          runs: cur.runs,
        });
      }
      cur = null;
    };
    const start = () => {
      if (!cur) cur = { text: "", chars: "", lines: [], runs: [], rects: [], prev: null };
    };
    const addText = (t) => {
      const el = t.parentElement;
      if (skipped(el) || cs(el).visibility !== "visible") return;
      const c = cs(el);
      const s = styleOf(t, root);
      const re = /\S+/g;
      let m;
      while ((m = re.exec(t.data)) !== null) {
        const range = document.createRange();
        range.setStart(t, m.index);
        range.setEnd(t, m.index + m[0].length);
        const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
        if (rects.length === 0) continue;
        start();
        const r = box(rects[0]);
        const word = transform(m[0], c.textTransform);
        // A new line: the word starts left of the last one, or below it.
        const p = cur.prev;
        if (!p || r.x < p.x - 0.5 || r.y >= p.y + p.h - 0.5) cur.lines.push("");
        cur.lines[cur.lines.length - 1] += word;
        const k = key(s);
        const last = cur.runs[cur.runs.length - 1];
        if (last && last.key === k) last.end += word.length;
        else cur.runs.push({ key: k, style: s, start: cur.chars.length, end: cur.chars.length + word.length });
        cur.chars += word;
        cur.text += ` ${word}`;
        for (const q of rects) cur.rects.push(box(q));
        cur.prev = box(rects[rects.length - 1]);
      }
    };
    const walk = (node) => {
      for (const ch of node.childNodes) {
        if (ch.nodeType === Node.TEXT_NODE) addText(ch);
        else if (ch.nodeType === Node.ELEMENT_NODE) {
          if (skipped(ch) || cs(ch).display === "none") continue;
          if (isInline(ch)) walk(ch);
          else if (!cs(ch).display.startsWith("inline")) flush(); // a block-level child splits the paragraph
        }
      }
    };
    walk(root);
    flush();
  };
  const flex = [];
  const grid = [];
  for (const el of document.body ? [document.body, ...document.body.querySelectorAll("*")] : []) {
    if (skipped(el) || !shown(el)) continue;
    const d = cs(el).display;
    if (!isInline(el)) collect(el);
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) continue;
    if (d === "flex" || d === "inline-flex") {
      const direction = cs(el).flexDirection.startsWith("column") ? "VERTICAL" : "HORIZONTAL";
      // A row that wraps (Figma wraps rows only; wrap-reverse it has not).
      const wrap = direction === "HORIZONTAL" && cs(el).flexWrap === "wrap";
      flex.push({ el, path: describe(el), box: box(r), direction, wrap });
    } else if (d === "grid" || d === "inline-grid") {
      grid.push({ path: describe(el), box: box(r) });
    }
  }
  for (const p of paragraphs) for (const run of p.runs) delete run.key;

  // --- how each flex container and its items resize, tried on the page itself: the container
  // made 100 px longer (which items grow with it: a FILL), and an item made 20 px larger on
  // each axis (whether the container follows: a HUG). Every change is undone at once.
  const restyle = (el, props) => {
    const saved = el.getAttribute("style");
    for (const [k, v] of Object.entries(props)) el.style.setProperty(k, v, "important");
    return () => (saved === null ? el.removeAttribute("style") : el.setAttribute("style", saved));
  };
  const extent = (r, row) => (row ? r.width : r.height);
  const size = (el, row) => extent(el.getBoundingClientRect(), row);
  for (const f of flex) {
    const el = f.el;
    delete f.el;
    const row = f.direction === "HORIZONTAL";
    // Every element item, an <svg> too (which the paragraphs above skip).
    const items = [...el.children].filter(
      (c) =>
        !["SCRIPT", "STYLE", "TEMPLATE", "NOSCRIPT"].includes(c.tagName.toUpperCase()) &&
        shown(c) &&
        !["absolute", "fixed"].includes(cs(c).position) &&
        c.getBoundingClientRect().width > 0,
    );
    if (items.length === 0) continue;
    const before = items.map((c) => c.getBoundingClientRect());
    const was = size(el, row);
    // Its own maximum lifted: a container held at `max-width` (rustdoc's example-wrap) would
    // not be longer, and no item could be seen to grow with it.
    const [key, max] = row ? ["width", "max-width"] : ["height", "max-height"];
    const undo = restyle(el, { "box-sizing": "border-box", [key]: `${was + 100}px`, [max]: "none" });
    const longer = size(el, row) - was > 0.5;
    const grew = items.map((c, i) => size(c, row) - extent(before[i], row) > 0.5);
    undo();
    const follows = (axisRow) => {
      // The item largest on that axis: a smaller one may grow without moving the container's edge.
      const at = before.reduce((best, r, i) => (extent(r, axisRow) > extent(before[best], axisRow) ? i : best), 0);
      const was = size(el, axisRow);
      const key = axisRow ? "min-width" : "min-height";
      const back = restyle(items[at], { [key]: `${extent(before[at], axisRow) + 20}px`, "flex-shrink": "0" });
      const now = size(el, axisRow);
      back();
      return now - was > 0.5;
    };
    // Where the container still could not be made longer, whether an item grows with it is not
    // seen: its sizing along is not judged (null).
    f.items = before.map((r, i) => ({ box: box(r), grows: longer ? grew[i] : null }));
    f.hugMain = follows(row);
    f.hugCross = follows(!row);
  }

  // --- repeated groups: ≥ 3 consecutive element siblings with the same structure.
  const signature = (el) => {
    const kids = [...el.children].filter((c) => !skipped(c) && shown(c) && !isInline(c));
    return `${el.tagName.toLowerCase()}${[...el.classList].sort().map((c) => `.${c}`).join("")}(${kids.map(signature).join(",")})`;
  };
  const structured = (el) => [...el.children].some((c) => !skipped(c) && shown(c) && !isInline(c));
  const groups = [];
  for (const parent of document.body ? [document.body, ...document.body.querySelectorAll("*")] : []) {
    if (skipped(parent) || !shown(parent)) continue;
    const kids = [...parent.children].filter((c) => !skipped(c) && shown(c) && c.getBoundingClientRect().width > 0);
    let i = 0;
    while (i < kids.length) {
      const sig = structured(kids[i]) ? signature(kids[i]) : null;
      let j = i + 1;
      while (sig && j < kids.length && signature(kids[j]) === sig) j++;
      if (sig && j - i >= 3) {
        groups.push({ path: describe(kids[i]), size: j - i, members: kids.slice(i, j).map((k) => box(k.getBoundingClientRect())) });
      }
      i = sig ? j : i + 1;
    }
  }
  return { paragraphs, flex, grid, groups };
}

// ---------------------------------------------------------------------------------------------

/** HTML's elements (the WHATWG living standard's index, and a few obsolete ones still met). */
const TAGS = new Set(
  (
    "a abbr address area article aside audio b base bdi bdo blockquote body br button canvas caption cite code col colgroup " +
    "data datalist dd del details dfn dialog div dl dt em embed fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 " +
    "head header hgroup hr html i iframe img input ins kbd label legend li link main map mark menu meta meter nav noscript " +
    "object ol optgroup option output p param picture pre progress q rp rt ruby s samp script search section select slot " +
    "small source span strong style sub summary sup table tbody td template textarea tfoot th thead time title tr track u " +
    "ul var video wbr svg math center font big tt strike acronym nobr marquee"
  ).split(" "),
);

/** A name that is an HTML tag, alone or decorated with .class / #id ("td", "span.btn", "div#main"). */
export function bareTag(name) {
  const m = /^([a-z][a-z0-9]*)((?:[.#][^\s.#]+)*)$/i.exec(String(name ?? "").trim());
  return !!m && TAGS.has(m[1].toLowerCase());
}

const WEIGHTS = [
  [/thin|hairline/, 100],
  [/extra ?light|ultra ?light/, 200],
  [/semi ?bold|demi ?bold/, 600],
  [/extra ?bold|ultra ?bold/, 800],
  [/black|heavy/, 900],
  [/light/, 300],
  [/medium/, 500],
  [/bold/, 700],
];

function fontWeight(styleName) {
  const s = String(styleName ?? "").toLowerCase();
  for (const [re, w] of WEIGHTS) if (re.test(s)) return w;
  return 400;
}

function drawnCase(s, textCase) {
  switch (textCase) {
    case "UPPER":
      return s.toUpperCase();
    case "LOWER":
      return s.toLowerCase();
    case "TITLE":
      return s.replace(/(^|\s)(\S)/g, (_, a, b) => a + b.toUpperCase());
    default:
      return s;
  }
}

/** The style of each character of a TEXT node: the node's fields, overridden by `segments`. */
function styledChars(n) {
  const chars = n.characters ?? "";
  const segs = n.segments ?? [];
  const out = [];
  // The node's case over its whole text (TITLE needs the word starts); a segment's own case
  // over its characters.
  const drawn = drawnCase(chars, n.textCase);
  // UTF-16 indices, as Figma counts and as JavaScript strings are indexed.
  for (let i = 0; i < chars.length; i++) {
    const seg = segs.find((s) => s.start <= i && i < s.end) ?? {};
    const pick = (k) => (seg[k] !== undefined ? seg[k] : n[k]);
    out.push({
      ch: seg.textCase !== undefined ? drawnCase(chars[i], seg.textCase === "TITLE" ? "ORIGINAL" : seg.textCase) : (drawn[i] ?? chars[i]),
      fontName: pick("fontName"),
      fontSize: pick("fontSize"),
      fills: pick("fills"),
      textDecoration: pick("textDecoration"),
      hyperlink: pick("hyperlink"),
    });
  }
  return out;
}

function sameStyle(want, got) {
  if (Math.abs((got.fontSize ?? 0) - want.fontSize) > 0.05) return false;
  if (Math.abs(fontWeight(got.fontName?.style) - want.fontWeight) > 100) return false;
  if (/italic|oblique/i.test(got.fontName?.style ?? "") !== want.italic) return false;
  const fill = (got.fills ?? []).find((f) => f.type === "SOLID" && f.visible !== false);
  const c = cssColor(want.color);
  if (!fill || !c) return false;
  const a = (fill.color.a ?? 1) * (fill.opacity ?? 1);
  const ch = 1.5 / 255;
  if (Math.abs(c.r - fill.color.r) > ch || Math.abs(c.g - fill.color.g) > ch || Math.abs(c.b - fill.color.b) > ch || Math.abs(c.a - a) > 0.01) {
    return false;
  }
  const deco = { none: "NONE", underline: "UNDERLINE", "line-through": "STRIKETHROUGH" }[want.decoration];
  if (deco !== undefined && (got.textDecoration ?? "NONE") !== deco) return false;
  if (deco === undefined && (got.textDecoration ?? "NONE") === "NONE") return false; // both lines: either drawn
  if (want.link && !sameLink(want.link, got.hyperlink)) return false;
  return true;
}

/**
 * The drawn hyperlink goes where the page's link does: the same URL, or a layer of the
 * document (a NODE hyperlink's value names a node's `id`; the route checks that it exists).
 */
function sameLink(want, got) {
  if (want.type === "DEAD") return !got;
  if (want.type === "NODE") return got?.type === "NODE";
  return want.type === "URL" && got?.type === "URL" && got.value === want.value;
}

function styleWhy(want, got) {
  const fill = (got.fills ?? []).find((f) => f.type === "SOLID" && f.visible !== false);
  return `want ${JSON.stringify(want)}, drawn ${JSON.stringify({ fontSize: got.fontSize, fontName: got.fontName, fill: fill?.color, textDecoration: got.textDecoration, hyperlink: got.hyperlink })}`;
}

const nonSpace = (s) => s.replace(/\s+/g, "");
const contains = (outer, p, tol = 2) =>
  p.cx >= outer.x - tol && p.cx <= outer.x + outer.w + tol && p.cy >= outer.y - tol && p.cy <= outer.y + outer.h + tol;
const holds = (outer, p, tol = TOL) =>
  p.x >= outer.x - tol && p.x + p.w <= outer.x + outer.w + tol && p.y >= outer.y - tol && p.y + p.h <= outer.y + outer.h + tol;
const within = (a, b) =>
  Math.abs(a.x - b.x) <= TOL && Math.abs(a.y - b.y) <= TOL && Math.abs(a.x + a.w - b.x - b.w) <= TOL && Math.abs(a.y + a.h - b.y - b.h) <= TOL;

/**
 * The lines a TEXT node draws, each { text, top, bottom, left }: its characters split at "\n"
 * when it follows its text (WIDTH_AND_HEIGHT); otherwise as `wrapped` (Chromium laying the
 * node out at its width, its font and white-space pre-wrap) broke them.
 */
function nodeLines(p, wrapped) {
  const n = p.node;
  const pieces = wrapped.get(origin(n)) ?? (n.characters ?? "").split("\n");
  const h = p.h / Math.max(1, pieces.length);
  return pieces.map((t, i) => ({ text: nonSpace(drawnCase(t, n.textCase)), top: p.y + i * h, bottom: p.y + (i + 1) * h, left: p.x }));
}

/** Pieces of lines → lines: grouped by height on the page (centre within a line), left to right. */
function groupLines(pieces) {
  const sorted = [...pieces].sort((a, b) => (a.top + a.bottom) / 2 - (b.top + b.bottom) / 2);
  const lines = [];
  for (const piece of sorted) {
    const mid = (piece.top + piece.bottom) / 2;
    const line = lines.find((l) => mid >= l.top && mid <= l.bottom);
    if (line) line.pieces.push(piece);
    else lines.push({ top: piece.top, bottom: piece.bottom, pieces: [piece] });
  }
  return lines.map((l) => l.pieces.sort((a, b) => a.left - b.left).map((q) => q.text).join("")).filter((t) => t.length > 0);
}

/**
 * The editability figures of one page. `page` is pageEditability's answer, `doc` the document,
 * `wrapped` a Map from each TEXT node that wraps (textAutoResize other than WIDTH_AND_HEIGHT)
 * to its lines as laid out at its width (wrapLines).
 */
export function measureEditability(page, doc, wrapped = new Map()) {
  const placed = place(doc).map((p) => ({ ...p, cx: p.x + p.w / 2, cy: p.y + p.h / 2 }));
  const texts = placed.filter((p) => p.node.type === "TEXT");

  // Each TEXT node belongs to the smallest paragraph whose text holds the node's and whose box
  // holds the node whole, else its centre. (A node drawing no paragraph's text, such as a form
  // control's value or a list marker, belongs to none.)
  const paras = page.paragraphs.map((para) => ({ ...para, nodes: [], whole: nonSpace(para.chars) }));
  const owner = new Map();
  const area = (q) => q.box.w * q.box.h;
  const smallest = (list) => list.reduce((a, q) => (!a || area(q) < area(a) ? q : a), null);
  for (const t of texts) {
    const mine = nonSpace(drawnCase(t.node.characters ?? "", t.node.textCase));
    const same = paras.filter((q) => q.whole.includes(mine));
    const best = smallest(same.filter((q) => holds(q.box, t))) ?? smallest(same.filter((q) => contains(q.box, t)));
    if (best) {
      best.nodes.push(t);
      owner.set(t, best);
    }
  }

  let oneLayer = 0;
  let linesEqual = 0;
  let runsTotal = 0;
  let runsOk = 0;
  const paragraphMisses = [];
  const lineMisses = [];
  const runMisses = [];
  for (const para of paras) {
    const whole = nonSpace(para.chars);
    if (para.nodes.length === 1 && nonSpace(drawnCase(para.nodes[0].node.characters ?? "", para.nodes[0].node.textCase)) === whole) oneLayer++;
    else if (paragraphMisses.length < 20) paragraphMisses.push({ path: para.path, text: para.text.slice(0, 60), layers: para.nodes.length });

    // Lines.
    const order = [...para.nodes].sort((a, b) => a.cy - b.cy || a.x - b.x);
    const drawn = groupLines(order.flatMap((t) => nodeLines(t, wrapped)));
    if (drawn.length === para.lines.length && drawn.every((l, i) => l === para.lines[i])) linesEqual++;
    else if (lineMisses.length < 20) lineMisses.push({ path: para.path, chromium: para.lines.slice(0, 3), document: drawn.slice(0, 3) });

    // Styled runs: the paragraph's non-space characters against the document's, in reading order.
    const docChars = groupLinesChars(order, wrapped);
    const docText = docChars.map((c) => c.ch).join("");
    let cursor = 0;
    for (const run of para.runs) {
      runsTotal++;
      const want = para.chars.slice(run.start, run.end);
      let at = docText.indexOf(want, cursor);
      if (at < 0) at = docText.indexOf(want);
      if (at < 0) {
        if (runMisses.length < 20) runMisses.push({ path: para.path, text: want.slice(0, 40), why: "text not found" });
        continue;
      }
      cursor = at + want.length;
      const off = docChars.slice(at, at + want.length).find((c) => !sameStyle(run.style, c));
      if (!off) runsOk++;
      else if (runMisses.length < 20) runMisses.push({ path: para.path, text: want.slice(0, 40), why: styleWhy(run.style, off) });
    }
  }

  // Stray newlines: a "\n" not at one of Chromium's line starts in the node's paragraph.
  let strayNodes = 0;
  let strayChars = 0;
  for (const t of texts) {
    const chars = t.node.characters ?? "";
    if (!chars.includes("\n")) continue;
    const para = owner.get(t);
    let starts = null;
    let base = -1;
    if (para) {
      const whole = nonSpace(para.chars);
      base = whole.indexOf(nonSpace(drawnCase(chars, t.node.textCase)));
      starts = new Set();
      let k = 0;
      for (const l of para.lines) {
        starts.add(k);
        k += l.length;
      }
    }
    // Legitimate only between two pieces of the node's text, where Chromium starts a line.
    const total = nonSpace(chars).length;
    let stray = 0;
    let k = 0;
    for (const ch of chars) {
      if (ch === "\n") {
        if (base < 0 || k === 0 || k === total || !starts.has(base + k)) stray++;
      } else if (!/\s/.test(ch)) k++;
    }
    if (stray > 0) {
      strayNodes++;
      strayChars += stray;
    }
  }

  // Flex and grid containers: a frame with the same box.
  const frames = placed.filter((p) => ["FRAME", "COMPONENT", "INSTANCE"].includes(p.node.type));
  const framed = (b, ok) => {
    const same = frames.filter((f) => within(b, f));
    return { any: same.length > 0, ok: same.some((f) => ok(f.node)) };
  };
  const flex = page.flex.map((f) => framed(f.box, (n) => n.layoutMode === f.direction && (!f.wrap || n.layoutWrap === "WRAP")));

  // Sizing: in each flex container that has its auto layout frame, the items that grew with
  // the container are FILL on its axis (and only they), and the frame HUGs on each axis where
  // the page's container followed its item.
  const sizing = [];
  for (const f of page.flex) {
    if (!f.items) continue;
    const row = f.direction === "HORIZONTAL";
    const frame = frames.find((p) => within(f.box, p) && p.node.layoutMode === f.direction);
    if (!frame) continue;
    const [mainKey, crossKey] = row ? ["layoutSizingHorizontal", "layoutSizingVertical"] : ["layoutSizingVertical", "layoutSizingHorizontal"];
    const why = [];
    // The frame's own children, as placed (copies of the document's nodes).
    const own = new Set(frame.node.children ?? []);
    const children = placed.filter((p) => own.has(origin(p.node)));
    for (const item of f.items.filter((it) => it.grows !== null)) {
      const fills = children.some((p) => within(item.box, p) && p.node[mainKey] === "FILL");
      if (fills !== item.grows) why.push(`${fills ? "FILL" : "not FILL"} an item that ${item.grows ? "grows" : "does not grow"}`);
    }
    const hugs = (key) => frame.node[key] === "HUG";
    if (hugs(mainKey) !== f.hugMain) why.push(`${hugs(mainKey) ? "HUG" : "no HUG"} along, the page's ${f.hugMain ? "follows" : "does not follow"} its items`);
    if (hugs(crossKey) !== f.hugCross) why.push(`${hugs(crossKey) ? "HUG" : "no HUG"} across, the page's ${f.hugCross ? "follows" : "does not follow"} its items`);
    sizing.push({ path: f.path, ok: why.length === 0, why: why.join("; ") });
  }
  const grid = page.grid.map((g) => framed(g.box, (n) => n.layoutMode === "GRID"));

  // Names.
  const layers = placed.filter((p) => p.node !== doc && p.node.type !== "TEXT");
  const bare = layers.filter((p) => bareTag(p.node.name));

  // Shared styles: every paint a node has (a visible solid or gradient fill, a TEXT node's type).
  let styleable = 0;
  let styled = 0;
  for (const p of placed) {
    const n = p.node;
    const paints = (n.fills ?? []).some((f) => f.visible !== false && f.type !== "IMAGE");
    if (!paints && n.type !== "TEXT") continue;
    styleable++;
    if ((!paints || n.fillStyleId) && (n.type !== "TEXT" || n.textStyleId)) styled++;
  }

  // Components: every member an INSTANCE (or the COMPONENT) of one component, same box.
  const instances = placed.filter((p) => p.node.type === "INSTANCE" || p.node.type === "COMPONENT");
  const componentOf = (p) => (p.node.type === "COMPONENT" ? p.node.id : p.node.componentId);
  let made = 0;
  for (const g of page.groups) {
    const ids = g.members.map((m) => {
      const hit = instances.find((p) => within(m, p));
      return hit ? componentOf(hit) : null;
    });
    if (ids.every((id) => id && id === ids[0])) made++;
  }

  const fig = (n, total) => ({ n, total, share: total === 0 ? null : n / total });
  return {
    paragraphs: fig(oneLayer, paras.length),
    lines: fig(linesEqual, paras.length),
    runs: fig(runsOk, runsTotal),
    strayNewlines: { n: strayNodes, chars: strayChars, total: texts.length },
    flex: { ...fig(flex.filter((f) => f.ok).length, flex.length), noFrame: flex.filter((f) => !f.any).length },
    grid: { ...fig(grid.filter((f) => f.ok).length, grid.length), noFrame: grid.filter((f) => !f.any).length },
    sizing: fig(sizing.filter((z) => z.ok).length, sizing.length),
    bareTags: { ...fig(bare.length, layers.length), names: [...new Set(bare.map((p) => p.node.name))].slice(0, 12) },
    sharedStyle: fig(styled, styleable),
    components: { ...fig(made, page.groups.length), members: page.groups.reduce((s, g) => s + g.size, 0) },
    misses: {
      paragraphs: paragraphMisses,
      lines: lineMisses,
      runs: runMisses,
      flex: containerMisses(page.flex, flex, "auto layout in its direction (wrapping where the row wraps)"),
      grid: containerMisses(page.grid, grid, "layoutMode GRID"),
      sizing: sizing.filter((z) => !z.ok).map(({ path, why }) => ({ path, why })),
      groups: page.groups.map((g) => `${g.path} ×${g.size}`),
    },
  };
}

function containerMisses(containers, found, what) {
  return containers
    .map((c, i) => ({ path: c.path, ...found[i] }))
    .filter((c) => !c.ok)
    .map((c) => ({ path: c.path, why: c.any ? `its frame has no ${what}` : "no frame of its box" }));
}

/** The document's non-space characters of a paragraph's nodes in reading order, with style. */
function groupLinesChars(order, wrapped) {
  // Each node's lines as pieces carrying their styled characters, then grouped like groupLines.
  const pieces = [];
  for (const t of order) {
    const styledAll = styledChars(t.node).filter((c) => c.ch !== "\n");
    const lines = nodeLines(t, wrapped);
    let k = 0;
    const nonspace = styledAll.filter((c) => !/\s/.test(c.ch));
    for (const l of lines) {
      pieces.push({ ...l, chars: nonspace.slice(k, k + l.text.length) });
      k += l.text.length;
    }
  }
  const sorted = [...pieces].sort((a, b) => (a.top + a.bottom) / 2 - (b.top + b.bottom) / 2);
  const lines = [];
  for (const piece of sorted) {
    const mid = (piece.top + piece.bottom) / 2;
    const line = lines.find((l) => mid >= l.top && mid <= l.bottom);
    if (line) line.pieces.push(piece);
    else lines.push({ top: piece.top, bottom: piece.bottom, pieces: [piece] });
  }
  return lines.flatMap((l) => l.pieces.sort((a, b) => a.left - b.left).flatMap((q) => q.chars));
}

/**
 * Runs in a blank page: each wrapping TEXT node (wrapInput's { width, indent, lineHeight,
 * spans: [{ text, family, size, weight, italic, letterSpacing }] }) laid out at its width with
 * white-space pre-wrap, as Figma wraps a fixed-width text box; answers each node's lines.
 */
export function wrapLines(nodes) {
  return nodes.map((n) => {
    const div = document.createElement("div");
    Object.assign(div.style, {
      position: "absolute",
      left: "0",
      top: "0",
      width: `${n.width}px`,
      textIndent: `${n.indent ?? 0}px`,
      lineHeight: n.lineHeight,
      whiteSpace: "pre-wrap",
      overflowWrap: "break-word",
    });
    for (const s of n.spans) {
      const span = document.createElement("span");
      Object.assign(span.style, {
        fontFamily: `"${s.family}"`,
        fontSize: `${s.size}px`,
        fontWeight: String(s.weight),
        fontStyle: s.italic ? "italic" : "normal",
        letterSpacing: `${s.letterSpacing}px`,
        // The text breaks as it is drawn, in its case (Figma's textCase).
        textTransform: s.transform,
      });
      span.textContent = s.text;
      div.appendChild(span);
    }
    document.body.appendChild(div);
    const lines = [];
    let prev = null;
    const walker = document.createTreeWalker(div, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      for (let i = 0; i < t.data.length; i++) {
        if (t.data[i] === "\n") {
          lines.push("");
          prev = null;
          continue;
        }
        const r = document.createRange();
        r.setStart(t, i);
        r.setEnd(t, i + 1);
        const rect = [...r.getClientRects()].find((q) => q.width > 0 || q.height > 0);
        if (!rect) continue;
        if (lines.length === 0 || (prev && (rect.top >= prev.bottom - 0.5 || rect.left < prev.left - 0.5))) lines.push("");
        lines[lines.length - 1] += t.data[i];
        prev = rect;
      }
    }
    div.remove();
    return lines;
  });
}

/**
 * Runs in the wrapLines page: every @font-face of the page loaded (a face is otherwise fetched
 * only once text uses it, after the layout that measures it); answers the faces that failed.
 */
export async function loadFonts() {
  const failed = [];
  await Promise.all([...document.fonts].map((f) => f.load().catch(() => failed.push(`${f.family} ${f.weight} ${f.style}`))));
  await document.fonts.ready;
  return failed;
}

/** The wrapping TEXT nodes of a document, as wrapLines takes them. */
export function wrappingNodes(doc) {
  return place(doc)
    .map((p) => p.node)
    .filter((n) => n.type === "TEXT" && n.textAutoResize && n.textAutoResize !== "WIDTH_AND_HEIGHT");
}

/** Figma's `textCase` as CSS `text-transform`: TITLE capitalizes each word, as CSS does. */
const CASE_TRANSFORM = { ORIGINAL: "none", UPPER: "uppercase", LOWER: "lowercase", TITLE: "capitalize" };

/** A TEXT node as wrapLines takes it: its characters as spans of one font (its segments). */
export function wrapInput(n) {
  const lh = n.lineHeight;
  const chars = n.characters ?? "";
  const segs = n.segments ?? [];
  const font = (i) => {
    const seg = segs.find((s) => s.start <= i && i < s.end) ?? {};
    const pick = (k) => (seg[k] !== undefined ? seg[k] : n[k]);
    const size = pick("fontSize") ?? 12;
    const ls = pick("letterSpacing");
    return {
      family: pick("fontName")?.family ?? "Inter",
      size,
      weight: fontWeight(pick("fontName")?.style),
      italic: /italic|oblique/i.test(pick("fontName")?.style ?? ""),
      letterSpacing: ls?.unit === "PERCENT" ? ((ls.value ?? 0) / 100) * size : (ls?.value ?? 0),
      transform: CASE_TRANSFORM[pick("textCase") ?? "ORIGINAL"] ?? "none",
    };
  };
  const spans = [];
  for (let i = 0; i < chars.length; i++) {
    const f = font(i);
    const last = spans[spans.length - 1];
    if (last && JSON.stringify({ ...last, text: "" }) === JSON.stringify({ ...f, text: "" })) last.text += chars[i];
    else spans.push({ ...f, text: chars[i] });
  }
  return {
    width: n.width ?? 0,
    // Figma's paragraphIndent is CSS's text-indent where the text is one paragraph, as the
    // converter makes it only then.
    indent: Math.max(n.paragraphIndent ?? 0, 0),
    lineHeight: !lh || lh.unit === "AUTO" ? "normal" : lh.unit === "PERCENT" ? `${lh.value}%` : `${lh.value}px`,
    spans,
  };
}

/** The document's layer list as text: one line a node, indented by depth, type and name. */
export function outline(doc, limit = 40) {
  const out = [];
  const walk = (n, depth) => {
    if (out.length >= limit) return;
    const name = String(n.name ?? "").slice(0, 48).replace(/\n/g, "\\n");
    let line = `${"  ".repeat(depth)}${n.type} "${name}"`;
    if (n.layoutMode) line += ` [auto layout ${n.layoutMode}]`;
    if (n.type === "TEXT") line += ` ${n.textAutoResize ?? ""}${(n.characters ?? "").includes("\n") ? ' holds "\\n"' : ""}`;
    out.push(line);
    for (const c of n.children ?? []) walk(c, depth + 1);
  };
  walk(doc, 0);
  return out.join("\n");
}

/**
 * Each wrapping TEXT node of `doc` and its lines, as Chromium breaks its text at the node's
 * width (one page of `browser` for all of them): the fidelity drawing's and the preview's.
 * `fontCss` is the capture's @font-face rules (webfonts.mjs's `css`): the page declares them
 * and has loaded every face before it lays anything out, so the text breaks in the fonts the
 * drawing uses.
 */
export async function wrapped(browser, doc, fontCss = "") {
  const nodes = wrappingNodes(doc);
  const lines = new Map();
  if (nodes.length === 0) return lines;
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const style = fontCss ? `<style>${fontCss.replace(/<\/style/gi, "<\\/style")}</style>` : "";
  await page.setContent(`<!doctype html><head>${style}</head><body style="margin:0"></body>`);
  const failed = fontCss ? await page.evaluate(loadFonts) : [];
  if (failed.length) console.error(`web fonts Chromium could not load: ${failed.join(", ")}`);
  const out = await page.evaluate(wrapLines, nodes.map(wrapInput));
  await context.close();
  nodes.forEach((n, i) => lines.set(origin(n), out[i]));
  return lines;
}
