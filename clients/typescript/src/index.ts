// The hand-written layer over the generated client (src/schema.ts, from openapi.yaml by
// openapi-typescript; calls through openapi-fetch). It adds only what every caller would
// otherwise write again: one error type (and its 429 kind, with the quota headers read),
// Retry-After-paced polling with progress, waiting out a quota, and helpers bound to one
// project. Everything the helpers leave out is on `client.raw`, fully typed.

import createClient, { type Client } from "openapi-fetch";
import { type RateLimitInfo, readRateLimit } from "./ratelimit.js";
import type { components, paths } from "./schema.js";

export type { components, paths } from "./schema.js";
export {
  type RateLimitInfo,
  type RateLimitPolicy,
  type RateLimitState,
  parseRateLimit,
  parseRateLimitPolicy,
  readRateLimit,
} from "./ratelimit.js";

type Schemas = components["schemas"];
export type Job = Schemas["Job"];
export type JobPage = Schemas["JobPage"];
export type JobStatus = Schemas["Status"];
export type Progress = NonNullable<Job["progress"]>;
export type Result = Schemas["Result"];
/** One entry of a result's fidelity report (`Result.warnings`). */
export type ResultWarning = Schemas["ResultWarning"];
/** The fixed list of `ResultWarning.code` (docs/WORKER.md, "Warnings"). */
export type WarningCode = ResultWarning["code"];
export type ImageData = Schemas["ImageData"];
export type Node = Schemas["Node"];
export type NodeType = Schemas["NodeType"];
export type Paint = Schemas["Paint"];
export type TextSegment = Schemas["TextSegment"];
export type Hyperlink = Schemas["Hyperlink"];
export type Style = Schemas["Style"];
export type GridTrack = Schemas["GridTrack"];
export type TriggerRequest = Schemas["TriggerRequest"];
export type ErrorBody = Schemas["Error"];
/** The codes openapi.yaml lists, `quota_exceeded` (the 429 of trigger and retry) among them. */
export type ErrorCode = Schemas["ErrorCode"];
/** The quotas a 429 names (the body's `error.limit`): jobs processing at once (`active`), or jobs started per window (`burst`). */
export type QuotaLimit = NonNullable<ErrorBody["error"]["limit"]>;

/** Any answer that is not the operation's success: `{error:{code,message},requestId}`. */
export class ApiError extends Error {
  override readonly name: string = "ApiError";
  /** HTTP status (0 never: a request that got no answer rejects with fetch's own error). */
  readonly status: number;
  /** The stable snake_case code; `http_<status>` if the body was not the API's error shape. */
  readonly code: ErrorCode | `http_${number}`;
  /** Matches the service's logs; null only when the body was not the API's error shape. */
  readonly requestId: string | null;
  /** Milliseconds the answer asked to wait (503 and 429 `Retry-After`), or null. */
  readonly retryAfterMs: number | null;

  constructor(status: number, body: unknown, retryAfterMs: number | null = null) {
    const parsed = isErrorBody(body) ? body : null;
    const message = parsed ? parsed.error.message : `HTTP ${status}`;
    super(message);
    this.status = status;
    this.code = parsed ? (parsed.error.code as ErrorCode) : `http_${status}`;
    this.requestId = parsed ? parsed.requestId : null;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * A 429: a quota is used up. `retryAfterMs` is when to try the same call again (the answer's
 * `Retry-After`; without one, the named limit's `t` from `RateLimit`; 2 s when neither says),
 * `limit` which quota (the body's `error.limit`), `rateLimit` the answer's RateLimit and
 * RateLimit-Policy headers. Nothing was done: the same call, with the same Idempotency-Key,
 * may be sent again after the delay (`whenFree` does).
 */
export class QuotaExceededError extends ApiError {
  override readonly name: string = "QuotaExceededError";
  declare readonly retryAfterMs: number;
  /** `active` or `burst` as the body names it; null when the body names none (not the API's 429). */
  readonly limit: QuotaLimit | (string & {}) | null;
  readonly rateLimit: RateLimitInfo;

  constructor(body: unknown, headers: Pick<Headers, "get">) {
    const rateLimit = readRateLimit(headers);
    const named = (body as { error?: { limit?: unknown } } | null)?.error?.limit;
    const limit = typeof named === "string" ? named : null;
    const reset = rateLimit.limits.find((l) => l.name === limit)?.resetSeconds ?? null;
    const wait = parseRetryAfter(headers.get("retry-after")) ?? (reset === null ? null : reset * 1000) ?? DEFAULT_POLL_MS;
    super(429, body, wait);
    this.limit = limit;
    this.rateLimit = rateLimit;
  }
}

function isErrorBody(v: unknown): v is ErrorBody {
  if (typeof v !== "object" || v === null) return false;
  const e = (v as { error?: unknown }).error;
  return (
    typeof e === "object" &&
    e !== null &&
    typeof (e as { code?: unknown }).code === "string" &&
    typeof (e as { message?: unknown }).message === "string" &&
    typeof (v as { requestId?: unknown }).requestId === "string"
  );
}

/**
 * `Retry-After` as milliseconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3).
 * Null when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export interface ClientOptions {
  /** The API's origin, e.g. `http://localhost:3000` for the local stack. */
  baseUrl: string;
  /** Bearer token (the JWT), or a function returning the current one (called per request). */
  token?: string | (() => string | Promise<string>);
  /** A fetch to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
}

export interface Scope {
  organizationId: number;
  projectId: number;
}

export interface WaitOptions {
  /** Called after every poll that finds the job still processing (progress may be null). */
  onProgress?: (progress: Progress | null, job: Job) => void;
  /** Aborts the wait (and the request in flight) with the signal's reason. */
  signal?: AbortSignal;
  /** Delay when an answer has no `Retry-After`. Default 2000 ms, SPEC section 7's pace. */
  defaultDelayMs?: number;
  /** Never poll faster than this, whatever an answer says (`Retry-After: 0` included). Default 1000 ms. */
  minDelayMs?: number;
  /** Consecutive 503 answers tolerated (each waited out by its Retry-After). Default 5. */
  maxUnavailable?: number;
}

export type ResultAnswer =
  | { notModified: false; result: Result; etag: string | null; cacheControl: string | null }
  | { notModified: true; etag: string | null };

export const DEFAULT_POLL_MS = 2000;

export interface QuotaWaitOptions {
  /** Stops waiting (and the request in flight) with the signal's reason. */
  signal?: AbortSignal;
  /** Called before each wait with the refusal and the time (epoch ms) the call is sent again. */
  onWait?: (refusal: QuotaExceededError, retryAt: number) => void;
  /** Refusals in a row to wait out before the last one is thrown. Default: no limit (stop with `signal`). */
  maxWaits?: number;
  /** Never send the call again sooner than this, whatever `Retry-After` says. Default 1000 ms. */
  minDelayMs?: number;
}

/**
 * Runs `call`; while it is refused with a 429 (`QuotaExceededError`), waits its Retry-After
 * and runs it again. Any other outcome is returned or thrown as it is. `call` must be safe to
 * repeat: a trigger with a fixed Idempotency-Key, a retry naming its attempt.
 */
export async function whenFree<T>(call: () => Promise<T>, opts: QuotaWaitOptions = {}): Promise<T> {
  const floor = opts.minDelayMs ?? 1000;
  const maxWaits = opts.maxWaits ?? Number.POSITIVE_INFINITY;
  for (let waits = 0; ; waits++) {
    try {
      return await call();
    } catch (e) {
      if (!(e instanceof QuotaExceededError) || waits >= maxWaits) throw e;
      const delay = Math.max(e.retryAfterMs, floor);
      opts.onWait?.(e, Date.now() + delay);
      await sleep(delay, opts.signal);
    }
  }
}

/** A random UUID (v4) for `Idempotency-Key`; crypto.getRandomValues works outside secure contexts too. */
export function newIdempotencyKey(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The API client: `raw` is the generated openapi-fetch client; `project()` binds helpers to a scope. */
export class Code2DesClient {
  readonly raw: Client<paths>;

  constructor(options: ClientOptions) {
    this.raw = createClient<paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ""), fetch: options.fetch });
    const token = options.token;
    if (token !== undefined) {
      this.raw.use({
        // Resolved per request, so a refreshed token is picked up.
        async onRequest({ request }) {
          const t = typeof token === "function" ? await token() : token;
          request.headers.set("authorization", `Bearer ${t}`);
          return request;
        },
      });
    }
  }

  project(scope: Scope): ProjectJobs {
    return new ProjectJobs(this.raw, scope);
  }
}

export function createCode2DesClient(options: ClientOptions): Code2DesClient {
  return new Code2DesClient(options);
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

function fail(a: { error?: unknown; response: Response }): never {
  if (a.response.status === 429) throw new QuotaExceededError(a.error, a.response.headers);
  throw new ApiError(a.response.status, a.error, parseRetryAfter(a.response.headers.get("retry-after")));
}

function ok<T>(a: Answer<T>): T {
  if (a.response.ok && a.data !== undefined) return a.data;
  fail(a);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Every operation of one project's jobs, with typed answers and `ApiError` for the rest. */
export class ProjectJobs {
  constructor(
    readonly raw: Client<paths>,
    readonly scope: Scope,
  ) {}

  private job(code2desId: string) {
    return { path: { ...this.scope, code2desId } };
  }

  /** POST {base}: a new job (202) and its Location. */
  async trigger(body: TriggerRequest, opts: { idempotencyKey?: string; signal?: AbortSignal } = {}) {
    const a = await this.raw.POST("/organizations/{organizationId}/projects/{projectId}/code2des", {
      params: {
        path: this.scope,
        header: opts.idempotencyKey === undefined ? undefined : { "Idempotency-Key": opts.idempotencyKey },
      },
      body,
      signal: opts.signal,
    });
    return { job: ok(a), location: a.response.headers.get("location"), rateLimit: readRateLimit(a.response.headers) };
  }

  /**
   * `trigger`, waiting out 429s (`whenFree`): each refused call is sent again after its
   * Retry-After with the SAME Idempotency-Key (one is made when none is given), so however
   * often it waits, at most one job is created.
   */
  async triggerWhenFree(
    body: TriggerRequest,
    opts: QuotaWaitOptions & { idempotencyKey?: string } = {},
  ) {
    const idempotencyKey = opts.idempotencyKey ?? newIdempotencyKey();
    const answer = await whenFree(() => this.trigger(body, { idempotencyKey, signal: opts.signal }), opts);
    return { ...answer, idempotencyKey };
  }

  /** GET {base}/{id}: the job, and how long the server asks pollers to wait (ms) when it says so. */
  async getWithRetryAfter(code2desId: string, opts: { signal?: AbortSignal } = {}) {
    const a = await this.raw.GET("/organizations/{organizationId}/projects/{projectId}/code2des/{code2desId}", {
      params: this.job(code2desId),
      signal: opts.signal,
    });
    return { job: ok(a), retryAfterMs: parseRetryAfter(a.response.headers.get("retry-after")) };
  }

  async get(code2desId: string, opts: { signal?: AbortSignal } = {}): Promise<Job> {
    return (await this.getWithRetryAfter(code2desId, opts)).job;
  }

  /** GET {base}: one page, newest first. */
  async list(
    query: { figmaFileKey?: string; status?: JobStatus; limit?: number; cursor?: string } = {},
    opts: { signal?: AbortSignal } = {},
  ): Promise<JobPage> {
    const a = await this.raw.GET("/organizations/{organizationId}/projects/{projectId}/code2des", {
      params: { path: this.scope, query },
      signal: opts.signal,
    });
    return ok(a);
  }

  /** Every job matching the filters, page after page. */
  async *listAll(query: { figmaFileKey?: string; status?: JobStatus; limit?: number } = {}): AsyncGenerator<Job> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...query, cursor });
      yield* page.items;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /**
   * GET {base}/{id}/result. With `ifNoneMatch` (an ETag from an earlier answer) an unchanged
   * result is `{notModified: true}` and carries no body. With `images`, only those images.
   */
  async result(
    code2desId: string,
    opts: { ifNoneMatch?: string; images?: string[]; signal?: AbortSignal } = {},
  ): Promise<ResultAnswer> {
    const a = await this.raw.GET(
      "/organizations/{organizationId}/projects/{projectId}/code2des/{code2desId}/result",
      {
        params: {
          ...this.job(code2desId),
          query: opts.images === undefined ? undefined : { images: opts.images.join(",") },
          header: opts.ifNoneMatch === undefined ? undefined : { "If-None-Match": opts.ifNoneMatch },
        },
        signal: opts.signal,
      },
    );
    const etag = a.response.headers.get("etag");
    if (a.response.status === 304) return { notModified: true, etag };
    return { notModified: false, result: ok(a), etag, cacheControl: a.response.headers.get("cache-control") };
  }

  /**
   * The result with every image inlined: fetches `deferredImages` (those past the response
   * budget) with `?images=`, at most `batch` at a time.
   */
  async fullResult(code2desId: string, opts: { batch?: number; signal?: AbortSignal } = {}): Promise<Result> {
    const first = await this.result(code2desId, { signal: opts.signal });
    if (first.notModified) throw new Error("unreachable: no If-None-Match was sent");
    const result = first.result;
    let pending = [...result.deferredImages];
    const batch = opts.batch ?? 20;
    while (pending.length > 0) {
      const want = pending.slice(0, batch);
      const more = await this.result(code2desId, { images: want, signal: opts.signal });
      if (more.notModified) throw new Error("unreachable: no If-None-Match was sent");
      Object.assign(result.images, more.result.images);
      // Whatever did not fit this answer is listed again; never ask for a ref twice in a row
      // without progress, or a server that cannot send one image would loop us forever.
      const got = want.filter((r) => r in more.result.images);
      if (got.length === 0) throw new Error(`images ${want.join(",")} could not be fetched`);
      pending = pending.filter((r) => !(r in result.images));
    }
    result.deferredImages = [];
    return result;
  }

  /** POST {base}/{id}/placement: records the first root; later calls return it unchanged. */
  async place(code2desId: string, nodeId: string, opts: { signal?: AbortSignal } = {}): Promise<Job> {
    const a = await this.raw.POST(
      "/organizations/{organizationId}/projects/{projectId}/code2des/{code2desId}/placement",
      { params: this.job(code2desId), body: { nodeId }, signal: opts.signal },
    );
    return ok(a);
  }

  /**
   * POST {base}/{id}/retry. `created` is false when another retry of the same `attempt` had
   * already made the next one (200): the job is then that attempt, not a newer one.
   */
  async retry(code2desId: string, opts: { attempt?: number; signal?: AbortSignal } = {}) {
    const a = await this.raw.POST(
      "/organizations/{organizationId}/projects/{projectId}/code2des/{code2desId}/retry",
      {
        params: this.job(code2desId),
        body: opts.attempt === undefined ? {} : { attempt: opts.attempt },
        signal: opts.signal,
      },
    );
    return {
      job: ok(a),
      created: a.response.status === 202,
      location: a.response.headers.get("location"),
      rateLimit: readRateLimit(a.response.headers),
    };
  }

  /** `retry`, waiting out 429s (`whenFree`). Name the `attempt`: then a resent retry cannot start two. */
  async retryWhenFree(code2desId: string, opts: QuotaWaitOptions & { attempt?: number } = {}) {
    return whenFree(() => this.retry(code2desId, { attempt: opts.attempt, signal: opts.signal }), opts);
  }

  /** POST {base}/{id}/cancel: the job, failed with `cancelled`. */
  async cancel(code2desId: string, opts: { signal?: AbortSignal } = {}): Promise<Job> {
    const a = await this.raw.POST(
      "/organizations/{organizationId}/projects/{projectId}/code2des/{code2desId}/cancel",
      { params: this.job(code2desId), signal: opts.signal },
    );
    return ok(a);
  }

  /** DELETE {base}/{id}: soft delete (204). */
  async delete(code2desId: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const a = await this.raw.DELETE(
      "/organizations/{organizationId}/projects/{projectId}/code2des/{code2desId}",
      { params: this.job(code2desId), signal: opts.signal },
    );
    if (a.response.status !== 204) fail(a);
  }

  /**
   * Polls until the job leaves `processing`, and resolves with it (completed or failed).
   * Waits what each answer's `Retry-After` says between polls (2 s when it says nothing),
   * never less, reporting progress after each poll that finds the job still processing.
   * A 503 is waited out by its own Retry-After, `maxUnavailable` times in a row at most.
   */
  async waitForJob(code2desId: string, opts: WaitOptions = {}): Promise<Job> {
    const fallback = opts.defaultDelayMs ?? DEFAULT_POLL_MS;
    const floor = opts.minDelayMs ?? 1000;
    const maxUnavailable = opts.maxUnavailable ?? 5;
    let unavailable = 0;
    for (;;) {
      let delay: number;
      try {
        const { job, retryAfterMs } = await this.getWithRetryAfter(code2desId, { signal: opts.signal });
        unavailable = 0;
        if (job.status !== "processing") return job;
        opts.onProgress?.(job.progress, job);
        delay = retryAfterMs ?? fallback;
      } catch (e) {
        if (!(e instanceof ApiError) || e.status !== 503 || ++unavailable > maxUnavailable) throw e;
        delay = e.retryAfterMs ?? fallback;
      }
      await sleep(Math.max(delay, floor), opts.signal);
    }
  }
}
