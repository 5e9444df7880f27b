//! The node lifecycle controller's decisions, pure so they are tested without a server: when
//! a node was last heard of (its Ready heartbeat or its Lease, as the controller observes
//! them), what its conditions become once that is too long ago, which taints its conditions
//! call for, and whether its zone is disrupted (upstream
//! `pkg/controller/nodelifecycle/node_lifecycle_controller.go`: `tryUpdateNodeHealth`,
//! `doNoScheduleTaintingPass`, `processTaintBaseEviction`, `ComputeZoneState`).

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};

/// The taint of a node whose Ready condition is Unknown (`v1.TaintNodeUnreachable`).
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// The taint of a node whose Ready condition is False (`v1.TaintNodeNotReady`).
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The taint of a cordoned node (`v1.TaintNodeUnschedulable`).
pub const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// The label that keeps a node out of the zone disruption counts
/// (`labelNodeDisruptionExclusion`).
pub const EXCLUDE_DISRUPTION: &str = "node.kubernetes.io/exclude-disruption";

/// The conditions a silent node's kubelet no longer vouches for, set Unknown after the grace
/// period (`NodeNetworkUnavailable` is left alone: the control plane manages it).
pub const SILENT_CONDITIONS: [&str; 4] = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// The NoSchedule taint each condition status calls for (`nodeConditionToTaintKeyStatusMap`).
const CONDITION_TAINTS: [(&str, &str, &str); 6] = [
    ("Ready", "False", NOT_READY),
    ("Ready", "Unknown", UNREACHABLE),
    (
        "MemoryPressure",
        "True",
        "node.kubernetes.io/memory-pressure",
    ),
    ("DiskPressure", "True", "node.kubernetes.io/disk-pressure"),
    (
        "NetworkUnavailable",
        "True",
        "node.kubernetes.io/network-unavailable",
    ),
    ("PIDPressure", "True", "node.kubernetes.io/pid-pressure"),
];

/// Share of not-Ready nodes from which a zone (of more than two such nodes) is partially
/// disrupted: kube-controller-manager's `--unhealthy-zone-threshold` default.
pub const UNHEALTHY_ZONE_THRESHOLD: f64 = 0.55;
/// Zone size above which a partially disrupted zone's nodes are still tainted (more slowly
/// upstream); at or below it, not at all: `--large-cluster-size-threshold` default.
pub const LARGE_CLUSTER_THRESHOLD: usize = 50;

/// What the controller last observed of a node's heartbeats (`nodeHealthData`).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeHealth {
    /// When the controller last saw the node's kubelet alive: a new Ready heartbeat, or a
    /// renewed Lease (`probeTimestamp`), on the controller's clock.
    pub probe: Timestamp,
    /// The Ready condition as last observed.
    pub ready: Option<NodeCondition>,
    /// The Lease's renewTime as last observed.
    pub lease: Option<MicroTime>,
}

/// The node's condition `kind`.
pub fn condition<'n>(node: &'n Node, kind: &str) -> Option<&'n NodeCondition> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == kind))
}

/// The node's Ready status (`True`, `False`, `Unknown`), `None` before its kubelet posted one.
pub fn ready_status(node: &Node) -> Option<&str> {
    condition(node, "Ready").map(|c| c.status.as_str())
}

/// The health of `node` after observing it and its `lease` at `now`, from what was known
/// (`previous`). The probe moves to `now` when the Ready heartbeat or the Lease's renewTime
/// changed since; a node first seen without a Ready condition counts from its creation
/// (upstream: so that a restarted controller does not grant it a new grace period).
pub fn observe(
    previous: Option<&NodeHealth>,
    node: &Node,
    lease: Option<&Lease>,
    now: Timestamp,
) -> NodeHealth {
    let ready = condition(node, "Ready").cloned();
    let renewed = lease
        .and_then(|l| l.spec.as_ref())
        .and_then(|s| s.renew_time.clone());
    let mut health = match previous {
        None if ready.is_none() => NodeHealth {
            probe: node
                .metadata
                .creation_timestamp
                .as_ref()
                .map_or(now, |t| t.0.min(now)),
            ready: None,
            lease: None,
        },
        None => NodeHealth {
            probe: now,
            ready,
            lease: None,
        },
        Some(previous) => {
            let heartbeat =
                |c: &Option<NodeCondition>| c.as_ref().map(|c| c.last_heartbeat_time.clone());
            let mut health = previous.clone();
            if heartbeat(&previous.ready) != heartbeat(&ready) {
                health.probe = now;
            }
            health.ready = ready;
            health
        }
    };
    if renewed.is_some()
        && health
            .lease
            .as_ref()
            .is_none_or(|seen| renewed.as_ref().is_some_and(|r| seen.0 < r.0))
    {
        health.probe = now;
        health.lease = renewed;
    }
    health
}

/// Whether the node was last heard of more than `grace` before `now`.
pub fn is_silent(health: &NodeHealth, grace: Duration, now: Timestamp) -> bool {
    let grace = jiff::SignedDuration::try_from(grace).unwrap_or_default();
    now > health.probe + grace
}

/// The conditions of a silent `node` at `now`: [`SILENT_CONDITIONS`] Unknown, with upstream's
/// reasons and messages; `None` when they already are.
pub fn silent_conditions(node: &Node, now: Timestamp) -> Option<Vec<NodeCondition>> {
    let mut conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut changed = false;
    for kind in SILENT_CONDITIONS {
        match conditions.iter_mut().find(|c| c.type_ == kind) {
            Some(current) if current.status == "Unknown" => {}
            Some(current) => {
                current.status = "Unknown".to_owned();
                current.reason = Some("NodeStatusUnknown".to_owned());
                current.message = Some("Kubelet stopped posting node status.".to_owned());
                current.last_transition_time = Some(Time(now));
                changed = true;
            }
            None => {
                conditions.push(NodeCondition {
                    type_: kind.to_owned(),
                    status: "Unknown".to_owned(),
                    reason: Some("NodeStatusNeverUpdated".to_owned()),
                    message: Some("Kubelet never posted node status.".to_owned()),
                    last_heartbeat_time: node.metadata.creation_timestamp.clone(),
                    last_transition_time: Some(Time(now)),
                });
                changed = true;
            }
        }
    }
    changed.then_some(conditions)
}

/// The NoSchedule taints the node's conditions and `spec.unschedulable` call for.
pub fn condition_taints(node: &Node) -> Vec<String> {
    let mut keys: Vec<String> = CONDITION_TAINTS
        .iter()
        .filter(|(kind, status, _)| condition(node, kind).is_some_and(|c| c.status == *status))
        .map(|(_, _, key)| (*key).to_owned())
        .collect();
    if node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
    {
        keys.push(UNSCHEDULABLE.to_owned());
    }
    keys
}

/// Whether `key` is a NoSchedule taint this controller owns (one of the condition taints,
/// or the unschedulable taint).
fn is_condition_taint(key: &str) -> bool {
    key == UNSCHEDULABLE || CONDITION_TAINTS.iter().any(|(_, _, k)| *k == key)
}

/// The NoExecute taint a node's Ready status calls for: not-ready when False, unreachable
/// when Unknown, none when True (or never posted: upstream waits for a status).
pub fn no_execute_taint(ready: Option<&str>) -> Option<&'static str> {
    match ready {
        Some("False") => Some(NOT_READY),
        Some("Unknown") => Some(UNREACHABLE),
        _ => None,
    }
}

/// The node's taints with its condition NoSchedule taints made `wanted`, and its NoExecute
/// not-ready/unreachable taint made `no_execute` (`None`: neither), new ones stamped
/// `timeAdded` `now` (upstream `SwapNodeControllerTaint`); `None` when nothing changes.
/// Other taints are kept as they are.
pub fn retainted(
    node: &Node,
    wanted: &[String],
    no_execute: Option<&str>,
    now: Timestamp,
) -> Option<Vec<Taint>> {
    let current = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let owned_no_execute =
        |t: &Taint| t.effect == "NoExecute" && (t.key == NOT_READY || t.key == UNREACHABLE);
    let owned_no_schedule = |t: &Taint| t.effect == "NoSchedule" && is_condition_taint(&t.key);
    let mut taints: Vec<Taint> = current
        .iter()
        .filter(|t| {
            (!owned_no_schedule(t) || wanted.contains(&t.key))
                && (!owned_no_execute(t) || Some(t.key.as_str()) == no_execute)
        })
        .cloned()
        .collect();
    let stamp = |key: &str, effect: &str| Taint {
        key: key.to_owned(),
        effect: effect.to_owned(),
        time_added: Some(Time(now)),
        value: None,
    };
    for key in wanted {
        if !taints
            .iter()
            .any(|t| t.effect == "NoSchedule" && &t.key == key)
        {
            taints.push(stamp(key, "NoSchedule"));
        }
    }
    if let Some(key) = no_execute
        && !taints
            .iter()
            .any(|t| t.effect == "NoExecute" && t.key == key)
    {
        taints.push(stamp(key, "NoExecute"));
    }
    (taints != current).then_some(taints)
}

/// A zone's state (`ZoneState`), from the Ready statuses of its nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneState {
    /// Most nodes are Ready.
    Normal,
    /// More than two, and at least [`UNHEALTHY_ZONE_THRESHOLD`], of its nodes are not Ready.
    PartialDisruption,
    /// None of its nodes is Ready.
    FullDisruption,
}

/// The zone of a node: its region and zone labels (upstream `GetZoneKey`), `""` for none.
pub fn zone_key(node: &Node) -> String {
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let get = |beta: &str, ga: &str| {
        labels
            .get(beta)
            .or_else(|| labels.get(ga))
            .cloned()
            .unwrap_or_default()
    };
    let zone = get(
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/zone",
    );
    let region = get(
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/region",
    );
    if zone.is_empty() && region.is_empty() {
        String::new()
    } else {
        format!("{region}:\u{0}:{zone}")
    }
}

/// The state of a zone whose nodes' Ready statuses are `ready` (upstream `ComputeZoneState`).
pub fn zone_state(ready: &[Option<&str>]) -> ZoneState {
    let ready_count = ready.iter().filter(|r| **r == Some("True")).count();
    let not_ready = ready.len() - ready_count;
    #[allow(clippy::cast_precision_loss)] // node counts are far below 2^52
    let share = not_ready as f64 / ready.len().max(1) as f64;
    if ready_count == 0 && not_ready > 0 {
        ZoneState::FullDisruption
    } else if not_ready > 2 && share >= UNHEALTHY_ZONE_THRESHOLD {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    }
}

/// The zones of `nodes` (but those excluded from disruption checks) with their states and
/// sizes.
pub fn zones(nodes: &[&Node]) -> BTreeMap<String, (ZoneState, usize)> {
    let mut statuses: BTreeMap<String, Vec<Option<&str>>> = BTreeMap::new();
    for node in nodes {
        let excluded = node
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(EXCLUDE_DISRUPTION));
        if !excluded {
            statuses
                .entry(zone_key(node))
                .or_default()
                .push(ready_status(node));
        }
    }
    statuses
        .into_iter()
        .map(|(zone, ready)| (zone, (zone_state(&ready), ready.len())))
        .collect()
}

/// Whether nodes of `zone` may get NoExecute taints, given every zone's state: not when every
/// zone is fully disrupted (the control plane, not the nodes, has likely lost the network),
/// nor in a partially disrupted zone of at most [`LARGE_CLUSTER_THRESHOLD`] nodes (upstream
/// sets that zone's eviction rate to zero).
pub fn may_taint(zones: &BTreeMap<String, (ZoneState, usize)>, zone: &str) -> bool {
    if all_disrupted(zones) {
        return false;
    }
    match zones.get(zone) {
        Some((ZoneState::PartialDisruption, size)) => *size > LARGE_CLUSTER_THRESHOLD,
        _ => true,
    }
}

/// Whether every zone is fully disrupted (and there is one).
pub fn all_disrupted(zones: &BTreeMap<String, (ZoneState, usize)>) -> bool {
    !zones.is_empty()
        && zones
            .values()
            .all(|(state, _)| *state == ZoneState::FullDisruption)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(seconds: i64) -> Timestamp {
        kubemock_apimachinery::time::shift_seconds(
            "2030-01-01T00:00:00Z"
                .parse::<jiff::Timestamp>()
                .expect("a time"),
            seconds,
        )
    }

    fn node(ready: Option<(&str, i64)>) -> Node {
        let conditions: Vec<_> = ready
            .into_iter()
            .map(|(status, beat)| {
                json!({"type": "Ready", "status": status, "lastHeartbeatTime": Time(at(beat)),
                    "lastTransitionTime": Time(at(0))})
            })
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "n", "creationTimestamp": Time(at(0))},
            "status": {"conditions": conditions}
        }))
        .expect("a node")
    }

    fn lease(renewed: i64) -> Lease {
        serde_json::from_value(json!({"metadata": {"name": "n"},
            "spec": {"renewTime": MicroTime(at(renewed))}}))
        .expect("a lease")
    }

    const GRACE: Duration = Duration::from_secs(50);

    #[test]
    fn a_node_is_silent_once_neither_its_heartbeat_nor_its_lease_moved_for_the_grace_period() {
        let first = observe(None, &node(Some(("True", 0))), Some(&lease(0)), at(0));
        assert_eq!(first.probe, at(0));
        // The Lease renewed at 10 s, seen at 12 s: probe 12 s.
        let renewed = observe(
            Some(&first),
            &node(Some(("True", 0))),
            Some(&lease(10)),
            at(12),
        );
        assert_eq!(renewed.probe, at(12));
        // Nothing moves until 62 s: silent only after.
        let same = observe(
            Some(&renewed),
            &node(Some(("True", 0))),
            Some(&lease(10)),
            at(62),
        );
        assert!(!is_silent(&same, GRACE, at(62)));
        assert!(is_silent(&same, GRACE, at(63)));
        // A new heartbeat counts as well as a Lease.
        let beat = observe(
            Some(&same),
            &node(Some(("True", 70))),
            Some(&lease(10)),
            at(70),
        );
        assert!(!is_silent(&beat, GRACE, at(100)));
    }

    #[test]
    fn a_node_that_never_posted_status_counts_from_its_creation() {
        let health = observe(None, &node(None), None, at(500));
        assert_eq!(health.probe, at(0));
        assert!(is_silent(&health, GRACE, at(500)));
        let conditions = silent_conditions(&node(None), at(500)).expect("all unknown");
        assert_eq!(conditions.len(), 4);
        assert!(conditions.iter().all(|c| c.status == "Unknown"
            && c.reason.as_deref() == Some("NodeStatusNeverUpdated")
            && c.message.as_deref() == Some("Kubelet never posted node status.")));
    }

    #[test]
    fn a_silent_nodes_conditions_become_unknown_with_upstreams_reason_once() {
        let mut n = node(Some(("True", 0)));
        let conditions = silent_conditions(&n, at(60)).expect("changed");
        let ready = conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .expect("ready");
        assert_eq!(ready.status, "Unknown");
        assert_eq!(ready.reason.as_deref(), Some("NodeStatusUnknown"));
        assert_eq!(
            ready.message.as_deref(),
            Some("Kubelet stopped posting node status.")
        );
        assert_eq!(ready.last_transition_time, Some(Time(at(60))));
        n.status.as_mut().expect("status").conditions = Some(conditions);
        assert_eq!(silent_conditions(&n, at(70)), None);
    }

    #[test]
    fn taints_follow_the_ready_condition_and_keep_foreign_ones() {
        let mut n = node(Some(("Unknown", 0)));
        n.spec = Some(
            serde_json::from_value(json!({"taints": [
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                {"key": NOT_READY, "effect": "NoExecute"}
            ]}))
            .expect("spec"),
        );
        let wanted = condition_taints(&n);
        assert_eq!(wanted, vec![UNREACHABLE.to_owned()]);
        let taints =
            retainted(&n, &wanted, no_execute_taint(ready_status(&n)), at(5)).expect("changed");
        let keys: Vec<_> = taints
            .iter()
            .map(|t| (t.key.as_str(), t.effect.as_str()))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("dedicated", "NoSchedule"),
                (UNREACHABLE, "NoSchedule"),
                (UNREACHABLE, "NoExecute")
            ]
        );
        assert!(
            taints[1..]
                .iter()
                .all(|t| t.time_added == Some(Time(at(5))))
        );
        n.spec.as_mut().expect("spec").taints = Some(taints);
        assert_eq!(
            retainted(&n, &wanted, Some(UNREACHABLE), at(9)),
            None,
            "stable"
        );
        // Ready again: only the foreign taint stays.
        let back = retainted(&n, &[], None, at(20)).expect("changed");
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].key, "dedicated");
        assert_eq!(no_execute_taint(Some("False")), Some(NOT_READY));
        assert_eq!(no_execute_taint(None), None);
    }

    #[test]
    fn zones_are_disrupted_as_upstream_computes_it() {
        let t = Some("True");
        let u = Some("Unknown");
        assert_eq!(zone_state(&[t, t, u]), ZoneState::Normal);
        assert_eq!(zone_state(&[u, u]), ZoneState::FullDisruption);
        assert_eq!(zone_state(&[t, u, u, u]), ZoneState::PartialDisruption);
        assert_eq!(
            zone_state(&[t, t, u, u]),
            ZoneState::Normal,
            "two not ready are never partial"
        );
        let (ready, down) = (node(Some(("True", 0))), node(Some(("Unknown", 0))));
        let one_down = zones(&[&ready, &ready, &down]);
        assert!(may_taint(&one_down, ""));
        let all_down = zones(&[&down, &down]);
        assert!(all_disrupted(&all_down));
        assert!(!may_taint(&all_down, ""));
        let partial = zones(&[&ready, &down, &down, &down]);
        assert!(
            !may_taint(&partial, ""),
            "small zones are not evicted in partial disruption"
        );
    }
}
