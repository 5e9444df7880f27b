//! What the garbage collector does with an object that has ownerReferences, from what its
//! owners turned out to be (upstream `attemptToDeleteItem` and `classifyReferences`). Pure,
//! tested without a server.

use kubemock_client::request::PropagationPolicy;

/// What an owner reference resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerState {
    /// The owner exists and is not waiting for its dependents.
    Solid,
    /// No object of that name and uid exists.
    Dangling,
    /// The owner is being deleted in the foreground (`foregroundDeletion` finalizer).
    WaitingForDependents,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to do: every owner is solid.
    Keep,
    /// Some owner is solid: drop the references to the others (dangling, or waiting for
    /// dependents, which must not wait for this object any more), keep the object.
    DropReferences(Vec<String>),
    /// No solid owner: delete the object with this propagation policy.
    Delete(PropagationPolicy),
}

/// Decides for an object whose owners resolved to `owners` (uid, state). `has_dependents`:
/// the object owns something itself; `own_finalizers`: its finalizers.
pub fn decide(
    owners: &[(String, OwnerState)],
    has_dependents: bool,
    own_finalizers: &[String],
) -> Decision {
    let solid = owners.iter().any(|(_, s)| *s == OwnerState::Solid);
    let waiting = owners
        .iter()
        .any(|(_, s)| *s == OwnerState::WaitingForDependents);
    if solid {
        let drop: Vec<String> = owners
            .iter()
            .filter(|(_, s)| *s != OwnerState::Solid)
            .map(|(uid, _)| uid.clone())
            .collect();
        return if drop.is_empty() {
            Decision::Keep
        } else {
            Decision::DropReferences(drop)
        };
    }
    if owners.is_empty() {
        return Decision::Keep;
    }
    if waiting && has_dependents {
        // Its owner waits for it: it goes in the foreground too, its own dependents first.
        return Decision::Delete(PropagationPolicy::Foreground);
    }
    let policy = if own_finalizers.iter().any(|f| f == super::ORPHAN) {
        PropagationPolicy::Orphan
    } else if own_finalizers.iter().any(|f| f == super::FOREGROUND) {
        PropagationPolicy::Foreground
    } else {
        PropagationPolicy::Background
    };
    Decision::Delete(policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owners(states: &[(&str, OwnerState)]) -> Vec<(String, OwnerState)> {
        states.iter().map(|(u, s)| ((*u).to_owned(), *s)).collect()
    }

    #[test]
    fn a_solid_owner_keeps_the_object_and_other_references_are_dropped() {
        use OwnerState::*;
        assert_eq!(decide(&owners(&[("a", Solid)]), false, &[]), Decision::Keep);
        assert_eq!(
            decide(
                &owners(&[("a", Solid), ("b", Dangling), ("c", WaitingForDependents)]),
                true,
                &[]
            ),
            Decision::DropReferences(vec!["b".into(), "c".into()])
        );
    }

    #[test]
    fn without_a_solid_owner_the_object_is_deleted_with_the_right_policy() {
        use OwnerState::*;
        assert_eq!(
            decide(&owners(&[("a", Dangling)]), true, &[]),
            Decision::Delete(PropagationPolicy::Background)
        );
        assert_eq!(
            decide(&owners(&[("a", WaitingForDependents)]), true, &[]),
            Decision::Delete(PropagationPolicy::Foreground)
        );
        assert_eq!(
            decide(&owners(&[("a", WaitingForDependents)]), false, &[]),
            Decision::Delete(PropagationPolicy::Background)
        );
        assert_eq!(
            decide(&owners(&[("a", Dangling)]), false, &["orphan".into()]),
            Decision::Delete(PropagationPolicy::Orphan)
        );
        assert_eq!(
            decide(
                &owners(&[("a", Dangling)]),
                false,
                &["foregroundDeletion".into()]
            ),
            Decision::Delete(PropagationPolicy::Foreground)
        );
    }
}
