"""Runs Schemathesis against a fresh local stack (see scripts/schemathesis).

Starts `code2des-local` on free ports with a fresh database through the project's harness,
scripts/lib/code2des_stack.py, seeds a tenant and jobs in every state an operation acts on, so
that requests hit real data: a completed job (with an image) for getJob, getJobResult and
placeJob; a failed one for retryJob; a processing one for cancelJob; one for deleteJob; two
processing ones for the worker's webhook. Then runs Schemathesis twice against openapi.yaml:

  1. "tenant": path parameters pinned to the seeded organization, project and, per operation,
     the job in the state that operation acts on; the seeded member as identity, the trigger
     example pointing at the seeded page import;
  2. "open": nothing pinned: random ids and invalid parameters (negative mode), same identity.

The worker's webhook is signed by a Schemathesis hook (HOOKS below, written into the stack's
scratch dir): most bodies are signed over the exact bytes sent, some pinned to a seeded job's
id, attempt and nonce (some of those as progress reports), some left unsigned.

Checks: no server error (none allowed: not_a_server_error, and no 500 or panic in the stack's
own log); status codes, content types, headers and bodies as the spec says. Then: every SPEC
section 7 operation was exercised against its seeded job (retryJob 202, cancelJob 200,
deleteJob 204, a progress report 200), and those jobs ended as those calls leave them.
Prints the figures and exits non-zero on any failure.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))

import yaml  # noqa: E402  (installed with schemathesis)

import code2des_stack as harness  # noqa: E402

SCHEMATHESIS = os.environ.get("SCHEMATHESIS", "schemathesis")
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "50"))
SEED = os.environ.get("SCHEMATHESIS_SEED", "20260101")
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_headers_conformance,response_schema_conformance")
SUB = "schemathesis-user"


HOOKS = r'''"""Schemathesis hook for the worker's webhook (loaded through SCHEMATHESIS_HOOKS by
scripts/schemathesis-driver.py): Schemathesis cannot compute `Code2des-Signature`, an HMAC over
the exact bytes of the body, so without this every webhook case would stop at 401.

Cases rotate through four treatments:
  0. the generated body, signed (random ids: 404, or a 400 naming the field);
  1. the generated body pinned to a seeded job's id, attempt and nonce, signed (whatever status
     it says meets the real fence: 200, 400, 409);
  2. pinned to another seeded processing job as a progress report (status "processing"), the
     generated progress kept, or every other time replaced by a valid one, signed: the fenced
     progress path with a real job;
  3. as generated, unsigned (the signature check itself: 401).
The body is serialized here and sent as those bytes, so the signature covers what is sent.
"""
import hashlib
import hmac
import itertools
import json
import os
import time

import schemathesis

SECRET = os.environ.get("C2D_WEBHOOK_SECRET", "local-webhook-secret").encode()
PROGRESS_JOB = json.loads(os.environ.get("C2D_PROGRESS_JOB", "null"))
REPORT_JOB = json.loads(os.environ.get("C2D_REPORT_JOB", "null"))
_cases = itertools.count()


def _is_webhook(case):
    return case.operation.method.upper() == "POST" and case.operation.path == "/code2des/webhook"


@schemathesis.hook
def before_call(context, case, kwargs):
    if not _is_webhook(case) or type(case.body).__name__ == "NotSet" or "data" in kwargs or "json" in kwargs:
        return
    n = next(_cases)
    treatment = n % 4
    if treatment == 3:
        return
    body = case.body
    if isinstance(body, dict) and treatment == 1 and REPORT_JOB:
        body = {**body, **REPORT_JOB}
    elif isinstance(body, dict) and treatment == 2 and PROGRESS_JOB:
        body = {**body, **PROGRESS_JOB, "status": "processing"}
        body.pop("result_url", None)
        if (n // 4) % 2 == 0 or not isinstance(body.get("progress"), dict):
            body["progress"] = {"percent": min(100, n // 8), "stage": f"schemathesis {n}"}
    try:
        raw = json.dumps(body).encode()
    except (TypeError, ValueError):
        return
    t = int(time.time())
    sig = hmac.new(SECRET, f"{t}.".encode() + raw, hashlib.sha256).hexdigest()
    case.body = body
    case.headers = {**(case.headers or {}), "Code2des-Signature": f"t={t},v1={sig}"}
    kwargs["data"] = raw
'''


def new_job(s, t):
    status, job, _ = s.trigger(t)
    assert status == 202, (status, job)
    m = s.read_manifest(job["code2desId"])
    return {"code2des_id": job["code2desId"], "attempt": m["attempt"], "nonce": m["nonce"]}


def seed(s):
    """The tenant and its jobs, by the operation that acts on them."""
    t = s.seed_tenant(members=(SUB,))
    jobs = {name: new_job(s, t) for name in ("completed", "failed", "processing", "deleted", "progress", "reports")}
    (status, ack, _), _ = s.finish_job(jobs["completed"]["code2des_id"],
                                       images={"hero": (harness.make_png(4, 4), "image/png")})
    assert status == 200, (status, ack)
    status, ack, _ = s.send_webhook({**jobs["failed"], "status": "failed", "error_message": "seeded failure"})
    assert status == 200, (status, ack)
    return t, jobs


# Operations whose path names a job, and the seeded job each acts on (SPEC section 7).
PINNED = {
    "getJob": "completed",
    "getJobResult": "completed",
    "placeJob": "completed",
    "retryJob": "failed",
    "cancelJob": "processing",
    "deleteJob": "deleted",
}


def run(name, s, spec_path, extra, config=None):
    report = os.path.join(s.dir, f"{name}.ndjson")
    cmd = [SCHEMATHESIS]
    if config:
        cmd += ["--config-file", config]
    cmd += ["run", spec_path, "--url", s.base, "--checks", CHECKS, "--max-examples", str(MAX_EXAMPLES),
            "--seed", SEED, "--phases", "examples,coverage,fuzzing", "--workers", "1",
            "--generation-database", "none", "--report", "ndjson", "--report-ndjson-path", report,
            "--no-color"] + extra
    print(f"== schemathesis ({name}):", " ".join(cmd[1:]), flush=True)
    # Run from the stack's scratch dir: Schemathesis leaves a .schemathesis/ cache in its cwd.
    rc = subprocess.run(cmd, cwd=s.dir).returncode
    return rc, figures(report)


def figures(report):
    """Operations, test cases and failures, from the NDJSON event stream; statuses per operation."""
    ops, cases, failures = set(), 0, 0
    statuses = {}
    by_op = {}
    try:
        with open(report) as f:
            for line in f:
                ev = json.loads(line)
                for kind, body in ev.items():
                    if kind == "ScenarioFinished":
                        rec = body.get("recorder") or {}
                        label = rec.get("label")
                        if label:
                            ops.add(label)
                        for interactions in (rec.get("interactions") or {}).values():
                            resp = interactions.get("response") or {}
                            code = resp.get("status_code")
                            if code is not None:
                                cases += 1
                                statuses[code] = statuses.get(code, 0) + 1
                                per = by_op.setdefault(label, {})
                                per[code] = per.get(code, 0) + 1
                        for checks in (rec.get("checks") or {}).values():
                            failures += sum(1 for c in checks if c.get("status") == "FAILURE")
    except FileNotFoundError:
        pass
    return {"operations": len(ops), "requests": cases, "failed_checks": failures,
            "statuses": dict(sorted(statuses.items())),
            "by_operation": {k: dict(sorted(v.items())) for k, v in sorted(by_op.items())}}


def statuses_of(fig, method, path_suffix):
    """Statuses an operation answered (its label is "METHOD /path")."""
    out = {}
    for label, per in fig["by_operation"].items():
        m, _, path = label.partition(" ")
        if m == method and path.endswith(path_suffix):
            for code, n in per.items():
                out[code] = out.get(code, 0) + n
    return out


def row(s, job_id):
    """status, attempt, error_message, deleted?, progress percent of a seeded job."""
    return s.sql("SELECT c.status || '|' || c.attempt || '|' || COALESCE(c.error_message, '') || '|' || "
                 "(c.deleted_at IS NOT NULL) || '|' || COALESCE(a.progress_percent::text, '') "
                 f"FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id WHERE c.id = '{job_id}'")


def main():
    harness.local_binary()
    with harness.LocalStack(tag="schemathesis") as s:
        t, jobs = seed(s)
        base_spec = yaml.safe_load(open(os.path.join(ROOT, "openapi.yaml")))
        # openapi.yaml's operations are held to the route table (local/tests/openapi.rs): every
        # one whose path names a job must be pinned, or its run would only ever see 404s.
        unpinned = sorted(op["operationId"] for path, item in base_spec["paths"].items()
                          if "{code2desId}" in path for op in item.values()
                          if isinstance(op, dict) and "operationId" in op and op["operationId"] not in PINNED)
        if unpinned:
            sys.exit(f"schemathesis-driver: PINNED names no job state for {unpinned}")
        # The trigger's examples (one page, two viewports) name the seeded page import (same
        # documents otherwise); an `example` of its own would be one more.
        ops = base_spec["paths"]["/organizations/{organizationId}/projects/{projectId}/code2des"]
        body = ops["post"]["requestBody"]["content"]["application/json"]
        examples = [e["value"] for e in body.get("examples", {}).values()]
        examples += [body["example"]] if "example" in body else []
        if not examples:
            sys.exit("schemathesis-driver: the trigger's request body has no example to pin")
        for example in examples:
            example["pageImportId"] = t.page_import
        spec_path = os.path.join(s.dir, "openapi.json")
        with open(spec_path, "w") as f:
            json.dump(base_spec, f)
        # Not named schemathesis.toml: Schemathesis reads a file of that name from its working
        # directory (the scratch dir) on its own, and the "open" run must run unpinned.
        config = os.path.join(s.dir, "tenant.toml")
        with open(config, "w") as f:
            f.write("[parameters]\n")
            f.write(f'"path.organizationId" = {t.org}\n"path.projectId" = {t.project}\n')
            f.write(f'"path.code2desId" = "{jobs["completed"]["code2des_id"]}"\n')
            for op, job in PINNED.items():
                f.write(f'\n[[operations]]\ninclude-operation-id = "{op}"\n')
                f.write(f'parameters = {{ "path.code2desId" = "{jobs[job]["code2des_id"]}" }}\n')
        # The webhook hook's material: the secret and the jobs it pins reports to.
        hooks = os.path.join(s.dir, "hooks.py")
        with open(hooks, "w") as f:
            f.write(HOOKS)
        os.environ["SCHEMATHESIS_HOOKS"] = hooks
        os.environ["C2D_WEBHOOK_SECRET"] = harness.WEBHOOK_SECRET
        os.environ["C2D_PROGRESS_JOB"] = json.dumps(jobs["progress"])
        os.environ["C2D_REPORT_JOB"] = json.dumps(jobs["reports"])

        results = {}
        results["tenant"] = run("tenant", s, spec_path,
                                ["-H", f"x-code2des-dev-sub: {SUB}",
                                 "--generation-with-security-parameters", "false"], config)
        # The seeded jobs as the tenant run left them (the open run may act on them too: it
        # reuses ids it saw in earlier answers).
        final = {name: row(s, j["code2des_id"]) for name, j in jobs.items()}
        results["open"] = run("open", s, spec_path, ["-H", f"x-code2des-dev-sub: {SUB}"])

        # The server side: no panic and no 500 anywhere in the stack's own log.
        log = s.log()
        server_500 = sum(1 for line in log.splitlines() if "status=500" in line or '"status":500' in line)
        panics = log.count("panicked")
        job_count = s.sql("SELECT count(*) FROM code2des")

    # SPEC section 7's operations ran against their seeded jobs, and left them as they should.
    fig = results["tenant"][1]
    exercised = {
        "retryJob 202 on the failed job": statuses_of(fig, "POST", "/retry").get(202, 0),
        "cancelJob 200 on the processing job": statuses_of(fig, "POST", "/cancel").get(200, 0),
        "deleteJob 204 on its job": statuses_of(fig, "DELETE", "/{code2desId}").get(204, 0),
        "workerWebhook 200 (signed reports, some pinned to seeded jobs)": statuses_of(fig, "POST", "/code2des/webhook").get(200, 0),
    }
    states = {
        "retried job at a later attempt": final["failed"].split("|")[1] != "1",
        "cancelled job failed 'cancelled'": final["processing"].split("|")[0] == "2" and final["processing"].split("|")[2] == "cancelled",
        "deleted job soft-deleted": final["deleted"].split("|")[3] == "true",
        "progress job processing with a stored percent": final["progress"].split("|")[0] == "0" and final["progress"].split("|")[4] != "",
    }
    ok = (all(rc == 0 for rc, _ in results.values()) and server_500 == 0 and panics == 0
          and all(n > 0 for n in exercised.values()) and all(states.values()))
    print("\n== schemathesis figures")
    for name, (rc, fig) in results.items():
        print(f"{name}: exit {rc}, {fig['operations']} operations, {fig['requests']} requests, "
              f"{fig['failed_checks']} failed checks, statuses {fig['statuses']}")
        for label, per in fig["by_operation"].items():
            print(f"    {label}: {per}")
    print(f"server log: {server_500} answers with status 500, {panics} panics; {job_count} jobs created")
    for what, n in exercised.items():
        print(f"section 7: {what}: {n}")
    for what, held in states.items():
        print(f"section 7: {what}: {'yes' if held else 'NO'}")
    print("seeded jobs (status|attempt|error|deleted|progress):", json.dumps(final))
    print("schemathesis:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
