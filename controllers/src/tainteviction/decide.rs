//! When a pod on a NoExecute-tainted node must go, pure so it is tested without a server
//! (upstream `pkg/controller/tainteviction/taint_eviction.go`: `processPodOnNode`,
//! `getMinTolerationTime`; `GetMatchingTolerations` in `pkg/apis/core/v1/helper`).

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};

use crate::scheduler::fit::tolerates;

/// What becomes of a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It stays: no NoExecute taint, or all tolerated forever.
    Stay,
    /// It is deleted at this time (at once when it is not later than now).
    EvictAt(Timestamp),
}

/// The node's NoExecute taints.
fn no_execute_taints(node: &Node) -> Vec<&Taint> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .filter(|t| t.effect == "NoExecute")
        .collect()
}

/// For each taint, the first toleration that tolerates it; `None` when one is not tolerated.
fn matching<'p>(taints: &[&Taint], tolerations: &'p [Toleration]) -> Option<Vec<&'p Toleration>> {
    taints
        .iter()
        .map(|taint| tolerations.iter().find(|t| tolerates(t, taint)))
        .collect()
}

/// The shortest toleration among `used`: zero when one is zero or less, `None` when all are
/// forever (upstream's -1).
fn min_toleration(used: &[&Toleration]) -> Option<SignedDuration> {
    let mut shortest: Option<i64> = None;
    for toleration in used {
        if let Some(seconds) = toleration.toleration_seconds {
            if seconds <= 0 {
                return Some(SignedDuration::ZERO);
            }
            shortest = Some(shortest.map_or(seconds, |s| s.min(seconds)));
        }
    }
    if used.is_empty() {
        return Some(SignedDuration::ZERO);
    }
    shortest.map(SignedDuration::from_secs)
}

/// The verdict on `pod` on `node` at `now`, for a pod first seen under the node's taints at
/// `seen`: its wait counts from the earliest `timeAdded` of those taints when they carry one,
/// else from `seen`.
pub fn verdict(pod: &Pod, node: &Node, seen: Timestamp, now: Timestamp) -> Verdict {
    let taints = no_execute_taints(node);
    if taints.is_empty() {
        return Verdict::Stay;
    }
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    let Some(used) = matching(&taints, tolerations) else {
        return Verdict::EvictAt(now);
    };
    let Some(wait) = min_toleration(&used) else {
        return Verdict::Stay;
    };
    let start = taints
        .iter()
        .filter_map(|t| t.time_added.as_ref().map(|t| t.0))
        .min()
        .unwrap_or(seen);
    Verdict::EvictAt(kubemock_apimachinery::time::shift(start, wait))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn at(seconds: i64) -> Timestamp {
        "2030-01-01T00:00:00Z"
            .parse::<jiff::Timestamp>()
            .expect("a time")
            + SignedDuration::from_secs(seconds)
    }

    fn pod(tolerations: Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"},
            "spec": {"containers": [], "tolerations": tolerations}}))
        .expect("a pod")
    }

    fn node(taints: Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": "n"}, "spec": {"taints": taints}}))
            .expect("a node")
    }

    /// The tolerations DefaultTolerationSeconds gives every pod.
    fn defaults() -> Value {
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ])
    }

    #[test]
    fn pods_go_when_their_shortest_matching_toleration_runs_out_from_the_taints_time() {
        let unreachable = node(json!([
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": at(10)},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": at(10)}
        ]));
        assert_eq!(
            verdict(&pod(defaults()), &unreachable, at(12), at(12)),
            Verdict::EvictAt(at(310))
        );
        // No timeAdded: from when the pod was first seen under the taint.
        let bare = node(json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]));
        assert_eq!(
            verdict(&pod(defaults()), &bare, at(20), at(25)),
            Verdict::EvictAt(at(320))
        );
        // Not tolerated: at once.
        assert_eq!(
            verdict(&pod(json!([])), &bare, at(20), at(25)),
            Verdict::EvictAt(at(25))
        );
        let other = node(json!([{"key": "dedicated", "effect": "NoExecute"}]));
        assert_eq!(
            verdict(&pod(defaults()), &other, at(0), at(5)),
            Verdict::EvictAt(at(5))
        );
    }

    #[test]
    fn pods_tolerating_forever_or_on_clean_nodes_stay() {
        let bare = node(json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]));
        let forever = pod(json!([{"operator": "Exists"}]));
        assert_eq!(verdict(&forever, &bare, at(0), at(1000)), Verdict::Stay);
        let clean = node(json!([{"key": "x", "effect": "NoSchedule"}]));
        assert_eq!(
            verdict(&pod(json!([])), &clean, at(0), at(0)),
            Verdict::Stay
        );
        let zero = pod(
            json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 0}]),
        );
        assert_eq!(verdict(&zero, &bare, at(3), at(4)), Verdict::EvictAt(at(3)));
    }
}
