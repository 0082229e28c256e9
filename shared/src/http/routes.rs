//! THE route table: every route of the API (method × path → function), in one place.
//!
//! The local gateway matches requests and answers CORS from it, the functions that serve
//! several routes tell them apart by the event's route key through it (never by the path
//! alone, so a `DELETE` is never served as a `GET`), and a test holds template.yaml,
//! openapi.yaml and events/ to it.

/// The five Lambda functions of the design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    Trigger,
    Lifecycle,
    Result,
    Webhook,
    Placement,
}

impl Function {
    /// The binary's name (template.yaml `BuildProperties.Binary`).
    pub fn binary(self) -> &'static str {
        match self {
            Function::Trigger => "trigger",
            Function::Lifecycle => "lifecycle",
            Function::Result => "result",
            Function::Webhook => "webhook",
            Function::Placement => "placement",
        }
    }

    /// The function's logical id in template.yaml.
    pub fn logical_id(self) -> &'static str {
        match self {
            Function::Trigger => "TriggerFunction",
            Function::Lifecycle => "LifecycleFunction",
            Function::Result => "ResultFunction",
            Function::Webhook => "WebhookFunction",
            Function::Placement => "PlacementFunction",
        }
    }
}

/// One route of the API. Its discriminant is its index in [`ROUTES`] (checked when the crate
/// compiles), so [`Route::get`] is total: there is no unknown id to fall back from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteId {
    Trigger,
    List,
    Get,
    Delete,
    Cancel,
    Retry,
    Result,
    Placement,
    Webhook,
}

impl RouteId {
    /// Every route, in [`ROUTES`]' order.
    pub const ALL: [RouteId; 9] = [
        RouteId::Trigger,
        RouteId::List,
        RouteId::Get,
        RouteId::Delete,
        RouteId::Cancel,
        RouteId::Retry,
        RouteId::Result,
        RouteId::Placement,
        RouteId::Webhook,
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub id: RouteId,
    pub method: &'static str,
    /// API Gateway's path template: `{name}` is one path segment.
    pub path: &'static str,
    pub function: Function,
    /// Behind the JWT authorizer (every user route); the webhook authenticates by signature.
    pub user: bool,
    /// openapi.yaml's `operationId`.
    pub operation_id: &'static str,
    /// The API Gateway v2 event under events/ (`sam local invoke -e`, and the tests).
    pub event_file: &'static str,
}

const BASE: &str = "/organizations/{organizationId}/projects/{projectId}/code2des";

macro_rules! base {
    ($tail:literal) => {
        concat!("/organizations/{organizationId}/projects/{projectId}/code2des", $tail)
    };
}

pub const ROUTES: &[Route] = &[
    Route {
        id: RouteId::Trigger,
        method: "POST",
        path: base!(""),
        function: Function::Trigger,
        user: true,
        operation_id: "triggerJob",
        event_file: "trigger.json",
    },
    Route {
        id: RouteId::List,
        method: "GET",
        path: base!(""),
        function: Function::Lifecycle,
        user: true,
        operation_id: "listJobs",
        event_file: "lifecycle-list.json",
    },
    Route {
        id: RouteId::Get,
        method: "GET",
        path: base!("/{code2desId}"),
        function: Function::Lifecycle,
        user: true,
        operation_id: "getJob",
        event_file: "lifecycle-get.json",
    },
    Route {
        id: RouteId::Delete,
        method: "DELETE",
        path: base!("/{code2desId}"),
        function: Function::Lifecycle,
        user: true,
        operation_id: "deleteJob",
        event_file: "lifecycle-delete.json",
    },
    Route {
        id: RouteId::Cancel,
        method: "POST",
        path: base!("/{code2desId}/cancel"),
        function: Function::Lifecycle,
        user: true,
        operation_id: "cancelJob",
        event_file: "lifecycle-cancel.json",
    },
    Route {
        id: RouteId::Retry,
        method: "POST",
        path: base!("/{code2desId}/retry"),
        function: Function::Trigger,
        user: true,
        operation_id: "retryJob",
        event_file: "retry.json",
    },
    Route {
        id: RouteId::Result,
        method: "GET",
        path: base!("/{code2desId}/result"),
        function: Function::Result,
        user: true,
        operation_id: "getJobResult",
        event_file: "result.json",
    },
    Route {
        id: RouteId::Placement,
        method: "POST",
        path: base!("/{code2desId}/placement"),
        function: Function::Placement,
        user: true,
        operation_id: "placeJob",
        event_file: "placement.json",
    },
    Route {
        id: RouteId::Webhook,
        method: "POST",
        path: "/code2des/webhook",
        function: Function::Webhook,
        user: false,
        operation_id: "workerWebhook",
        event_file: "webhook.json",
    },
];

// ROUTES holds every RouteId once, at the index of its discriminant: a route added to the enum
// but not to the table (or out of order) stops the build here.
const _: () = {
    assert!(ROUTES.len() == RouteId::ALL.len());
    let mut i = 0;
    while i < ROUTES.len() {
        assert!(ROUTES[i].id as usize == i && RouteId::ALL[i] as usize == i);
        i += 1;
    }
};

/// CORS, as the HTTP API's `CorsConfiguration` answers it (SPEC sections 3 and 7). The
/// plugin's iframe sends `Origin: null`, and identity travels in a bearer token, not a
/// cookie, so any origin may call.
pub mod cors {
    pub const ALLOW_ORIGIN: &str = "*";
    pub const ALLOW_HEADERS: &[&str] = &["authorization", "content-type", "idempotency-key", "if-none-match"];
    /// `ratelimit` and `ratelimit-policy`: trigger and retry tell a client its quotas (SPEC
    /// section 9), which a browser lets the plugin read only when they are exposed.
    pub const EXPOSE_HEADERS: &[&str] = &["location", "retry-after", "etag", "ratelimit", "ratelimit-policy"];
    pub const MAX_AGE_SECS: u32 = 600;

    /// Every method a user route answers, in the table's order, each once.
    pub fn allow_methods() -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for r in super::ROUTES.iter().filter(|r| r.user) {
            if !out.contains(&r.method) {
                out.push(r.method);
            }
        }
        out
    }
}

impl Route {
    /// The route key as API Gateway writes it (`requestContext.routeKey`).
    pub fn key(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    pub fn get(id: RouteId) -> &'static Route {
        &ROUTES[id as usize]
    }

    /// The route of an API Gateway route key.
    pub fn by_key(key: &str) -> Option<&'static Route> {
        let (method, path) = key.split_once(' ')?;
        ROUTES.iter().find(|r| r.method == method && r.path == path)
    }

    /// The path's parameters if `path` (a request path, percent-decoded per segment) fits
    /// this route's template: literal segments exactly, `{name}` any one non-empty segment.
    pub fn match_path(&self, path: &str) -> Option<Vec<(&'static str, String)>> {
        let segs: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
        let tmpl: Vec<&'static str> = self.path[1..].split('/').collect();
        if segs.len() != tmpl.len() || segs.iter().any(|s| s.is_empty()) {
            return None;
        }
        let mut params = Vec::new();
        for (t, s) in tmpl.iter().zip(&segs) {
            match t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
                Some(name) => {
                    params.push((name, percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()))
                }
                None if t == s => {}
                None => return None,
            }
        }
        Some(params)
    }
}

/// What a request's method and path resolve to.
#[derive(Debug, PartialEq, Eq)]
pub enum Resolved {
    Route(&'static Route, Vec<(&'static str, String)>),
    /// The path is a route's, the method none of its: 405 with these in `Allow`.
    MethodNotAllowed(Vec<&'static str>),
    NotFound,
}

/// Matches like API Gateway: the route whose method and path template fit.
pub fn resolve(method: &str, path: &str) -> Resolved {
    let mut allowed = Vec::new();
    for r in ROUTES {
        if let Some(params) = r.match_path(path) {
            if r.method == method {
                return Resolved::Route(r, params);
            }
            allowed.push(r.method);
        }
    }
    if allowed.is_empty() {
        Resolved::NotFound
    } else {
        Resolved::MethodNotAllowed(allowed)
    }
}

/// The base path of the user API, for `Location` headers and docs.
pub fn base() -> &'static str {
    BASE
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "01890a5d-ac96-774b-bcce-b302099a8057";

    fn id_of(method: &str, path: &str) -> Option<RouteId> {
        match resolve(method, path) {
            Resolved::Route(r, _) => Some(r.id),
            _ => None,
        }
    }

    #[test]
    fn every_route_id_is_in_the_table_once_and_keys_are_unique() {
        for id in RouteId::ALL {
            assert_eq!(ROUTES.iter().filter(|r| r.id == id).count(), 1, "{id:?}");
            assert_eq!(Route::get(id).id, id);
            assert_eq!(Route::by_key(&Route::get(id).key()).map(|r| r.id), Some(id));
        }
        let mut keys: Vec<String> = ROUTES.iter().map(Route::key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), ROUTES.len());
    }

    #[test]
    fn requests_resolve_like_api_gateway() {
        let b = "/organizations/1/projects/2/code2des";
        assert_eq!(id_of("POST", b), Some(RouteId::Trigger));
        assert_eq!(id_of("GET", b), Some(RouteId::List));
        assert_eq!(id_of("GET", &format!("{b}/{ID}")), Some(RouteId::Get));
        assert_eq!(id_of("DELETE", &format!("{b}/{ID}")), Some(RouteId::Delete));
        assert_eq!(id_of("POST", &format!("{b}/{ID}/retry")), Some(RouteId::Retry));
        assert_eq!(id_of("POST", &format!("{b}/{ID}/cancel")), Some(RouteId::Cancel));
        assert_eq!(id_of("GET", &format!("{b}/{ID}/result")), Some(RouteId::Result));
        assert_eq!(id_of("POST", &format!("{b}/{ID}/placement")), Some(RouteId::Placement));
        assert_eq!(id_of("POST", "/code2des/webhook"), Some(RouteId::Webhook));
        assert_eq!(resolve("GET", "/code2des/webhook"), Resolved::MethodNotAllowed(vec!["POST"]));
        assert_eq!(resolve("PUT", &format!("{b}/{ID}")), Resolved::MethodNotAllowed(vec!["GET", "DELETE"]));
        assert_eq!(resolve("POST", &format!("{b}/")), Resolved::NotFound);
        assert_eq!(resolve("GET", &format!("{b}/{ID}/nothing")), Resolved::NotFound);
        assert_eq!(resolve("GET", "/"), Resolved::NotFound);
        assert_eq!(resolve("GET", ""), Resolved::NotFound);
        let Resolved::Route(_, p) = resolve("GET", "/organizations/a%20b/projects/2/code2des") else { panic!() };
        assert_eq!(p[0], ("organizationId", "a b".to_owned()));
    }

    #[test]
    fn cors_allows_every_user_method() {
        assert_eq!(cors::allow_methods(), vec!["POST", "GET", "DELETE"]);
    }
}
