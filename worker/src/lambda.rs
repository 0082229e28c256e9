//! The worker in AWS: a container-image Lambda fed by the worker queue (docs/WORKER.md, "In
//! AWS"). S3 notifies the queue of each new manifest; each SQS message carries one S3 event, and
//! each of its records names a manifest, whose job is converted and reported as `complete` does
//! locally. A message is reported back as a batch item failure when its job could not be
//! reported (S3 or the webhook unreachable, the backend answering 5xx), so SQS delivers it again
//! and, after the queue's `maxReceiveCount`, moves it to the dead-letter queue, which alarms.

use aws_lambda_events::event::s3::S3Event;
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use serde_json::Value;

use crate::Worker;

/// The manifest keys an SQS message's body names: an S3 event's records (their keys are
/// URL-encoded, `+` for a space), or none for S3's `s3:TestEvent`, sent once when the
/// notification is configured.
pub fn manifest_keys(body: &str) -> Result<Vec<String>, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| format!("the message is not JSON: {e}"))?;
    if v.get("Event").and_then(Value::as_str) == Some("s3:TestEvent") {
        return Ok(Vec::new());
    }
    let event: S3Event = serde_json::from_value(v).map_err(|e| format!("the message is not an S3 event: {e}"))?;
    let mut keys = Vec::new();
    for r in event.records {
        let Some(key) = r.s3.object.key else { continue };
        let plus = key.replace('+', " ");
        let decoded = percent_encoding::percent_decode_str(&plus)
            .decode_utf8()
            .map_err(|e| format!("an object key is not UTF-8: {e}"))?;
        // The notification is filtered to manifest.json; anything else is not ours to handle.
        if decoded.ends_with("/manifest.json") {
            keys.push(decoded.into_owned());
        }
    }
    Ok(keys)
}

/// Handles one SQS batch: every message's manifests, one after the other (one renderer).
pub async fn handle(worker: &Worker, event: SqsEvent) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for message in event.records {
        let id = message.message_id.clone().unwrap_or_default();
        if !handle_message(worker, message.body.as_deref().unwrap_or("")).await {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            response.batch_item_failures.push(failure);
        }
    }
    response
}

/// Whether the message is done with: every job it names reported, or refused for good.
async fn handle_message(worker: &Worker, body: &str) -> bool {
    let keys = match manifest_keys(body) {
        Ok(keys) => keys,
        Err(e) => {
            // Not retried into success by waiting: to the dead-letter queue, where it alarms.
            tracing::error!(error = %e, "an SQS message the worker cannot read");
            return false;
        }
    };
    let mut done = true;
    for key in keys {
        let outcome = match worker.read_manifest(&key).await {
            Ok(m) => worker.complete(&m).await,
            Err(e) => Err(e),
        };
        match outcome {
            // Taken, or the backend will take nothing more from this attempt (409, 410).
            Ok(reply) if (200..300).contains(&reply.status) || reply.says_stop() => {
                tracing::info!(manifest = %key, status = reply.status, "job reported");
            }
            Ok(reply) => {
                tracing::error!(manifest = %key, status = reply.status, "the backend refused the report; the message will be delivered again");
                done = false;
            }
            Err(e) => {
                tracing::error!(manifest = %key, error = %e, "the job could not be reported; the message will be delivered again");
                done = false;
            }
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed event's S3 event (the body of its one message), with another object key.
    fn s3_event_with_key(key: &str) -> String {
        let sqs: SqsEvent = serde_json::from_str(include_str!("../../events/worker-sqs.json")).unwrap();
        let mut body: Value = serde_json::from_str(sqs.records[0].body.as_deref().unwrap()).unwrap();
        body["Records"][0]["s3"]["object"]["key"] = key.into();
        body.to_string()
    }

    #[test]
    fn keys_are_read_from_s3_events_and_test_events_are_ignored() {
        let sqs: SqsEvent = serde_json::from_str(include_str!("../../events/worker-sqs.json")).unwrap();
        let keys = manifest_keys(sqs.records[0].body.as_deref().unwrap()).unwrap();
        assert_eq!(keys.len(), 1);
        assert!(keys[0].starts_with("code2des/") && keys[0].ends_with("/1/manifest.json"), "{keys:?}");
        assert_eq!(manifest_keys(r#"{"Service":"Amazon S3","Event":"s3:TestEvent"}"#).unwrap(), Vec::<String>::new());
        // S3 URL-encodes keys in its events, a space as `+`.
        let encoded = s3_event_with_key("code2des/a+b%2Fc/1/manifest.json");
        assert_eq!(manifest_keys(&encoded).unwrap(), vec!["code2des/a b/c/1/manifest.json".to_owned()]);
        assert!(manifest_keys(&s3_event_with_key("code2des/x/1/result.json")).unwrap().is_empty());
        assert!(manifest_keys("not json").is_err());
        assert!(manifest_keys(r#"{"Records": 3}"#).is_err());
    }
}
