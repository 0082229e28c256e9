// Vertical font metrics for the SVG writer: where a TEXT node's baseline lies in its line box
// depends on the font's ascender and descender (Figma splits the leading evenly above and
// below them, as CSS does). The font is the capture's own web font when the family is one it
// declares (webfonts.mjs), else the file fontconfig picks for the family and style, which is
// also what resvg (fontdb) and Chromium pick on this machine; its metrics are read from the
// OpenType tables directly.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { pickFace } from "./webfonts.mjs";

/** Figma style name → CSS weight and italic ("Semi Bold Italic" → 600, true). */
export function parseStyle(style = "Regular") {
  const s = style.toLowerCase().replace(/[\s_-]+/g, "");
  const italic = s.includes("italic") || s.includes("oblique");
  const base = s.replace("italic", "").replace("oblique", "");
  const weights = [
    ["extralight", 200], ["ultralight", 200], ["semibold", 600], ["demibold", 600],
    ["extrabold", 800], ["ultrabold", 800], ["thin", 100], ["hairline", 100], ["light", 300],
    ["medium", 500], ["bold", 700], ["black", 900], ["heavy", 900], ["book", 400], ["regular", 400],
  ];
  const hit = weights.find(([name]) => base.includes(name));
  return { weight: hit ? hit[1] : 400, italic };
}

// fontconfig's weight scale for the CSS weights (fontconfig.h, FC_WEIGHT_*).
const FC_WEIGHT = { 100: 0, 200: 40, 300: 50, 400: 80, 500: 100, 600: 180, 700: 200, 800: 205, 900: 210 };

function u16(b, o) {
  return b.readUInt16BE(o);
}
function i16(b, o) {
  return b.readInt16BE(o);
}

/** head.unitsPerEm, hhea and OS/2 metrics of a TrueType/OpenType file (the first face of a collection). */
export function readMetrics(file) {
  return { ...fontMetrics(readFileSync(file)), file };
}

/** head.unitsPerEm, hhea and OS/2 metrics of TrueType/OpenType bytes (the first face of a collection). */
export function fontMetrics(b) {
  let base = 0;
  if (b.toString("latin1", 0, 4) === "ttcf") base = b.readUInt32BE(12);
  const count = u16(b, base + 4);
  const tables = {};
  for (let i = 0; i < count; i++) {
    const rec = base + 12 + i * 16;
    tables[b.toString("latin1", rec, rec + 4)] = b.readUInt32BE(rec + 8);
  }
  const upm = u16(b, tables.head + 18);
  const hhea = tables.hhea;
  let ascender = i16(b, hhea + 4);
  let descender = -i16(b, hhea + 6);
  let lineGap = i16(b, hhea + 8);
  const os2 = tables["OS/2"];
  if (os2 !== undefined) {
    const fsSelection = u16(b, os2 + 62);
    // USE_TYPO_METRICS (bit 7): Skia and Figma then take the typographic values.
    if (fsSelection & 0x80 || (ascender === 0 && descender === 0)) {
      ascender = i16(b, os2 + 68);
      descender = -i16(b, os2 + 70);
      lineGap = i16(b, os2 + 72);
    }
  }
  return { ascender: ascender / upm, descender: descender / upm, lineGap: lineGap / upm };
}

const cache = new Map();
const webCache = new WeakMap();

/**
 * Metrics (in ems) of the font for a Figma font name: the face of `faces` (a capture's web
 * fonts, webfonts.mjs) that CSS matching picks when the family is among them, else the font
 * fontconfig resolves.
 */
export function metricsFor(family, style, faces = []) {
  const { weight, italic } = parseStyle(style);
  const face = pickFace(faces, family, weight, italic);
  if (face) {
    let wm = webCache.get(face);
    if (!wm) {
      wm = { ...fontMetrics(face.sfnt), file: `@font-face ${face.family}` };
      webCache.set(face, wm);
    }
    return wm;
  }
  const key = `${family}\u0000${style}`;
  let m = cache.get(key);
  if (m) return m;
  const pattern = `${family}:weight=${FC_WEIGHT[Math.round(weight / 100) * 100] ?? 80}:slant=${italic ? 100 : 0}`;
  let file;
  try {
    file = execFileSync("fc-match", ["-f", "%{file}", pattern], { encoding: "utf8" }).trim();
  } catch {
    file = "";
  }
  try {
    m = readMetrics(file);
  } catch {
    // Unreadable or missing: a typical sans (DejaVu Sans's proportions).
    m = { file, ascender: 0.928, descender: 0.236, lineGap: 0 };
  }
  cache.set(key, m);
  return m;
}
