// The capture's web fonts (webfonts.mjs): @font-face rules read from <style>, data: URL sources
// decoded from WOFF (built here from DejaVu Sans) and WOFF2 (Source Code Pro, as
// samples/real/rustdoc-cell.html carries it) to sfnt that names the declared family, CSS's face
// matching, and resvg drawing with a face found under its @font-face name.
//   node --test scripts/fidelity/     (needs DejaVu fonts)

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { deflateSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { Resvg } from "@resvg/resvg-js";
import { parseFontFaces, dataUrl, toSfnt, fontFamilies, fontNames, webFonts, pickFace, resvgFonts, styleSheets } from "./webfonts.mjs";
import { fontMetrics, metricsFor } from "./fonts.mjs";

const DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const RUSTDOC = fileURLToPath(new URL("../../samples/real/rustdoc-cell.html", import.meta.url));

/** A WOFF 1.0 file of an sfnt, each table deflated (as a WOFF encoder writes it). */
function woff(sfnt) {
  const n = sfnt.readUInt16BE(4);
  const entries = [];
  for (let i = 0; i < n; i++) {
    const rec = 12 + i * 16;
    const offset = sfnt.readUInt32BE(rec + 8);
    const length = sfnt.readUInt32BE(rec + 12);
    const orig = sfnt.subarray(offset, offset + length);
    const z = deflateSync(orig);
    entries.push({ tag: sfnt.subarray(rec, rec + 4), checksum: sfnt.readUInt32BE(rec + 4), orig, data: z.length < orig.length ? z : orig });
  }
  const header = Buffer.alloc(44 + 20 * n);
  let offset = header.length;
  const parts = [header];
  entries.forEach((e, i) => {
    const rec = 44 + i * 20;
    e.tag.copy(header, rec);
    header.writeUInt32BE(offset, rec + 4);
    header.writeUInt32BE(e.data.length, rec + 8);
    header.writeUInt32BE(e.orig.length, rec + 12);
    header.writeUInt32BE(e.checksum, rec + 16);
    const padded = (e.data.length + 3) & ~3;
    parts.push(e.data, Buffer.alloc(padded - e.data.length));
    offset += padded;
  });
  header.write("wOFF", 0, "latin1");
  header.writeUInt32BE(sfnt.readUInt32BE(0), 4);
  header.writeUInt32BE(offset, 8);
  header.writeUInt16BE(n, 12);
  header.writeUInt32BE(sfnt.length, 16);
  header.writeUInt16BE(1, 20);
  return Buffer.concat(parts);
}

const dejavu = readFileSync(DEJAVU);
const woffUrl = `data:font/woff;base64,${woff(dejavu).toString("base64")}`;

const SHEET = `
/* a comment with @font-face { font-family: Nope } inside */
@font-face {
  font-family: "Brand Sans";
  font-style: italic;
  font-weight: 300 700;
  src: local("Brand Sans"), url(https://fonts.invalid/brand.woff2) format("woff2"),
       url('${woffUrl}') format('woff');
}
@media screen { @font-face { font-family: Brand Serif; src: url(${woffUrl}); font-weight: bold } }
@font-face { font-family: 'Remote Only'; src: url("https://fonts.invalid/x.woff2") format("woff2") }
`;

test("@font-face rules: family, style, weight range, every src entry with its format", () => {
  const faces = parseFontFaces(SHEET);
  assert.deepEqual(
    faces.map((f) => [f.family, f.style, f.weight]),
    [
      ["Brand Sans", "italic", [300, 700]],
      ["Brand Serif", "normal", [700, 700]],
      ["Remote Only", "normal", [400, 400]],
    ],
  );
  assert.deepEqual(
    faces[0].src.map((s) => [s.local ?? s.url.slice(0, 24), s.format]),
    [
      ["Brand Sans", undefined],
      ["https://fonts.invalid/br", "woff2"],
      ["data:font/woff;base64,d0", "woff"],
    ],
  );
  assert.equal(faces[1].src[0].url, woffUrl);
});

test("data: URLs, base64 and percent-encoded, give their bytes", () => {
  assert.deepEqual([...dataUrl("data:font/ttf;base64,AAEAAA==").bytes], [0, 1, 0, 0]);
  assert.deepEqual([...dataUrl("data:font/ttf,%00%01%00%00OTTO").bytes], [0, 1, 0, 0, 79, 84, 84, 79]);
  assert.equal(dataUrl("data:application/font-woff;charset=utf-8;base64,AAEAAA==").mime, "application/font-woff");
  assert.equal(dataUrl("https://example.invalid/x.ttf"), null);
});

test("a WOFF decodes to the very sfnt it was made of", async () => {
  const sfnt = await toSfnt(Buffer.from(woffUrl.split(",")[1], "base64"));
  assert.equal(sfnt.readUInt32BE(0), 0x00010000);
  assert.deepEqual(fontFamilies(sfnt), ["DejaVu Sans"]);
  assert.deepEqual(fontMetrics(sfnt), fontMetrics(dejavu));
});

test("a capture's faces: data: sources decoded to sfnt naming the @font-face family; no network source taken", async () => {
  const html = `<html><head><style>${SHEET}</style></head><body>Hi</body></html>`;
  assert.equal(styleSheets(html).length, 1);
  const { faces, css } = await webFonts(html);
  assert.deepEqual(
    faces.map((f) => [f.family, f.style, f.weight, f.renamed]),
    [
      ["Brand Sans", "italic", [300, 700], true],
      ["Brand Serif", "normal", [700, 700], true],
    ],
  );
  for (const f of faces) {
    assert.ok(["\u0000\u0001\u0000\u0000", "OTTO"].includes(f.sfnt.toString("latin1", 0, 4)), "an sfnt");
    // DejaVu Sans's own name table says "DejaVu Sans": the face is renamed to be found as declared.
    assert.equal(fontFamilies(f.sfnt)[0], f.family);
    assert.equal(fontNames(f.sfnt)[1], f.family);
    // Every other table is the font's own.
    assert.deepEqual(fontMetrics(f.sfnt), fontMetrics(dejavu));
  }
  assert.match(css, /Brand Sans/);
  assert.doesNotMatch(css, /Remote Only/);
});

test("rustdoc's WOFF2 faces decode to sfnt under their own names", async () => {
  const { faces } = await webFonts(readFileSync(RUSTDOC, "utf8"));
  assert.deepEqual(
    faces.map((f) => `${f.family} ${f.weight[0]} ${f.style}`),
    ["Fira Sans 400 normal", "Fira Sans 500 normal", "Source Serif 4 400 normal", "Source Serif 4 400 italic", "Source Serif 4 700 normal", "Source Code Pro 400 normal", "Source Code Pro 600 normal"],
  );
  for (const f of faces) {
    assert.equal(f.renamed, false, `${f.family} ${f.weight}`);
    assert.equal(fontFamilies(f.sfnt)[0], f.family);
  }
  // The metrics come from the web font, not from the fallback fontconfig would give.
  const m = metricsFor("Source Code Pro", "Regular", faces);
  assert.match(m.file, /^@font-face Source Code Pro/);
  assert.notDeepEqual(m, metricsFor("Source Code Pro", "Regular"));
});

test("CSS face matching: style first, then the nearest weight in CSS's order", () => {
  const face = (weight, style = "normal") => ({ family: "F", style, weight: [weight, weight] });
  const faces = [face(300), face(400), face(600), face(700), face(400, "italic")];
  const pick = (w, italic = false) => pickFace(faces, "f", w, italic);
  assert.equal(pick(400).weight[0], 400);
  assert.equal(pick(500).weight[0], 400); // 500: none at 500, then lighter first
  assert.equal(pick(800).weight[0], 700);
  assert.equal(pick(200).weight[0], 300);
  assert.equal(pick(650).weight[0], 700); // above 500: heavier first
  assert.equal(pick(700, true).style, "italic");
  assert.equal(pickFace(faces, "Other", 400, false), null);
});

test("resvg draws a web face found by its @font-face name, not the fallback", async () => {
  const { faces } = await webFonts(readFileSync(RUSTDOC, "utf8"));
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="300" height="40"><rect width="300" height="40" fill="#fff"/><text x="4" y="28" font-family="Source Code Pro" font-size="24">iiiiiiiiii</text></svg>`;
  const draw = (font) => new Resvg(svg, { fitTo: { mode: "original" }, font }).render();
  const inked = (img) => {
    // The rightmost column with ink: ten monospace i's reach much further than proportional ones.
    const px = img.pixels;
    let right = 0;
    for (let y = 0; y < img.height; y++) for (let x = 0; x < img.width; x++) if (px[(y * img.width + x) * 4] < 128) right = Math.max(right, x);
    return right;
  };
  const withFaces = inked(draw(resvgFonts(faces)));
  const without = inked(draw(resvgFonts([])));
  // Source Code Pro advances 0.6 em a letter: ten i's end near 4 + 9.5 × 14.4 px.
  assert.ok(withFaces > 130 && withFaces < 150, `Source Code Pro's i's end at ${withFaces}`);
  assert.ok(without < 100, `the fallback's i's end at ${without}`);
});
