#!/usr/bin/env python3
"""Drills for SLOW dependencies (issue 29), against the release local stack: faults.py kills and
freezes them; these slow them down, behind a TCP proxy that can be switched while it runs.

  s3-late-many      S3 answers every request 4.5 s late (just under the SDK's 5 s attempt
                    timeout), and the job's result has 200 images: the case that answered 200
                    after 38 s before the request budget
  s3-past-attempt   S3 answers every request 6 s late (past the attempt timeout)
  s3-trickle        S3 sends its bodies at 2 KB/s
  pg-late           PostgreSQL answers every round trip 6 s late
  row-locked        another session holds a job's row FOR UPDATE
  compensate-late   S3 swallows the manifest PUT and PostgreSQL answers every round trip 7 s
                    late: the trigger's dispatch fails at the end of the budget and its
                    compensation (failing the attempt) runs on the slow database

(The fifth fault, a slow Secrets Manager, has no place in the local stack, which takes its webhook
keys from the environment: shared/tests/slow_secrets.rs drills it against an emulated endpoint.)

Under each fault every route answers within BOUND (25 s): its normal answer, or a 503 with
Retry-After. After recovery nothing is lost: the result is served whole (deferred images by
`?images=`), no job is left processing without a manifest, and a refused webhook is taken on
redelivery. The drills run side by side, each on its own stack and proxy; `--rounds N` runs them
N times in a row (docs/RELIABILITY.md has the table). Exits non-zero on any violation.
"""
import argparse
import json
import os
import socket
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts", "lib"))
import code2des_stack as harness  # noqa: E402

BOUND = 25.0
IMAGES = 200
violations = []
results = []  # (drill, route, status, seconds)
lock = threading.Lock()


def violation(drill, msg):
    with lock:
        violations.append(f"{drill}: {msg}")
    print(f"VIOLATION {drill}: {msg}", flush=True)


def has_retry_after(hdrs):
    return any(k.lower() == "retry-after" for k in hdrs)


class Proxy:
    """A TCP proxy to 127.0.0.1:target whose mode can change while it runs: `pass`; `late`,
    every response's first bytes held `delay` seconds after the request that asked for them;
    `trickle`, every response sent at `rate` bytes a second; `hang`, every request swallowed
    (never forwarded, so never done) and nothing answered."""

    def __init__(self, target):
        self.target, self.mode, self.delay, self.rate = target, "pass", 0.0, 2048
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def set(self, mode, delay=0.0, rate=2048):
        self.mode, self.delay, self.rate = mode, delay, rate

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                c.close()
                continue
            asked = threading.Event()  # a request went up since the last response came down
            threading.Thread(target=self._up, args=(c, up, asked), daemon=True).start()
            threading.Thread(target=self._down, args=(up, c, asked), daemon=True).start()

    def _up(self, c, up, asked):
        try:
            while data := c.recv(65536):
                if self.mode == "hang":
                    continue
                asked.set()
                up.sendall(data)
        except OSError:
            pass
        for s in (c, up):
            with contextlib_suppress():
                s.shutdown(socket.SHUT_RDWR)

    def _down(self, up, c, asked):
        try:
            while data := up.recv(65536):
                if self.mode == "late" and asked.is_set():
                    asked.clear()
                    time.sleep(self.delay)
                if self.mode == "trickle":
                    step = max(1, self.rate // 10)
                    for i in range(0, len(data), step):
                        c.sendall(data[i:i + step])
                        time.sleep(0.1)
                else:
                    c.sendall(data)
        except OSError:
            pass
        for s in (c, up):
            with contextlib_suppress():
                s.shutdown(socket.SHUT_RDWR)


class contextlib_suppress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return True


def timed(stack, drill, route, method, path, sub, body=None, headers=None, ok=(200,)):
    t0 = time.time()
    st, payload, hdrs = stack.request(method, path, sub, body, headers=headers, timeout=60)
    took = time.time() - t0
    with lock:
        results.append((drill, route, st, took))
    if took > BOUND:
        violation(drill, f"{route} answered {st} after {took:.1f} s (bound {BOUND:.0f} s)")
    elif st == 503 and not has_retry_after(hdrs):
        violation(drill, f"{route} answered 503 without Retry-After")
    elif st not in ok and st != 503:
        violation(drill, f"{route} answered {st}: {payload}")
    return st, payload, hdrs, took


def many_images():
    return {f"img{i:03}": (harness.make_png(8, 8, seed=i, noise=True), "image/png") for i in range(IMAGES)}


def whole_result(stack, t, job_id, drill):
    """After recovery: the result, with every deferred image fetched by `?images=`."""
    base = f"{stack.jobs_path(t)}/{job_id}/result"
    st, body, _ = stack.request("GET", base, t.sub)
    if st != 200:
        return violation(drill, f"result after recovery: {st} {body}")
    got, deferred = set(body["images"]), list(body["deferredImages"])
    while deferred:
        batch, deferred = deferred[:100], deferred[100:]
        st, more, _ = stack.request("GET", f"{base}?images={','.join(batch)}", t.sub)
        if st != 200:
            return violation(drill, f"?images= after recovery: {st} {more}")
        got |= set(more["images"])
        deferred += more["deferredImages"]
    expected = len(body["images"]) + len(body["deferredImages"])
    if len(got) != expected:
        violation(drill, f"after recovery {len(got)} of {expected} images were served")


def nothing_stuck(stack, drill):
    """No job processing without its manifest (a dispatch refused half-way)."""
    for line in stack.sql("SELECT id, attempt FROM code2des WHERE status = '0'").splitlines():
        job_id, attempt = line.split("|")
        try:
            stack.read_manifest(job_id, int(attempt))
        except Exception:
            violation(drill, f"job {job_id} is processing with no manifest")


def s3_stack(drill, pg_url):
    """A stack whose S3 (moto, its own process) is reached through a proxy."""
    moto, endpoint = harness.moto_s3_server()
    proxy = Proxy(int(endpoint.rsplit(":", 1)[1]))
    stack = harness.LocalStack(admin_url=pg_url, tag=drill.replace("-", ""),
                               env={"S3_ENDPOINT": f"http://127.0.0.1:{proxy.port}"})
    return moto, proxy, stack


def s3_drill(drill, pg_url, mode, delay=0.0, rate=2048):
    moto, proxy, s = s3_stack(drill, pg_url)
    try:
        t = s.seed_tenant()
        st, body, _ = s.trigger(t)
        job = body["code2desId"]
        (st, _, _), _m = s.finish_job(job, images=many_images())
        if st != 200:
            return violation(drill, f"completion with S3 up: {st}")
        proxy.set(mode, delay, rate)
        base = s.jobs_path(t)
        timed(s, drill, "result", "GET", f"{base}/{job}/result", t.sub)
        timed(s, drill, "result ?images=", "GET", f"{base}/{job}/result?images=img000,img001", t.sub)
        timed(s, drill, "trigger", "POST", base, t.sub,
              {"pageImportId": t.page_import, "figmaFileKey": "FILEkey123", "screenId": "s"}, ok=(202,))
        timed(s, drill, "get", "GET", f"{base}/{job}", t.sub)
        timed(s, drill, "list", "GET", base, t.sub)
        timed(s, drill, "placement", "POST", f"{base}/{job}/placement", t.sub, {"nodeId": "1:2"})
        proxy.set("pass")
        whole_result(s, t, job, drill)
        nothing_stuck(s, drill)
    finally:
        proxy.set("pass")
        s.close()
        moto.kill()


def pg_drill(drill, pg_url):
    """PostgreSQL behind a proxy that answers each round trip 6 s late."""
    port = int(pg_url.rsplit(":", 1)[1].split("/")[0])
    proxy = Proxy(port)
    db_name = f"c2d_pglate_{harness._token(8)}"
    via_proxy = f"postgres://postgres@127.0.0.1:{proxy.port}/{db_name}"
    s = harness.LocalStack(admin_url=pg_url, tag="pglate", env={"DATABASE_URL": via_proxy})
    s.db_name, s.db_url = db_name, pg_url.rsplit("/", 1)[0] + "/" + db_name
    try:
        t = s.seed_tenant()
        st, body, _ = s.trigger(t)
        job = body["code2desId"]
        (st, _, _), m = s.finish_job(job)
        st, body, _ = s.trigger(t)
        running = body["code2desId"]
        rm = s.read_manifest(running)
        proxy.set("late", 6.0)
        base = s.jobs_path(t)
        report = {"code2des_id": running, "attempt": rm["attempt"], "nonce": rm["nonce"], "status": "failed",
                  "error_message": "drill"}
        threads = [threading.Thread(target=timed, args=a, kwargs=k, daemon=True) for a, k in [
            ((s, drill, "trigger", "POST", base, t.sub,
              {"pageImportId": t.page_import, "figmaFileKey": "FILEkey123", "screenId": "late"}), {"ok": (202,)}),
            ((s, drill, "get", "GET", f"{base}/{job}", t.sub), {}),
            ((s, drill, "list", "GET", base, t.sub), {}),
            ((s, drill, "result", "GET", f"{base}/{job}/result", t.sub), {}),
            ((s, drill, "placement", "POST", f"{base}/{job}/placement", t.sub, {"nodeId": "1:2"}), {}),
        ]]
        for th in threads:
            th.start()
        t0 = time.time()
        st, _, hd = s.send_webhook(report)
        took = time.time() - t0
        with lock:
            results.append((drill, "webhook", st, took))
        if took > BOUND or (st == 503 and not has_retry_after(hd)) or st not in (200, 503):
            violation(drill, f"webhook answered {st} after {took:.1f} s")
        for th in threads:
            th.join(70)
        proxy.set("pass")
        time.sleep(1)
        st, _, _ = s.send_webhook(report)  # the worker's redelivery
        if st != 200:
            violation(drill, f"the webhook's redelivery after recovery answered {st}")
        nothing_stuck(s, drill)
    finally:
        proxy.set("pass")
        s.close()


def lock_drill(drill, pg_url):
    """Another session holds a processing job's row FOR UPDATE for 30 s."""
    import subprocess
    s = harness.LocalStack(admin_url=pg_url, tag="locked")
    holder = None
    try:
        t = s.seed_tenant()
        st, body, _ = s.trigger(t)
        job = body["code2desId"]
        m = s.read_manifest(job)
        holder = subprocess.Popen(["psql", "-q", "-v", "ON_ERROR_STOP=1", s.db_url, "-c",
                                   f"BEGIN; SELECT 1 FROM code2des WHERE id = '{job}' FOR UPDATE; "
                                   "SELECT pg_sleep(30); COMMIT;"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline and "t" not in s.sql(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE query LIKE '%FOR UPDATE%' "
                "AND state = 'active' AND pid <> pg_backend_pid())"):
            time.sleep(0.1)
        base = s.jobs_path(t)
        report = {"code2des_id": job, "attempt": m["attempt"], "nonce": m["nonce"], "status": "failed",
                  "error_message": "drill"}
        ths = [threading.Thread(target=timed, args=a, kwargs=k, daemon=True) for a, k in [
            ((s, drill, "get", "GET", f"{base}/{job}", t.sub), {}),
            ((s, drill, "cancel", "POST", f"{base}/{job}/cancel", t.sub), {}),
            ((s, drill, "retry", "POST", f"{base}/{job}/retry", t.sub), {"ok": (409,)}),
            ((s, drill, "placement", "POST", f"{base}/{job}/placement", t.sub, {"nodeId": "1:2"}), {"ok": (409,)}),
            ((s, drill, "delete", "DELETE", f"{base}/{job}", t.sub), {"ok": (204,)}),
        ]]
        for th in ths:
            th.start()
        t0 = time.time()
        st, _, hd = s.send_webhook(report)
        took = time.time() - t0
        with lock:
            results.append((drill, "webhook", st, took))
        if took > BOUND or (st == 503 and not has_retry_after(hd)) or st not in (200, 503):
            violation(drill, f"webhook answered {st} after {took:.1f} s")
        for th in ths:
            th.join(70)
        # Killing psql would leave its backend asleep with the lock: end the backend itself.
        s.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%FOR UPDATE%' "
              "AND pid <> pg_backend_pid()")
        holder.wait(10)
        time.sleep(0.5)
        # What the 503s refused did not happen later: the row changed only by what was answered.
        row = s.sql(f"SELECT status::text, deleted_at IS NOT NULL FROM code2des WHERE id = '{job}'")
        answered = {r[1]: r[2] for r in results if r[0] == drill}
        if answered.get("delete") == 503 and row.endswith("|t"):
            violation(drill, "a delete answered 503 deleted the job once the lock went away")
        if answered.get("webhook") == 503 and answered.get("cancel") == 503 and not row.startswith("0|"):
            violation(drill, f"refused writes changed the job later: {row}")
        st, _, _ = s.send_webhook(report)  # the worker's redelivery
        if st not in (200, 409, 410):  # taken, or answered as the job now is (cancelled, deleted)
            violation(drill, f"the webhook's redelivery after the lock answered {st}")
        nothing_stuck(s, drill)
    finally:
        if holder and holder.poll() is None:
            holder.kill()
        s.close()


def compensate_drill(drill, pg_url, delay=7.0):
    """The trigger's manifest PUT hangs (swallowed by S3's proxy, so the manifest is never
    written) while PostgreSQL answers every round trip `delay` s late. BEGIN with the INSERT and
    then the COMMIT take 2 x 7 s; the PUT hangs until the request's budget ends; dispatch then
    fails the attempt on a budget of its own (shared::budget::compensate) against the slow
    database. The answer must still come within BOUND: the backstop and the compensation's
    budget used to overlap (budget 25 s + 2 s of compensation, backstop at 26.5 s). After
    recovery the attempt is failed with the dispatch error, not processing with no manifest, and
    its Idempotency-Key is released: the same trigger again is dispatched."""
    port = int(pg_url.rsplit(":", 1)[1].split("/")[0])
    pg = Proxy(port)
    db_name = f"c2d_complate_{harness._token(8)}"
    moto, endpoint = harness.moto_s3_server()
    s3 = Proxy(int(endpoint.rsplit(":", 1)[1]))
    s = harness.LocalStack(admin_url=pg_url, tag="complate",
                           env={"DATABASE_URL": f"postgres://postgres@127.0.0.1:{pg.port}/{db_name}",
                                "S3_ENDPOINT": f"http://127.0.0.1:{s3.port}"})
    s.db_name, s.db_url = db_name, pg_url.rsplit("/", 1)[0] + "/" + db_name
    try:
        t = s.seed_tenant()
        st, _, _ = s.trigger(t)  # warms the pool: the drilled trigger needs no new connection
        if st != 202:
            return violation(drill, f"trigger with everything up: {st}")
        key = {"Idempotency-Key": "drill-" + harness._token(8)}
        body = {"pageImportId": t.page_import, "figmaFileKey": "FILEkey123", "screenId": "compensated"}
        s3.set("hang")
        pg.set("late", delay)
        st, _, _, took = timed(s, drill, "trigger", "POST", s.jobs_path(t), t.sub, body, headers=key, ok=())
        if st != 503:
            violation(drill, f"trigger with its manifest PUT hung answered {st} after {took:.1f} s")
        pg.set("pass")
        s3.set("pass")
        # The compensating UPDATE's answer is still on its way back through the proxy.
        deadline = time.time() + 3 * delay
        row = ""
        while time.time() < deadline:
            row = s.sql("SELECT status::text || '|' || COALESCE(error_message, '') FROM code2des "
                        "WHERE screen_id = 'compensated'")
            if not row.startswith("0|"):
                break
            time.sleep(0.5)
        if row != "2|the job could not be dispatched to the worker":
            violation(drill, f"after recovery the undispatched attempt is {row!r}, not failed")
        st, again, _ = s.request("POST", s.jobs_path(t), t.sub, body, headers=key)
        if st != 202:
            violation(drill, f"the same trigger after recovery answered {st} {again}")
        else:
            s.read_manifest(again["code2desId"])  # raises, so the drill fails, if it is missing
        nothing_stuck(s, drill)
    finally:
        pg.set("pass")
        s3.set("pass")
        s.close()
        moto.kill()


DRILLS = {
    "s3-late-many": lambda pg: s3_drill("s3-late-many", pg, "late", 4.5),
    "s3-past-attempt": lambda pg: s3_drill("s3-past-attempt", pg, "late", 6.0),
    "s3-trickle": lambda pg: s3_drill("s3-trickle", pg, "trickle", rate=2048),
    "pg-late": lambda pg: pg_drill("pg-late", pg),
    "row-locked": lambda pg: lock_drill("row-locked", pg),
    "compensate-late": lambda pg: compensate_drill("compensate-late", pg),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", help="write every answer's drill, route, status and seconds here")
    ap.add_argument("--only", help="comma-separated drills to run (default: all)")
    args = ap.parse_args()
    drills = DRILLS
    if args.only:
        names = args.only.split(",")
        unknown = [n for n in names if n not in DRILLS]
        if unknown:
            ap.error(f"unknown drill(s) {unknown}; there are {sorted(DRILLS)}")
        drills = {n: DRILLS[n] for n in names}
    harness.local_binary()
    harness.ensure_moto()
    harness.ensure_postgres()
    pg_url = harness.DEFAULT_ADMIN_URL
    started = time.time()
    for r in range(args.rounds):
        print(f"== round {r + 1} of {args.rounds}", flush=True)
        ths = []
        for name, run in drills.items():
            def go(name=name, run=run):
                try:
                    run(pg_url)
                except Exception as e:  # a broken drill is a violation, not a crash of the run
                    import traceback
                    traceback.print_exc()
                    violation(name, f"crashed: {e!r}")
            ths.append(threading.Thread(target=go, daemon=True))
        for th in ths:
            th.start()
        for th in ths:
            th.join(300)
    print("\n== drills: the slowest answer of each route under each fault")
    worst = {}
    for drill, route, st, took in results:
        key = (drill, route)
        if key not in worst or took > worst[key][1]:
            worst[key] = (st, took)
    for (drill, route), (st, took) in sorted(worst.items()):
        print(f"  {drill:16} {route:16} {st} in {took:5.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(drill=d, route=r, status=s, seconds=round(t, 2)) for d, r, s, t in results], f)
    print(f"  {len(violations)} violation(s); {args.rounds} round(s) in {time.time() - started:.0f} s")
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
