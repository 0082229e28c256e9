#!/usr/bin/env python3
"""Holds every function's environment in template.yaml against what the code reads (issue 29).

Every function builds the same `shared::config::Settings` from its environment, and every route
renders a job from it (`maxAttempts`, `resultExpiresAt`, the deadline). A variable that one
function lacks makes that function answer the same job differently from the others: in AWS the
placement function once had neither MAX_ATTEMPTS nor ARTIFACT_RETENTION_DAYS and the trigger
function no ARTIFACT_RETENTION_DAYS, so `maxAttempts` and `resultExpiresAt` changed by route.

The variables are not a hand list: they are read from shared/src/config/mod.rs, every
`var("NAME")`, `required("NAME")`, `positive("NAME", …)` and `flag("NAME", …)` call (the
module's only ways to read the environment). For each function that takes traffic (an HttpApi
or a schedule event), its effective environment (Globals' variables, then its own over them)
must then hold every one of them, with the same value in every function, except the variables
EXCEPTIONS below names, each with why. A variable that the code starts reading fails this check
until the template sets it or EXCEPTIONS explains it; a variable the template sets that no Rust
source reads fails it too (a typo, or a leftover).

Run by `scripts/check-deploy lint` with its SAM venv's Python (PyYAML is there), or by hand:
`python3 scripts/lib/template_env.py` (needs PyYAML). It also proves that it can fail: it
removes each checked variable from a copy of the template in turn and expects an error.
"""

import copy
import pathlib
import re
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = ROOT / "shared/src/config/mod.rs"
# Where the functions' code lives: every variable the template sets must be read somewhere here.
SOURCES = ["shared/src", "functions", "ops"]

# Variables Settings reads that are NOT on every function, and why. `only`: the functions that
# must have it (others may not); `empty`: declared with an empty value, which the code treats as
# unset (`config::var`), so that `sam local invoke --env-vars` can override it (SAM overrides
# declared variables only; docs/DEPLOY.md).
EXCEPTIONS = {
    # The webhook API's URL, written into each manifest. Only the trigger writes manifests, and
    # in Globals it would give WebhookFunction, WebhookApi's own integration, a reference to
    # WebhookApi: a circular dependency.
    "CALLBACK_URL": {"only": {"TriggerFunction"}},
    # The webhook's signature keys and rules: only the webhook verifies signatures, and only its
    # role may read the two secrets.
    "WEBHOOK_SECRET_ARN": {"only": {"WebhookFunction"}},
    "WEBHOOK_PUBLIC_KEY_ARN": {"only": {"WebhookFunction"}},
    "LEGACY_SIGNATURE": {"only": {"WebhookFunction"}},
    "WEBHOOK_SECRET": {"only": {"WebhookFunction"}, "empty": True},
    "WEBHOOK_PUBLIC_KEY": {"only": {"WebhookFunction"}, "empty": True},
    # Local and test settings: in AWS the database is reached by IAM (DB_HOST, DB_IAM_AUTH) and
    # S3 at its own endpoint; declared empty everywhere for `sam local`.
    "DATABASE_URL": {"empty": True},
    "S3_ENDPOINT": {"empty": True},
    # The owner's secret: the migrate function's alone (not a traffic function); the others log
    # in with IAM tokens and must not be able to read it.
    "DB_SECRET_ARN": {"only": set()},
    # Extra PEM roots for PostgreSQL's TLS: not needed in AWS, whose public roots cover the
    # proxy's and the cluster's certificates (docs/DEPLOY.md); a local or private setup sets it.
    "DB_CA_BUNDLE": {"only": set()},
    # Set by the Lambda runtime itself (a reserved key: CloudFormation refuses it in a
    # function's Environment); the code reads it to know it runs in Lambda.
    "AWS_LAMBDA_FUNCTION_NAME": {"only": set()},
    # JSON logs off Lambda (`code2des-local`, a worker run by hand). In Lambda, logs follow the
    # function's LoggingConfig and EMF is on whatever this says, so the template does not set it.
    "LOG_FORMAT": {"only": set()},
}

# Variables the template sets for a Lambda layer rather than for our code: the ADOT collector's
# configuration when TracesExport is cloudwatch (docs/OPERATIONS.md, "Traces").
READ_BY_LAYERS = {"OPENTELEMETRY_COLLECTOR_CONFIG_URI", "CODE2DES_COLLECTOR_CONFIG"}

# Each call's first argument is the variable's name.
READ_CALL = re.compile(r'\b(?:var|required|positive|flag)(?:::<\w+>)?\(\s*"([A-Z][A-Z0-9_]*)"')


def settings_vars(config_text):
    names = set(READ_CALL.findall(config_text))
    # A guard against the pattern going stale when the module is rewritten: these have been
    # read since the first release and must be found.
    missing = {"DB_HOST", "MAX_ATTEMPTS", "ARTIFACT_RETENTION_DAYS", "JOB_DEADLINE_SECONDS"} - names
    if missing:
        raise SystemExit(f"{CONFIG}: found no read of {sorted(missing)}; update READ_CALL in {__file__}")
    return names


class _CfnLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (!Ref, !Sub, !GetAtt, !If …) as {"Fn::…": value}."""


def _tag(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix == "Ref":
        return {"Ref": value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


_CfnLoader.add_multi_constructor("!", _tag)


def load(path):
    return yaml.load(pathlib.Path(path).read_text(), Loader=_CfnLoader)


def traffic_functions(template):
    """The functions an event invokes: the API functions and the scheduled ones."""
    out = {}
    for name, res in template["Resources"].items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        events = (res.get("Properties") or {}).get("Events") or {}
        kinds = {ev.get("Type") for ev in events.values()}
        if kinds & {"HttpApi", "ScheduleV2"}:
            out[name] = "api" if "HttpApi" in kinds else "scheduled"
    return out


def effective_env(template, name):
    env = dict((((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}).get("Variables") or {})
    own = ((template["Resources"][name].get("Properties") or {}).get("Environment") or {}).get("Variables") or {}
    env.update(own)
    return env


def check(template, read, known_in_code):
    errors = []
    functions = traffic_functions(template)
    if not any(kind == "api" for kind in functions.values()):
        errors.append("no function with an HttpApi event: is this template.yaml?")
    unexplained = set(EXCEPTIONS) - read
    if unexplained:
        errors.append(f"EXCEPTIONS names variables the configuration no longer reads: {sorted(unexplained)}")
    values = {}
    for fn in sorted(functions):
        env = effective_env(template, fn)
        for var in sorted(read):
            rule = EXCEPTIONS.get(var, {})
            only = rule.get("only")
            if only is not None and fn not in only:
                continue
            if var not in env:
                errors.append(f"{fn}: {var} is not in its environment (Globals or its own); Settings reads it")
                continue
            empty = env[var] == ""
            if rule.get("empty") and not empty:
                errors.append(f"{fn}: {var} must be declared empty in AWS (it is a local setting)")
            if not rule.get("empty") and empty:
                errors.append(f"{fn}: {var} is empty, which the code reads as unset")
            if only is None:
                values.setdefault(var, {})[fn] = env[var]
    for var, by_fn in sorted(values.items()):
        distinct = {repr(v) for v in by_fn.values()}
        if len(distinct) > 1:
            errors.append(f"{var} differs between functions: {by_fn}")
    # Every variable the template sets anywhere must be read by some Rust source.
    declared = set(((((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}).get("Variables") or {}))
    for name, res in template["Resources"].items():
        if res.get("Type") == "AWS::Serverless::Function":
            declared |= set((((res.get("Properties") or {}).get("Environment") or {}).get("Variables") or {}))
    for var in sorted(declared - known_in_code - READ_BY_LAYERS):
        errors.append(f"{var} is set in template.yaml but no Rust source under {', '.join(SOURCES)} reads it")
    return errors, functions


def rust_literals():
    text = "\n".join(p.read_text() for d in SOURCES for p in (ROOT / d).rglob("*.rs") if "/target/" not in str(p))
    return set(re.findall(r'"([A-Z][A-Z0-9_]*)"', text))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else ROOT / "template.yaml"
    template = load(path)
    read = settings_vars(CONFIG.read_text())
    known = rust_literals()
    errors, functions = check(template, read, known)
    for e in errors:
        print(f"template_env: {e}", file=sys.stderr)
    if errors:
        sys.exit(1)
    # The check's own teeth: without any one checked variable (taken out of Globals and of every
    # function), it must fail.
    checked = sorted(v for v in read if EXCEPTIONS.get(v, {}).get("only", None) != set())
    for var in checked:
        broken = copy.deepcopy(template)
        ((broken.get("Globals") or {}).get("Function") or {}).get("Environment", {}).get("Variables", {}).pop(var, None)
        for res in broken["Resources"].values():
            if res.get("Type") == "AWS::Serverless::Function":
                ((res.get("Properties") or {}).get("Environment") or {}).get("Variables", {}).pop(var, None)
        if not check(broken, read, known)[0]:
            print(f"template_env: removing {var} from the template went unnoticed", file=sys.stderr)
            sys.exit(1)
    api = sorted(f for f, k in functions.items() if k == "api")
    scheduled = sorted(f for f, k in functions.items() if k == "scheduled")
    everywhere = sorted(v for v in read if v not in EXCEPTIONS)
    print(
        f"template_env: {len(read)} variables read by shared/src/config/mod.rs; {len(everywhere)} on every one of "
        f"{len(api)} API and {len(scheduled)} scheduled functions with one value ({', '.join(everywhere)}); "
        f"{len(EXCEPTIONS)} exceptions explained; each of {len(checked)} removals caught"
    )


if __name__ == "__main__":
    main()
