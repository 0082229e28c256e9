"""The project's own test harness: one `code2des-local` stack per test, driven from outside.

`scripts/smoke`, `scripts/schemathesis-driver.py`, `scripts/faults.py` and `scripts/load.py` import
it (`sys.path` gets `scripts/lib`). It does, in the repository alone, what a black-box check of
the contract needs:

- `local_binary()`: the optimised `code2des-local` to run: `CODE2DES_LOCAL_BIN`, else
  `CONTRACT_EXE`, else `cargo build --release -p code2des-local` (once per process);
- `LocalStack`: that binary on two free loopback ports (`--addr`, `--s3-addr`), its own
  `--data-dir` and its own fresh PostgreSQL database (created by the binary, dropped on close);
- tenants seeded with plain SQL (`seed_tenant`: organization, project, members, a page import);
- the plugin's side (`request`, `trigger`: the `x-code2des-dev-sub` identity of the local stack);
- the worker's side (`read_manifest`, `put_object`, `send_webhook`, `finish_job`): the manifest
  and artifacts through the embedded S3 (boto3, path-style), the webhook signed as
  `Code2des-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`;
- `make_png`, `moto_s3_server` (an S3 server of its own, for the fault drills) and `Checklist`.

Everything listens on 127.0.0.1 only. PostgreSQL: `postgres://postgres@127.0.0.1:5432` with trust
auth (`scripts/ensure-postgres` starts a private one when nothing answers), or the admin URL of
another cluster given to `LocalStack`.
"""
import base64
import contextlib
import dataclasses
import hashlib
import hmac
import json
import os
import secrets
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import typing
import urllib.error
import urllib.request
import zlib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUCKET = "code2des-artifacts"
WEBHOOK_SECRET = os.environ.get("WEBHOOK_SECRET") or "local-webhook-secret"
S3_ACCESS_KEY, S3_SECRET_KEY, S3_REGION = "local", "local-secret", "us-east-1"
DEFAULT_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
DEV_SUB_HEADER = "x-code2des-dev-sub"
SIGNATURE_HEADER = "Code2des-Signature"
MOTO_REQUIREMENT = "moto[server]>=5,<6"
MOTO_VENV = os.environ.get("CODE2DES_MOTO_VENV", "/tmp/code2des-moto-venv")
# Variables of the caller's environment that would point the stack elsewhere than the harness
# looks (another S3, secrets from AWS): never passed on.
_NOT_INHERITED = ("S3_ENDPOINT", "WEBHOOK_SECRET_ARN", "DB_SECRET_ARN", "ARTIFACT_BUCKET", "DATABASE_URL")


class StackError(RuntimeError):
    """The harness could not provide what a test needs (binary, database, a stack that starts)."""


def _import_boto3():
    """boto3 and botocore's Config; pip-installs boto3 first on a machine without it."""
    import importlib
    try:
        importlib.import_module("boto3")
    except ImportError:  # a fresh machine: the harness brings its one dependency itself
        print("code2des_stack: installing boto3 (pip)", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "boto3"],
                       check=True)
    return importlib.import_module("boto3"), importlib.import_module("botocore.config").Config


boto3, BotoConfig = _import_boto3()


# --- the machine: ports, PostgreSQL, the binary -------------------------------------------------
def free_port():
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port, host="127.0.0.1"):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def ensure_postgres():
    """PostgreSQL on 127.0.0.1:5432: the machine's, or a private one `scripts/ensure-postgres` starts."""
    if port_open(5432):
        return
    r = subprocess.run([os.path.join(REPO, "scripts", "ensure-postgres")], capture_output=True, text=True)
    if r.returncode != 0 or not port_open(5432):
        raise StackError(f"no PostgreSQL on 127.0.0.1:5432 and scripts/ensure-postgres failed: {r.stderr.strip()}")


def psql(sql, db_url):
    """Runs one SQL text (ON_ERROR_STOP) and answers psql's unaligned, tuples-only output."""
    if shutil.which("psql") is None:
        raise StackError("psql not found: install the PostgreSQL client (Debian: postgresql-client)")
    out = subprocess.run(["psql", db_url, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise StackError(f"psql failed: {out.stderr.strip()}")
    return out.stdout.strip()


def prebuilt_binary():
    """The `code2des-local` a caller provides (`CODE2DES_LOCAL_BIN`, else `CONTRACT_EXE`), or None."""
    for var in ("CODE2DES_LOCAL_BIN", "CONTRACT_EXE"):
        if os.environ.get(var):
            return os.environ[var]
    return None


def target_dir():
    """Cargo's target directory for this workspace (honours CARGO_TARGET_DIR and .cargo/config)."""
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=REPO,
                          capture_output=True, text=True)
    if meta.returncode != 0:
        raise StackError(f"cargo metadata failed: {meta.stderr.strip()[-2000:]}")
    return json.loads(meta.stdout)["target_directory"]


_binary = None


def local_binary():
    """The optimised `code2des-local` every stack runs: the caller's, or a release build made here once."""
    global _binary
    if _binary:
        return _binary
    exe = prebuilt_binary()
    if exe is None:
        print("code2des_stack: cargo build --release -p code2des-local", flush=True)
        r = subprocess.run(["cargo", "build", "-q", "--release", "--locked", "-p", "code2des-local"], cwd=REPO,
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr[-3000:], file=sys.stderr)
            raise StackError("cargo build --release -p code2des-local failed")
        exe = os.path.join(target_dir(), "release", "code2des-local")
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        raise StackError(f"no executable code2des-local at {exe}")
    _binary = exe
    return exe


def s3_client(endpoint, **config):
    """A boto3 S3 client for the local stack's S3 (or any S3-compatible endpoint): path-style, its fixed
    keys, no retry storms, checksums only where S3 requires them. `config` adds botocore Config fields."""
    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=S3_ACCESS_KEY, aws_secret_access_key=S3_SECRET_KEY,
        region_name=S3_REGION,
        config=BotoConfig(s3={"addressing_style": "path"}, retries={"max_attempts": 2},
                          request_checksum_calculation="when_required",
                          response_checksum_validation="when_required", **config))


def signature_header(raw, t=None, secret=WEBHOOK_SECRET):
    """`Code2des-Signature` for a webhook body: `t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw>")>`."""
    t = int(time.time()) if t is None else t
    mac = hmac.new(secret.encode(), f"{t}.".encode() + raw, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


def _token(n=8):
    return secrets.token_hex(n)[:n]


# --- what the harness answers ----------------------------------------------------------------
class Answer(typing.NamedTuple):
    """One HTTP answer: status (0: no HTTP answer at all), the JSON body (None when empty;
    `{"_raw": ...}` when not JSON; `{"_transport_error": ...}` on status 0) and the headers."""
    status: int
    body: typing.Any
    headers: dict


class Finished(typing.NamedTuple):
    """What `finish_job` did: the webhook's answer and the manifest it worked from."""
    answer: Answer
    manifest: dict


@dataclasses.dataclass(frozen=True)
class Tenant:
    """A seeded organization: its project, its completed page import, its first member's sub."""
    org: int
    project: int
    page_import: str
    sub: typing.Optional[str]


# --- one stack ---------------------------------------------------------------------------------
class LocalStack:
    """`code2des-local` on free loopback ports with its own data dir and a fresh database.

    `env` is added to the stack's environment (an `S3_ENDPOINT` there makes it use that S3 instead
    of its embedded one); `admin_url` is the maintenance database of the PostgreSQL cluster to
    use (default: the machine's on 5432, started when needed). Use it as a context manager, or
    call `close()`: the process stops, the database is dropped, the scratch dir removed.

    Attributes: `port`, `s3_port`, `base` (the API's URL), `s3_endpoint`, `db_name`, `db_url`,
    `dir` (scratch: the data dir and `stack.log`), `s3` (a boto3 client for `s3_endpoint`).
    """

    def __init__(self, env=None, admin_url=None, tag="stack"):
        env = dict(env or {})
        if admin_url is None:
            ensure_postgres()
            admin_url = DEFAULT_ADMIN_URL
        self.admin_url = admin_url
        self.db_name = f"c2d_{tag}_{_token(10)}"
        self.db_url = f"{admin_url.rsplit('/', 1)[0]}/{self.db_name}"
        self.port, self.s3_port = free_port(), free_port()
        self.dir = tempfile.mkdtemp(prefix=f"code2des-{tag}-")
        self.log_path = os.path.join(self.dir, "stack.log")
        self.base = f"http://127.0.0.1:{self.port}"
        self.embedded_s3 = "S3_ENDPOINT" not in env
        self.s3_endpoint = env.get("S3_ENDPOINT", f"http://127.0.0.1:{self.s3_port}")
        self.proc = None
        run_env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
        run_env.setdefault("RUST_LOG", "info")
        # A test drives many jobs per tenant: no quota (per-org active jobs, triggers per minute)
        # unless the caller's env or `env` sets one.
        run_env.setdefault("MAX_ACTIVE_JOBS_PER_ORG", "1000000")
        run_env.setdefault("TRIGGERS_PER_MINUTE", "1000000")
        run_env.update({"DATABASE_URL": self.db_url, "WEBHOOK_SECRET": WEBHOOK_SECRET, "ARTIFACT_BUCKET": BUCKET})
        run_env.update(env)
        exe = local_binary()
        try:
            with open(self.log_path, "w") as log:
                self.proc = subprocess.Popen(
                    [exe, "--addr", f"127.0.0.1:{self.port}", "--s3-addr", f"127.0.0.1:{self.s3_port}",
                     "--data-dir", os.path.join(self.dir, "data")],
                    cwd=REPO, env=run_env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            deadline = time.time() + 60
            while not port_open(self.port) or (self.embedded_s3 and not port_open(self.s3_port)):
                if self.proc.poll() is not None or time.time() > deadline:
                    raise StackError("code2des-local did not start:\n" + self.log()[-2000:])
                time.sleep(0.1)
            self.s3 = s3_client(self.s3_endpoint)
        except BaseException:
            self.close()
            raise

    def log(self):
        """The stack's own output so far (stdout and stderr)."""
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        with contextlib.suppress(Exception):
            psql(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)', self.admin_url)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- the database, as the product's other services fill it ---------------------------------
    def sql(self, query):
        """One SQL text against the stack's database; psql's `a|b` rows, one a line."""
        return psql(query, self.db_url)

    def seed_tenant(self, members=("user-a",), page_status="1"):
        """An organization with one project, these members, and one page import of that status
        ('1' completed, what a trigger needs). SPEC section 2's tables, in plain SQL."""
        org = int(self.sql(f"INSERT INTO organization(name) VALUES ('org {_token()}') RETURNING id"))
        project = int(self.sql(f"INSERT INTO project(organization_id, name) VALUES ({org}, 'p') RETURNING id"))
        for sub in members:
            self.sql(f"INSERT INTO organization_member(organization_id, subject) VALUES ({org}, '{sub}')")
        page_import = "pi-" + _token(12)
        self.sql("INSERT INTO page_import(id, organization_id, project_id, status, capture_url) "
                 f"VALUES ('{page_import}', {org}, {project}, '{page_status}', "
                 f"'s3://{BUCKET}/captures/{page_import}.json')")
        return Tenant(org, project, page_import, members[0] if members else None)

    # --- the plugin's side -------------------------------------------------------------------
    def request(self, method, path, sub=None, body=None, headers=None, raw=None, timeout=30):
        """One API call as user `sub` (None: no identity). `body` goes as JSON, `raw` as given bytes."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("content-type", "application/json")
        if sub is not None:
            req.add_header(DEV_SUB_HEADER, sub)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, text, hdrs = r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            status, text, hdrs = e.code, e.read(), dict(e.headers)
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            return Answer(0, {"_transport_error": repr(e)}, {})
        try:
            payload = json.loads(text) if text else None
        except ValueError:
            payload = {"_raw": text[:200].decode(errors="replace")}
        return Answer(status, payload, hdrs)

    @staticmethod
    def jobs_path(tenant):
        """`/organizations/{org}/projects/{project}/code2des` of a tenant."""
        return f"/organizations/{tenant.org}/projects/{tenant.project}/code2des"

    def trigger(self, tenant, sub=None, **fields):
        """POST a new job for the tenant's page import; `fields` override the body's members."""
        body = {"pageImportId": tenant.page_import, "figmaFileKey": "FILEkey123", "screenId": "screen-1"}
        body.update(fields)
        return self.request("POST", self.jobs_path(tenant), sub or tenant.sub, body)

    # --- the worker's side -------------------------------------------------------------------
    def read_manifest(self, job_id, attempt=1):
        """The manifest the trigger (or a retry) wrote for that attempt."""
        obj = self.s3.get_object(Bucket=BUCKET, Key=f"code2des/{job_id}/{attempt}/manifest.json")
        return json.loads(obj["Body"].read())

    def put_object(self, key, data, content_type="application/octet-stream"):
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=data, ContentType=content_type)

    def send_webhook(self, report, secret=WEBHOOK_SECRET, t=None, raw=None, signature=None):
        """POST a worker report to /code2des/webhook, signed over the exact bytes sent (`raw`, else
        `report` as JSON) at time `t`; `signature` replaces the whole header (to test refusals)."""
        raw = raw if raw is not None else json.dumps(report).encode()
        header = signature if signature is not None else signature_header(raw, t, secret)
        return self.request("POST", "/code2des/webhook", raw=raw, headers={SIGNATURE_HEADER: header})

    def finish_job(self, job_id, images=None, warning_count=0, kind="result", document=None, nonce=None):
        """Do a worker's job: read the manifest, write the images (`{ref: (bytes, mime)}`) and the
        artifact under its result prefix, then send the signed terminal report (`completed` for
        kind `result`, `failed` for `failure`). `nonce` overrides the artifact's nonce only."""
        m = self.read_manifest(job_id)
        prefix = f"code2des/{job_id}/{m['attempt']}/"
        stored = {}
        for ref, (data, mime) in (images or {}).items():
            key = f"{prefix}images/{ref}"
            self.put_object(key, data, mime)
            stored[ref] = {"key": key, "mime_type": mime}
        if document is None:
            document = {"type": "FRAME", "name": "Screen", "width": 1440, "height": 900,
                        "children": [{"type": "RECTANGLE", "name": f"img {ref}",
                                      "fills": [{"type": "IMAGE", "imageRef": ref, "scaleMode": "FILL"}]}
                                     for ref in stored]}
        artifact = {"version": 1, "kind": kind, "code2des_id": job_id, "attempt": m["attempt"],
                    "nonce": nonce or m["nonce"], "warning_count": warning_count, "document": document,
                    "images": stored}
        self.put_object(prefix + "result.json", json.dumps(artifact).encode(), "application/json")
        report = {"code2des_id": job_id, "attempt": m["attempt"], "nonce": m["nonce"],
                  "status": "completed" if kind == "result" else "failed",
                  "result_url": f"s3://{BUCKET}/{prefix}result.json", "warning_count": warning_count}
        return Finished(self.send_webhook(report), m)


# --- test material ---------------------------------------------------------------------------------
def make_png(width=2, height=2, seed=0, noise=False):
    """A valid RGB PNG of that size (the header's dimensions are what the result checks);
    `noise` fills it with random bytes, so it does not compress."""
    if noise:
        rows = b"".join(b"\x00" + os.urandom(width * 3) for _ in range(height))
    else:
        rows = b"".join(b"\x00" + bytes((x * 7 + y * 13 + seed) % 256 for x in range(width * 3))
                        for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def b64decode(text):
    """Base64 text to bytes; None when it is not base64."""
    try:
        return base64.b64decode(text or "", validate=True)
    except (ValueError, TypeError):
        return None


def ensure_moto():
    """The moto S3 server's virtualenv (MOTO_VENV), (re)installed when missing or its pin changed;
    answers the `moto_server` executable."""
    exe = os.path.join(MOTO_VENV, "bin", "moto_server")
    marker = os.path.join(MOTO_VENV, ".pins")
    with contextlib.suppress(OSError), open(marker) as f:
        if f.read().strip() == MOTO_REQUIREMENT and os.path.exists(exe):
            return exe
    print(f"code2des_stack: installing {MOTO_REQUIREMENT} into {MOTO_VENV}", flush=True)
    shutil.rmtree(MOTO_VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", MOTO_VENV], check=True)
    subprocess.run([os.path.join(MOTO_VENV, "bin", "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", MOTO_REQUIREMENT], check=True)
    with open(marker, "w") as f:
        f.write(MOTO_REQUIREMENT + "\n")
    return exe


def moto_s3_server():
    """An S3 server in a process of its own (moto) on a free loopback port, for tests that kill or
    hang S3. Answers (Popen, endpoint URL)."""
    exe = ensure_moto()
    port = free_port()
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while not port_open(port):
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise StackError("moto_server did not start")
        time.sleep(0.1)
    return proc, f"http://127.0.0.1:{port}"


class Checklist:
    """Named checks: each failure printed when it happens, a closing `name: k/n checks hold` line,
    and `finish()` exits 0 only when there was at least one check and none failed."""

    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, []

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed.append(what)
            print("FAIL:", what, flush=True)
        return bool(cond)

    def finish(self):
        total = self.passed + len(self.failed)
        print(f"{self.name}: {self.passed}/{total} checks hold", flush=True)
        sys.exit(0 if total and not self.failed else 1)


if __name__ == "__main__":
    # `python3 scripts/lib/code2des_stack.py install`: what the harness needs, installed now
    # (boto3 is, by importing this module; moto's virtualenv), so no test pays for it later.
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: code2des_stack.py install")
    print(f"code2des_stack: boto3 {boto3.__version__}; moto_server at {ensure_moto()}")
