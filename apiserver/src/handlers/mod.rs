//! Request handlers, one file per concern: `nonresource` for `/version` and health,
//! `discovery` for `/api` and `/apis`; the resource verbs join as they land.

pub(crate) mod discovery;
pub(crate) mod nonresource;
