//! kubemock-apimachinery: the vocabulary that kubemock's API server, client and controllers
//! share, as upstream's `k8s.io/apimachinery` is shared by kube-apiserver and client-go. A
//! concept both sides need (how a quantity is written, which names are valid, how a field
//! error reads) lives here once, so the two can never drift apart.
//!
//! It is pure: no HTTP, no store, no async runtime, and none of our other crates (`.ci/run`
//! checks its dependency tree). Each module ports one upstream package, cites its files, and
//! is tested with the cases of upstream's own tests.
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
//!   (`pkg/util/validation/field`).
//!
//! # Invariants
//! - Every accepted input, rejected input and message is upstream's (v0.32); where this crate
//!   cannot match (documented at the item), it refuses to burn unbounded time or memory
//!   instead.
//! - No function panics on any input.

pub mod duration;
pub mod field;
pub mod go;
pub mod gotime;
pub mod intstr;
pub mod json;
pub mod jsonpatch;
pub mod labels;
pub mod quantity;
pub mod time;
pub mod validation;
