// The quota headers of draft-ietf-httpapi-ratelimit-headers-11, read into small typed values:
//
//   RateLimit-Policy: "active";q=20, "burst";q=30;w=60
//   RateLimit: "active";r=0;t=12
//
// Both are Structured Fields Lists (RFC 9651): each member names a policy (an sf-string, or
// a token) and carries parameters. RateLimit-Policy's are `q` (quota), `qu` (quota unit), `w`
// (window, seconds) and `pk` (partition key); RateLimit's are `r` (remaining), `t` (seconds
// until the quota resets) and `pk`. Unknown parameters are ignored, as the draft asks; a
// member missing its required parameter (`q`, `r`) is left out; a header that does not parse
// as a Structured Field is ignored whole (an empty list), as RFC 9651 section 4.2 asks.

/** One quota policy the server applies (a RateLimit-Policy member). */
export interface RateLimitPolicy {
  name: string;
  /** `q`: the quota allocated for the window. */
  quota: number;
  /** `w`: the window in seconds, or null when the policy does not say. */
  windowSeconds: number | null;
  /** `qu`: what the quota counts (`requests` by default). */
  quotaUnit: string;
  /** `pk`: the partition key (opaque bytes, base64 as sent), or null. */
  partitionKey: string | null;
}

/** The current state of one policy's quota (a RateLimit member). */
export interface RateLimitState {
  name: string;
  /** `r`: quota units left. */
  remaining: number;
  /** `t`: seconds until the quota resets, or null when not said. */
  resetSeconds: number | null;
  partitionKey: string | null;
}

export interface RateLimitInfo {
  policies: RateLimitPolicy[];
  limits: RateLimitState[];
}

/** Both headers of one answer (either may be absent: then its list is empty). */
export function readRateLimit(headers: Pick<Headers, "get">): RateLimitInfo {
  return {
    policies: parseRateLimitPolicy(headers.get("ratelimit-policy")),
    limits: parseRateLimit(headers.get("ratelimit")),
  };
}

export function parseRateLimitPolicy(value: string | null): RateLimitPolicy[] {
  const out: RateLimitPolicy[] = [];
  for (const m of parseList(value)) {
    const q = m.params.get("q");
    if (!isNonNegInt(q)) continue;
    const w = m.params.get("w");
    const qu = m.params.get("qu");
    out.push({
      name: m.name,
      quota: q,
      windowSeconds: isNonNegInt(w) ? w : null,
      quotaUnit: typeof qu === "string" ? qu : "requests",
      partitionKey: partitionKey(m.params.get("pk")),
    });
  }
  return out;
}

export function parseRateLimit(value: string | null): RateLimitState[] {
  const out: RateLimitState[] = [];
  for (const m of parseList(value)) {
    const r = m.params.get("r");
    if (!isNonNegInt(r)) continue;
    const t = m.params.get("t");
    out.push({
      name: m.name,
      remaining: r,
      resetSeconds: isNonNegInt(t) ? t : null,
      partitionKey: partitionKey(m.params.get("pk")),
    });
  }
  return out;
}

const isNonNegInt = (v: BareItem | undefined): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;
const partitionKey = (v: BareItem | undefined) => (v instanceof ByteSequence ? v.base64 : null);

// --- RFC 9651 Lists, as much as these headers need -------------------------------------------

/** `:base64:`, kept as sent. */
class ByteSequence {
  constructor(readonly base64: string) {}
}
/** A Token (`foo`), told apart from a String (`"foo"`). */
class Token {
  constructor(readonly value: string) {}
}
type BareItem = number | string | boolean | Token | ByteSequence;

interface Member {
  /** The member's item as a name: a String's or a Token's text (other items name nothing). */
  name: string;
  params: Map<string, BareItem>;
}

class Parser {
  i = 0;
  constructor(readonly s: string) {}
  peek() {
    return this.s[this.i];
  }
  eof() {
    return this.i >= this.s.length;
  }
  fail(what: string): never {
    throw new SyntaxError(`${what} at ${this.i}`);
  }
  skipSp() {
    while (this.peek() === " ") this.i++;
  }
  skipOws() {
    while (this.peek() === " " || this.peek() === "\t") this.i++;
  }

  bareItem(): BareItem {
    const c = this.peek();
    if (c === undefined) this.fail("item expected");
    if (c === "-" || (c >= "0" && c <= "9")) return this.number();
    if (c === '"') return this.string();
    if (c === "*" || /[A-Za-z]/.test(c)) return new Token(this.token());
    if (c === ":") return this.bytes();
    if (c === "?") return this.boolean();
    if (c === "@") {
      this.i++;
      return this.number(); // a Date: seconds since the epoch
    }
    return this.fail(`unexpected ${JSON.stringify(c)}`);
  }

  number(): number {
    const m = /^-?\d{1,15}(\.\d{1,3})?/.exec(this.s.slice(this.i));
    if (!m) this.fail("number expected");
    const [text, frac] = [m[0], m[1]];
    if (!frac && text.replace("-", "").length > 15) this.fail("integer too long");
    if (frac && text.replace("-", "").length - frac.length > 12) this.fail("decimal too long");
    this.i += text.length;
    return Number(text);
  }

  string(): string {
    this.i++; // "
    let out = "";
    for (;;) {
      const c = this.s[this.i++];
      if (c === undefined) this.fail("unterminated string");
      if (c === "\\") {
        const n = this.s[this.i++];
        if (n !== '"' && n !== "\\") this.fail("bad escape");
        out += n;
      } else if (c === '"') {
        return out;
      } else {
        const code = c.charCodeAt(0);
        if (code < 0x20 || code > 0x7e) this.fail("bad character in string");
        out += c;
      }
    }
  }

  token(): string {
    const m = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*/.exec(this.s.slice(this.i));
    if (!m) this.fail("token expected");
    this.i += m[0].length;
    return m[0];
  }

  key(): string {
    const m = /^[a-z*][a-z0-9_\-.*]*/.exec(this.s.slice(this.i));
    if (!m) this.fail("key expected");
    this.i += m[0].length;
    return m[0];
  }

  bytes(): ByteSequence {
    const end = this.s.indexOf(":", this.i + 1);
    if (end < 0) this.fail("unterminated byte sequence");
    const b64 = this.s.slice(this.i + 1, end);
    if (!/^[A-Za-z0-9+/=]*$/.test(b64)) this.fail("bad byte sequence");
    this.i = end + 1;
    return new ByteSequence(b64);
  }

  boolean(): boolean {
    const v = this.s.slice(this.i, this.i + 2);
    if (v !== "?0" && v !== "?1") this.fail("boolean expected");
    this.i += 2;
    return v === "?1";
  }

  params(): Map<string, BareItem> {
    const out = new Map<string, BareItem>();
    while (this.peek() === ";") {
      this.i++;
      this.skipSp();
      const k = this.key();
      let v: BareItem = true;
      if (this.peek() === "=") {
        this.i++;
        v = this.bareItem();
      }
      out.set(k, v); // a later duplicate overrides (RFC 9651 4.2.3.2)
    }
    return out;
  }

  /** An Item or an Inner List, with its parameters. */
  member(): Member {
    if (this.peek() === "(") {
      this.i++;
      for (;;) {
        this.skipSp();
        if (this.peek() === ")") {
          this.i++;
          break;
        }
        this.bareItem();
        this.params();
        const c = this.peek();
        if (c !== " " && c !== ")") this.fail("inner list member expected");
      }
      return { name: "", params: this.params() };
    }
    const item = this.bareItem();
    const name = typeof item === "string" ? item : item instanceof Token ? item.value : "";
    return { name, params: this.params() };
  }
}

function parseList(value: string | null): Member[] {
  if (value === null) return [];
  const p = new Parser(value);
  const out: Member[] = [];
  try {
    p.skipSp();
    while (!p.eof()) {
      out.push(p.member());
      p.skipOws();
      if (p.eof()) break;
      if (p.peek() !== ",") p.fail("comma expected");
      p.i++;
      p.skipOws();
      if (p.eof()) p.fail("trailing comma");
    }
  } catch (e) {
    if (e instanceof SyntaxError) return [];
    throw e;
  }
  return out.filter((m) => m.name !== "");
}
