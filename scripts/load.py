#!/usr/bin/env python3
"""Bounded load run on loopback against the release local stack (issue 6, "Load").

LOAD_REQUESTS (default 10 000) API requests from LOAD_CONCURRENCY (default 32) threads, each
on its own keep-alive connection, in a mix: list/get ~50%, trigger ~15%, signed worker
completions ~15% (the worker protocol: manifest read from S3, artifact and an image written,
webhook signed), placements ~10%, results ~10%. A few requests are designed to be refused
(placement or result of a job still processing -> 409); any other non-2xx, any 5xx, any
transport error is an error. At the end the rows must match the answers: jobs = triggers
answered 202, completed = completion webhooks answered 200, materialized = jobs placed with
200, and every placement answer of a job names the same first root.

Prints throughput, p50/p99 per route and error counts; exits non-zero on any error or
inconsistency. Stops by itself (count-bounded, and a hard time limit).
"""
import http.client
import json
import os
import random
import signal
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO)
sys.path.insert(0, os.path.join(REPO, "scripts", "lib"))
import code2des_stack as harness  # noqa: E402  (installs boto3 itself when missing)

TOTAL = int(os.environ.get("LOAD_REQUESTS", "10000"))
CONCURRENCY = int(os.environ.get("LOAD_CONCURRENCY", "32"))
TIME_LIMIT = int(os.environ.get("LOAD_TIME_LIMIT", "240"))  # seconds for the run itself
TENANTS = 4
PNG = harness.make_png(8, 8)


class Client:
    """One keep-alive HTTP/1.1 connection; reconnects after a transport error."""

    def __init__(self, port):
        self.port = port
        self.conn = None

    def request(self, method, path, body=None, headers=None):
        hdrs = dict(headers or {})
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            hdrs["content-type"] = "application/json"
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            self.conn.request(method, path, body=data, headers=hdrs)
            r = self.conn.getresponse()
            raw = r.read()
            if r.getheader("connection", "").lower() == "close":
                self.conn.close()
                self.conn = None
            return r.status, (json.loads(raw) if raw else None)
        except (OSError, http.client.HTTPException, ValueError) as e:
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            return 0, {"_transport_error": repr(e)}


def s3_client(s):
    return harness.s3_client(f"http://127.0.0.1:{s.s3_port}", max_pool_connections=4)


class Run:
    def __init__(self, s, tenants):
        self.s = s
        self.tenants = tenants
        self.lock = threading.Lock()
        self.issued = 0
        self.lat = {}  # route -> [seconds]
        self.status = {}  # "route status" -> count
        self.errors = []
        self.refused = 0  # designed 4xx
        self.triggered = {}  # id -> tenant index
        self.processing = []  # (id, tenant index), dispatched, not yet completed
        self.completed = {}  # id -> tenant index
        self.placed = {}  # id -> set of materializedNodeId answered
        self.deadline = time.time() + TIME_LIMIT

    def take(self):
        with self.lock:
            if self.issued >= TOTAL or time.time() > self.deadline:
                return False
            self.issued += 1
            return True

    def note(self, route, status, seconds, body, designed=()):
        with self.lock:
            self.lat.setdefault(route, []).append(seconds)
            k = f"{route} {status}"
            self.status[k] = self.status.get(k, 0) + 1
            if 200 <= status < 300:
                return True
            if status in designed:
                self.refused += 1
                return False
            if len(self.errors) < 20:
                self.errors.append(f"{route}: {status} {json.dumps(body)[:200]}")
            else:
                self.errors.append(None)
            return False

    def call(self, c, route, method, path, sub=None, body=None, headers=None, designed=()):
        hdrs = dict(headers or {})
        if sub:
            hdrs["x-code2des-dev-sub"] = sub
        t0 = time.perf_counter()
        status, payload = c.request(method, path, body, hdrs)
        ok = self.note(route, status, time.perf_counter() - t0, payload, designed)
        return ok, status, payload

    def worker(self, n):
        rnd = random.Random(n)
        c = Client(self.s.port)
        s3 = s3_client(self.s)
        while self.take():
            r = rnd.random()
            ti = rnd.randrange(len(self.tenants))
            t = self.tenants[ti]
            base = self.s.jobs_path(t)
            with self.lock:
                done = [j for j, i in self.completed.items() if i == ti]
                mine = [j for j, i in self.triggered.items() if i == ti]
            if r < 0.15 or not mine:
                ok, _, body = self.call(c, "trigger", "POST", base, t.sub,
                                        {"pageImportId": t.page_import, "figmaFileKey": f"FILE{n % 3}",
                                         "screenId": f"screen-{n}-{rnd.randrange(10**9)}"})
                if ok:
                    with self.lock:
                        self.triggered[body["code2desId"]] = ti
                        self.processing.append((body["code2desId"], ti))
            elif r < 0.30:
                with self.lock:
                    job = self.processing.pop(rnd.randrange(len(self.processing))) if self.processing else None
                if job is None:
                    self.call(c, "list", "GET", base + "?limit=20", t.sub)
                    continue
                self.complete(c, s3, *job)
            elif r < 0.40:
                if done and rnd.random() < 0.95:
                    jid = rnd.choice(done)
                    node = f"{rnd.randrange(1, 999)}:{rnd.randrange(1, 999)}"
                    ok, _, body = self.call(c, "placement", "POST", f"{base}/{jid}/placement", t.sub,
                                            {"nodeId": node})
                    if ok:
                        with self.lock:
                            self.placed.setdefault(jid, set()).add(body["materializedNodeId"])
                else:  # designed refusal: a job not completed cannot be placed
                    jid = self.processing_of(ti) or rnd.choice(mine)
                    ok, _, body = self.call(c, "placement", "POST", f"{base}/{jid}/placement", t.sub,
                                            {"nodeId": "1:1"}, designed=(409,) if jid not in self.completed else ())
                    if ok:  # the worker completed it meanwhile: a real first placement
                        with self.lock:
                            self.placed.setdefault(jid, set()).add(body["materializedNodeId"])
            elif r < 0.50:
                if done and rnd.random() < 0.95:
                    self.call(c, "result", "GET", f"{base}/{rnd.choice(done)}/result", t.sub)
                else:  # designed refusal: processing -> 409 not_ready
                    jid = self.processing_of(ti) or rnd.choice(mine)
                    self.call(c, "result", "GET", f"{base}/{jid}/result", t.sub,
                              designed=(409,) if jid not in self.completed else ())
            elif r < 0.75:
                self.call(c, "get", "GET", f"{base}/{rnd.choice(mine)}", t.sub)
            else:
                q = rnd.choice(["?limit=20", "?status=completed&limit=10", f"?figmaFileKey=FILE{n % 3}", ""])
                self.call(c, "list", "GET", base + q, t.sub)

    def processing_of(self, ti):
        with self.lock:
            for j, i in self.processing:
                if i == ti:
                    return j
        return None

    def complete(self, c, s3, jid, ti):
        """The worker protocol: manifest from S3, image + artifact to S3, then the signed webhook."""
        try:
            m = json.loads(s3.get_object(Bucket=harness.BUCKET, Key=f"code2des/{jid}/1/manifest.json")["Body"].read())
            prefix = f"code2des/{jid}/{m['attempt']}/"
            s3.put_object(Bucket=harness.BUCKET, Key=prefix + "images/logo", Body=PNG, ContentType="image/png")
            artifact = {"version": 1, "kind": "result", "code2des_id": jid, "attempt": m["attempt"],
                        "nonce": m["nonce"], "warning_count": 1,
                        "document": {"type": "FRAME", "name": "Screen", "width": 1440, "height": 900,
                                     "children": [{"type": "RECTANGLE", "name": "logo",
                                                   "fills": [{"type": "IMAGE", "imageRef": "logo"}]},
                                                  {"type": "TEXT", "name": "title", "characters": "Hello"}]},
                        "images": {"logo": {"key": prefix + "images/logo", "mime_type": "image/png"}}}
            s3.put_object(Bucket=harness.BUCKET, Key=prefix + "result.json", Body=json.dumps(artifact).encode(),
                          ContentType="application/json")
        except Exception as e:  # the worker's side of the run failed: count it, do not hide it
            with self.lock:
                self.errors.append(f"worker S3 step for {jid}: {e!r}")
            return
        body = json.dumps({"code2des_id": jid, "attempt": m["attempt"], "nonce": m["nonce"], "status": "completed",
                           "result_url": f"s3://{harness.BUCKET}/{prefix}result.json", "warning_count": 1}).encode()
        ok, _, _ = self.call(c, "webhook", "POST", "/code2des/webhook", body=body,
                             headers={"Code2des-Signature": harness.signature_header(body, int(time.time()))})
        if ok:
            with self.lock:
                self.completed[jid] = ti


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] * 1000 if xs else 0.0


def main():
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("load.py past its hard limit")))
    signal.alarm(TIME_LIMIT + 120 + (0 if harness.prebuilt_binary() else 600))
    harness.local_binary()
    bad = []
    with harness.LocalStack(env={"RUST_LOG": "warn"}, tag="load") as s:
        tenants = [s.seed_tenant(members=(f"load-user-{i}",)) for i in range(TENANTS)]
        run = Run(s, tenants)
        threads = [threading.Thread(target=run.worker, args=(n,), daemon=True) for n in range(CONCURRENCY)]
        t0 = time.time()
        for th in threads:
            th.start()
        for th in threads:
            th.join(TIME_LIMIT + 60)
        wall = time.time() - t0
        if any(th.is_alive() for th in threads):
            bad.append("a client thread did not finish")
        n = sum(len(v) for v in run.lat.values())
        if n < TOTAL:
            bad.append(f"only {n} of {TOTAL} requests ran within {TIME_LIMIT} s")

        # The rows must match the answers.
        for ti, t in enumerate(tenants):
            where = f"organization_id = {t.org} AND project_id = {t.project}"
            jobs, done, mat, proc = map(int, s.sql(
                f"SELECT count(*), count(*) FILTER (WHERE status = '1'), "
                f"count(*) FILTER (WHERE materialized_node_id IS NOT NULL), count(*) FILTER (WHERE status = '0') "
                f"FROM code2des WHERE {where}").split("|"))
            want_jobs = sum(1 for i in run.triggered.values() if i == ti)
            want_done = sum(1 for i in run.completed.values() if i == ti)
            want_mat = sum(1 for j in run.placed if run.triggered.get(j) == ti)
            if (jobs, done, mat, proc) != (want_jobs, want_done, want_mat, want_jobs - want_done):
                bad.append(f"tenant {ti}: rows jobs/completed/materialized/processing = {jobs}/{done}/{mat}/{proc}, "
                           f"answers say {want_jobs}/{want_done}/{want_mat}/{want_jobs - want_done}")
        nodes = dict(line.split("|") for line in s.sql(
            "SELECT id, materialized_node_id FROM code2des WHERE materialized_node_id IS NOT NULL").splitlines())
        for jid, seen in run.placed.items():
            if len(seen) != 1 or nodes.get(jid) not in seen:
                bad.append(f"placement of {jid}: answers named {sorted(seen)}, row has {nodes.get(jid)}")
        if "panicked" in s.log():
            bad.append("the stack log shows a panic")

    errors = run.errors
    print(f"== load: {n} requests, concurrency {CONCURRENCY}, {wall:.1f} s, {n / wall:.0f} requests/s")
    print(f"   {'route':<10} {'count':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for route in sorted(run.lat):
        xs = run.lat[route]
        print(f"   {route:<10} {len(xs):>6} {pct(xs, 50):>8.1f} {pct(xs, 99):>8.1f} {max(xs) * 1000:>8.1f}")
    allx = [x for xs in run.lat.values() for x in xs]
    print(f"   {'all':<10} {len(allx):>6} {pct(allx, 50):>8.1f} {pct(allx, 99):>8.1f} {max(allx) * 1000:>8.1f}")
    print("   answers: " + ", ".join(f"{k}: {v}" for k, v in sorted(run.status.items())))
    n5xx = sum(v for k, v in run.status.items() if k.split()[-1].startswith("5"))
    n0 = sum(v for k, v in run.status.items() if k.split()[-1] == "0")
    print(f"   errors: {len(errors)} (5xx {n5xx}, transport {n0}); designed refusals (409): {run.refused}")
    print(f"   rows: {len(run.triggered)} jobs = triggers 202; {len(run.completed)} completed = webhooks 200; "
          f"{len(run.placed)} materialized = jobs placed; {len(run.triggered) - len(run.completed)} still processing "
          "(dispatched, not yet completed by the worker)")
    for e in [e for e in errors if e][:20]:
        print("   ERROR:", e)
    for b in bad:
        print("   INCONSISTENT:", b)
    ok = not errors and not bad
    print("load: " + ("PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
