//! The HTTP edge the five handlers share: the route table, the caller (identity and path ids as
//! newtypes), request parameters and bodies, responses (the SPEC error body), and the job's
//! JSON view. It may import the domain and `error`; nothing here speaks SQL or S3.

pub mod caller;
pub mod request;
pub mod response;
pub mod routes;
pub mod view;
