//! `code2des-local`: the whole Code2Des API on one machine, no AWS, no Docker (SPEC section 6).

pub mod demo;
pub mod gateway;
pub mod identity;
pub mod import;
pub mod postgres;
pub mod runtime_api;
pub mod s3server;
pub mod seed;
mod serve;
pub mod stack;
pub mod year;
