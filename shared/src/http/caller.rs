//! The caller, as a handler first sees it: who asks (the JWT `sub`), in which organization and
//! project, and about which job, all parsed into newtypes in one line. The newtypes travel
//! unchanged into the statements, which bind them.
//!
//! Order of checks: identity first (401), then the path (400 naming the parameter), so an
//! anonymous caller learns nothing about which ids are well-formed.

use lambda_http::Request;

use crate::domain::ids::{Code2desId, OrganizationId, ProjectId};
use crate::domain::scope::{JobRef, Scope};
use crate::error::ApiError;
use crate::http::request::{path_param, subject};

/// From an authorised user-route request: `sub`, `{organizationId}`, `{projectId}`.
pub fn scope(req: &Request) -> Result<Scope, ApiError> {
    let subject = subject(req)?;
    Ok(Scope {
        organization_id: OrganizationId::parse(path_param(req, "organizationId")?)?,
        project_id: ProjectId::parse(path_param(req, "projectId")?)?,
        subject,
    })
}

/// The caller's scope and `{code2desId}`.
pub fn job_ref(req: &Request) -> Result<JobRef, ApiError> {
    let scope = scope(req)?;
    Ok(JobRef { id: Code2desId::parse(path_param(req, "code2desId")?)?, scope })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(sub: Option<&str>, org: &str, project: &str, id: Option<&str>) -> Request {
        let mut params = serde_json::json!({"organizationId": org, "projectId": project});
        if let Some(id) = id {
            params["code2desId"] = id.into();
        }
        let mut ctx = serde_json::json!({
            "accountId": "1", "apiId": "a", "domainName": "d", "domainPrefix": "d", "requestId": "r",
            "routeKey": "GET /x", "stage": "$default", "time": "01/Jan/2026:00:00:00 +0000", "timeEpoch": 0,
            "http": {"method": "GET", "path": "/x", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "t"}
        });
        if let Some(sub) = sub {
            ctx["authorizer"] = serde_json::json!({"jwt": {"claims": {"sub": sub}, "scopes": null}});
        }
        let ev = serde_json::json!({
            "version": "2.0", "routeKey": "GET /x", "rawPath": "/x", "rawQueryString": "", "headers": {},
            "requestContext": ctx, "isBase64Encoded": false, "pathParameters": params
        });
        lambda_http::request::from_str(&ev.to_string()).unwrap()
    }

    const ID: &str = "01890a5d-ac96-774b-bcce-b302099a8057";

    #[test]
    fn one_line_gives_the_typed_caller_and_job() {
        let j = job_ref(&req(Some("u1"), "7", "8", Some(ID))).unwrap();
        assert_eq!(j.scope.subject.as_str(), "u1");
        assert_eq!((j.scope.organization_id.get(), j.scope.project_id.get()), (7, 8));
        assert_eq!(j.id.to_string(), ID);
        assert_eq!(j.location(), format!("/organizations/7/projects/8/code2des/{ID}"));
    }

    #[test]
    fn identity_is_checked_before_the_path() {
        let e = scope(&req(None, "x", "8", None)).unwrap_err();
        assert_eq!(e.status().as_u16(), 401);
        let e = scope(&req(Some("u"), "x", "8", None)).unwrap_err();
        assert!(e.to_string().starts_with("organizationId"), "{e}");
        let e = job_ref(&req(Some("u"), "1", "8", Some("nope"))).unwrap_err();
        assert!(e.to_string().starts_with("code2desId"), "{e}");
    }
}
