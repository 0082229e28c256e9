// PNG text chunks (tEXt, PNG spec 11.3.4.3): the screenshots carry the hash of the UI they show.

import { crc32 } from "node:zlib";

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The chunks of a PNG: type, data, and where each starts. */
function chunks(png: Buffer) {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error("not a PNG");
  const out: { type: string; data: Buffer; start: number }[] = [];
  for (let i = 8; i + 12 <= png.length; ) {
    const len = png.readUInt32BE(i);
    out.push({ type: png.toString("latin1", i + 4, i + 8), data: png.subarray(i + 8, i + 8 + len), start: i });
    i += 12 + len;
  }
  return out;
}

/** The tEXt entries of a PNG, by keyword. */
export function pngText(png: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of chunks(png)) {
    if (c.type !== "tEXt") continue;
    const nul = c.data.indexOf(0);
    if (nul > 0) out.set(c.data.toString("latin1", 0, nul), c.data.toString("latin1", nul + 1));
  }
  return out;
}

/** The PNG with these tEXt entries added before its IEND (Latin-1 text, keywords 1–79 bytes). */
export function withPngText(png: Buffer, entries: Record<string, string>): Buffer {
  const iend = chunks(png).find((c) => c.type === "IEND");
  if (!iend) throw new Error("PNG without IEND");
  const added = Object.entries(entries).map(([k, v]) => {
    const body = Buffer.concat([Buffer.from("tEXt", "latin1"), Buffer.from(k, "latin1"), Buffer.from([0]), Buffer.from(v, "latin1")]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(body.length - 4);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  });
  return Buffer.concat([png.subarray(0, iend.start), ...added, png.subarray(iend.start)]);
}
