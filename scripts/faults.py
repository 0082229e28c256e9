#!/usr/bin/env python3
"""Fault injection against the release local stack (issue 6, "Faults"). It really breaks things:

  a) a PRIVATE PostgreSQL cluster is stopped for ~5 s and restarted while threads drive triggers,
     signed worker completions, placements and GETs: every answer during the outage is 503 with
     Retry-After (never 500, never slower than a bound), the stack recovers without a restart,
     and the rows account for every success answer exactly once (nothing lost, nothing doubled);
  b) the S3 server (moto, a separate process) is killed: trigger -> 503 and the row failed;
  c) the result artifact is missing or corrupt -> 502 artifact_invalid (never 500);
  d) slow dependencies: S3 behind a proxy that accepts and never answers, PostgreSQL with its
     backends SIGSTOPped -> 503 well below API Gateway's 29 s; afterwards no half-done row.

Prints a summary with counts; exits non-zero on any violation. Bounded: about 2 minutes.
Run from anywhere: `scripts/faults.py` (its harness, scripts/lib/code2des_stack.py, builds code2des-local
in release unless CODE2DES_LOCAL_BIN or CONTRACT_EXE names one).
"""
import glob
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO)
sys.path.insert(0, os.path.join(REPO, "scripts", "lib"))
import code2des_stack as harness  # noqa: E402  (installs boto3 itself when missing)

GATEWAY_LIMIT = 29.0  # API Gateway's integration timeout
BOUND = 15.0  # what we require: every answer, even with a hung dependency, within this
DISPATCH_ERROR = "the job could not be dispatched to the worker"
violations = []
summary = []


def violation(msg):
    violations.append(msg)
    print("VIOLATION:", msg, flush=True)


def note(msg):
    summary.append(msg)
    print(msg, flush=True)


def is_503(status, hdrs):
    return status == 503 and any(k.lower() == "retry-after" for k in hdrs)


# --- a private PostgreSQL cluster, ours to stop, restart and freeze ----------------------------
class PrivatePg:
    def __init__(self):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
        self.bin = os.path.dirname(bins[-1]) if bins else os.path.dirname(shutil.which("initdb") or "")
        if not self.bin:
            raise SystemExit("no PostgreSQL server binaries (initdb) found")
        self.dir = tempfile.mkdtemp(prefix="faults-pg-")
        shutil.chown(self.dir, "postgres")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.port = harness.free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"
        self.run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync")
        self.start()

    def run(self, exe, *args, check=True):
        return subprocess.run(["runuser", "-u", "postgres", "--", os.path.join(self.bin, exe), *args],
                              check=check, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)

    def start(self):
        self.run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"), "-w", "-t", "30", "-o",
                 f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200 "
                 "-c fsync=off", "start")

    def stop(self):
        self.run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "-t", "30", "stop")

    def pids(self):
        """The postmaster and its children: only this cluster's processes."""
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            pm = int(f.readline())
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pm)], capture_output=True, text=True).stdout
        return [pm] + [int(p) for p in out.split()]

    def signal_all(self, sig):
        for pid in self.pids():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def close(self):
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self.signal_all(signal.SIGCONT)
        self.run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


# --- a TCP proxy that forwards, or accepts and never answers -----------------------------------
class Proxy:
    def __init__(self, target_port):
        self.target = target_port
        self.hang = False
        self.conns = []
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.conns.append(c)
            if self.hang:
                continue  # held open, never read, never answered
            try:
                up = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns.append(up)
            for a, b in ((c, up), (up, c)):
                threading.Thread(target=self.pipe, args=(a, b), daemon=True).start()

    def pipe(self, a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data or self.hang:
                    break
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.close()
            except OSError:
                pass

    def set_hang(self, hang):
        self.hang = hang
        if hang:  # cut pooled keep-alive connections so the client has to come back to the hole
            with self.lock:
                for c in self.conns:
                    try:
                        c.shutdown(socket.SHUT_RDWR)
                        c.close()
                    except OSError:
                        pass
                self.conns = []


def timed_call(s, *args, **kw):
    t0 = time.time()
    status, body, hdrs = s.request(*args, **kw)
    return status, body, hdrs, time.time() - t0


# --- (a) PostgreSQL stopped and restarted while requests flow ---------------------------------
def fault_pg_restart(pg):
    print("== (a) PostgreSQL stopped ~5 s and restarted while 6 threads drive mixed requests", flush=True)
    s = harness.LocalStack(admin_url=pg.url, tag="faults")
    try:
        t = s.seed_tenant()
        base = s.jobs_path(t)
        lock = threading.Lock()
        accepted = {}  # id -> True (202 trigger)
        to_complete = []  # ids with a manifest, not yet completed with a 200
        completed = {}  # id -> result_url the 200 webhook reported
        placed = {}  # id -> set of materializedNodeId seen in 200 placement answers
        sent_nodes = {}  # id -> node ids we sent
        counts = {}
        outage = {"stop_begin": None, "stop_done": None, "start_begin": None, "start_done": None}
        during = {"answers": 0, "non503": 0}
        trig_503 = [0]
        max_latency = [0.0]
        first_ok_after = [None]
        stop = threading.Event()

        def record(route, status, hdrs, latency, t0):
            key = f"{route} {status}"
            with lock:
                counts[key] = counts.get(key, 0) + 1
                max_latency[0] = max(max_latency[0], latency)
            if status == 0:
                violation(f"(a) {route}: no HTTP answer (transport error or hang)")
            elif status >= 500 and not is_503(status, hdrs):
                violation(f"(a) {route}: {status} (only 503 with Retry-After may signal the outage)")
            elif status == 503 and not is_503(status, hdrs):
                violation(f"(a) {route}: 503 without Retry-After")
            if latency > BOUND:
                violation(f"(a) {route}: answered after {latency:.1f} s (bound {BOUND} s)")
            sd, sb = outage["stop_done"], outage["start_begin"]
            if sd and t0 >= sd and (sb is None or t0 + latency <= sb):
                with lock:
                    during["answers"] += 1
                    if status != 503:
                        during["non503"] += 1
                if status != 503:
                    violation(f"(a) {route}: {status} while PostgreSQL was down")
            if 200 <= status < 300 and outage["start_done"] and t0 >= outage["start_done"]:
                with lock:
                    if first_ok_after[0] is None:
                        first_ok_after[0] = t0 + latency - outage["start_done"]

        def worker(n):
            rnd = random.Random(n)
            i = 0
            while not stop.is_set():
                i += 1
                time.sleep(0.01)  # about 100 requests/s per thread: enough to hit the outage densely
                r = rnd.random()
                with lock:
                    pending = list(to_complete)
                    done = list(completed)
                op = ("trigger" if r < 0.2 else "webhook" if r < 0.5 else "placement" if r < 0.65 else "get")
                if (op == "webhook" and not pending) or (op == "placement" and not done):
                    op = "trigger"
                t0 = time.time()
                if op == "trigger":
                    st, body, hd, lat = timed_call(s, "POST", base, t.sub,
                                                   {"pageImportId": t.page_import, "figmaFileKey": "FILEfault",
                                                    "screenId": f"s{n}-{i}"})
                    record("trigger", st, hd, lat, t0)
                    if st == 202:
                        with lock:
                            accepted[body["code2desId"]] = True
                            to_complete.append(body["code2desId"])
                    elif st == 503:
                        with lock:
                            trig_503[0] += 1
                    elif st != 0 and st < 500:
                        violation(f"(a) trigger: unexpected {st} {body}")
                elif op == "webhook":
                    jid = rnd.choice(pending)
                    with lock:
                        if jid not in to_complete:
                            continue
                        to_complete.remove(jid)
                    try:
                        (st, body, hd), m = s.finish_job(jid)
                    except Exception as e:  # S3 is the embedded one and stays up
                        violation(f"(a) worker side failed: {e!r}")
                        continue
                    record("webhook", st, hd, time.time() - t0, t0)
                    with lock:
                        if st == 200:
                            completed[jid] = f"s3://{harness.BUCKET}/code2des/{jid}/1/result.json"
                        else:
                            to_complete.append(jid)  # the worker retries later, with the same report
                    if st not in (200, 503, 0) and st < 500:
                        violation(f"(a) webhook: unexpected {st} {body}")
                elif op == "placement":
                    jid = rnd.choice(done)
                    node = f"{n}:{i}"
                    with lock:
                        sent_nodes.setdefault(jid, set()).add(node)
                    st, body, hd, lat = timed_call(s, "POST", f"{base}/{jid}/placement", t.sub, {"nodeId": node})
                    record("placement", st, hd, lat, t0)
                    if st == 200:
                        with lock:
                            placed.setdefault(jid, set()).add(body["materializedNodeId"])
                    elif st != 0 and st < 500:
                        violation(f"(a) placement: unexpected {st} {body}")
                else:
                    if done and rnd.random() < 0.5:
                        path = f"{base}/{rnd.choice(done)}"
                    else:
                        path = base + "?limit=10"
                    st, body, hd, lat = timed_call(s, "GET", path, t.sub)
                    record("get/list", st, hd, lat, t0)
                    if st != 0 and st < 500 and st != 200:
                        violation(f"(a) get/list: unexpected {st} {body}")

        threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(6)]
        for th in threads:
            th.start()
        time.sleep(5)
        outage["stop_begin"] = time.time()
        pg.stop()
        outage["stop_done"] = time.time()
        time.sleep(5)
        outage["start_begin"] = time.time()
        pg.start()
        outage["start_done"] = time.time()
        time.sleep(8)
        stop.set()
        for th in threads:
            th.join(60)
            if th.is_alive():
                violation("(a) a client thread hung past 60 s")
        # After recovery the worker delivers every report it still holds (retry of the 503s).
        redelivered = len(to_complete)
        for jid in list(to_complete):
            (st, body, hd), _ = s.finish_job(jid)
            if st == 200:
                completed[jid] = f"s3://{harness.BUCKET}/code2des/{jid}/1/result.json"
                to_complete.remove(jid)
            else:
                violation(f"(a) completion after recovery: {st} {body}")

        # --- the ledger: every success answer has exactly its row state ---------------------
        rows = {}
        for line in s.sql("SELECT id, status::text, coalesce(result_url,''), coalesce(error_message,''), "
                          "coalesce(materialized_node_id,'') FROM code2des").splitlines():
            rid, st, url, err, node = line.split("|")
            rows[rid] = (st, url, err, node)
        lost = [j for j in accepted if j not in rows]
        if lost:
            violation(f"(a) {len(lost)} accepted trigger(s) have no row: {lost[:3]}")
        strays = {j: r for j, r in rows.items() if j not in accepted}
        for j, (st, _url, err, _) in strays.items():
            if not (st == "2" and err == DISPATCH_ERROR):
                violation(f"(a) row {j} was created by a trigger answered 503 and is {st} {err!r} "
                          "(must be absent, or failed with the dispatch error)")
        if len(strays) > trig_503[0]:
            violation(f"(a) {len(strays)} rows no 202 accounts for, only {trig_503[0]} trigger 503s")
        for j, url in completed.items():
            st, rurl, _, _ = rows.get(j, ("?", "", "", ""))
            if st != "1" or rurl != url:
                violation(f"(a) webhook 200 for {j} but the row is {st} {rurl}")
        n_completed_rows = sum(1 for r in rows.values() if r[0] == "1")
        if n_completed_rows != len(completed):
            violation(f"(a) {n_completed_rows} completed rows but {len(completed)} completion 200s")
        processing = [j for j, r in rows.items() if r[0] == "0"]
        if processing:
            violation(f"(a) {len(processing)} row(s) still processing after every report was delivered")
        for j, seen in placed.items():
            node = rows.get(j, ("", "", "", ""))[3]
            if len(seen) != 1 or node not in seen or node not in sent_nodes.get(j, ()):
                violation(f"(a) placement of {j}: answers {seen}, row {node!r}")
        n_placed_rows = sum(1 for r in rows.values() if r[3])
        if n_placed_rows != len(placed):
            violation(f"(a) {n_placed_rows} materialized rows but {len(placed)} jobs placed with 200")
        if during["answers"] == 0:
            violation("(a) no request was answered while PostgreSQL was down: the test proved nothing")
        if first_ok_after[0] is None:
            violation("(a) no success after PostgreSQL came back: no recovery")
        if "panicked" in s.log():
            violation("(a) the stack log shows a panic")
        total = sum(counts.values())
        note(f"(a) PG outage {outage['start_begin'] - outage['stop_done']:.1f} s; {total} requests: "
             + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
        note(f"(a) during the outage {during['answers']} answers, {during['answers'] - during['non503']} of them "
             f"503+Retry-After; first success {first_ok_after[0] or -1:.2f} s after restart (stack not restarted); "
             f"slowest answer {max_latency[0]:.2f} s")
        note(f"(a) ledger: {len(accepted)} triggers 202 = {len(accepted)} rows found; {len(strays)} extra rows from "
             f"{trig_503[0]} trigger 503s (all failed with the dispatch error); {len(completed)} completion 200s "
             f"({redelivered} delivered after the run) = "
             f"{n_completed_rows} completed rows; {len(placed)} jobs placed = {n_placed_rows} materialized rows; "
             f"{len(processing)} stuck processing")
    finally:
        s.close()


# --- (b) S3 killed: trigger -> 503, the row failed ---------------------------------------------
def fault_s3_killed(pg):
    print("== (b) S3 (moto) killed at trigger", flush=True)
    moto, endpoint = harness.moto_s3_server()
    s = held = None
    try:
        s = harness.LocalStack(admin_url=pg.url, tag="faults", env={"S3_ENDPOINT": endpoint})
        t = s.seed_tenant()
        st, body, _ = s.trigger(t)
        if st != 202:
            violation(f"(b) trigger with S3 up: {st} {body}")
            return
        ok_id = body["code2desId"]
        (st, body, _), _m = s.finish_job(ok_id)
        if st != 200:
            violation(f"(b) completion with S3 up: {st} {body}")
        moto.kill()
        moto.wait(10)
        # Hold moto's port, bound and not listening: a connection to it is refused, as to a dead
        # S3, and no server started meanwhile (another stack, a test, a tool) can take the freed
        # ephemeral port and accept S3's requests without answering them (docs/RELIABILITY.md,
        # the 38.94 s flake).
        held = socket.socket()
        # REUSEADDR: the killed server's connections linger in TIME_WAIT on that port.
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("127.0.0.1", int(endpoint.rsplit(":", 1)[1])))
        st, body, hd, lat = timed_call(s, "POST", s.jobs_path(t), t.sub,
                                       {"pageImportId": t.page_import, "figmaFileKey": "FILEkey123",
                                        "screenId": "screen-s3-down"}, headers={"Idempotency-Key": "k-s3-down"})
        if not is_503(st, hd) or lat > BOUND:
            violation(f"(b) trigger with S3 down: {st} in {lat:.1f} s {body}")
        rows = s.sql(f"SELECT status::text, coalesce(error_message,'') FROM code2des WHERE id <> '{ok_id}'").splitlines()
        if rows != [f"2|{DISPATCH_ERROR}"]:
            violation(f"(b) after a 503 trigger the rows are {rows} (want one failed with the dispatch error)")
        keys = s.sql("SELECT count(*) FROM code2des_idempotency")
        if keys != "0":
            violation(f"(b) the Idempotency-Key of the failed trigger is still claimed ({keys})")
        st2, body2, hd2, lat2 = timed_call(s, "GET", f"{s.jobs_path(t)}/{ok_id}/result", t.sub)
        if not is_503(st2, hd2) or lat2 > BOUND:
            violation(f"(b) result with S3 down: {st2} in {lat2:.1f} s {body2}")
        st3, _, _, _ = timed_call(s, "GET", s.jobs_path(t), t.sub)
        if st3 != 200:
            violation(f"(b) list with S3 down (needs only PostgreSQL): {st3}")
        note(f"(b) S3 killed: trigger {st} in {lat:.2f} s, row failed {DISPATCH_ERROR!r}, key released; "
             f"result {st2} in {lat2:.2f} s; list {st3}")
    finally:
        if moto.poll() is None:
            moto.kill()
        if s:
            s.close()
        if held is not None:
            held.close()


# --- (c) artifact missing or corrupt at result -> 502 ------------------------------------------
def fault_bad_artifacts(pg):
    print("== (c) artifact missing or corrupt at result", flush=True)
    s = harness.LocalStack(admin_url=pg.url, tag="faults")
    try:
        t = s.seed_tenant()
        cases = {}

        def job(images=None):
            st, body, _ = s.trigger(t)
            jid = body["code2desId"]
            (st, b, _), m = s.finish_job(jid, images=images)
            assert st == 200, (st, b)
            return jid, f"code2des/{jid}/1/"

        png = harness.make_png(4, 4)
        jid, p = job()
        cases["good"] = (jid, 200)
        jid, p = job()
        s.s3.delete_object(Bucket=harness.BUCKET, Key=p + "result.json")
        cases["artifact deleted"] = (jid, 502)
        jid, p = job()
        s.put_object(p + "result.json", b"{not json", "application/json")
        cases["artifact not JSON"] = (jid, 502)
        jid, p = job()
        art = json.loads(s.s3.get_object(Bucket=harness.BUCKET, Key=p + "result.json")["Body"].read())
        art["nonce"] = "0" * 32
        s.put_object(p + "result.json", json.dumps(art).encode(), "application/json")
        cases["artifact nonce of another attempt"] = (jid, 502)
        jid, p = job()
        s.put_object(p + "result.json", b"\x00\xff" * 50, "application/json")
        cases["artifact binary garbage"] = (jid, 502)
        jid, p = job(images={"a": (png, "image/png")})
        s.s3.delete_object(Bucket=harness.BUCKET, Key=p + "images/a")
        cases["image deleted"] = (jid, 502)
        jid, p = job(images={"a": (png, "image/png")})
        s.put_object(p + "images/a", b"GIF89a" + png[6:], "image/png")
        cases["image bytes not the declared type"] = (jid, 502)
        jid, p = job(images={"a": (png, "image/png")})
        s.put_object(p + "images/a", png[:10], "image/png")
        cases["image truncated"] = (jid, 502)
        jid, p = job(images={"a": (harness.make_png(5000, 1), "image/png")})
        cases["image over 4096 px"] = (jid, 502)
        results = []
        for name, (jid, want) in cases.items():
            st, body, hd, lat = timed_call(s, "GET", f"{s.jobs_path(t)}/{jid}/result", t.sub)
            code = (body or {}).get("error", {}).get("code") if isinstance(body, dict) else None
            good = st == want and (want == 200 or code == "artifact_invalid")
            if not good:
                violation(f"(c) {name}: {st} {body} (want {want})")
            results.append(f"{name} -> {st}")
        if "panicked" in s.log():
            violation("(c) the stack log shows a panic")
        note("(c) " + "; ".join(results))
    finally:
        s.close()


# --- (d) slow dependencies cut by timeouts ------------------------------------------------------
def fault_slow(pg):
    print("== (d) hung S3 (accepts, never answers) and frozen PostgreSQL (SIGSTOP)", flush=True)
    moto, endpoint = harness.moto_s3_server()
    proxy = Proxy(int(endpoint.rsplit(":", 1)[1]))
    s = None
    frozen = False
    try:
        s = harness.LocalStack(admin_url=pg.url, tag="faults",
                               env={"S3_ENDPOINT": f"http://127.0.0.1:{proxy.port}"})
        t = s.seed_tenant()
        st, body, _ = s.trigger(t)
        if st != 202:
            violation(f"(d) trigger with S3 up: {st} {body}")
            return
        ok_id = body["code2desId"]
        (st, body, _), _m = s.finish_job(ok_id)
        if st != 200:
            violation(f"(d) completion: {st} {body}")
        # S3 hangs.
        proxy.set_hang(True)
        st, body, hd, lat = timed_call(s, "POST", s.jobs_path(t), t.sub,
                                       {"pageImportId": t.page_import, "figmaFileKey": "FILEkey123",
                                        "screenId": "screen-hung-s3"})
        if not is_503(st, hd) or lat > BOUND:
            violation(f"(d) trigger with hung S3: {st} in {lat:.1f} s {body}")
        st2, body2, hd2, lat2 = timed_call(s, "GET", f"{s.jobs_path(t)}/{ok_id}/result", t.sub)
        if not is_503(st2, hd2) or lat2 > BOUND:
            violation(f"(d) result with hung S3: {st2} in {lat2:.1f} s {body2}")
        rows = s.sql(f"SELECT status::text, coalesce(error_message,'') FROM code2des WHERE id <> '{ok_id}'").splitlines()
        if rows != [f"2|{DISPATCH_ERROR}"]:
            violation(f"(d) after a hung-S3 trigger the rows are {rows}")
        note(f"(d) hung S3: trigger {st} in {lat:.2f} s (row failed), result {st2} in {lat2:.2f} s")
        proxy.set_hang(False)
        st, _, _ = s.request("GET", f"{s.jobs_path(t)}/{ok_id}/result", t.sub)
        if st != 200:
            violation(f"(d) result after S3 came back: {st}")

        # PostgreSQL frozen: every backend and the postmaster stopped, connections stay open.
        before = s.sql("SELECT count(*) FROM code2des")
        pg.signal_all(signal.SIGSTOP)
        frozen = True
        answers = {}
        lock = threading.Lock()

        def probe(name, method, path, body=None, hdrs=None):
            r = timed_call(s, method, path, t.sub, body, headers=hdrs, timeout=60)
            with lock:
                answers[name] = r

        base = s.jobs_path(t)
        probes = [
            ("trigger", "POST", base, {"pageImportId": t.page_import, "figmaFileKey": "FILEkey123",
                                       "screenId": "screen-frozen-pg"}, {"Idempotency-Key": "k-frozen"}),
            ("get", "GET", f"{base}/{ok_id}", None, None),
            ("list", "GET", base, None, None),
            ("placement", "POST", f"{base}/{ok_id}/placement", {"nodeId": "1:2"}, None),
        ]
        ths = [threading.Thread(target=probe, args=p, daemon=True) for p in probes]
        for th in ths:
            th.start()
        wh_t0 = time.time()
        wst, wbody, whd = s.send_webhook({"code2des_id": ok_id, "attempt": 1, "nonce": "f" * 64,
                                     "status": "failed", "error_message": "boom"})
        answers["webhook"] = (wst, wbody, whd, time.time() - wh_t0)
        for th in ths:
            th.join(70)
        pg.signal_all(signal.SIGCONT)
        frozen = False
        for name, (st, body, hd, lat) in sorted(answers.items()):
            if not is_503(st, hd) or lat > BOUND:
                violation(f"(d) {name} with PostgreSQL frozen: {st} in {lat:.1f} s {body}")
        note("(d) frozen PostgreSQL: " + ", ".join(f"{n} {a[0]} in {a[3]:.2f} s" for n, a in sorted(answers.items())))
        # Recovery, then: no half-done trigger (a processing row nobody dispatched).
        deadline = time.time() + 20
        while time.time() < deadline:
            st, _, _ = s.request("GET", base, t.sub)
            if st == 200:
                break
            time.sleep(0.5)
        if st != 200:
            violation(f"(d) no recovery after SIGCONT: {st}")
        time.sleep(1)
        rows = s.sql("SELECT id, status::text, coalesce(error_message,'') FROM code2des "
                     f"WHERE id <> '{ok_id}' AND screen_id = 'screen-frozen-pg'").splitlines()
        stuck = []
        for line in rows:
            rid, rst, err = line.split("|")
            if rst == "0":
                try:
                    s.read_manifest(rid)
                except Exception:
                    stuck.append(rid)
            elif not (rst == "2" and err == DISPATCH_ERROR):
                violation(f"(d) the frozen trigger left row {rid} {rst} {err!r}")
        if stuck:
            violation(f"(d) the trigger answered 503 while PostgreSQL was frozen, yet {len(stuck)} row(s) "
                      "appeared later as processing with no manifest (never dispatched)")
        # A retry with the same Idempotency-Key must give a dispatched job.
        st, body, _ = s.request("POST", base, t.sub, {"pageImportId": t.page_import, "figmaFileKey": "FILEkey123",
                                                      "screenId": "screen-frozen-pg"},
                             headers={"Idempotency-Key": "k-frozen"})
        retry_ok = st == 202
        if st == 202:
            try:
                s.read_manifest(body["code2desId"])
            except Exception:
                retry_ok = False
                violation("(d) the retried trigger answered 202 with a job that has no manifest")
        else:
            violation(f"(d) retried trigger after recovery: {st} {body}")
        after = s.sql("SELECT count(*) FROM code2des")
        note(f"(d) after SIGCONT: recovered; rows {before} -> {after}; frozen trigger left {len(rows)} row(s), "
             f"{len(stuck)} undispatched; retry with the same key {'dispatched' if retry_ok else 'NOT dispatched'}")
    finally:
        if frozen:
            pg.signal_all(signal.SIGCONT)
        proxy.set_hang(True)
        if moto.poll() is None:
            moto.kill()
        if s:
            s.close()


def on_alarm(*_):
    raise TimeoutError("faults.py ran past its 300 s budget")


def main():
    started = time.time()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(300 + (0 if harness.prebuilt_binary() else 600))  # + a cold release build
    harness.local_binary()
    # Everything here runs on the private cluster: every stack gets admin_url=pg.url.
    pg = PrivatePg()
    try:
        for step in (fault_pg_restart, fault_s3_killed, fault_bad_artifacts, fault_slow):
            try:
                step(pg)
            except Exception as e:  # a broken step is a violation, not a crash of the whole run
                import traceback
                traceback.print_exc()
                violation(f"{step.__name__} crashed: {e!r}")
    finally:
        pg.close()
    print("\n== faults summary")
    for line in summary:
        print("  " + line)
    print(f"  {len(violations)} violation(s); {time.time() - started:.0f} s")
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
