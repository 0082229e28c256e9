// What the tests know about the running local stacks (started by scripts/test-plugin), and how
// they play the two parties that are not the plugin: the tenant's seeding (the real
// `code2des-local seed --json`) and the conversion worker (S3 reads and writes signed with
// SigV4 against the embedded S3, and the HMAC-signed webhook, as the worker protocol in
// openapi.yaml describes them).

import { execFile } from "node:child_process";
import { createHash, createHmac, randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { crc32, deflateSync } from "node:zlib";

const run = promisify(execFile);

export interface StackEnv {
  /** http://127.0.0.1:PORT of the user API and webhook. */
  url: string;
  /** http://127.0.0.1:PORT of its embedded S3. */
  s3: string;
  /** Its database, for `seed`. */
  databaseUrl: string;
  /** Its `--data-dir`, for `seed` (the sample capture is written under it). */
  dataDir: string;
}

function need(name: string): string {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run the tests through scripts/test-plugin, which starts the stacks`);
  }
  return v;
}

/** The stack with no worker: the tests play the worker themselves. */
export function plainStack(): StackEnv {
  return { url: need("C2D_PLAIN_URL"), s3: need("C2D_PLAIN_S3"), databaseUrl: need("C2D_PLAIN_DB"), dataDir: need("C2D_PLAIN_DATA") };
}

/**
 * The stack started with `MAX_ACTIVE_JOBS_PER_ORG=1` (no worker): an organization's second
 * processing job is refused 429, as the quota test needs.
 */
export function quotaStack(): StackEnv {
  return { url: need("C2D_QUOTA_URL"), s3: need("C2D_QUOTA_S3"), databaseUrl: need("C2D_QUOTA_DB"), dataDir: need("C2D_QUOTA_DATA") };
}

/** The stack started with `--demo-worker`: the reference worker completes every new job. */
export function demoStack(): StackEnv {
  return { url: need("C2D_DEMO_URL"), s3: need("C2D_DEMO_S3"), databaseUrl: need("C2D_DEMO_DB"), dataDir: need("C2D_DEMO_DATA") };
}

export interface Tenant {
  organizationId: number;
  projectId: number;
  pageImportId: string;
  sub: string;
  token: string;
  /** `{apiUrl}/organizations/{organizationId}/projects/{projectId}/code2des`. */
  baseUrl: string;
  /** The line `seed --json` printed, exactly: what a developer pastes into the plugin. */
  seedJson: string;
}

/** A fresh tenant, made by the same `seed` command a plugin developer runs. */
export async function seedTenant(stack: StackEnv, sub = `ts-${randomUUID().slice(0, 8)}`): Promise<Tenant> {
  const bin = need("C2D_BIN");
  const addr = new URL(stack.url).host;
  // The stack's data directory: seed writes the sample capture where the stack's S3 serves it.
  const { stdout } = await run(bin, ["--addr", addr, "--data-dir", stack.dataDir, "seed", "--sub", sub, "--json"], {
    env: { ...process.env, DATABASE_URL: stack.databaseUrl, RUST_LOG: "warn" },
  });
  const line = stdout.trim().split("\n").pop() ?? "";
  const t = JSON.parse(line) as Omit<Tenant, "seedJson">;
  if (!t.token || !t.organizationId || !t.projectId || !t.pageImportId || !t.baseUrl) {
    throw new Error(`seed printed no tenant: ${stdout}`);
  }
  return { ...t, seedJson: line };
}

// --- the worker's side ---------------------------------------------------------------------

export const BUCKET = "code2des-artifacts";
const WEBHOOK_SECRET = process.env.C2D_WEBHOOK_SECRET ?? "local-webhook-secret";

const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");
const hmac = (key: string | Buffer, data: string) => createHmac("sha256", key).update(data).digest();

/** One S3 request (path-style) signed with AWS Signature V4, as the SDKs sign it. */
async function s3(stack: StackEnv, method: "GET" | "PUT", key: string, body?: Uint8Array, contentType?: string) {
  const url = new URL(stack.s3);
  const path = `/${BUCKET}/${key
    .split("/")
    .map((seg) => encodeURIComponent(seg).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join("/")}`;
  const now = new Date();
  const amzDate = now.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  const day = amzDate.slice(0, 8);
  const payloadHash = sha256(body ?? "");
  const headers: Record<string, string> = {
    host: url.host,
    "x-amz-content-sha256": payloadHash,
    "x-amz-date": amzDate,
  };
  if (contentType) headers["content-type"] = contentType;
  const names = Object.keys(headers).sort();
  const canonical = [
    method,
    path,
    "",
    names.map((n) => `${n}:${headers[n]}\n`).join(""),
    names.join(";"),
    payloadHash,
  ].join("\n");
  const scope = `${day}/us-east-1/s3/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n");
  let k = hmac("AWS4local-secret", day);
  for (const part of ["us-east-1", "s3", "aws4_request"]) k = hmac(k, part);
  const signature = createHmac("sha256", k).update(toSign).digest("hex");
  const { host: _host, ...sent } = headers;
  const res = await fetch(`${url.origin}${path}`, {
    method,
    headers: {
      ...sent,
      authorization: `AWS4-HMAC-SHA256 Credential=local/${scope}, SignedHeaders=${names.join(";")}, Signature=${signature}`,
    },
    // A copy on its own ArrayBuffer: what fetch's BodyInit types accept.
    body: body === undefined ? undefined : new Uint8Array(body),
  });
  if (!res.ok) throw new Error(`S3 ${method} ${key}: ${res.status} ${await res.text()}`);
  return res;
}

export interface Manifest {
  code2des_id: string;
  attempt: number;
  nonce: string;
  callback_url: string;
  result_prefix: string;
}

export async function readManifest(stack: StackEnv, code2desId: string, attempt = 1): Promise<Manifest> {
  const res = await s3(stack, "GET", `code2des/${code2desId}/${attempt}/manifest.json`);
  return (await res.json()) as Manifest;
}

/** POSTs a webhook body signed with `Code2des-Signature`; answers status and JSON. */
export async function webhook(stack: StackEnv, body: object): Promise<{ status: number; json: unknown }> {
  const raw = JSON.stringify(body);
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac("sha256", WEBHOOK_SECRET).update(`${t}.${raw}`).digest("hex");
  const res = await fetch(`${stack.url}/code2des/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "Code2des-Signature": `t=${t},v1=${v1}` },
    body: raw,
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

export async function reportProgress(stack: StackEnv, m: Manifest, percent: number, stage: string) {
  return webhook(stack, {
    code2des_id: m.code2des_id,
    attempt: m.attempt,
    nonce: m.nonce,
    status: "processing",
    progress: { percent, stage },
  });
}

export interface WorkerImage {
  bytes: Uint8Array;
  mimeType: "image/png" | "image/jpeg" | "image/gif" | "image/svg+xml";
}

/**
 * Acts as the worker finishing attempt `m`: writes the images and the artifact under the
 * attempt's prefix, then sends the signed webhook (`completed` for a result, `failed` for a
 * failure artifact).
 */
export async function finish(
  stack: StackEnv,
  m: Manifest,
  opts: {
    kind: "result" | "failure";
    document?: unknown;
    images?: Record<string, WorkerImage>;
    /** The artifact's `warning_count`; the number of `warnings` when only those are given. */
    warningCount?: number;
    /** The artifact's fidelity report (`ResultWarning`s); absent when not given, as in older artifacts. */
    warnings?: readonly object[];
    errorMessage?: string;
  },
) {
  const warningCount = opts.warningCount ?? opts.warnings?.length ?? 0;
  const prefix = `code2des/${m.code2des_id}/${m.attempt}/`;
  const images: Record<string, { key: string; mime_type: string }> = {};
  for (const [ref, img] of Object.entries(opts.images ?? {})) {
    const key = `${prefix}images/${ref}`;
    await s3(stack, "PUT", key, img.bytes, img.mimeType);
    images[ref] = { key, mime_type: img.mimeType };
  }
  const artifact = {
    version: 1,
    kind: opts.kind,
    code2des_id: m.code2des_id,
    attempt: m.attempt,
    nonce: m.nonce,
    warning_count: warningCount,
    ...(opts.warnings === undefined ? {} : { warnings: opts.warnings }),
    document: opts.document ?? null,
    images,
  };
  await s3(stack, "PUT", `${prefix}result.json`, new TextEncoder().encode(JSON.stringify(artifact)), "application/json");
  return webhook(stack, {
    code2des_id: m.code2des_id,
    attempt: m.attempt,
    nonce: m.nonce,
    status: opts.kind === "result" ? "completed" : "failed",
    result_url: `s3://${BUCKET}/${prefix}result.json`,
    warning_count: warningCount,
    ...(opts.errorMessage === undefined ? {} : { error_message: opts.errorMessage }),
  });
}

/** Fails attempt `m` without any artifact (the result route then answers 409 job_failed). */
export async function failWithoutArtifact(stack: StackEnv, m: Manifest, errorMessage: string) {
  return webhook(stack, {
    code2des_id: m.code2des_id,
    attempt: m.attempt,
    nonce: m.nonce,
    status: "failed",
    error_message: errorMessage,
  });
}

// --- images a worker writes ------------------------------------------------------------------

/** A real RGB PNG of w×h (zlib's stored blocks, level 0: ~3·w·h bytes, whatever the pixels). */
export function png(w: number, h: number, seed = 0): Uint8Array {
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0, i = 0; y < h; y++) {
    raw[i++] = 0; // filter: none
    for (let x = 0; x < w * 3; x++) raw[i++] = (x * 7 + y * 13 + seed) % 256;
  }
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk("IHDR", ihdr),
      chunk("IDAT", deflateSync(raw, { level: 0 })),
      chunk("IEND", Buffer.alloc(0)),
    ]),
  );
}

/** A 1×1 GIF89a (the smallest image Figma's createImage takes). */
export const GIF_1X1 = new Uint8Array(
  Buffer.from("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==", "base64"),
);

/** A 1×1 baseline JPEG. */
export const JPEG_1X1 = new Uint8Array(
  Buffer.from(
    "/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=",
    "base64",
  ),
);

export const SVG_LOGO = new TextEncoder().encode(
  '<svg xmlns="http://www.w3.org/2000/svg" width="48" height="48" viewBox="0 0 48 48"><circle cx="24" cy="24" r="20" fill="#0d99ff"/></svg>',
);
