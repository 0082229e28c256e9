//! The AWS adapter: the SDK's configuration, the artifact bucket (the one place that speaks S3),
//! Secrets Manager, and RDS IAM auth tokens. It may import the domain, `error` and `config`.

pub mod bucket;
pub mod rds_iam;
pub mod sdk;
pub mod secrets;
