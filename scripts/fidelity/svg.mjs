// The converted document (openapi.yaml's `Node` tree) as one SVG, drawn the way the reference
// plugin (plugin/src/build.ts) has Figma build it: frames hold children in their own
// coordinates, a group's children are placed from the group's origin, a leaf's children follow
// it in its parent, auto layout places children in list order, fills paint bottom to top,
// strokes lie INSIDE/CENTER/OUTSIDE the outline with per-side weights, a frame's strokes and
// clipping sit above its children, shadows are knocked out under their node, TEXT nodes that
// follow their text keep their top-left and put the baseline where Figma does (the leading
// split evenly above and below the font's ascender and descender). Dashed strokes follow the
// outline (`dashPattern`, `strokeCap`), a LAYER_BLUR blurs the node's whole drawing (σ = radius
// / 2), a TEXT node's shadows are its glyphs' and `blendMode` is CSS's mix-blend-mode.

import { metricsFor, parseStyle } from "./fonts.mjs";

/** Figma's blend modes as CSS's mix-blend-mode (PASS_THROUGH and NORMAL draw as normal). */
const BLEND = {
  MULTIPLY: "multiply",
  SCREEN: "screen",
  OVERLAY: "overlay",
  DARKEN: "darken",
  LIGHTEN: "lighten",
  COLOR_DODGE: "color-dodge",
  COLOR_BURN: "color-burn",
  HARD_LIGHT: "hard-light",
  SOFT_LIGHT: "soft-light",
  DIFFERENCE: "difference",
  EXCLUSION: "exclusion",
  HUE: "hue",
  SATURATION: "saturation",
  COLOR: "color",
  LUMINOSITY: "luminosity",
  LINEAR_DODGE: "plus-lighter",
  LINEAR_BURN: "plus-darker",
};

/** A frame, or a component or an instance, which Figma draws as the frame it is. */
export const isFrame = (n) => n.type === "FRAME" || n.type === "COMPONENT" || n.type === "INSTANCE";

const f = (v) => (Number.isFinite(v) ? Math.round(v * 1000) / 1000 : 0);

function esc(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function rgb(c) {
  const ch = (v) => Math.round(Math.min(1, Math.max(0, v ?? 0)) * 255);
  return `rgb(${ch(c.r)},${ch(c.g)},${ch(c.b)})`;
}

/** A rounded rectangle, each corner its own (rx, ry) radii, as path data. */
function roundRect(x, y, w, h, radii) {
  if (w <= 0 || h <= 0) return "";
  const cl = ([rx, ry]) => [Math.max(0, Math.min(rx, w / 2)), Math.max(0, Math.min(ry, h / 2))];
  const [tl, tr, br, bl] = radii.map(cl);
  const p = [`M${f(x + tl[0])} ${f(y)}`, `H${f(x + w - tr[0])}`];
  if (tr[0] > 0 && tr[1] > 0) p.push(`A${f(tr[0])} ${f(tr[1])} 0 0 1 ${f(x + w)} ${f(y + tr[1])}`);
  p.push(`V${f(y + h - br[1])}`);
  if (br[0] > 0 && br[1] > 0) p.push(`A${f(br[0])} ${f(br[1])} 0 0 1 ${f(x + w - br[0])} ${f(y + h)}`);
  p.push(`H${f(x + bl[0])}`);
  if (bl[0] > 0 && bl[1] > 0) p.push(`A${f(bl[0])} ${f(bl[1])} 0 0 1 ${f(x)} ${f(y + h - bl[1])}`);
  p.push(`V${f(y + tl[1])}`);
  if (tl[0] > 0 && tl[1] > 0) p.push(`A${f(tl[0])} ${f(tl[1])} 0 0 1 ${f(x + tl[0])} ${f(y)}`);
  p.push("Z");
  return p.join("");
}

function ellipsePath(x, y, w, h) {
  if (w <= 0 || h <= 0) return "";
  const rx = w / 2;
  const ry = h / 2;
  return `M${f(x)} ${f(y + ry)}A${f(rx)} ${f(ry)} 0 1 0 ${f(x + w)} ${f(y + ry)}A${f(rx)} ${f(ry)} 0 1 0 ${f(x)} ${f(y + ry)}Z`;
}

/**
 * The four corner radii of a node: `cornerRadius`, each overridden by its corner's own; Figma's
 * corners are circular, none rounder than half the shorter side (a 999 px radius on a 64 × 35
 * box is a pill of radius 17.5, not an ellipse).
 */
function radii(n) {
  const r = n.cornerRadius ?? 0;
  const most = Math.min(n.width ?? 0, n.height ?? 0) / 2;
  return [n.topLeftRadius ?? r, n.topRightRadius ?? r, n.bottomRightRadius ?? r, n.bottomLeftRadius ?? r].map((c) => Math.min(c, most));
}

/** The node's outline offset outwards by (top, right, bottom, left) (negative: inwards). */
function outline(n, [t, r, b, l] = [0, 0, 0, 0]) {
  const w = n.width ?? 0;
  const h = n.height ?? 0;
  if (n.type === "ELLIPSE") return ellipsePath(-l, -t, w + l + r, h + t + b);
  const [tl, tr, br, bl] = radii(n);
  const corner = (c, dx, dy) => (c > 0 ? [Math.max(0, c + dx), Math.max(0, c + dy)] : [0, 0]);
  return roundRect(-l, -t, w + l + r, h + t + b, [
    corner(tl, l, t),
    corner(tr, r, t),
    corner(br, r, b),
    corner(bl, l, b),
  ]);
}

function invert([[a, b, c], [d, e, g]]) {
  const det = a * e - b * d;
  if (Math.abs(det) < 1e-12) return null;
  return [
    [e / det, -b / det, (b * g - c * e) / det],
    [-d / det, a / det, (c * d - a * g) / det],
  ];
}

/**
 * A GRID frame's tracks in px, as Figma sizes them: FIXED as given; HUG as the largest child
 * spanning that track alone; FLEX sharing what the others and the gaps leave, by their values.
 */
function gridTracks(specs, gap, room, kids, anchor, span, size) {
  const px = specs.map((t, i) => {
    if (t.type === "FIXED") return t.value ?? 0;
    if (t.type === "HUG") return Math.max(0, ...kids.filter((k) => (k[anchor] ?? 0) === i && (k[span] ?? 1) === 1).map(size));
    return null;
  });
  const shares = specs.reduce((sum, t, i) => sum + (px[i] === null ? t.value ?? 1 : 0), 0);
  const free = room - px.reduce((sum, v) => sum + (v ?? 0), 0) - gap * Math.max(0, specs.length - 1);
  return px.map((v, i) => (v === null ? (Math.max(0, free) * (specs[i].value ?? 1)) / (shares || 1) : v));
}

/** Grid: each child at the start of its anchor cell, from the padding, the gaps between tracks. */
export function gridLayout(n, kids) {
  const flow = kids.filter((k) => k.visible !== false);
  const pl = n.paddingLeft ?? 0;
  const pt = n.paddingTop ?? 0;
  const cols = gridTracks(n.gridColumnSizes ?? [], n.gridColumnGap ?? 0, (n.width ?? 0) - pl - (n.paddingRight ?? 0), flow, "gridColumnAnchorIndex", "gridColumnSpan", (k) => k.width ?? 0);
  const rows = gridTracks(n.gridRowSizes ?? [], n.gridRowGap ?? 0, (n.height ?? 0) - pt - (n.paddingBottom ?? 0), flow, "gridRowAnchorIndex", "gridRowSpan", (k) => k.height ?? 0);
  const start = (from, tracks, gap, i) => from + tracks.slice(0, i).reduce((sum, v) => sum + v + gap, 0);
  return flow.map((k) => ({
    ...k,
    [ORIGIN]: origin(k),
    x: start(pl, cols, n.gridColumnGap ?? 0, k.gridColumnAnchorIndex ?? 0),
    y: start(pt, rows, n.gridRowGap ?? 0, k.gridRowAnchorIndex ?? 0),
  }));
}

// A child placed by auto layout or grid is a copy of the document's node with its place: it
// keeps the node it was copied from here, so what is known of that node (its wrapped lines)
// is found from the copy.
const ORIGIN = Symbol("the document's node");

/** The document's node a placed copy was made of (itself when it is one). */
export const origin = (n) => n[ORIGIN] ?? n;

/** A frame's children where Figma puts them: by auto layout, by grid, or as they are. */
export function laidOut(n, kids) {
  if (n.layoutMode === "HORIZONTAL" || n.layoutMode === "VERTICAL") return autoLayout(n, kids);
  if (n.layoutMode === "GRID") return gridLayout(n, kids);
  return kids;
}

const SCALE_MODE = { FILL: "xMidYMid slice", FIT: "xMidYMid meet", CROP: "none", TILE: "xMidYMid slice" };

/** Auto layout: children in list order along the axis, from the padding, `itemSpacing` apart. */
export function autoLayout(n, kids) {

  const row = n.layoutMode === "HORIZONTAL";
  const [ps, pe] = row ? [n.paddingLeft ?? 0, n.paddingRight ?? 0] : [n.paddingTop ?? 0, n.paddingBottom ?? 0];
  const [cs, ce] = row ? [n.paddingTop ?? 0, n.paddingBottom ?? 0] : [n.paddingLeft ?? 0, n.paddingRight ?? 0];
  const size = row ? n.width ?? 0 : n.height ?? 0;
  const cross = row ? n.height ?? 0 : n.width ?? 0;
  // An ABSOLUTE child stays where it is, out of the flow, in its place in the paint order.
  const flow = kids.filter((k) => k.visible !== false && k.layoutPositioning !== "ABSOLUTE");
  if (row && n.layoutWrap === "WRAP") return wrapLayout(n, kids, flow, { ps, pe, cs, ce, size, cross });
  const main = (k) => (row ? k.width ?? 0 : k.height ?? 0);
  const side = (k) => (row ? k.height ?? 0 : k.width ?? 0);
  const total = flow.reduce((s, k) => s + main(k), 0);
  let gap = n.itemSpacing ?? 0;
  const free = size - ps - pe - total - gap * Math.max(0, flow.length - 1);
  let at = ps;
  switch (n.primaryAxisAlignItems) {
    case "CENTER":
      at += free / 2;
      break;
    case "MAX":
      at += free;
      break;
    case "SPACE_BETWEEN":
      if (flow.length > 1) gap = (size - ps - pe - total) / (flow.length - 1);
      break;
    default:
  }
  const placed = new Map();
  for (const k of flow) {
    let c = cs;
    if (n.counterAxisAlignItems === "CENTER") c = cs + (cross - cs - ce - side(k)) / 2;
    else if (n.counterAxisAlignItems === "MAX") c = cross - ce - side(k);
    placed.set(k, { ...k, [ORIGIN]: origin(k), ...(row ? { x: at, y: c } : { x: c, y: at }) });
    at += main(k) + gap;
  }
  return kids.filter((k) => k.visible !== false).map((k) => placed.get(k) ?? k);
}

/**
 * Wrapping auto layout (`layoutWrap: WRAP`, rows only), as Figma documents it: a row takes
 * children while they fit the width inside the padding, `itemSpacing` apart, and is aligned
 * along by `primaryAxisAlignItems`; each row is as tall as its tallest child, which
 * `counterAxisAlignItems` aligns in it, and the rows stack `counterAxisSpacing` apart (absent:
 * `itemSpacing`), the block of them aligned in the frame by `counterAxisAlignItems` too.
 */
function wrapLayout(n, kids, flow, { ps, pe, cs, ce, size, cross }) {
  const room = size - ps - pe;
  const gap = n.itemSpacing ?? 0;
  const rowGap = n.counterAxisSpacing ?? gap;
  const rows = [];
  for (const k of flow) {
    const r = rows[rows.length - 1];
    const span = r ? r.reduce((sum, x) => sum + (x.width ?? 0), 0) + gap * r.length : 0;
    // The same hundredth as the converter's check: a row filled exactly still takes the item.
    if (r && span + (k.width ?? 0) <= room + 0.01) r.push(k);
    else rows.push([k]);
  }
  const tall = rows.map((r) => r.reduce((m, k) => Math.max(m, k.height ?? 0), 0));
  const block = tall.reduce((sum, h) => sum + h, 0) + rowGap * Math.max(0, rows.length - 1);
  const free = cross - cs - ce - block;
  let top = cs + (n.counterAxisAlignItems === "CENTER" ? free / 2 : n.counterAxisAlignItems === "MAX" ? free : 0);
  const placed = new Map();
  rows.forEach((r, i) => {
    const total = r.reduce((sum, k) => sum + (k.width ?? 0), 0);
    let step = gap;
    let at = ps;
    const left = room - total - gap * (r.length - 1);
    if (n.primaryAxisAlignItems === "CENTER") at += left / 2;
    else if (n.primaryAxisAlignItems === "MAX") at += left;
    else if (n.primaryAxisAlignItems === "SPACE_BETWEEN" && r.length > 1) step = (room - total) / (r.length - 1);
    for (const k of r) {
      const h = k.height ?? 0;
      const y = n.counterAxisAlignItems === "CENTER" ? top + (tall[i] - h) / 2 : n.counterAxisAlignItems === "MAX" ? top + tall[i] - h : top;
      placed.set(k, { ...k, [ORIGIN]: origin(k), x: at, y });
      at += (k.width ?? 0) + step;
    }
    top += tall[i] + rowGap;
  });
  return kids.filter((k) => k.visible !== false).map((k) => placed.get(k) ?? k);
}

export class SvgWriter {
  /**
   * @param images  Map imageRef → { mime, bytes }
   * @param warn    called with what the writer could not draw as Figma would
   * @param wrapped Map from each TEXT node of fixed width to its lines (editability.mjs's
   *                wrapLines: Chromium breaking its characters at its width with its fonts, as
   *                Figma does); a node missing from it is drawn a line per "\n"
   * @param faces   the capture's web fonts (webfonts.mjs's faces), whose vertical metrics place
   *                the baselines of text in their families; the renderer must load them too
   */
  constructor(images, warn = () => {}, wrapped = new Map(), faces = []) {
    this.images = images;
    this.warn = warn;
    this.wrapped = wrapped;
    this.faces = faces;
    this.defs = [];
    this.ids = 0;
    this.uris = new Map();
  }

  id(prefix) {
    this.ids += 1;
    return `${prefix}${this.ids}`;
  }

  dataUri(ref) {
    let uri = this.uris.get(ref);
    if (uri === undefined) {
      const img = this.images.get(ref);
      if (!img) {
        this.warn(`image ${ref} missing`);
        return null;
      }
      uri = `data:${img.mime};base64,${img.bytes.toString("base64")}`;
      this.uris.set(ref, uri);
    }
    return uri;
  }

  /** The whole document, `width`×`height` px (the reference picture's size). */
  write(doc, width, height) {
    const body = this.node(doc, 0, 0).join("\n");
    return (
      `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" ` +
      `width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">\n` +
      `<defs>${this.defs.join("\n")}</defs>\n${body}\n</svg>\n`
    );
  }

  /** One node placed from (ox, oy) in its parent: itself, then a leaf's children after it. */
  node(n, ox, oy) {
    if (n.visible === false) return [];
    const x = ox + (n.x ?? 0);
    const y = oy + (n.y ?? 0);
    const t = `translate(${f(x)} ${f(y)})${n.rotation ? ` rotate(${f(-n.rotation)})` : ""}`;
    const op = (n.opacity !== undefined && n.opacity < 1 ? ` opacity="${f(n.opacity)}"` : "") + this.layerEffects(n);
    if (n.type === "GROUP") {
      const inner = (n.children ?? []).flatMap((c) => this.node(c, 0, 0));
      return [`<g transform="${t}"${op}>${inner.join("")}</g>`];
    }
    let content = "";
    switch (n.type) {
      case "FRAME":
      case "COMPONENT":
      case "INSTANCE":
        content = this.frame(n);
        break;
      case "RECTANGLE":
      case "ELLIPSE":
        content = this.shape(n, "");
        break;
      case "LINE":
        content = this.line(n);
        break;
      case "VECTOR":
        content = this.vector(n);
        break;
      case "TEXT":
        content = this.text(n);
        break;
      case "SVG":
        content = this.svg(n);
        break;
      default:
        this.warn(`node type ${n.type} not drawn`);
    }
    const out = [`<g transform="${t}"${op}>${content}</g>`];
    if (!isFrame(n)) for (const c of n.children ?? []) out.push(...this.node(c, x, y));
    return out;
  }

  /** A group's attributes for the node's blend mode, its layer blur and (TEXT) its shadows. */
  layerEffects(n) {
    let out = "";
    const blend = BLEND[n.blendMode];
    if (blend) out += ` style="mix-blend-mode:${blend}"`;
    const effects = n.effects ?? [];
    const blur = effects.find((e) => e.type === "LAYER_BLUR" && e.visible !== false && e.radius > 0);
    const shadows = n.type === "TEXT" ? effects.filter((e) => e.type === "DROP_SHADOW" && e.visible !== false) : [];
    if (!blur && shadows.length === 0) return out;
    const id = this.id("f");
    const w = n.width ?? 0;
    const h = n.height ?? 0;
    const reach = Math.max(0, ...effects.map((e) => 1.5 * e.radius + Math.abs(e.offset?.x ?? 0) + Math.abs(e.offset?.y ?? 0))) + w + h + 4;
    const prims = [];
    // Each shadow: the glyphs' alpha, offset, blurred, in its colour; the last on top.
    shadows.forEach((e, i) => {
      prims.push(
        `<feGaussianBlur in="SourceAlpha" stdDeviation="${f(e.radius / 2)}"/>` +
          `<feOffset dx="${f(e.offset?.x ?? 0)}" dy="${f(e.offset?.y ?? 0)}" result="o${i}"/>` +
          `<feFlood flood-color="${rgb(e.color ?? {})}" flood-opacity="${f(e.color?.a ?? 1)}"/>` +
          `<feComposite in2="o${i}" operator="in" result="s${i}"/>`,
      );
    });
    const merged = shadows.length
      ? `<feMerge result="m">${shadows.map((_, i) => `<feMergeNode in="s${i}"/>`).join("")}<feMergeNode in="SourceGraphic"/></feMerge>`
      : "";
    const blurred = blur ? `<feGaussianBlur${shadows.length ? ` in="m"` : ""} stdDeviation="${f(blur.radius / 2)}"/>` : "";
    this.defs.push(
      `<filter id="${id}" filterUnits="userSpaceOnUse" x="${f(-reach)}" y="${f(-reach)}" width="${f(w + 2 * reach)}" height="${f(h + 2 * reach)}">` +
        prims.join("") + merged + blurred + `</filter>`,
    );
    return `${out} filter="url(#${id})"`;
  }

  frame(n) {
    const kids = n.children ?? [];
    const placed = laidOut(n, kids);
    let inner = placed.flatMap((c) => this.node(c, 0, 0)).join("");
    // Figma's default for a new frame is to clip.
    if (n.clipsContent !== false && inner) {
      const clip = this.id("c");
      this.defs.push(`<clipPath id="${clip}"><path d="${outline(n)}"/></clipPath>`);
      inner = `<g clip-path="url(#${clip})">${inner}</g>`;
    }
    return this.shape(n, inner);
  }

  /** A shape node (frame, rectangle, ellipse): shadows, fills, inner shadows, `inner`, strokes. */
  shape(n, inner) {
    const d = outline(n);
    const parts = [];
    const effects = n.effects ?? [];
    for (const e of effects) if (e.type === "DROP_SHADOW") parts.push(this.dropShadow(n, e, d));
    for (const p of n.fills ?? []) parts.push(this.paint(n, p, `d="${d}"`));
    for (const e of effects) if (e.type === "INNER_SHADOW") parts.push(this.innerShadow(n, e, d));
    parts.push(inner);
    for (const p of n.strokes ?? []) parts.push(this.stroke(n, p));
    return parts.join("");
  }

  /** A path (`attrs`, its d) painted with one paint. */
  paint(n, p, attrs) {
    if (p.visible === false) return "";
    const w = n.width ?? 0;
    const h = n.height ?? 0;
    switch (p.type) {
      case "SOLID": {
        const a = (p.opacity ?? 1) * (p.color.a ?? 1);
        return `<path ${attrs} fill="${rgb(p.color)}"${a < 1 ? ` fill-opacity="${f(a)}"` : ""}/>`;
      }
      case "GRADIENT_LINEAR": {
        const inv = invert(p.gradientTransform ?? [[1, 0, 0], [0, 1, 0]]);
        if (!inv || w <= 0 || h <= 0) return "";
        const id = this.id("g");
        // Figma's transform maps the node's unit square to gradient space, where the colour
        // runs along x from 0 to 1: the SVG gradient is that x axis, in bounding-box units,
        // carried back into the unit square by the inverse.
        const m = `matrix(${f(inv[0][0])} ${f(inv[1][0])} ${f(inv[0][1])} ${f(inv[1][1])} ${f(inv[0][2])} ${f(inv[1][2])})`;
        const stops = (p.gradientStops ?? [])
          .map(
            (s) =>
              `<stop offset="${f(s.position)}" stop-color="${rgb(s.color)}" stop-opacity="${f(s.color.a ?? 1)}"/>`,
          )
          .join("");
        this.defs.push(
          `<linearGradient id="${id}" gradientUnits="objectBoundingBox" x1="0" y1="0" x2="1" y2="0" gradientTransform="${m}">${stops}</linearGradient>`,
        );
        const a = p.opacity ?? 1;
        return `<path ${attrs} fill="url(#${id})"${a < 1 ? ` fill-opacity="${f(a)}"` : ""}/>`;
      }
      case "IMAGE": {
        const uri = this.dataUri(p.imageRef);
        if (!uri || w <= 0 || h <= 0) return "";
        const clip = this.id("c");
        this.defs.push(`<clipPath id="${clip}"><path ${attrs}/></clipPath>`);
        const a = p.opacity ?? 1;
        const ratio = SCALE_MODE[p.scaleMode ?? "FILL"] ?? "xMidYMid slice";
        return (
          `<g clip-path="url(#${clip})"${a < 1 ? ` opacity="${f(a)}"` : ""}>` +
          `<image x="0" y="0" width="${f(w)}" height="${f(h)}" preserveAspectRatio="${ratio}" xlink:href="${uri}"/></g>`
        );
      }
      default:
        this.warn(`paint type ${p.type} not drawn`);
        return "";
    }
  }

  /** A stroke as the area between two outlines, so per-side weights and alignment are exact. */
  stroke(n, p) {
    const wt = n.strokeWeight ?? 1;
    const sides =
      isFrame(n) || n.type === "RECTANGLE"
        ? [n.strokeTopWeight ?? wt, n.strokeRightWeight ?? wt, n.strokeBottomWeight ?? wt, n.strokeLeftWeight ?? wt]
        : [wt, wt, wt, wt];
    if (sides.every((s) => s <= 0)) return "";
    const align = n.strokeAlign ?? "CENTER";
    const k = align === "INSIDE" ? [0, 1] : align === "OUTSIDE" ? [1, 0] : [0.5, 0.5];
    if ((n.dashPattern ?? []).length > 0) return this.dashed(n, p, sides, k);
    const outer = outline(
      n,
      sides.map((s) => s * k[0]),
    );
    const innerOutline = outline(
      n,
      sides.map((s) => -s * k[1]),
    );
    return this.paint(n, p, `d="${outer}${innerOutline}" fill-rule="evenodd"`);
  }

  /**
   * Dashed strokes: the line along the middle of the stroke's area, dashed from the outline's
   * start; per-side weights each their own side's line.
   */
  dashed(n, p, sides, k) {
    if (p.type !== "SOLID" || p.visible === false) return "";
    const a = (p.opacity ?? 1) * (p.color.a ?? 1);
    const cap = { ROUND: "round", SQUARE: "square" }[n.strokeCap] ?? "butt";
    const dash = n.dashPattern.map((d) => f(d)).join(" ");
    const paint = `fill="none" stroke="${rgb(p.color)}"${a < 1 ? ` stroke-opacity="${f(a)}"` : ""} stroke-dasharray="${dash}" stroke-linecap="${cap}"`;
    // Where the middle of each side's stroke lies from the outline (outwards positive).
    const mid = sides.map((s) => s * (k[0] - k[1]) / 2);
    if (sides.every((s) => s === sides[0])) {
      return `<path d="${outline(n, mid)}" ${paint} stroke-width="${f(sides[0])}"/>`;
    }
    const w = n.width ?? 0;
    const h = n.height ?? 0;
    const [t, r, b, l] = mid;
    const lines = [
      [-l, -t, w + r, -t],
      [w + r, -t, w + r, h + b],
      [w + r, h + b, -l, h + b],
      [-l, h + b, -l, -t],
    ];
    return lines
      .map(([x1, y1, x2, y2], i) =>
        sides[i] > 0 ? `<path d="M${f(x1)} ${f(y1)}L${f(x2)} ${f(y2)}" ${paint} stroke-width="${f(sides[i])}"/>` : "",
      )
      .join("");
  }

  blur(radius, box) {
    const id = this.id("f");
    const sigma = radius / 2;
    const m = sigma * 3 + 1;
    this.defs.push(
      `<filter id="${id}" filterUnits="userSpaceOnUse" x="${f(box[0] - m)}" y="${f(box[1] - m)}" width="${f(box[2] + 2 * m)}" height="${f(box[3] + 2 * m)}">` +
        `<feGaussianBlur stdDeviation="${f(sigma)}"/></filter>`,
    );
    return id;
  }

  /** CSS and Figma alike: the shape grown by the spread, offset, blurred (σ = radius / 2), and not drawn under the node. */
  dropShadow(n, e, d) {
    const s = e.spread ?? 0;
    const w = n.width ?? 0;
    const h = n.height ?? 0;
    const shadow = outline(n, [s, s, s, s]);
    const box = [e.offset.x - s, e.offset.y - s, w + 2 * s, h + 2 * s];
    const filter = e.radius > 0 ? this.blur(e.radius, box) : null;
    const big = 4 * (e.radius + Math.abs(s)) + Math.abs(e.offset.x) + Math.abs(e.offset.y) + 10;
    const knock = this.id("m");
    this.defs.push(
      `<clipPath id="${knock}"><path clip-rule="evenodd" d="M${f(-big)} ${f(-big)}H${f(w + big)}V${f(h + big)}H${f(-big)}Z${d}"/></clipPath>`,
    );
    return (
      `<g clip-path="url(#${knock})"><g${filter ? ` filter="url(#${filter})"` : ""}>` +
      `<path transform="translate(${f(e.offset.x)} ${f(e.offset.y)})" d="${shadow}" fill="${rgb(e.color)}" fill-opacity="${f(e.color.a ?? 1)}"/></g></g>`
    );
  }

  /** Inside the shape: everything but the shape shrunk by the spread and offset, blurred. */
  innerShadow(n, e, d) {
    const s = e.spread ?? 0;
    const w = n.width ?? 0;
    const h = n.height ?? 0;
    const big = 4 * (e.radius + Math.abs(s)) + Math.abs(e.offset.x) + Math.abs(e.offset.y) + 10;
    const hole = outline(n, [-s, -s, -s, -s]);
    const clip = this.id("c");
    this.defs.push(`<clipPath id="${clip}"><path d="${d}"/></clipPath>`);
    const filter = e.radius > 0 ? this.blur(e.radius, [-big, -big, w + 2 * big, h + 2 * big]) : null;
    return (
      `<g clip-path="url(#${clip})"><g${filter ? ` filter="url(#${filter})"` : ""}>` +
      `<path fill-rule="evenodd" transform="translate(${f(e.offset.x)} ${f(e.offset.y)})" ` +
      `d="M${f(-big)} ${f(-big)}H${f(w + big)}V${f(h + big)}H${f(-big)}Z${hole}" fill="${rgb(e.color)}" fill-opacity="${f(e.color.a ?? 1)}"/></g></g>`
    );
  }

  line(n) {
    const w = n.strokeWeight ?? 1;
    return (n.strokes ?? [])
      .map((p) => this.paint({ ...n, height: w }, p, `d="${roundRect(0, -w / 2, n.width ?? 0, w, [[0, 0], [0, 0], [0, 0], [0, 0]])}"`))
      .join("");
  }

  vector(n) {
    const parts = [];
    for (const vp of n.vectorPaths ?? []) {
      const rule = vp.windingRule === "EVENODD" ? "evenodd" : "nonzero";
      for (const p of n.fills ?? []) parts.push(this.paint(n, p, `d="${esc(vp.data)}" fill-rule="${rule}"`));
      for (const p of n.strokes ?? []) {
        if (p.type !== "SOLID") continue;
        const a = (p.opacity ?? 1) * (p.color.a ?? 1);
        parts.push(
          `<path d="${esc(vp.data)}" fill="none" stroke="${rgb(p.color)}" stroke-opacity="${f(a)}" stroke-width="${f(n.strokeWeight ?? 1)}"/>`,
        );
      }
    }
    return parts.join("");
  }

  /**
   * One TEXT node. Each line is `lineHeight` tall (AUTO: the font's ascender + descender +
   * line gap), its baseline the half-leading plus the ascender below the line's top.
   * WIDTH_AND_HEIGHT boxes follow the text from their top-left, so the text starts at x = 0;
   * fixed-width boxes wrap it (`this.wrapped`) and align each line within their width, the
   * first line of each paragraph `paragraphIndent` in. Each
   * styled segment is a tspan of its own font, size, fill and decoration.
   */
  text(n) {
    const main = textStyle(n, {});
    const m = metricsFor(main.family, main.style, this.faces);
    const content = (m.ascender + m.descender) * main.size;
    const lh = n.lineHeight;
    let line = (m.ascender + m.descender + m.lineGap) * main.size;
    if (lh?.unit === "PIXELS" && lh.value !== undefined) line = lh.value;
    else if (lh?.unit === "PERCENT" && lh.value !== undefined) line = (lh.value / 100) * main.size;
    const baseline0 = (line - content) / 2 + m.ascender * main.size;
    const chars = n.characters ?? "";
    if (!(n.fills ?? []).some((p) => p.type === "SOLID" && p.visible !== false)) this.warn("TEXT without a solid fill drawn black");
    const fixed = n.textAutoResize !== "WIDTH_AND_HEIGHT";
    const align = fixed ? n.textAlignHorizontal ?? "LEFT" : "LEFT";
    const anchor = align === "CENTER" ? "middle" : align === "RIGHT" ? "end" : "start";
    const ax = align === "CENTER" ? (n.width ?? 0) / 2 : align === "RIGHT" ? n.width ?? 0 : 0;
    return lineRanges(chars, fixed ? this.wrapped.get(origin(n)) : undefined)
      .map(([start, end], i) => {
        // Spaces at a line's end hang past it, as Figma and CSS leave them.
        while (end > start && chars[end - 1] === " ") end--;
        if (end <= start) return "";
        const runs = styledSpans(n, chars, start, end);
        // resvg-js 2.6.2 drops a whole <text> when a tspan holding a ligature (fi, ff, fl) is
        // followed by a tspan of another family; a zero-width non-joiner between the pair
        // keeps the text (the letters' advances are the ligature's in the fonts measured).
        const mixed = new Set(runs.map((r) => r.style.family)).size > 1;
        const spans = runs
          .map((sp) => `<tspan ${attrsOf(sp.style)}>${esc(mixed ? sp.text.replace(/f(?=[fil])/g, "f\u200c") : sp.text)}</tspan>`)
          .join("");
        const anchorAttr = anchor !== "start" ? ` text-anchor="${anchor}"` : "";
        // The first line of each paragraph starts `paragraphIndent` in (from the left).
        const first = start === 0 || chars[start - 1] === "\n";
        const x = first && anchor === "start" ? ax + Math.max(n.paragraphIndent ?? 0, 0) : ax;
        return `<text xml:space="preserve" x="${f(x)}" y="${f(baseline0 + i * line)}"${anchorAttr}>${spans}</text>`;
      })
      .join("");
  }

  /**
   * `figma.createNodeFromSvg` makes a frame at the SVG's own size (its width and height, else
   * its viewBox), which the plugin scales by the smaller of the two ratios to the node's size,
   * from the node's top-left.
   */
  svg(n) {
    const img = this.images.get(n.imageRef);
    if (!img) {
      this.warn(`SVG ${n.imageRef} missing`);
      return "";
    }
    const text = img.bytes.toString("utf8");
    const root = /<svg\b[^>]*>/i.exec(text)?.[0] ?? "";
    const attr = (name) => new RegExp(`\\s${name}\\s*=\\s*["']([^"']*)["']`, "i").exec(root)?.[1];
    const num = (v) => (v !== undefined && /^\s*[\d.]+\s*(px)?\s*$/.test(v) ? parseFloat(v) : undefined);
    const vb = (attr("viewBox") ?? "").split(/[\s,]+/).map(Number);
    let sw = num(attr("width")) ?? (vb.length === 4 ? vb[2] : undefined);
    let sh = num(attr("height")) ?? (vb.length === 4 ? vb[3] : undefined);
    if (!(sw > 0) || !(sh > 0)) {
      sw = n.width ?? 100;
      sh = n.height ?? 100;
    }
    const k = Math.min((n.width ?? sw) / sw, (n.height ?? sh) / sh);
    const uri = this.dataUri(n.imageRef);
    return `<image x="0" y="0" width="${f(sw * k)}" height="${f(sh * k)}" preserveAspectRatio="none" xlink:href="${uri}"/>`;
  }
}

/**
 * Every node with its box in page pixels, placed as the writer draws it (auto layout applied,
 * a group's and a leaf's children as build.ts places them), a turned node as its bounding box.
 */
export function place(doc) {
  const out = [];
  // m: the parent's space to the page, an affine [a, b, c, d, e, f] as SVG's matrix().
  const mul = ([a, b, c, d, e, f], [g, h, i, j, k, l]) => [
    a * g + c * h,
    b * g + d * h,
    a * i + c * j,
    b * i + d * j,
    a * k + c * l + e,
    b * k + d * l + f,
  ];
  const walk = (n, m) => {
    if (n.visible === false) return;
    const at = mul(m, [1, 0, 0, 1, n.x ?? 0, n.y ?? 0]);
    // Figma turns a node about its top-left, counter-clockwise.
    const rad = (-(n.rotation ?? 0) * Math.PI) / 180;
    const own = n.rotation ? mul(at, [Math.cos(rad), Math.sin(rad), -Math.sin(rad), Math.cos(rad), 0, 0]) : at;
    const w = n.width ?? 0;
    const h = n.height ?? 0;
    const corners = [
      [0, 0],
      [w, 0],
      [0, h],
      [w, h],
    ].map(([px, py]) => [own[0] * px + own[2] * py + own[4], own[1] * px + own[3] * py + own[5]]);
    const x = Math.min(...corners.map((c) => c[0]));
    const y = Math.min(...corners.map((c) => c[1]));
    out.push({ node: n, x, y, w: Math.max(...corners.map((c) => c[0])) - x, h: Math.max(...corners.map((c) => c[1])) - y });
    const kids = n.children ?? [];
    if (isFrame(n)) {
      const placed = laidOut(n, kids);
      for (const c of placed) walk(c, own);
    } else {
      // A leaf's children follow it in its parent, placed from its top-left, unturned.
      for (const c of kids) walk(c, at);
    }
  };
  walk(doc, [1, 0, 0, 1, 0, 0]);
  return out;
}

/** The style a character of TEXT node `n` is drawn with: the node's members, overridden by its segment's. */
function textStyle(n, seg) {
  const pick = (k) => (seg[k] !== undefined ? seg[k] : n[k]);
  const size = pick("fontSize") ?? 12;
  const fill = (pick("fills") ?? []).find((p) => p.type === "SOLID" && p.visible !== false);
  const ls = pick("letterSpacing");
  return {
    family: pick("fontName")?.family ?? "Inter",
    style: pick("fontName")?.style ?? "Regular",
    size,
    color: fill ? rgb(fill.color) : "rgb(0,0,0)",
    alpha: fill ? (fill.opacity ?? 1) * (fill.color.a ?? 1) : 1,
    spacing: ls?.value === undefined ? 0 : ls.unit === "PERCENT" ? (ls.value / 100) * size : ls.value,
    decoration: pick("textDecoration"),
    textCase: pick("textCase"),
  };
}

function attrsOf(st) {
  const { weight, italic } = parseStyle(st.style);
  const deco = st.decoration === "UNDERLINE" ? "underline" : st.decoration === "STRIKETHROUGH" ? "line-through" : "";
  return (
    `font-family="${esc(st.family)}" font-size="${f(st.size)}" font-weight="${weight}"` +
    (italic ? ` font-style="italic"` : "") +
    (st.spacing ? ` letter-spacing="${f(st.spacing)}"` : "") +
    (deco ? ` text-decoration="${deco}"` : "") +
    ` fill="${st.color}"${st.alpha < 1 ? ` fill-opacity="${f(st.alpha)}"` : ""}`
  );
}

/** Characters in a case, as Figma draws `textCase` (TITLE: each word's first letter). */
function inCase(text, textCase, wordStart) {
  switch (textCase) {
    case "UPPER":
      return text.toUpperCase();
    case "LOWER":
      return text.toLowerCase();
    case "TITLE":
      return text.replace(/(^|\s)(\S)/g, (m, sp, c, at) => (at === 0 && !sp && !wordStart ? m : sp + c.toUpperCase()));
    default:
      return text;
  }
}

/** The characters start..end of TEXT node `n` as runs of one style each (its segments cut to the range). */
function styledSpans(n, chars, start, end) {
  const segs = n.segments ?? [];
  const out = [];
  for (let i = start; i < end; ) {
    const seg = segs.find((g) => g.start <= i && i < g.end) ?? {};
    const stop = Math.min(end, seg.end ?? end);
    const next = segs.find((g) => g.start > i && g.start < stop);
    const to = next ? next.start : stop;
    const style = textStyle(n, seg);
    const wordStart = i === 0 || /\s/.test(chars[i - 1]);
    out.push({ style, text: inCase(chars.slice(i, to), style.textCase, wordStart) });
    i = to;
  }
  return out;
}

/**
 * Each line of `chars` as [start, end) indices: at every "\n", and within, where `lines` (the
 * wrapped lines' texts, in order, without their "\n") say each begins.
 */
function lineRanges(chars, lines) {
  if (!lines) {
    const out = [];
    let at = 0;
    for (const piece of chars.split("\n")) {
      out.push([at, at + piece.length]);
      at += piece.length + 1;
    }
    return out;
  }
  const out = [];
  let at = 0;
  for (const text of lines) {
    if (chars[at] === "\n") at++;
    out.push([at, Math.min(chars.length, at + text.length)]);
    at += text.length;
  }
  return out;
}
