// A stand-in for the result route as it answers once it compresses (issue 31): a node:http
// server on 127.0.0.1 that answers GET {base}/{id}/result with `Content-Encoding: br` or `gzip`
// as the request's Accept-Encoding allows (br first), `Vary: Accept-Encoding`, an ETag and the
// route's Cache-Control, and 304 with no body when If-None-Match holds that ETag. The result is
// a few hundred nodes and two images, one of them deferred (fetched with `?images=`), so the
// compressed body is a small part of the decoded one: a reader that took Content-Length for
// the body's size would read a fraction of it. CORS as the API answers the plugin's iframe
// (Origin: null). Used by test/compression.test.ts (Node's fetch) and the plugin's
// test/compression.test.ts (Chromium, in a sandboxed iframe); no stack needed.

import { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

export const ORG = 7;
export const PROJECT = 9;
export const JOB_ID = "0190e6d4-3a1b-7c2d-8e9f-0a1b2c3d4e5f";
export const RESULT_PATH = `/organizations/${ORG}/projects/${PROJECT}/code2des/${JOB_ID}/result`;
export const ETAG = '"r-0190e6d4-1"';
export const CACHE_CONTROL = "private, max-age=86400, immutable";

export type Encoding = "br" | "gzip" | "identity";

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  status: number;
  /** The Content-Encoding answered ("identity" for none). */
  encoding: Encoding;
  /** Bytes on the wire (the body as sent, compressed) and the JSON's own length. */
  wireBytes: number;
  jsonBytes: number;
}

export interface ResultServer {
  /** http://127.0.0.1:PORT, the API's origin. */
  url: string;
  seen: Seen[];
  /** Answer this encoding whatever Accept-Encoding says (null: negotiate, as the server will). */
  force: Encoding | null;
  /** Stream the body in chunks without Content-Length (Transfer-Encoding: chunked). */
  chunked: boolean;
  close(): Promise<void>;
}

const base64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="#0a7"/></svg>`;
// Not a real PNG: the route passes images through as the worker wrote them, and so does this.
const PHOTO = "photo bytes ".repeat(400);

/** The whole result, as the stand-in answers it without `?images=` (the photo deferred). */
export function fullResult() {
  const rows = Array.from({ length: 300 }, (_, i) => ({
    type: "TEXT" as const,
    name: `Row ${i}`,
    x: 16,
    y: 24 * i,
    width: 320,
    height: 20,
    characters: `Line ${i} of the compressed result, repeated so that it compresses well`,
  }));
  return {
    code2desId: JOB_ID,
    kind: "result" as const,
    version: 1 as const,
    warningCount: 0,
    document: {
      type: "FRAME" as const,
      name: "Home",
      width: 360,
      height: 24 * rows.length,
      children: [
        { type: "RECTANGLE" as const, name: "Logo", width: 8, height: 8, fills: [{ type: "IMAGE" as const, imageRef: "logo" }] },
        { type: "RECTANGLE" as const, name: "Photo", width: 64, height: 64, fills: [{ type: "IMAGE" as const, imageRef: "photo" }] },
        ...rows,
      ],
    },
    images: { logo: { mimeType: "image/svg+xml" as const, size: LOGO_SVG.length, data: base64(LOGO_SVG) } },
    deferredImages: ["photo"],
    warnings: [],
  };
}

/** What `?images=photo` answers. */
export function photoImages() {
  return { photo: { mimeType: "image/png" as const, size: PHOTO.length, data: base64(PHOTO) } };
}

/** br first, then gzip, as Accept-Encoding allows (q=0 refuses); identity otherwise. */
export function negotiate(acceptEncoding: string | undefined): Encoding {
  const allowed = new Map<string, number>();
  for (const part of (acceptEncoding ?? "").split(",")) {
    const [name, ...params] = part.trim().toLowerCase().split(";");
    if (!name) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    allowed.set(name, q === undefined ? 1 : Number(q.slice(2)));
  }
  const ok = (e: string) => (allowed.get(e) ?? allowed.get("*") ?? 0) > 0;
  if (ok("br")) return "br";
  if (ok("gzip")) return "gzip";
  return "identity";
}

function encode(json: string, encoding: Encoding): Buffer {
  const raw = Buffer.from(json, "utf8");
  if (encoding === "br") return brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } });
  if (encoding === "gzip") return gzipSync(raw);
  return raw;
}

const CORS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": "location, retry-after, etag, ratelimit, ratelimit-policy",
};

export async function startResultServer(): Promise<ResultServer> {
  const state: ResultServer = {
    url: "",
    seen: [],
    force: null,
    chunked: false,
    close: async () => {},
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://x");
    const record = (status: number, encoding: Encoding, wireBytes: number, jsonBytes: number) =>
      state.seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, status, encoding, wireBytes, jsonBytes });
    if (req.method === "OPTIONS") {
      record(204, "identity", 0, 0);
      return void res
        .writeHead(204, {
          ...CORS,
          "access-control-allow-methods": "GET, POST, DELETE",
          "access-control-allow-headers": "authorization, content-type, idempotency-key, if-none-match",
          "access-control-max-age": "600",
        })
        .end();
    }
    if (req.method !== "GET" || url.pathname !== RESULT_PATH) {
      record(404, "identity", 0, 0);
      return void res.writeHead(404, CORS).end();
    }
    const images = url.searchParams.get("images");
    // The ETag names the full result; `?images=` answers are not conditional.
    if (images === null && req.headers["if-none-match"] === ETAG) {
      record(304, "identity", 0, 0);
      return void res.writeHead(304, { ...CORS, etag: ETAG, "cache-control": CACHE_CONTROL, vary: "accept-encoding" }).end();
    }
    const body =
      images === null
        ? fullResult()
        : {
            ...fullResult(),
            document: undefined,
            images: Object.fromEntries(Object.entries(photoImages()).filter(([ref]) => images.split(",").includes(ref))),
            deferredImages: [],
          };
    const json = JSON.stringify(body);
    const encoding = state.force ?? negotiate(req.headers["accept-encoding"]);
    const wire = encode(json, encoding);
    record(200, encoding, wire.length, Buffer.byteLength(json));
    const headers: Record<string, string> = {
      ...CORS,
      "content-type": "application/json",
      vary: "accept-encoding",
      ...(images === null ? { etag: ETAG, "cache-control": CACHE_CONTROL } : {}),
      ...(encoding === "identity" ? {} : { "content-encoding": encoding }),
    };
    if (!state.chunked) return void res.writeHead(200, { ...headers, "content-length": String(wire.length) }).end(wire);
    res.writeHead(200, headers);
    for (let at = 0; at < wire.length; at += 512) res.write(wire.subarray(at, at + 512));
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}
