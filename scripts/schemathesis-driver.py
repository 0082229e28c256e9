"""Runs Schemathesis against a fresh local stack (see scripts/schemathesis).

Starts `code2des-local` on free ports with a fresh database through ../shared/tools/stack.py,
seeds a tenant and a completed job (with an image) so that requests hit real data, then runs
Schemathesis twice against openapi.yaml:

  1. "tenant": path parameters pinned to the seeded organization, project and completed job,
     the seeded member as identity, the trigger example pointing at the seeded page import;
  2. "open": nothing pinned: random ids and invalid parameters (negative mode), same identity.

Checks: no server error; status codes, content types, headers and bodies as the spec says.
Prints the figures and exits non-zero on any failure.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "..", "shared", "tools"))
os.environ.setdefault("CONTRACT_PROJECT", ROOT)

import yaml  # noqa: E402  (installed with schemathesis)

import stack  # noqa: E402

SCHEMATHESIS = os.environ.get("SCHEMATHESIS", "schemathesis")
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "50"))
SEED = os.environ.get("SCHEMATHESIS_SEED", "20260101")
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_headers_conformance,response_schema_conformance")
SUB = "schemathesis-user"


def seed(s):
    t = s.tenant(members=(SUB,))
    status, job, _ = s.trigger(t)
    assert status == 202, (status, job)
    (status, ack, _), _ = s.complete(job["code2desId"], images={"hero": (stack.png(4, 4), "image/png")})
    assert status == 200, (status, ack)
    return t, job["code2desId"]


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
    """Operations, test cases and failures, from the NDJSON event stream."""
    ops, cases, failures = set(), 0, 0
    statuses = {}
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
                        for checks in (rec.get("checks") or {}).values():
                            failures += sum(1 for c in checks if c.get("status") == "FAILURE")
    except FileNotFoundError:
        pass
    return {"operations": len(ops), "requests": cases, "failed_checks": failures,
            "statuses": dict(sorted(statuses.items()))}


def main():
    stack.build()
    with stack.Stack() as s:
        t, job_id = seed(s)
        base_spec = yaml.safe_load(open(os.path.join(ROOT, "openapi.yaml")))
        # The trigger example names the seeded page import (same document otherwise).
        ops = base_spec["paths"]["/organizations/{organizationId}/projects/{projectId}/code2des"]
        ops["post"]["requestBody"]["content"]["application/json"]["example"]["pageImportId"] = t["page_import"]
        spec_path = os.path.join(s.dir, "openapi.json")
        with open(spec_path, "w") as f:
            json.dump(base_spec, f)
        config = os.path.join(s.dir, "schemathesis.toml")
        with open(config, "w") as f:
            f.write("[parameters]\n")
            f.write(f'"path.organizationId" = {t["org"]}\n"path.projectId" = {t["project"]}\n')
            f.write(f'"path.code2desId" = "{job_id}"\n')

        results = {}
        results["tenant"] = run("tenant", s, spec_path,
                                ["-H", f"x-code2des-dev-sub: {SUB}",
                                 "--generation-with-security-parameters", "false"], config)
        results["open"] = run("open", s, spec_path, ["-H", f"x-code2des-dev-sub: {SUB}"])

        # The server side: no panic and no 500 anywhere in the stack's own log.
        log = s.log()
        server_500 = sum(1 for line in log.splitlines() if "status=500" in line or '"status":500' in line)
        panics = log.count("panicked")
        jobs = s.sql("SELECT count(*) FROM code2des")

    ok = all(rc == 0 for rc, _ in results.values()) and server_500 == 0 and panics == 0
    print("\n== schemathesis figures")
    for name, (rc, fig) in results.items():
        print(f"{name}: exit {rc}, {fig['operations']} operations, {fig['requests']} requests, "
              f"{fig['failed_checks']} failed checks, statuses {fig['statuses']}")
    print(f"server log: {server_500} answers with status 500, {panics} panics; {jobs} jobs created")
    print("schemathesis:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
