//! The pure part of server-side apply (docs/api-behaviour.md#server-side-apply), after upstream's structured-merge-diff: field
//! paths and sets as `metadata.managedFields` serialises them ([`fieldpath`]), what a kind's
//! shape says about merging ([`types`]), and the walks over objects that compute field sets,
//! compare versions, merge a configuration and remove fields ([`typed`]). The API server keeps
//! the request-facing part (managers, `managedFields` entries, conflicts as a 409 `Status`).

pub mod fieldpath;
pub mod typed;
pub mod types;
