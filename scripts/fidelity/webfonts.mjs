// The web fonts a capture carries (docs/FIDELITY.md, "Web fonts"): the `@font-face` rules of
// its <style> elements whose sources are data: URLs, decoded to plain sfnt (TrueType/OpenType)
// so that resvg (fontdb: TTF, OTF, TTC) can draw with them. Figma ships the Google Fonts
// families and a designer installs the rest, so the benchmark draws a document with the
// system's fonts plus these: the fonts as Figma would have them. Nothing is fetched: a rule
// whose only sources are local() or remote URLs gives no face.
//
// A face's family is the @font-face family, as Chromium matches it; when the font's own name
// table names another family (fontdb matches by the name table), the sfnt is given a name
// table that names the @font-face family, so resvg finds it under the name the document uses.

import { inflateSync } from "node:zlib";
import { createRequire } from "node:module";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const require = createRequire(import.meta.url);
// Google's WOFF2 decoder (the reference implementation) built to WebAssembly.
const woff2Decompress = require("wawoff2/decompress");

/** The text of each <style> element of an HTML document, in order. */
export function styleSheets(html) {
  return [...html.matchAll(/<style\b[^>]*>([\s\S]*?)<\/style\s*>/gi)].map((m) => m[1]);
}

/** The index just past the quoted string starting at `i` (css[i] is the quote). */
function skipString(css, i) {
  const q = css[i];
  for (i++; i < css.length; i++) {
    if (css[i] === "\\") i++;
    else if (css[i] === q) return i + 1;
  }
  return css.length;
}

/**
 * `css` split at each top-level `sep` (outside strings, parentheses and brackets), each piece
 * trimmed, empty pieces dropped.
 */
function splitTop(css, sep) {
  const out = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < css.length; ) {
    const c = css[i];
    if (c === '"' || c === "'") {
      i = skipString(css, i);
      continue;
    }
    if (c === "(" || c === "[") depth++;
    else if ((c === ")" || c === "]") && depth > 0) depth--;
    else if (c === sep && depth === 0) {
      out.push(css.slice(start, i));
      start = i + 1;
    }
    i++;
  }
  out.push(css.slice(start));
  return out.map((s) => s.trim()).filter(Boolean);
}

/** A CSS string's value (quotes and escapes removed), or the text itself when not quoted. */
function unquote(s) {
  s = s.trim();
  const q = s[0];
  if ((q === '"' || q === "'") && s.endsWith(q) && s.length >= 2) {
    return s.slice(1, -1).replace(/\\([0-9a-fA-F]{1,6}\s?|[\s\S])/g, (_, e) =>
      /^[0-9a-fA-F]/.test(e) ? String.fromCodePoint(parseInt(e, 16)) : e === "\n" ? "" : e,
    );
  }
  return s;
}

/** The family of a font-family descriptor: a string, or identifiers joined by one space. */
function familyName(v) {
  v = v.trim();
  if (v[0] === '"' || v[0] === "'") return unquote(v);
  return v.split(/\s+/).join(" ");
}

const WEIGHT_KEYWORDS = { normal: 400, bold: 700 };

/** A font-weight descriptor as [min, max]: "700" → [700, 700], "100 900" → [100, 900]. */
export function weightRange(v = "normal") {
  const ws = v
    .trim()
    .toLowerCase()
    .split(/\s+/)
    .map((w) => WEIGHT_KEYWORDS[w] ?? Number(w))
    .filter((w) => Number.isFinite(w));
  if (ws.length === 0) return [400, 400];
  const lo = Math.min(...ws);
  const hi = Math.max(...ws);
  return [lo, hi];
}

/** One src entry: { url } or { local }, with its format() when given. */
function srcEntry(s) {
  const fn = /^(url|local)\(\s*/i.exec(s);
  if (!fn) return null;
  let i = fn[0].length;
  let value;
  if (s[i] === '"' || s[i] === "'") {
    const end = skipString(s, i);
    value = unquote(s.slice(i, end));
    i = s.indexOf(")", end);
  } else {
    const end = s.indexOf(")", i);
    value = s.slice(i, end < 0 ? s.length : end).trim();
    i = end;
  }
  const rest = i < 0 ? "" : s.slice(i + 1);
  const format = /format\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s]*))\s*\)/i.exec(rest);
  const entry = fn[1].toLowerCase() === "url" ? { url: value } : { local: value };
  if (format) entry.format = (format[1] ?? format[2] ?? format[3]).toLowerCase();
  return entry;
}

/**
 * The @font-face rules of a stylesheet (also those inside @media or @supports), each as
 * { family, style: "normal" | "italic" | "oblique", weight: [min, max], src: [{ url | local,
 * format }], unicodeRange, css } with `css` the rule's own text.
 */
export function parseFontFaces(css) {
  css = css.replace(/\/\*[\s\S]*?\*\//g, "");
  const faces = [];
  const at = /@font-face\s*\{/gi;
  for (let m = at.exec(css); m; m = at.exec(css)) {
    let i = m.index + m[0].length;
    const start = i;
    while (i < css.length && css[i] !== "}") {
      if (css[i] === '"' || css[i] === "'") i = skipString(css, i);
      else i++;
    }
    const body = css.slice(start, i);
    at.lastIndex = i + 1;
    const decl = {};
    for (const d of splitTop(body, ";")) {
      const colon = d.indexOf(":");
      if (colon < 0) continue;
      decl[d.slice(0, colon).trim().toLowerCase()] = d.slice(colon + 1).replace(/!important\s*$/i, "").trim();
    }
    if (!decl["font-family"] || !decl.src) continue;
    const style = (decl["font-style"] ?? "normal").trim().toLowerCase().split(/\s+/)[0];
    faces.push({
      family: familyName(decl["font-family"]),
      style: style === "italic" || style === "oblique" ? style : "normal",
      weight: weightRange(decl["font-weight"]),
      src: splitTop(decl.src, ",").map(srcEntry).filter(Boolean),
      unicodeRange: decl["unicode-range"],
      css: css.slice(m.index, i + 1),
    });
  }
  return faces;
}

/** The bytes of a data: URL (base64 or percent-encoded) and its media type, else null. */
export function dataUrl(url) {
  const m = /^\s*data:([^,]*),([\s\S]*)$/i.exec(url);
  if (!m) return null;
  const params = m[1].split(";").map((p) => p.trim());
  const mime = params[0].toLowerCase();
  if (params.slice(1).some((p) => p.toLowerCase() === "base64")) {
    return { mime, bytes: Buffer.from(m[2].replace(/%([0-9a-fA-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16))), "base64") };
  }
  const bytes = [];
  const s = m[2];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "%" && /^[0-9a-fA-F]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(s[i], "utf8"));
    }
  }
  return { mime, bytes: Buffer.from(bytes) };
}

/** An sfnt's table directory: tag → { offset, length }. */
function tables(b) {
  const out = {};
  const n = b.readUInt16BE(4);
  for (let i = 0; i < n; i++) {
    const rec = 12 + i * 16;
    out[b.toString("latin1", rec, rec + 4)] = { offset: b.readUInt32BE(rec + 8), length: b.readUInt32BE(rec + 12) };
  }
  return out;
}

function pad4(n) {
  return (n + 3) & ~3;
}

function checksum(b) {
  let sum = 0;
  const padded = b.length % 4 ? Buffer.concat([b, Buffer.alloc(4 - (b.length % 4))]) : b;
  for (let i = 0; i < padded.length; i += 4) sum = (sum + padded.readUInt32BE(i)) >>> 0;
  return sum;
}

/** An sfnt built from its flavor and tables ([{ tag, data }]), tables sorted by tag, 4-aligned. */
function buildSfnt(flavor, list) {
  list = [...list].sort((a, b) => (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0));
  const n = list.length;
  let pow = 1;
  let log = 0;
  while (pow * 2 <= n) {
    pow *= 2;
    log++;
  }
  const head = Buffer.alloc(12 + 16 * n);
  head.writeUInt32BE(flavor, 0);
  head.writeUInt16BE(n, 4);
  head.writeUInt16BE(pow * 16, 6);
  head.writeUInt16BE(log, 8);
  head.writeUInt16BE(n * 16 - pow * 16, 10);
  let offset = head.length;
  const parts = [head];
  list.forEach((t, i) => {
    const rec = 12 + i * 16;
    head.write(t.tag, rec, 4, "latin1");
    head.writeUInt32BE(checksum(t.data), rec + 4);
    head.writeUInt32BE(offset, rec + 8);
    head.writeUInt32BE(t.data.length, rec + 12);
    parts.push(t.data, Buffer.alloc(pad4(t.data.length) - t.data.length));
    offset += pad4(t.data.length);
  });
  return Buffer.concat(parts);
}

/** WOFF 1.0 → sfnt: each table zlib-inflated where it was compressed. */
export function woffToSfnt(b) {
  const flavor = b.readUInt32BE(4);
  const n = b.readUInt16BE(12);
  const list = [];
  for (let i = 0; i < n; i++) {
    const rec = 44 + i * 20;
    const tag = b.toString("latin1", rec, rec + 4);
    const offset = b.readUInt32BE(rec + 4);
    const compLength = b.readUInt32BE(rec + 8);
    const origLength = b.readUInt32BE(rec + 12);
    const raw = b.subarray(offset, offset + compLength);
    const data = compLength < origLength ? inflateSync(raw) : Buffer.from(raw);
    if (data.length !== origLength) throw new Error(`WOFF table ${tag}: ${data.length} bytes, ${origLength} expected`);
    list.push({ tag, data });
  }
  return buildSfnt(flavor, list);
}

/** A font file's bytes as sfnt (TTF/OTF/TTC): WOFF2 and WOFF decoded, sfnt kept; else null. */
export async function toSfnt(bytes) {
  const b = Buffer.from(bytes);
  const magic = b.toString("latin1", 0, 4);
  if (magic === "wOF2") return Buffer.from(await woff2Decompress(b));
  if (magic === "wOFF") return woffToSfnt(b);
  if (magic === "\u0000\u0001\u0000\u0000" || magic === "OTTO" || magic === "true" || magic === "ttcf") return b;
  return null;
}

/** The name table's English names by id (1 family, 2 subfamily, 4 full, 16/17 typographic). */
export function fontNames(sfnt) {
  const t = tables(sfnt).name;
  const out = {};
  if (!t) return out;
  const base = t.offset;
  const count = sfnt.readUInt16BE(base + 2);
  const strings = base + sfnt.readUInt16BE(base + 4);
  const rank = {};
  for (let i = 0; i < count; i++) {
    const rec = base + 6 + i * 12;
    const platform = sfnt.readUInt16BE(rec);
    const encoding = sfnt.readUInt16BE(rec + 2);
    const language = sfnt.readUInt16BE(rec + 4);
    const id = sfnt.readUInt16BE(rec + 6);
    const raw = sfnt.subarray(strings + sfnt.readUInt16BE(rec + 10), strings + sfnt.readUInt16BE(rec + 10) + sfnt.readUInt16BE(rec + 8));
    let text;
    let r;
    if (platform === 3 && (encoding === 1 || encoding === 10) && language === 0x409) [text, r] = [utf16be(raw), 3];
    else if (platform === 0) [text, r] = [utf16be(raw), 2];
    else if (platform === 1 && encoding === 0 && language === 0) [text, r] = [raw.toString("latin1"), 1];
    else continue;
    if ((rank[id] ?? 0) < r) {
      out[id] = text;
      rank[id] = r;
    }
  }
  return out;
}

function utf16be(b) {
  const s = Buffer.from(b);
  s.swap16();
  return s.toString("utf16le");
}

/** The families fontdb files a face under: the typographic family (16), else the family (1). */
export function fontFamilies(sfnt) {
  const names = fontNames(sfnt);
  return [...new Set([names[16], names[1]].filter(Boolean))];
}

/** A name table of Windows/Unicode English records for `names` (id → text). */
function nameTable(names) {
  const ids = Object.keys(names).map(Number).sort((a, b) => a - b);
  const strings = ids.map((id) => {
    const s = Buffer.from(names[id], "utf16le");
    return s.swap16();
  });
  const head = Buffer.alloc(6 + 12 * ids.length);
  head.writeUInt16BE(0, 0);
  head.writeUInt16BE(ids.length, 2);
  head.writeUInt16BE(head.length, 4);
  let off = 0;
  ids.forEach((id, i) => {
    const rec = 6 + i * 12;
    head.writeUInt16BE(3, rec);
    head.writeUInt16BE(1, rec + 2);
    head.writeUInt16BE(0x409, rec + 4);
    head.writeUInt16BE(id, rec + 6);
    head.writeUInt16BE(strings[i].length, rec + 8);
    head.writeUInt16BE(off, rec + 10);
    off += strings[i].length;
  });
  return Buffer.concat([head, ...strings]);
}

/**
 * The sfnt with a name table naming `family` (ids 1 and 16) and `subfamily` (2 and 17), the
 * other English names kept: how a face declared under another name than its own is found
 * under the declared one. A collection is returned as it is.
 */
export function renameFont(sfnt, family, subfamily) {
  if (sfnt.toString("latin1", 0, 4) === "ttcf") return sfnt;
  const names = { ...fontNames(sfnt), 1: family, 2: subfamily, 4: `${family} ${subfamily}`, 16: family, 17: subfamily };
  names[6] = `${family}-${subfamily}`.replace(/[^\x21-\x7e]|[[\](){}<>/%]/g, "");
  const list = Object.entries(tables(sfnt)).map(([tag, { offset, length }]) => ({
    tag,
    data: tag === "name" ? nameTable(names) : Buffer.from(sfnt.subarray(offset, offset + length)),
  }));
  if (!list.some((t) => t.tag === "name")) list.push({ tag: "name", data: nameTable(names) });
  return buildSfnt(sfnt.readUInt32BE(0), list);
}

const WEIGHT_NAMES = { 100: "Thin", 200: "ExtraLight", 300: "Light", 400: "Regular", 500: "Medium", 600: "SemiBold", 700: "Bold", 800: "ExtraBold", 900: "Black" };

/** The subfamily for a CSS weight and style ("Bold Italic", "Regular"). */
function subfamilyOf(weight, style) {
  const w = WEIGHT_NAMES[Math.min(900, Math.max(100, Math.round(weight / 100) * 100))];
  if (style === "normal") return w;
  return w === "Regular" ? "Italic" : `${w} Italic`;
}

/**
 * The web fonts of a capture: { faces, css }. Each face is { family, style, weight: [min, max],
 * sfnt, renamed } for each @font-face rule with a data: URL source that decodes (the first such
 * source of the rule, as a browser takes the first it can load); `css` the @font-face rules
 * those faces come from, for a page that should lay text out in them (editability.mjs).
 */
export async function webFonts(html) {
  const faces = [];
  const rules = [];
  for (const sheet of styleSheets(html)) {
    for (const rule of parseFontFaces(sheet)) {
      for (const src of rule.src) {
        if (!src.url) continue;
        const data = dataUrl(src.url);
        if (!data) continue;
        let sfnt;
        try {
          sfnt = await toSfnt(data.bytes);
        } catch {
          sfnt = null;
        }
        if (!sfnt) continue;
        const families = fontFamilies(sfnt).map((f) => f.toLowerCase());
        const renamed = !families.includes(rule.family.toLowerCase());
        if (renamed) sfnt = renameFont(sfnt, rule.family, subfamilyOf(rule.weight[0], rule.style));
        faces.push({ family: rule.family, style: rule.style, weight: rule.weight, sfnt, renamed });
        rules.push(rule.css);
        break;
      }
    }
  }
  return { faces, css: rules.join("\n") };
}

/**
 * The face of `faces` that CSS font matching picks for a family, weight and italic (CSS Fonts 4
 * §5.2: the style first, then the weight: for 400 the nearest of 400–500 then below then above,
 * for 500 likewise, below 400 lighter first, above 500 heavier first); null when the family is
 * not among them.
 */
export function pickFace(faces, family, weight, italic) {
  const same = faces.filter((f) => f.family.toLowerCase() === String(family).toLowerCase());
  if (same.length === 0) return null;
  const styled = italic
    ? [same.filter((f) => f.style === "italic"), same.filter((f) => f.style === "oblique")]
    : [same.filter((f) => f.style === "normal"), same.filter((f) => f.style === "oblique")];
  const pool = styled.find((s) => s.length) ?? same;
  const dist = (f) => {
    const [lo, hi] = f.weight;
    if (weight >= lo && weight <= hi) return 0;
    const near = weight < lo ? lo : hi;
    const d = Math.abs(near - weight);
    const desired = weight === 400 || weight === 500 ? (near > weight && near <= 500 ? 0 : near < weight ? 1000 : 2000) : weight < 400 ? (near < weight ? 0 : 1000) : near > weight ? 0 : 1000;
    return desired + d;
  };
  return [...pool].sort((a, b) => dist(a) - dist(b))[0];
}

/**
 * resvg's font options for a capture: the system's fonts, as Figma would have them installed
 * (unknown families fall back to them), plus the capture's web fonts. resvg-js 2.6.2 loads
 * extra fonts from files only, so each face is written once under the system's temporary
 * folder, named by its content.
 */
export function resvgFonts(faces = []) {
  const dir = join(tmpdir(), "code2des-webfonts");
  const fontFiles = faces.map((f) => {
    const ext = f.sfnt.toString("latin1", 0, 4) === "OTTO" ? "otf" : f.sfnt.toString("latin1", 0, 4) === "ttcf" ? "ttc" : "ttf";
    const file = join(dir, `${createHash("sha256").update(f.sfnt).digest("hex").slice(0, 32)}.${ext}`);
    if (!existsSync(file)) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(file, f.sfnt);
    }
    return file;
  });
  return { loadSystemFonts: true, defaultFontFamily: "DejaVu Sans", fontFiles };
}
