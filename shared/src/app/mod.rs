//! What ties the adapters together, under the functions: [`resources::Resources`] builds the
//! pool, the bucket and the webhook keys from the settings; [`dispatch`] writes an attempt's row
//! and its manifest; [`webhook_keys`] verifies signatures against keys that rotate in Secrets
//! Manager. It may import every other layer but `http`.

pub mod dispatch;
pub mod function;
pub mod resources;
pub mod webhook_keys;
