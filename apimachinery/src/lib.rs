//! kubemock-apimachinery: the vocabulary that kubemock's API server, client and controllers
//! share, as upstream's `k8s.io/apimachinery` is shared by kube-apiserver and client-go. A
//! concept both sides need (how a quantity is written, which names are valid, how a field
//! error reads) lives here once, so the two can never drift apart.
//!
//! It is pure: no HTTP, no store, and none of our other crates (`.ci/run` checks its
//! dependency tree); of tokio it uses only the channel and timer of `clock`, behind the `clock`
//! feature (kubemock-cel leaves it off). Each module ports one upstream package, cites its files,
//! and is tested with the cases of upstream's own tests.
//!
//! # Layout
//! - [`quantity`]: `resource.Quantity` (`1.5Gi`, `100m`): parsing, canonical form, arithmetic,
//!   comparison, JSON (`pkg/api/resource`).
//! - [`intstr`]: `IntOrString` and percentages of totals (`pkg/util/intstr`).
//! - [`duration`]: Go's duration syntax (`1h2m3.5s`) and `metav1.Duration` (`time`,
//!   `pkg/apis/meta/v1/duration.go`).
//! - [`validation`]: name, label and other string rules with upstream's messages
//!   (`pkg/util/validation`).
//! - [`field`]: field paths and field errors, worded as upstream's
//!   (`pkg/util/validation/field`); [`go`]: Go's string quoting, as those messages use it.
//! - [`labels`]: label selectors: parsing, printing, matching (`pkg/labels`); [`fields`]: field
//!   selectors' syntax: parsing, escaping, printing, matching a set of field values
//!   (`pkg/fields`).
//! - [`time`]: `metav1.Time` and `MicroTime` as RFC 3339 text, both ways; [`gotime`]: Go's
//!   `time.Parse` of those layouts, with its error messages.
//! - [`json`]: the nesting limit every decoder and patch engine holds objects to.
//! - [`jsonpatch`]: JSON patch as evanphx/json-patch v4 applies it; [`strategic`]: strategic
//!   merge patch (`pkg/util/strategicpatch`), its strategies read from the protobuf schemas.
//! - [`openapi`]: the built-in kinds' OpenAPI schemas (generated from `k8s-openapi`).
//! - [`protobuf`]: the Kubernetes protobuf wire format of built-in kinds
//!   (`application/vnd.kubernetes.protobuf`), to and from JSON, over the 1.32 schemas that
//!   `build.rs` embeds (`pkg/runtime/serializer/protobuf`).
//! - [`managedfields`]: server-side apply's field sets, kinds' shapes, merge and comparison
//!   (structured-merge-diff).
//! - `clock` (feature `clock`): the one clock of a process, the system's or a virtual one that tests move.
//! - [`quota`]: resource quota accounting: what an object consumes, scopes, the admission's
//!   arithmetic and messages (`pkg/quota/v1`).
//! - [`version`]: the Kubernetes release kubemock reports (`pkg/version`).
//! - [`stage`]: kwok's Stage API: its selectors (a jq subset), delays, weights and status
//!   templates (a Go text/template subset), compiled once for the server and the kubelet.
//! - [`volume`]: the default StorageClass and the volume protection finalizers.
//!
//! # Invariants
//! - Every accepted input, rejected input and message is upstream's (v0.32); where this crate
//!   cannot match (documented at the item), it refuses to burn unbounded time or memory
//!   instead.
//! - No function panics on any input.

#[cfg(feature = "clock")]
pub mod clock;
pub mod duration;
pub mod field;
pub mod fields;
pub mod go;
pub mod gotime;
pub mod intstr;
pub mod json;
pub mod jsonpatch;
pub mod labels;
pub mod managedfields;
pub mod openapi;
pub mod protobuf;
pub mod quantity;
pub mod quota;
pub mod stage;
pub mod strategic;
pub mod time;
pub mod validation;
pub mod version;
pub mod volume;
