#!/usr/bin/env python3
"""The worker as it runs in AWS (docs/WORKER.md, "In AWS"), run here: `code2des-worker lambda`
with the container's environment, fed the SQS event shape of `events/worker-sqs.json` by a Lambda
Runtime API on loopback (the runtime's four endpoints: what the Lambda service itself serves the
container, which cannot run here), against a `code2des-local` stack whose worker is off, and the
webhook's HMAC key read from an emulated Secrets Manager (moto), as `WEBHOOK_SECRET_ARN` names it.

Checked:
  - a message naming a real job's manifest: the sample capture is converted, the job completes,
    the batch response lists no failure, and the result GET serves the converted page;
  - a capture that is no page (a PNG): the job fails with the converter's message, its failure
    artifact is served, and the message is done with;
  - S3's `s3:TestEvent` message: done with, nothing else happens;
  - a message naming a manifest that does not exist: reported as a batch item failure (SQS will
    deliver it again, then to the dead-letter queue), and the worker goes on;
  - the worker answers each invocation long before the event's deadline.

  CODE2DES_BIN_DIR=target/ci scripts/worker-lambda.py
"""
import copy
import http.server
import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import code2des_stack as c2d  # noqa: E402

REPO = c2d.REPO
EVENT = os.path.join(REPO, "events", "worker-sqs.json")


class RuntimeApi:
    """The Lambda Runtime API (2018-06-01) on a free loopback port: `next` hands out the queued
    events one at a time (blocking, as Lambda's does), `response` and `error` record answers."""

    def __init__(self):
        self.events = queue.Queue()
        self.answers = {}
        self.done = threading.Condition()
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path != "/2018-06-01/runtime/invocation/next":
                    return self.send_error(404)
                request_id, body = api.events.get()
                raw = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Lambda-Runtime-Aws-Request-Id", request_id)
                self.send_header("Lambda-Runtime-Deadline-Ms", str(int((time.time() + 120) * 1000)))
                self.send_header("Lambda-Runtime-Invoked-Function-Arn",
                                 "arn:aws:lambda:eu-west-1:123456789012:function:code2des-dev-worker")
                self.send_header("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                parts = self.path.split("/")
                # /2018-06-01/runtime/invocation/{id}/response | /error, /2018-06-01/runtime/init/error
                if len(parts) == 6 and parts[3] == "invocation" and parts[5] in ("response", "error"):
                    with api.done:
                        api.answers[parts[4]] = (parts[5], json.loads(body or b"null"), time.time())
                        api.done.notify_all()
                elif self.path == "/2018-06-01/runtime/init/error":
                    with api.done:
                        api.answers["init"] = ("error", json.loads(body or b"null"), time.time())
                        api.done.notify_all()
                else:
                    return self.send_error(404)
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def invoke(self, event, timeout=90):
        """Queues one event and waits for the worker's answer: (kind, body, seconds)."""
        request_id = str(uuid.uuid4())
        started = time.time()
        self.events.put((request_id, event))
        with self.done:
            ok = self.done.wait_for(lambda: request_id in self.answers or "init" in self.answers, timeout)
        if not ok:
            raise c2d.StackError(f"no answer to invocation {request_id} within {timeout} s")
        if "init" in self.answers:
            raise c2d.StackError(f"the worker failed to start: {self.answers['init'][1]}")
        kind, body, at = self.answers[request_id]
        return kind, body, at - started

    def close(self):
        self.server.shutdown()


def sqs_event(key=None, body=None, message_id=None):
    """events/worker-sqs.json with its S3 record's key (or its whole body) replaced."""
    with open(EVENT) as f:
        event = json.load(f)
    record = event["Records"][0]
    record["messageId"] = message_id or str(uuid.uuid4())
    if body is not None:
        record["body"] = body
    elif key is not None:
        s3_event = json.loads(record["body"])
        s3_event["Records"][0]["s3"]["bucket"]["name"] = c2d.BUCKET
        s3_event["Records"][0]["s3"]["object"]["key"] = key
        record["body"] = json.dumps(s3_event)
    return copy.deepcopy(event)


def count_nodes(node):
    return 1 + sum(count_nodes(c) for c in node.get("children") or [])


def worker_binary():
    d = os.environ.get("CODE2DES_BIN_DIR")
    if d:
        return os.path.join(d, "code2des-worker")
    return os.path.join(os.path.dirname(c2d.local_binary()), "code2des-worker")


def main():
    checks = c2d.Checklist("worker-lambda")
    # moto serves Secrets Manager too: the emulated one of this run.
    moto, moto_endpoint = c2d.moto_s3_server()
    try:
        run(checks, moto_endpoint)
    finally:
        moto.kill()
        moto.wait()
    checks.finish()


def run(checks, moto_endpoint):
    with c2d.LocalStack(tag="lambda") as stack:
        # The HMAC key in an emulated Secrets Manager, as the template keeps it.
        sm = c2d.boto3.client(
            "secretsmanager", endpoint_url=moto_endpoint, region_name=c2d.S3_REGION,
            aws_access_key_id="testing", aws_secret_access_key="testing")
        secret_arn = sm.create_secret(Name=f"code2des-webhook-{uuid.uuid4().hex[:8]}",
                                      SecretString=c2d.WEBHOOK_SECRET)["ARN"]
        tenant = stack.seed_tenant()
        with open(os.path.join(REPO, "samples", "form.html"), "rb") as f:
            stack.put_object(f"captures/{tenant.page_import}.json", f.read(), "text/html")
        job = stack.trigger(tenant)
        checks.check(job.status == 202, f"trigger answers 202 ({job.status})")
        job_id = job.body["code2desId"]
        key = f"code2des/{job_id}/1/manifest.json"

        runtime = RuntimeApi()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "WEBHOOK_"))}
        env.update({
            # What the template gives the container function (ConversionWorkerFunction).
            "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{runtime.port}",
            "AWS_LAMBDA_FUNCTION_NAME": "code2des-dev-worker",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "2048",
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_REGION": c2d.S3_REGION,
            "ARTIFACT_BUCKET": c2d.BUCKET,
            "WEBHOOK_SECRET_ARN": secret_arn,
            "CODE2DES_PAGE_TIMEOUT_SECS": "20",
            # What only this run needs: the loopback S3 and the emulated Secrets Manager.
            "S3_ENDPOINT": stack.s3_endpoint,
            "AWS_ENDPOINT_URL_SECRETS_MANAGER": moto_endpoint,
            "AWS_ACCESS_KEY_ID": c2d.S3_ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": c2d.S3_SECRET_KEY,
            "RUST_LOG": "info",
        })
        log_path = os.path.join(stack.dir, "worker.log")
        with open(log_path, "w") as log:
            worker = subprocess.Popen([worker_binary(), "lambda"], env=env, cwd=stack.dir,
                                      stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            kind, body, secs = runtime.invoke(sqs_event(key=key, message_id="m-real"))
            checks.check(kind == "response" and body == {"batchItemFailures": []},
                         f"a real manifest: converted, no batch item failure ({kind} {body}, {secs:.1f} s)")
            got = stack.request("GET", f"{stack.jobs_path(tenant)}/{job_id}", tenant.sub)
            checks.check(got.body and got.body.get("status") == "completed", f"the job is completed ({got.body})")
            result = stack.request("GET", f"{stack.jobs_path(tenant)}/{job_id}/result", tenant.sub)
            doc = (result.body or {}).get("document") or {}
            nodes = count_nodes(doc)
            checks.check(result.status == 200 and doc.get("type") == "FRAME" and nodes > 20,
                         f"the result is the converted form ({result.status}, {nodes} nodes)")

            # A capture that is no page: the job fails with the converter's message and a
            # failure artifact; the message itself is done with (nothing to deliver again).
            bad = stack.seed_tenant()
            stack.put_object(f"captures/{bad.page_import}.json", c2d.make_png(4, 4), "image/png")
            bad_job = stack.trigger(bad).body["code2desId"]
            kind, body, _ = runtime.invoke(sqs_event(key=f"code2des/{bad_job}/1/manifest.json"))
            checks.check(body == {"batchItemFailures": []}, f"a bad capture's message is done with ({body})")
            got = stack.request("GET", f"{stack.jobs_path(bad)}/{bad_job}", bad.sub).body or {}
            checks.check(got.get("status") == "failed" and "not an HTML page" in (got.get("errorMessage") or ""),
                         f"a bad capture fails its job with the converter's message ({got.get('status')}, {got.get('errorMessage')!r})")
            failure = stack.request("GET", f"{stack.jobs_path(bad)}/{bad_job}/result", bad.sub)
            checks.check(failure.status == 200 and (failure.body or {}).get("kind") == "failure",
                         f"... and its failure artifact is served ({failure.status})")

            kind, body, _ = runtime.invoke(sqs_event(body=json.dumps({"Service": "Amazon S3", "Event": "s3:TestEvent"})))
            checks.check(kind == "response" and body == {"batchItemFailures": []}, f"s3:TestEvent is done with ({body})")

            missing = f"code2des/{uuid.uuid4()}/1/manifest.json"
            kind, body, _ = runtime.invoke(sqs_event(key=missing, message_id="m-missing"))
            checks.check(kind == "response" and body == {"batchItemFailures": [{"itemIdentifier": "m-missing"}]},
                         f"a missing manifest is a batch item failure ({body})")
            checks.check(worker.poll() is None, "the worker is still serving after a failure")
        finally:
            worker.kill()
            worker.wait()
            runtime.close()
            with open(log_path, errors="replace") as f:
                text = f.read()
            checks.check(c2d.WEBHOOK_SECRET not in text, "the webhook key is not in the worker's log")
            if checks.failed:
                print(text[-4000:], file=sys.stderr)


if __name__ == "__main__":
    main()
