//! Request handlers, one file per concern: `nonresource` for `/version` and health, `openapi`
//! for the OpenAPI documents,
//! `discovery` for `/api` and `/apis`, and the resource verbs: `resource` parses the `target`
//! and dispatches to `get`, `list`, `watch`, `create`, `update` (with `scale`), `patch` and `delete`.

pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod discovery;
pub(crate) mod get;
pub(crate) mod list;
pub(crate) mod nonresource;
pub(crate) mod openapi;
pub(crate) mod patch;
pub(crate) mod resource;
pub(crate) mod reviews;
pub(crate) mod scale;
pub(crate) mod strategy;
pub(crate) mod subresources;
pub(crate) mod target;
pub(crate) mod update;
pub(crate) mod watch;
