//! The CodeDeploy PreTraffic hook of every aliased function (template.yaml): run the migration,
//! as a manual invocation does ([`crate::handle`]), then report it with
//! `PutLifecycleEventHookExecutionStatus`: `Succeeded` lets traffic shift, `Failed` stops the
//! deployment and the alias never leaves the old version. One deploy runs the hook once per
//! function; the migration's advisory lock serialises them, and all but the first find the
//! schema current. Anything but a hook event is a manual invocation.

use aws_sdk_codedeploy::types::LifecycleEventStatus;
use lambda_runtime::{Error, LambdaEvent};
use serde_json::{json, Value};
use shared::error::chain;

use crate::Deps;

/// The two fields CodeDeploy sends a lifecycle hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEvent {
    pub deployment_id: String,
    pub execution_id: String,
}

impl HookEvent {
    /// The hook event in an invocation's payload, or `None` for anything else (a manual
    /// `aws lambda invoke` with `{}` or no payload).
    pub fn from_payload(payload: &Value) -> Option<Self> {
        let field = |name: &str| payload.get(name).and_then(Value::as_str).map(str::to_owned);
        Some(Self { deployment_id: field("DeploymentId")?, execution_id: field("LifecycleEventHookExecutionId")? })
    }
}

/// Where the outcome goes: CodeDeploy, through the official SDK.
pub struct Reporter {
    client: aws_sdk_codedeploy::Client,
}

impl Reporter {
    /// The client the function uses in AWS: the execution role's credentials and the HTTPS
    /// client every other function uses (`shared::aws::sdk::sdk_config`). Builds no connection.
    pub async fn from_env() -> Self {
        Self::new(aws_sdk_codedeploy::Client::new(shared::aws::sdk::sdk_config().await))
    }

    /// Any client, e.g. one pointed at an emulated endpoint.
    pub fn new(client: aws_sdk_codedeploy::Client) -> Self {
        Self { client }
    }

    /// `PutLifecycleEventHookExecutionStatus`. The SDK retries transient failures itself.
    pub async fn report(&self, hook: &HookEvent, succeeded: bool) -> Result<(), Error> {
        let status = if succeeded { LifecycleEventStatus::Succeeded } else { LifecycleEventStatus::Failed };
        self.client
            .put_lifecycle_event_hook_execution_status()
            .deployment_id(&hook.deployment_id)
            .lifecycle_event_hook_execution_id(&hook.execution_id)
            .status(status)
            .send()
            .await
            .map_err(|e| {
                Error::from(format!(
                    "cannot report the hook's outcome to CodeDeploy (deployment {}): {}",
                    hook.deployment_id,
                    chain(&e)
                ))
            })?;
        Ok(())
    }
}

/// Every invocation of the function. `deps` is the instance's set-up, or why it failed: a
/// hook must report even then, or CodeDeploy waits an hour for an answer before it gives up.
///
/// A hook invocation answers `{"hook": {"deploymentId", "status"}, …}` when the migration
/// succeeded. When it failed, `Failed` is reported and the invocation fails too, so the
/// function's `Errors` alarm fires and the log has the cause; the template sets no retries for
/// the hook's (asynchronous) invocation, since the outcome is already reported. When the
/// report itself fails, the invocation fails: CodeDeploy then times the hook out and stops the
/// deployment, which keeps the old code serving.
pub async fn dispatch(
    deps: Result<&Deps, &str>,
    reporter: &Reporter,
    event: LambdaEvent<Value>,
) -> Result<Value, Error> {
    let hook = HookEvent::from_payload(&event.payload);
    if let Some(hook) = &hook {
        tracing::info!(deployment = %hook.deployment_id, "PreTraffic hook: migrating before the new version takes traffic");
    }
    let outcome = match deps {
        // With its sources: refinery's own message is only "error applying migration V1__…",
        // the database's reason is its source.
        Ok(deps) => crate::handle(deps, event).await.map_err(|e| Error::from(chain(&*e))),
        Err(e) => Err(Error::from(format!("migrate function set-up failed: {e}"))),
    };
    let Some(hook) = hook else { return outcome };
    reporter.report(&hook, outcome.is_ok()).await?;
    match outcome {
        Ok(mut answer) => {
            tracing::info!(deployment = %hook.deployment_id, "PreTraffic hook: Succeeded reported");
            answer["hook"] = json!({ "deploymentId": hook.deployment_id, "status": "Succeeded" });
            Ok(answer)
        }
        Err(e) => {
            tracing::error!(deployment = %hook.deployment_id, error = %e, "PreTraffic hook: migration failed, Failed reported: the deployment stops");
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_codedeploy_sends_is_a_hook_and_nothing_else_is() {
        let hook = HookEvent::from_payload(&json!({
            "DeploymentId": "d-ABCDEF123",
            "LifecycleEventHookExecutionId": "eyJlbmNyeXB0ZWREYXRhIjoi"
        }));
        assert_eq!(
            hook,
            Some(HookEvent { deployment_id: "d-ABCDEF123".into(), execution_id: "eyJlbmNyeXB0ZWREYXRhIjoi".into() })
        );
        for manual in [
            json!({}),
            json!(null),
            json!({"DeploymentId": "d-1"}),
            json!({"DeploymentId": 1, "LifecycleEventHookExecutionId": "x"}),
        ] {
            assert_eq!(HookEvent::from_payload(&manual), None, "{manual}");
        }
    }
}
