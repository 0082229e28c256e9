//! Job metrics as CloudWatch Embedded Metric Format records (SPEC section 8): one JSON line per
//! record on stdout, which CloudWatch Logs turns into metrics with no API call. The metrics,
//! their dimensions and when each is published: docs/OPERATIONS.md, "Metrics". Printed in
//! Lambda and where `LOG_FORMAT=json`; [`render`] is pure, [`capture`] lets a test read them.

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::domain::quota::QuotaLimit;

pub const NAMESPACE: &str = "Code2Des";
/// The one dimension every metric has, and its value.
pub const SERVICE_DIMENSION: &str = "Service";
pub const SERVICE: &str = "code2des";
/// `QuotaRefused`'s dimension beside `Service`: the limit that refused.
pub const LIMIT_DIMENSION: &str = "Limit";
/// EMF takes at most 100 values of one metric in one record.
const MAX_VALUES: usize = 100;

/// Why a webhook was refused: the `Reason` dimension of `WebhookRejected`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Missing, malformed, stale or wrong `Code2des-Signature`.
    Signature,
    /// Another attempt or nonce (409 `fenced`).
    Fenced,
    /// The job is terminal already (409 `already_terminal`).
    AlreadyTerminal,
    /// The job was soft-deleted (410).
    Deleted,
    /// A body that does not parse or validate (400).
    Invalid,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Signature => "signature",
            Reason::Fenced => "fenced",
            Reason::AlreadyTerminal => "already_terminal",
            Reason::Deleted => "deleted",
            Reason::Invalid => "invalid",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Bytes,
    Milliseconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Bytes => "Bytes",
            Unit::Milliseconds => "Milliseconds",
        }
    }
}

/// One EMF record: metrics (each with one or more values), an optional `Reason`, and
/// properties that are logged with it but are not dimensions (e.g. `code2desId`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    metrics: Vec<(&'static str, Unit, Vec<f64>)>,
    reason: Option<Reason>,
    limit: Option<QuotaLimit>,
    properties: Vec<(&'static str, String)>,
}

impl Record {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a metric with one value.
    pub fn metric(mut self, name: &'static str, unit: Unit, value: f64) -> Self {
        self.metrics.push((name, unit, vec![value]));
        self
    }

    /// Adds a metric with several values (CloudWatch counts each: percentiles see them all).
    pub fn values(mut self, name: &'static str, unit: Unit, values: Vec<f64>) -> Self {
        self.metrics.push((name, unit, values));
        self
    }

    /// Publishes the record's metrics per `Reason` as well.
    pub fn reason(mut self, reason: Reason) -> Self {
        self.reason = Some(reason);
        self
    }

    /// Publishes the record's metrics per `Limit` (and not in total).
    pub fn limit(mut self, limit: QuotaLimit) -> Self {
        self.limit = Some(limit);
        self
    }

    /// A searchable field of the log line that is not a dimension (no extra metric cost).
    pub fn property(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.properties.push((name, value.into()));
        self
    }

    /// Prints the record (see [`emit`]).
    pub fn emit(self) {
        emit(&self)
    }
}

/// The record as one line of JSON (no newline), at `timestamp_ms` since the epoch.
pub fn render(record: &Record, timestamp_ms: u64) -> String {
    let mut dimensions = vec![json!([SERVICE_DIMENSION])];
    if record.reason.is_some() {
        dimensions.insert(0, json!([SERVICE_DIMENSION, "Reason"]));
    }
    if record.limit.is_some() {
        dimensions = vec![json!([SERVICE_DIMENSION, LIMIT_DIMENSION])];
    }
    let definitions: Vec<Value> =
        record.metrics.iter().map(|(name, unit, _)| json!({"Name": name, "Unit": unit.as_str()})).collect();
    let mut root = Map::new();
    root.insert(
        "_aws".into(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{"Namespace": NAMESPACE, "Dimensions": dimensions, "Metrics": definitions}],
        }),
    );
    root.insert(SERVICE_DIMENSION.into(), json!(SERVICE));
    if let Some(reason) = record.reason {
        root.insert("Reason".into(), json!(reason.as_str()));
    }
    if let Some(limit) = record.limit {
        root.insert(LIMIT_DIMENSION.into(), json!(limit.as_str()));
    }
    for (name, value) in &record.properties {
        root.insert((*name).into(), json!(value));
    }
    for (name, _, values) in &record.metrics {
        let value = match values.as_slice() {
            [one] => json!(one),
            many => json!(many),
        };
        root.insert((*name).into(), value);
    }
    Value::Object(root).to_string()
}

/// Whether records are printed: in Lambda, or with `LOG_FORMAT=json`. Read once.
pub fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| crate::config::in_lambda() || crate::config::json_logs())
}

/// Records kept for the [`Capture`]s alive (how many, and the lines since the first began).
static CAPTURED: Mutex<(usize, Vec<String>)> = Mutex::new((0, Vec::new()));

/// Prints the record as one line on stdout, with one locked write so that lines of concurrent
/// tasks never interleave, when [`enabled`]; and keeps it for a [`capture`] in progress.
pub fn emit(record: &Record) {
    if record.metrics.iter().all(|(_, _, v)| v.is_empty()) {
        return;
    }
    let captured = CAPTURED.lock().unwrap_or_else(|p| p.into_inner()).0 > 0;
    if !enabled() && !captured {
        return;
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
    let line = render(record, now);
    if captured {
        let mut slot = CAPTURED.lock().unwrap_or_else(|p| p.into_inner());
        if slot.0 > 0 {
            slot.1.push(line.clone());
        }
    }
    if enabled() {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        let mut out = std::io::stdout().lock();
        // A metric that cannot be written is not worth failing a request for.
        let _ = out.write_all(&bytes).and_then(|()| out.flush());
    }
}

/// Collects every record emitted in this process from now until the guard is dropped (for
/// tests: records are collected whether or not they are printed). Captures alive at the same
/// time share what they collect (from the first one's start), so concurrent tests see each
/// other's records too: count with `>=`, or filter by a property such as `code2desId`.
pub fn capture() -> Capture {
    CAPTURED.lock().unwrap_or_else(|p| p.into_inner()).0 += 1;
    Capture(())
}

/// See [`capture`].
pub struct Capture(());

impl Capture {
    /// The records so far, parsed.
    pub fn records(&self) -> Vec<Value> {
        let slot = CAPTURED.lock().unwrap_or_else(|p| p.into_inner());
        slot.1.iter().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    /// The sum of one metric's values over the records so far, optionally for one `Reason`.
    pub fn total(&self, metric: &str, reason: Option<Reason>) -> f64 {
        self.records()
            .iter()
            .filter(|r| reason.is_none_or(|want| r["Reason"] == want.as_str()))
            .map(|r| match &r[metric] {
                Value::Number(n) => n.as_f64().unwrap_or(0.0),
                Value::Array(a) => a.iter().filter_map(Value::as_f64).sum(),
                _ => 0.0,
            })
            .sum()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let mut slot = CAPTURED.lock().unwrap_or_else(|p| p.into_inner());
        slot.0 -= 1;
        if slot.0 == 0 {
            slot.1.clear();
        }
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn terminal(name: &'static str, duration: Option<Duration>) -> Record {
    let record = Record::new().metric(name, Unit::Count, 1.0);
    match duration {
        Some(d) => record.metric("JobDurationMs", Unit::Milliseconds, millis(d)),
        None => record,
    }
}

/// A trigger created a job.
pub fn job_triggered() {
    Record::new().metric("JobsTriggered", Unit::Count, 1.0).emit()
}

/// A webhook completed a job `duration` after its attempt started.
pub fn job_completed(duration: Option<Duration>) {
    terminal("JobsCompleted", duration).emit()
}

/// A webhook failed a job `duration` after its attempt started.
pub fn job_failed(duration: Option<Duration>) {
    terminal("JobsFailed", duration).emit()
}

/// A user cancelled a job `duration` after its attempt started.
pub fn job_cancelled(duration: Option<Duration>) {
    terminal("JobsCancelled", duration).emit()
}

/// `n` overdue jobs were persisted as failed `timed out` (nothing is printed for 0).
pub fn job_timed_out(n: u64) {
    if n > 0 {
        Record::new().metric("JobsTimedOut", Unit::Count, n as f64).emit()
    }
}

/// Overdue jobs persisted as failed `timed out`, one duration each (attempt start to expiry):
/// `JobsTimedOut` counts them and `JobDurationMs` takes every duration.
pub fn jobs_timed_out(durations: &[Duration]) {
    for chunk in durations.chunks(MAX_VALUES) {
        Record::new()
            .metric("JobsTimedOut", Unit::Count, chunk.len() as f64)
            .values("JobDurationMs", Unit::Milliseconds, chunk.iter().copied().map(millis).collect())
            .emit()
    }
}

/// A retry created the job's next attempt.
pub fn job_retried() {
    Record::new().metric("JobsRetried", Unit::Count, 1.0).emit()
}

/// A webhook was refused.
pub fn webhook_rejected(reason: Reason) {
    Record::new().metric("WebhookRejected", Unit::Count, 1.0).reason(reason).emit()
}

/// A webhook was accepted on the deprecated `Code2des-Signature` (SPEC section 9): who still
/// sends it, by its `User-Agent` (a property, not a dimension: no metric per value).
pub fn legacy_signature_used(user_agent: Option<&str>) {
    let agent: String = user_agent.unwrap_or("").chars().filter(|c| !c.is_control()).take(120).collect();
    Record::new().metric("LegacySignatureUsed", Unit::Count, 1.0).property("userAgent", agent).emit()
}

/// A purge run deleted `jobs` jobs (soft-deleted long enough ago), `objects` of their artifact
/// objects, `keys` expired idempotency keys and `deliveries` expired webhook answers (nothing is
/// printed when it did nothing).
pub fn purged(jobs: u64, objects: u64, keys: u64, deliveries: u64, windows: u64) {
    if jobs + objects + keys + deliveries + windows > 0 {
        Record::new()
            .metric("JobsPurged", Unit::Count, jobs as f64)
            .metric("ArtifactObjectsPurged", Unit::Count, objects as f64)
            .metric("IdempotencyKeysExpired", Unit::Count, keys as f64)
            .metric("WebhookDeliveriesExpired", Unit::Count, deliveries as f64)
            .metric("TriggerWindowsPruned", Unit::Count, windows as f64)
            .emit()
    }
}

/// A trigger or retry was refused by a quota (429).
pub fn quota_refused(limit: QuotaLimit) {
    Record::new().metric("QuotaRefused", Unit::Count, 1.0).limit(limit).emit()
}

/// A request's time budget ran out waiting for `dependency` (503 `dependency_timeout`); the
/// route and the dependency are properties, not dimensions.
pub fn budget_exhausted(route: &'static str, dependency: &'static str) {
    Record::new()
        .metric("BudgetExhausted", Unit::Count, 1.0)
        .property("route", route)
        .property("dependency", dependency)
        .emit()
}

/// The artifact bucket refused the function's role (S3 403): IAM or KMS is misconfigured, not
/// the artifact. Alarmed (template.yaml `ConfigurationErrorAlarm`).
pub fn configuration_error(dependency: &'static str) {
    Record::new().metric("ConfigurationError", Unit::Count, 1.0).property("dependency", dependency).emit()
}

/// A result of `n` bytes was answered.
pub fn result_bytes(n: u64) {
    Record::new().metric("ResultBytes", Unit::Bytes, n as f64).emit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(record: &Record) -> Value {
        let line = render(record, 1_700_000_000_123);
        assert!(!line.contains('\n'), "one line per record");
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn a_terminal_transition_is_one_emf_record_with_its_duration() {
        let v = parse(&terminal("JobsCompleted", Some(Duration::from_millis(1500))));
        assert_eq!(v["_aws"]["Timestamp"], 1_700_000_000_123u64);
        let directive = &v["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "Code2Des");
        assert_eq!(directive["Dimensions"], json!([["Service"]]));
        assert_eq!(
            directive["Metrics"],
            json!([{"Name": "JobsCompleted", "Unit": "Count"}, {"Name": "JobDurationMs", "Unit": "Milliseconds"}])
        );
        assert_eq!(v["Service"], "code2des");
        assert_eq!(v["JobsCompleted"], 1.0);
        assert_eq!(v["JobDurationMs"], 1500.0);
        // Without a known start there is no duration.
        let v = parse(&terminal("JobsFailed", None));
        assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Metrics"].as_array().unwrap().len(), 1);
        assert!(v.get("JobDurationMs").is_none());
    }

    #[test]
    fn a_rejected_webhook_is_published_per_reason_and_in_total() {
        for (reason, name) in [
            (Reason::Signature, "signature"),
            (Reason::Fenced, "fenced"),
            (Reason::AlreadyTerminal, "already_terminal"),
            (Reason::Deleted, "deleted"),
            (Reason::Invalid, "invalid"),
        ] {
            let v = parse(&Record::new().metric("WebhookRejected", Unit::Count, 1.0).reason(reason));
            assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["Service", "Reason"], ["Service"]]));
            assert_eq!(v["Reason"], name);
            assert_eq!(v["WebhookRejected"], 1.0);
        }
    }

    #[test]
    fn a_quota_refusal_is_published_per_limit_as_the_template_queries_it() {
        for (limit, name) in [(QuotaLimit::Active, "active"), (QuotaLimit::Burst, "burst")] {
            let v = parse(&Record::new().metric("QuotaRefused", Unit::Count, 1.0).limit(limit));
            assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["Service", "Limit"]]));
            assert_eq!(
                (&v["Service"], &v["Limit"], &v["QuotaRefused"]),
                (&json!("code2des"), &json!(name), &json!(1.0))
            );
        }
    }

    #[test]
    fn several_values_and_properties() {
        let r = Record::new()
            .metric("JobsTimedOut", Unit::Count, 2.0)
            .values("JobDurationMs", Unit::Milliseconds, vec![900_000.0, 901_500.0])
            .property("code2desId", "0190-abc");
        let v = parse(&r);
        assert_eq!(v["JobDurationMs"], json!([900_000.0, 901_500.0]));
        assert_eq!(v["code2desId"], "0190-abc");
        assert_eq!(
            parse(&Record::new().metric("ResultBytes", Unit::Bytes, 42.0))["_aws"]["CloudWatchMetrics"][0]["Metrics"]
                [0]["Unit"],
            "Bytes"
        );
    }

    #[test]
    fn captured_records_read_back() {
        let c = capture();
        job_triggered();
        job_completed(Some(Duration::from_secs(2)));
        webhook_rejected(Reason::Fenced);
        webhook_rejected(Reason::Fenced);
        webhook_rejected(Reason::Signature);
        jobs_timed_out(&[Duration::from_secs(900); 150]);
        job_timed_out(0);
        result_bytes(1234);
        // Other tests of this binary may emit at the same time: at least ours are there.
        assert!(c.total("JobsTriggered", None) >= 1.0);
        assert!(c.total("WebhookRejected", Some(Reason::Fenced)) >= 2.0);
        assert!(c.total("WebhookRejected", Some(Reason::Signature)) >= 1.0);
        assert!(c.total("JobsTimedOut", None) >= 150.0);
        assert!(c.total("ResultBytes", None) >= 1234.0);
        let chunks = c.records().iter().filter(|r| r.get("JobsTimedOut").is_some()).count();
        assert!(chunks >= 2, "at most 100 values per record");
    }
}
