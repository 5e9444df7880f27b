//! kubemock-client: a Kubernetes client in the client-go tradition, for any API server (a
//! kubemock server or a real cluster). It knows only HTTP: never sled, axum or the storage
//! crate.
//!
//! ```text
//! Reflector (list + watch, resume, relist on 410, bookmarks, backoff)
//!    -> Store / Indexer (thread-safe cache of Arc<K>, custom indexes) -> listers
//!    -> event handlers (on_add / on_update / on_delete, periodic resync)
//!         -> WorkQueue (dedup, never two workers on one key, delays, rate limits)
//!              -> workers -> reconcile(key) -> Action / Err (rate-limited retry)
//! ```
//!
//! # Layout
//! - [`error`]: one error type; `Error::Api(Status)` with `is_not_found`, `is_conflict`...
//! - [`config`]: kubeconfig loading (merged `KUBECONFIG`, `~/.kube/config`) into a [`Config`].
//! - [`request`]: pure request building (parameters in, method + URL + body out).
//! - [`transport`]: the only network I/O: [`Client`], retries, watch event decoding.
//! - [`resource`]: what a kind is ([`ApiResource`], [`Resource`]), [`DynamicObject`], keys.
//! - [`api`]: [`Api<K>`], every verb of one resource type.
//! - [`selector`]: label selectors evaluated on cached objects; field selectors written and
//!   checked as the server parses them.
//! - [`watcher`]: the list-then-watch state machine.
//! - [`reflector`]: applies watcher events to a [`Store`] (cache, indexes, listers).
//! - [`informer`]: shared informers, handlers and the [`InformerFactory`]; `compact`:
//!   what an informer does to each decoded object before caching it.
//! - [`workqueue`]: the [`WorkQueue`] and its rate limiters.
//! - [`controller`]: the controller runtime and its helpers (owners, finalizers, status).
//! - [`leader`]: leader election on Leases.
//! - [`events`]: the event recorder.
//!
//! # Invariants
//! - Caches hold `Arc<K>`; a read lock lasts as long as cloning `Arc`s, never across `.await`.
//! - Every channel and backlog is bounded (a slow handler's backlog by the number of objects).
//! - A work queue never hands one key to two workers at once.

pub mod api;
mod compact;
pub mod config;
pub mod controller;
pub mod error;
pub mod events;
pub mod informer;
pub mod leader;
pub mod reflector;
pub mod request;
pub mod resource;
pub mod selector;
pub mod transport;
pub mod watcher;
pub mod workqueue;

pub use api::{Api, Deleted};
pub use config::{Config, Kubeconfig};
pub use controller::{Action, Controller};
pub use error::{Error, Result};
pub use informer::{EventHandler, InformerFactory, SharedInformer, Transform};
pub use reflector::Store;
pub use request::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
pub use resource::{ApiResource, DynamicObject, ObjectKey, ObjectList, Resource, TypedResource};
pub use selector::{FieldSelector, Selector};
pub use transport::{Client, WatchEvent};
pub use workqueue::WorkQueue;
