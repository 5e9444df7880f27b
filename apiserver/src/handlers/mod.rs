//! Request handlers, one file per concern: `nonresource` for `/version` and health; the
//! resource verbs join as they land.

pub(crate) mod nonresource;
