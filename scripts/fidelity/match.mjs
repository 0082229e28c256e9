// Matches the page's ground truth (truth.mjs) against the converted document's nodes, placed
// in page pixels as the SVG writer draws them. Each node matches at most one item.
//
//   text run   a TEXT node with the same words (in the case each side draws), every edge of
//              its box within 4 px, the same font size (±0.05 px) and colour (±1.5/255 a
//              channel, ±0.01 alpha); or a paragraph (a TEXT node of fixed width, which wraps
//              its text, or one of several styled runs) whose box holds the run's (4 px) and whose characters hold its words
//              drawn at that size and colour: one paragraph holds many runs
//   image      a node drawing an image (an SVG node, or an IMAGE fill), every edge within 4 px
//   box        a node with a fill of the element's background colour (as above) and, for each
//              of its gradients, a gradient fill of the same kind with the same stop colours,
//              every edge within 4 px

import { place } from "./svg.mjs";

export const TOLERANCE_PX = 4;

/** A CSS colour as computed (`rgb(…)` / `rgba(…)`) → { r, g, b, a } from 0 to 1, else null. */
export function cssColor(s) {
  const m = /^rgba?\(([^)]*)\)$/.exec(String(s).trim());
  if (!m) return null;
  const v = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
  if (v.length < 3 || v.some((x) => !Number.isFinite(x))) return null;
  return { r: v[0] / 255, g: v[1] / 255, b: v[2] / 255, a: v.length > 3 ? v[3] : 1 };
}

function sameColor(c, paintColor, paintOpacity = 1) {
  if (!c || !paintColor) return false;
  const a = (paintColor.a ?? 1) * paintOpacity;
  const ch = 1.5 / 255;
  return (
    Math.abs(c.r - paintColor.r) <= ch &&
    Math.abs(c.g - paintColor.g) <= ch &&
    Math.abs(c.b - paintColor.b) <= ch &&
    Math.abs(c.a - a) <= 0.01
  );
}

function edges(t, p) {
  return [p.x - t.x, p.y - t.y, p.x + p.w - (t.x + t.w), p.y + p.h - (t.y + t.h)];
}

function within(t, p) {
  return edges(t, p).every((d) => Math.abs(d) <= TOLERANCE_PX);
}

/** The largest edge difference, to pick the nearest candidate. */
function distance(t, p) {
  return Math.max(...edges(t, p).map(Math.abs));
}

function words(s) {
  return s.split(/\s+/).filter(Boolean).join(" ");
}

function drawnText(n) {
  const c = n.characters ?? "";
  switch (n.textCase) {
    case "UPPER":
      return c.toUpperCase();
    case "LOWER":
      return c.toLowerCase();
    case "TITLE":
      return c.replace(/(^|\s)(\S)/g, (_, s, ch) => s + ch.toUpperCase());
    default:
      return c;
  }
}

const fmt = (v) => Math.round(v * 10) / 10;
const boxText = (b) => `${fmt(b.x)},${fmt(b.y)} ${fmt(b.w)}×${fmt(b.h)}`;

/**
 * Matches each truth item to an unused candidate that passes `ok`, the nearest first; an
 * unmatched item is reported with the nearest candidate that passes `similar`, and why.
 */
function assign(items, candidates, ok, similar, why) {
  const used = new Set();
  const misses = [];
  let matched = 0;
  // Exact hits first, so a near miss never takes a node another item matches exactly.
  const order = items.map((t, i) => ({ t, i }));
  const pending = [];
  for (const { t } of order) {
    const hits = candidates.filter((c, j) => !used.has(j) && ok(t, c));
    if (hits.length === 0) {
      pending.push(t);
      continue;
    }
    const best = hits.reduce((a, b) => (distance(t, b) < distance(t, a) ? b : a));
    used.add(candidates.indexOf(best));
    matched++;
  }
  for (const t of pending) {
    const near = candidates.filter((c) => similar(t, c));
    const best = near.length ? near.reduce((a, b) => (distance(t, b) < distance(t, a) ? b : a)) : null;
    misses.push({ ...t, box: boxText(t), why: best ? why(t, best) : "no such node", nearest: best ? boxText(best) : null });
  }
  const extra = candidates.filter((_, j) => !used.has(j)).length;
  return { total: items.length, matched, misses, extra };
}

/**
 * The style the first character of `text` (words) is drawn with in paragraph `n`, when its
 * characters hold those words: { fontSize, fill }; else null.
 */
function paragraphStyle(n, text) {
  const drawn = drawnText(n);
  // Its characters with white space collapsed, and where each came from.
  let norm = "";
  const from = [];
  for (let i = 0; i < drawn.length; i++) {
    const white = /\s/.test(drawn[i]);
    if (white && (norm.length === 0 || norm.endsWith(" "))) continue;
    norm += white ? " " : drawn[i];
    from.push(i);
  }
  const k = norm.indexOf(text);
  if (k < 0) return null;
  const i = from[k];
  const seg = (n.segments ?? []).find((g) => g.start <= i && i < g.end) ?? {};
  const fills = seg.fills ?? n.fills ?? [];
  return { fontSize: seg.fontSize ?? n.fontSize ?? 0, fill: fills.find((f) => f.type === "SOLID" && f.visible !== false) };
}

const holds = (p, t) =>
  t.x >= p.x - TOLERANCE_PX && t.y >= p.y - TOLERANCE_PX && t.x + t.w <= p.x + p.w + TOLERANCE_PX && t.y + t.h <= p.y + p.h + TOLERANCE_PX;

export function matchAll(truth, doc) {
  const placed = place(doc);
  // A text of several runs (segments) holds them as a paragraph does, also on one line.
  const paragraphs = placed.filter(
    (p) => p.node.type === "TEXT" && ((p.node.textAutoResize && p.node.textAutoResize !== "WIDTH_AND_HEIGHT") || (p.node.segments ?? []).length > 1),
  );
  const texts = placed.filter((p) => p.node.type === "TEXT" && !paragraphs.includes(p));
  const inParagraph = (t) =>
    paragraphs.some((p) => {
      if (!holds(p, t)) return false;
      const st = paragraphStyle(p.node, t.text);
      return !!st && Math.abs(st.fontSize - t.fontSize) <= 0.05 && !!st.fill && sameColor(cssColor(t.color), st.fill.color, st.fill.opacity ?? 1);
    });
  const imageNodes = placed.filter(
    (p) => p.node.type === "SVG" || (p.node.fills ?? []).some((f) => f.type === "IMAGE" && f.visible !== false),
  );
  const filled = placed.filter((p) => p.node.type !== "TEXT" && (p.node.fills ?? []).length > 0);

  const textFill = (p) => (p.node.fills ?? []).find((f) => f.type === "SOLID" && f.visible !== false);
  const textOk = (t, p) => {
    const fill = textFill(p);
    return (
      words(drawnText(p.node)) === t.text &&
      within(t, p) &&
      Math.abs((p.node.fontSize ?? 0) - t.fontSize) <= 0.05 &&
      !!fill &&
      sameColor(cssColor(t.color), fill.color, fill.opacity ?? 1)
    );
  };
  const textWhy = (t, p) => {
    const out = [];
    if (words(drawnText(p.node)) !== t.text) out.push(`words "${words(drawnText(p.node)).slice(0, 40)}"`);
    if (!within(t, p)) out.push(`edges off by ${edges(t, p).map(fmt).join("/")} px`);
    if (Math.abs((p.node.fontSize ?? 0) - t.fontSize) > 0.05) out.push(`font size ${p.node.fontSize} vs ${t.fontSize}`);
    const fill = textFill(p);
    if (!fill || !sameColor(cssColor(t.color), fill.color, fill.opacity ?? 1)) out.push("colour");
    return out.join("; ");
  };
  // A near candidate: the same words anywhere, else any text node overlapping the run.
  const textSimilar = (t, p) => words(drawnText(p.node)) === t.text || distance(t, p) < 40;

  const imageOk = (t, p) => within(t, p);
  const imageWhy = (t, p) => `edges off by ${edges(t, p).map(fmt).join("/")} px`;

  const gradientStops = (css) => (css.match(/rgba?\([^)]*\)/g) ?? []).map(cssColor);
  const boxPaintOk = (t, p) => {
    const fills = (p.node.fills ?? []).filter((f) => f.visible !== false);
    if (t.color && !fills.some((f) => f.type === "SOLID" && sameColor(cssColor(t.color), f.color, f.opacity ?? 1))) {
      return false;
    }
    for (const g of t.gradients) {
      if (!g.startsWith("linear-gradient(")) return false;
      const want = gradientStops(g);
      const hit = fills.some(
        (f) =>
          f.type === "GRADIENT_LINEAR" &&
          f.gradientStops.length === want.length &&
          f.gradientStops.every((s, i) => sameColor(want[i], s.color, f.opacity ?? 1)),
      );
      if (!hit) return false;
    }
    return true;
  };
  const boxOk = (t, p) => within(t, p) && boxPaintOk(t, p);
  const boxWhy = (t, p) => {
    const out = [];
    if (!within(t, p)) out.push(`edges off by ${edges(t, p).map(fmt).join("/")} px`);
    if (!boxPaintOk(t, p)) out.push(`paint ${JSON.stringify((p.node.fills ?? []).map((f) => f.type))}`);
    return out.join("; ");
  };
  const boxSimilar = (t, p) => distance(t, p) < 40 || boxPaintOk(t, p);

  const found = truth.texts.filter(inParagraph);
  const rest = assign(truth.texts.filter((t) => !found.includes(t)), texts, textOk, textSimilar, textWhy);
  return {
    texts: { ...rest, total: truth.texts.length, matched: rest.matched + found.length },
    images: assign(truth.images, imageNodes, imageOk, (t, p) => distance(t, p) < 200, imageWhy),
    boxes: assign(truth.boxes, filled, boxOk, boxSimilar, boxWhy),
  };
}
