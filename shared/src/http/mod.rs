//! The HTTP edge the five handlers share: the route table, the caller (identity and path ids as
//! newtypes), request parameters and bodies, responses (the SPEC error body), and the job's
//! JSON view, the adapters' errors as answers (`faults`) and the domain's (`refusals`). It may
//! import the domain, `error` and the adapters' error types; nothing here speaks SQL or S3.

pub mod caller;
pub mod faults;
pub mod refusals;
pub mod request;
pub mod response;
pub mod routes;
pub mod view;
