//! The status conditions the namespace controller keeps on a terminating namespace, as
//! kube-controller-manager reports them (`pkg/controller/namespace/deletion/
//! status_condition_utils.go`): five condition types, each either a failure (status True)
//! or its "ok" variant (status False), so `kubectl describe ns` explains what a namespace
//! waits for. Pure functions, tested without a server.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::NamespaceCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The condition types, in the order the real controller writes them.
pub const CONDITION_TYPES: [&str; 5] = [
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
];

/// Reason and message of each type's "ok" variant.
fn ok_variant(condition_type: &str) -> (&'static str, &'static str) {
    match condition_type {
        "NamespaceDeletionDiscoveryFailure" => (
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        "NamespaceDeletionGroupVersionParsingFailure" => (
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        "NamespaceDeletionContentFailure" => (
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        _ => ("ContentRemoved", "All content successfully removed"),
    }
}

/// What one pass over a terminating namespace's content found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContentReport {
    /// Discovery failed, partly or wholly: the condition's message.
    pub discovery_failure: Option<String>,
    /// One message per resource type whose content could not be deleted.
    pub delete_errors: Vec<String>,
    /// Objects remaining per resource, keyed `resource.group` (`configmaps.`, `widgets.example.com`).
    pub remaining: BTreeMap<String, usize>,
    /// Remaining objects per finalizer they carry.
    pub finalizers: BTreeMap<String, usize>,
}

fn condition(
    condition_type: &str,
    status: &str,
    reason: &str,
    message: String,
    now: &Time,
) -> NamespaceCondition {
    NamespaceCondition {
        type_: condition_type.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message),
        last_transition_time: Some(now.clone()),
    }
}

impl ContentReport {
    /// The failure conditions this report calls for (types without failure are absent).
    pub fn failures(&self, now: &Time) -> Vec<NamespaceCondition> {
        let mut out = Vec::new();
        if let Some(message) = &self.discovery_failure {
            out.push(condition(
                "NamespaceDeletionDiscoveryFailure",
                "True",
                "DiscoveryFailed",
                message.clone(),
                now,
            ));
        }
        if !self.delete_errors.is_empty() {
            let mut errors = self.delete_errors.clone();
            errors.sort();
            out.push(condition(
                "NamespaceDeletionContentFailure",
                "True",
                "ContentDeletionFailed",
                format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    errors.len(),
                    errors.join(", ")
                ),
                now,
            ));
        }
        let remaining: Vec<String> = self
            .remaining
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(resource, n)| format!("{resource} has {n} resource instances"))
            .collect();
        if !remaining.is_empty() {
            out.push(condition(
                "NamespaceContentRemaining",
                "True",
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", remaining.join(", ")),
                now,
            ));
        }
        let finalizers: Vec<String> = self
            .finalizers
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(finalizer, n)| format!("{finalizer} in {n} resource instances"))
            .collect();
        if !finalizers.is_empty() {
            out.push(condition(
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizerRemain",
                format!("Some finalizers are remaining: {}", finalizers.join(", ")),
                now,
            ));
        }
        out
    }

    /// Whether objects remain.
    pub fn content_remains(&self) -> bool {
        self.remaining.values().any(|n| *n > 0)
    }
}

/// Brings `conditions` in line with `failures` (every type absent there gets its "ok"
/// variant); a condition's transition time changes only when its status does. Returns
/// whether anything changed.
pub fn update_conditions(
    conditions: &mut Vec<NamespaceCondition>,
    failures: &[NamespaceCondition],
    now: &Time,
) -> bool {
    let mut changed = false;
    for condition_type in CONDITION_TYPES {
        let wanted = failures
            .iter()
            .find(|c| c.type_ == condition_type)
            .cloned()
            .unwrap_or_else(|| {
                let (reason, message) = ok_variant(condition_type);
                condition(condition_type, "False", reason, message.to_owned(), now)
            });
        match conditions.iter_mut().find(|c| c.type_ == condition_type) {
            None => {
                conditions.push(wanted);
                changed = true;
            }
            Some(old)
                if old.status != wanted.status
                    || old.reason != wanted.reason
                    || old.message != wanted.message =>
            {
                if old.status != wanted.status {
                    old.last_transition_time = Some(now.clone());
                }
                old.status = wanted.status;
                old.reason = wanted.reason;
                old.message = wanted.message;
                changed = true;
            }
            Some(_) => {}
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Time {
        Time(kubemock_client::resource::now())
    }

    #[test]
    fn remaining_content_and_finalizers_are_reported_like_the_real_controller() {
        let report = ContentReport {
            remaining: [
                ("configmaps.".to_owned(), 2),
                ("widgets.example.com".to_owned(), 1),
            ]
            .into(),
            finalizers: [("example.com/hold".to_owned(), 1)].into(),
            ..ContentReport::default()
        };
        let now = now();
        let mut conditions = Vec::new();
        assert!(update_conditions(
            &mut conditions,
            &report.failures(&now),
            &now
        ));
        fn find(conditions: &[NamespaceCondition], t: &str) -> NamespaceCondition {
            conditions.iter().find(|c| c.type_ == t).expect(t).clone()
        }
        assert_eq!(conditions.len(), 5);
        let remaining = find(&conditions, "NamespaceContentRemaining");
        assert_eq!(remaining.status, "True");
        assert_eq!(remaining.reason.as_deref(), Some("SomeResourcesRemain"));
        assert_eq!(
            remaining.message.as_deref(),
            Some(
                "Some resources are remaining: configmaps. has 2 resource instances, widgets.example.com has 1 resource instances"
            )
        );
        let finalizers = find(&conditions, "NamespaceFinalizersRemaining");
        assert_eq!(
            finalizers.message.as_deref(),
            Some("Some finalizers are remaining: example.com/hold in 1 resource instances")
        );
        let content = find(&conditions, "NamespaceDeletionContentFailure");
        assert_eq!(content.status, "False");
        assert_eq!(content.reason.as_deref(), Some("ContentDeleted"));
        // The same report again changes nothing.
        assert!(!update_conditions(
            &mut conditions,
            &report.failures(&now),
            &now
        ));
        // Everything gone: every condition flips to its ok variant.
        assert!(update_conditions(&mut conditions, &[], &now));
        let remaining = find(&conditions, "NamespaceContentRemaining");
        assert_eq!(remaining.status, "False");
        assert_eq!(remaining.reason.as_deref(), Some("ContentRemoved"));
        assert_eq!(
            remaining.message.as_deref(),
            Some("All content successfully removed")
        );
    }

    #[test]
    fn delete_errors_are_sorted_and_counted() {
        let report = ContentReport {
            delete_errors: vec!["b failed".into(), "a failed".into()],
            ..ContentReport::default()
        };
        let failures = report.failures(&now());
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].type_, "NamespaceDeletionContentFailure");
        assert_eq!(
            failures[0].message.as_deref(),
            Some("Failed to delete all resource types, 2 remaining: a failed, b failed")
        );
    }
}
