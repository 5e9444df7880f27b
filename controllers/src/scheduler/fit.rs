//! Whether a pod fits a node (kube-scheduler's filter plugins, simplified): the node is Ready
//! and schedulable, matches the pod's nodeSelector and required node affinity, its NoSchedule
//! and NoExecute taints are tolerated, and the pod's requests fit its allocatable resources
//! next to the pods already there. Then the least loaded fitting node wins (spreading), and a
//! pod that fits nowhere gets upstream's explanation. Pure, tested without a server.
//!
//! As kube-scheduler, a decision among many nodes stops looking once it has found enough that
//! fit ([`feasible_nodes_to_find`]), starting where the last decision stopped, and reads each
//! node's allocatable resources as parsed once per change of the node ([`NodeInfo`]), so that
//! it costs a bounded share of the nodes, not a parse of every node's quantities.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, NodeSelectorTerm, Pod, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubemock_apimachinery::labels::Selector;

/// Why a node does not fit (upstream's reason texts).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Misfit {
    /// Ready condition not True.
    NotReady,
    /// `spec.unschedulable`.
    Unschedulable,
    /// nodeSelector or required node affinity.
    Selector,
    /// An untolerated NoSchedule/NoExecute taint (`{key: value}`).
    Taint(String),
    /// Not enough of a resource (`cpu`, `memory`), or too many pods.
    Insufficient(String),
    /// A filter after these (the volume binding's), with its own reason text.
    Other(String),
}

impl Misfit {
    /// The reason as kube-scheduler words it.
    pub fn reason(&self) -> String {
        match self {
            Misfit::NotReady => {
                "node(s) had untolerated taint {node.kubernetes.io/not-ready: }".into()
            }
            Misfit::Unschedulable => "node(s) were unschedulable".into(),
            Misfit::Selector => "node(s) didn't match Pod's node affinity/selector".into(),
            Misfit::Taint(taint) => format!("node(s) had untolerated taint {taint}"),
            Misfit::Insufficient(resource) if resource == "pods" => "Too many pods".into(),
            Misfit::Insufficient(resource) => format!("Insufficient {resource}"),
            Misfit::Other(reason) => reason.clone(),
        }
    }
}

/// A quantity in milli-units (cpu) or units (everything else, rounded up), as kube-scheduler
/// reads requests and allocatable (`MilliValue` / `Value`); `None` when unparsable.
pub fn parse_quantity(quantity: &Quantity, milli: bool) -> Option<i128> {
    let quantity = kubemock_apimachinery::quantity::Quantity::try_from(quantity).ok()?;
    Some(i128::from(if milli {
        quantity.milli_value()
    } else {
        quantity.value()
    }))
}

/// A node as a decision reads it: the node, and its allocatable resources parsed as
/// [`parse_quantity`] reads them (kube-scheduler's `NodeInfo.Allocatable`), made once per
/// change of the node.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    node: Arc<Node>,
    allocatable: BTreeMap<String, i128>,
}

impl NodeInfo {
    /// `node`, its allocatable resources parsed (an unparsable one is left out, as if the node
    /// did not declare it).
    pub fn new(node: Arc<Node>) -> Self {
        let allocatable = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|(name, q)| Some((name.clone(), parse_quantity(q, name == "cpu")?)))
            .collect();
        NodeInfo { node, allocatable }
    }

    /// The node.
    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }
}

/// What [`choose`] reads of a node: a `Node` (its quantities parsed on each read) or a
/// [`NodeInfo`] (parsed once).
pub trait Candidate {
    /// The node.
    fn node(&self) -> &Node;
    /// The node's allocatable `resource` in milli-cpu or units; `None` when it declares none.
    fn allocatable(&self, resource: &str) -> Option<i128>;
}

impl Candidate for Node {
    fn node(&self) -> &Node {
        self
    }

    fn allocatable(&self, resource: &str) -> Option<i128> {
        self.status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .and_then(|a| a.get(resource))
            .and_then(|q| parse_quantity(q, resource == "cpu"))
    }
}

impl Candidate for Arc<Node> {
    fn node(&self) -> &Node {
        self
    }

    fn allocatable(&self, resource: &str) -> Option<i128> {
        Candidate::allocatable(&**self, resource)
    }
}

impl Candidate for NodeInfo {
    fn node(&self) -> &Node {
        &self.node
    }

    fn allocatable(&self, resource: &str) -> Option<i128> {
        self.allocatable.get(resource).copied()
    }
}

/// How many fitting nodes a decision looks for among `nodes` before it stops looking
/// (kube-scheduler's `numFeasibleNodesToFind` with the default `percentageOfNodesToScore`,
/// `pkg/scheduler/schedule_one.go`): every node below 100 nodes; else 50 % less one point per
/// 125 nodes, at least 5 %, and at least 100 nodes.
pub fn feasible_nodes_to_find(nodes: usize) -> usize {
    const MIN_NODES: usize = 100;
    const MIN_PERCENTAGE: usize = 5;
    if nodes < MIN_NODES {
        return nodes;
    }
    let percentage = 50usize.saturating_sub(nodes / 125).max(MIN_PERCENTAGE);
    (nodes * percentage / 100).max(MIN_NODES)
}

/// The requests of a pod: the sum over its containers, at least each init container's
/// (upstream's effective request), in milli-cpu and bytes; plus one pod.
pub fn pod_requests(pod: &Pod) -> BTreeMap<String, i128> {
    let mut total: BTreeMap<String, i128> = BTreeMap::new();
    let Some(spec) = pod.spec.as_ref() else {
        return total;
    };
    let requests_of = |c: &k8s_openapi::api::core::v1::Container| -> BTreeMap<String, i128> {
        c.resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|(name, q)| Some((name.clone(), parse_quantity(q, name == "cpu")?)))
            .collect()
    };
    for container in &spec.containers {
        for (name, value) in requests_of(container) {
            *total.entry(name).or_default() += value;
        }
    }
    for init in spec.init_containers.iter().flatten() {
        for (name, value) in requests_of(init) {
            let entry = total.entry(name).or_default();
            *entry = (*entry).max(value);
        }
    }
    total.insert("pods".into(), 1);
    total
}

/// The labels of `node` (none: an empty map).
fn labels_of(node: &Node) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    node.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

/// Whether `term` selects `node` (upstream `nodeSelectorTerm.match`): its `matchExpressions`
/// as a label selector over the node's labels (`labels::Selector`, as kube-scheduler builds
/// it), and its `matchFields`, where only `metadata.name` with `In` or `NotIn` and one value
/// is supported. A term with neither, or with a requirement that does not parse, matches
/// nothing.
pub fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false; // an empty term matches nothing
    }
    if !expressions.is_empty() {
        let Ok(selector) = Selector::from_node_selector_requirements(expressions) else {
            return false;
        };
        if !selector.matches(labels_of(node)) {
            return false;
        }
    }
    let name = node.metadata.name.as_deref().unwrap_or("");
    fields.iter().all(|req| {
        let values = req.values.as_deref().unwrap_or_default();
        match (req.key.as_str(), req.operator.as_str(), values) {
            ("metadata.name", "In", [value]) => value == name,
            ("metadata.name", "NotIn", [value]) => value != name,
            _ => false,
        }
    })
}

/// nodeSelector and required node affinity.
pub fn selector_matches(pod: &Pod, node: &Node) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return true;
    };
    let labels = labels_of(node);
    if let Some(selector) = &spec.node_selector
        && !Selector::from_set(selector).matches(labels)
    {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    match required {
        Some(selector) => selector
            .node_selector_terms
            .iter()
            .any(|term| term_matches(term, node)),
        None => true,
    }
}

/// Whether `toleration` tolerates `taint` (upstream `ToleratesTaint`).
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if toleration
        .effect
        .as_deref()
        .is_some_and(|e| !e.is_empty() && e != taint.effect)
    {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        _ => false,
    }
}

/// The first taint of `node` with one of `effects` that `pod` does not tolerate (upstream
/// `FindMatchingUntoleratedTaint`).
pub fn untolerated_taint<'n>(pod: &Pod, node: &'n Node, effects: &[&str]) -> Option<&'n Taint> {
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .filter(|t| effects.contains(&t.effect.as_str()))
        .find(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

/// Whether the pod tolerates `node.kubernetes.io/unschedulable:NoSchedule`.
fn tolerates_unschedulable(pod: &Pod) -> bool {
    let taint = Taint {
        key: "node.kubernetes.io/unschedulable".to_owned(),
        effect: "NoSchedule".to_owned(),
        ..Taint::default()
    };
    pod.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_ref())
        .into_iter()
        .flatten()
        .any(|t| tolerates(t, &taint))
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Whether `pod` fits `node`, given what is `used` there already.
pub fn fits(pod: &Pod, node: &Node, used: &BTreeMap<String, i128>) -> Result<(), Misfit> {
    fits_requests(pod, &pod_requests(pod), node, used)
}

/// [`fits`] with the pod's [`pod_requests`] computed once for all the nodes.
fn fits_requests(
    pod: &Pod,
    requests: &BTreeMap<String, i128>,
    candidate: &impl Candidate,
    used: &BTreeMap<String, i128>,
) -> Result<(), Misfit> {
    let node = candidate.node();
    if !node_ready(node) {
        return Err(Misfit::NotReady);
    }
    // A cordoned node takes only pods that tolerate its taint (daemon pods do): upstream's
    // NodeUnschedulable plugin.
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
        && !tolerates_unschedulable(pod)
    {
        return Err(Misfit::Unschedulable);
    }
    if !selector_matches(pod, node) {
        return Err(Misfit::Selector);
    }
    if let Some(taint) = untolerated_taint(pod, node, &["NoSchedule", "NoExecute"]) {
        let value = taint.value.as_deref().unwrap_or_default();
        return Err(Misfit::Taint(format!("{{{}: {value}}}", taint.key)));
    }
    for (resource, &wanted) in requests {
        if wanted == 0 {
            continue;
        }
        let Some(available) = candidate.allocatable(resource) else {
            if resource == "pods" {
                continue; // no pod limit declared
            }
            return Err(Misfit::Insufficient(resource.clone()));
        };
        if used.get(resource).copied().unwrap_or(0) + wanted > available {
            return Err(Misfit::Insufficient(resource.clone()));
        }
    }
    Ok(())
}

/// The message of a pod a PreFilter refused (`FitError.Error` with a PreFilter message, then
/// the default preemption's, which finds no node worth preempting on).
pub fn prefilter_message(total: usize, reason: &str) -> String {
    format!(
        "0/{total} nodes are available: {reason}. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
    )
}

/// The node for `pod` among `nodes` (with what each has in use): the fitting node with the
/// fewest pods, then the lowest name; or the reasons, counted, as kube-scheduler reports them.
/// `nodes` are `Node`s, shared ones (`Arc<Node>`) or [`NodeInfo`]s, as the scheduler holds
/// them. Looks at every node from the first; see [`choose_with`].
pub fn choose<'a, N: Candidate>(
    pod: &Pod,
    nodes: &'a [N],
    used: &HashMap<String, BTreeMap<String, i128>>,
) -> Result<&'a N, String> {
    choose_with(pod, nodes, used, &|_| Ok(()), 0).0
}

/// [`choose`] with one more filter, run on the nodes that pass the others (kube-scheduler's
/// later filter plugins): its error is the node's reason. The search starts at node `start`
/// (modulo their number) and stops once [`feasible_nodes_to_find`] nodes fit, as
/// kube-scheduler's `findNodesThatPassFilters` does; the second value is how many nodes it
/// looked at, to add to the next decision's start (`nextStartNodeIndex`).
pub fn choose_with<'a, N: Candidate>(
    pod: &Pod,
    nodes: &'a [N],
    used: &HashMap<String, BTreeMap<String, i128>>,
    extra: &dyn Fn(&Node) -> Result<(), String>,
    start: usize,
) -> (Result<&'a N, String>, usize) {
    let empty = BTreeMap::new();
    let requests = pod_requests(pod);
    let mut best: Option<(&N, i128)> = None;
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut resource_misfit = false;
    let total = nodes.len();
    if total == 0 {
        return (Err("no nodes available to schedule pods".to_owned()), 0);
    }
    let to_find = feasible_nodes_to_find(total);
    let mut feasible = 0;
    let mut examined = 0;
    for offset in 0..total {
        if feasible >= to_find {
            break;
        }
        let entry = &nodes[(start + offset) % total];
        examined += 1;
        let node = entry.node();
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let node_used = used.get(name).unwrap_or(&empty);
        match fits_requests(pod, &requests, entry, node_used)
            .and_then(|()| extra(node).map_err(Misfit::Other))
        {
            Ok(()) => {
                feasible += 1;
                let load = node_used.get("pods").copied().unwrap_or(0);
                if best.is_none_or(|(b, l)| {
                    load < l || (load == l && node.metadata.name < b.node().metadata.name)
                }) {
                    best = Some((entry, load));
                }
            }
            Err(misfit) => {
                resource_misfit |= matches!(misfit, Misfit::Insufficient(_));
                *reasons.entry(misfit.reason()).or_default() += 1;
            }
        }
    }
    if let Some((node, _)) = best {
        return (Ok(node), examined);
    }
    let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    let preemption = if resource_misfit {
        format!(
            "0/{total} nodes are available: {total} No preemption victims found for incoming pod."
        )
    } else {
        format!("0/{total} nodes are available: {total} Preemption is not helpful for scheduling.")
    };
    (
        Err(format!(
            "0/{total} nodes are available: {}. preemption: {preemption}",
            parts.join(", ")
        )),
        examined,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, labels: serde_json::Value, taints: serde_json::Value, cpu: &str) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": cpu, "memory": "1Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .expect("a node")
    }

    fn pod(spec: serde_json::Value) -> Pod {
        let mut spec = spec;
        spec["containers"] =
            json!([{"name": "c", "image": "x", "resources": {"requests": {"cpu": "500m"}}}]);
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).expect("a pod")
    }

    #[test]
    fn quantities_parse_in_milli_cpu_and_bytes() {
        assert_eq!(parse_quantity(&Quantity("500m".into()), true), Some(500));
        assert_eq!(parse_quantity(&Quantity("2".into()), true), Some(2000));
        assert_eq!(
            parse_quantity(&Quantity("1Gi".into()), false),
            Some(1 << 30)
        );
        assert_eq!(parse_quantity(&Quantity("1.5k".into()), false), Some(1500));
        assert_eq!(parse_quantity(&Quantity("lots".into()), false), None);
    }

    #[test]
    fn selectors_affinity_and_taints_filter_nodes() {
        let nodes = vec![
            node("a", json!({"disk": "ssd", "zone": "1"}), json!([]), "4"),
            node(
                "b",
                json!({"disk": "hdd", "zone": "2"}),
                json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
                "4",
            ),
        ];
        let used = HashMap::new();
        let chosen =
            |p: &Pod| choose(p, &nodes, &used).map(|n| n.metadata.name.clone().unwrap_or_default());
        assert_eq!(
            chosen(&pod(json!({"nodeSelector": {"disk": "ssd"}}))),
            Ok("a".into())
        );
        let affinity = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["2"]}]}]}}},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]});
        assert_eq!(chosen(&pod(affinity)), Ok("b".into()));
        let untolerated = json!({"nodeSelector": {"disk": "hdd"}});
        assert_eq!(
            chosen(&pod(untolerated)),
            Err("0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: db}. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.".into())
        );
    }

    #[test]
    fn affinity_terms_read_as_label_selectors_with_gt_and_lt_and_refuse_what_does_not_parse() {
        let nodes = vec![
            node("a", json!({"cores": "4"}), json!([]), "4"),
            node("b", json!({"cores": "16"}), json!([]), "4"),
        ];
        let used = HashMap::new();
        let chosen = |expressions: serde_json::Value| {
            let spec = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}}});
            choose(&pod(spec), &nodes, &used).map(|n| n.metadata.name.clone().unwrap_or_default())
        };
        assert_eq!(
            chosen(json!([{"key": "cores", "operator": "Gt", "values": ["8"]}])),
            Ok("b".into())
        );
        assert_eq!(
            chosen(json!([{"key": "cores", "operator": "Lt", "values": ["8"]}])),
            Ok("a".into())
        );
        // As upstream's NewRequirement: a bound that is no integer, an unknown operator or an
        // `In` without values make the term match no node.
        for bad in [
            json!([{"key": "cores", "operator": "Gt", "values": ["many"]}]),
            json!([{"key": "cores", "operator": "Near", "values": ["4"]}]),
            json!([{"key": "cores", "operator": "In", "values": []}]),
        ] {
            assert!(chosen(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn cordoned_nodes_take_only_pods_tolerating_it_and_match_fields_pick_a_node() {
        let mut cordoned = node("a", json!({}), json!([]), "4");
        cordoned
            .spec
            .get_or_insert_with(Default::default)
            .unschedulable = Some(true);
        let nodes = vec![cordoned, node("b", json!({}), json!([]), "4")];
        let used = HashMap::new();
        let chosen =
            |p: &Pod| choose(p, &nodes, &used).map(|n| n.metadata.name.clone().unwrap_or_default());
        let on_a = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]}]}}}});
        assert!(chosen(&pod(on_a.clone())).is_err(), "a is cordoned");
        let mut tolerant = on_a;
        tolerant["tolerations"] = json!([{"key": "node.kubernetes.io/unschedulable",
            "operator": "Exists", "effect": "NoSchedule"}]);
        assert_eq!(chosen(&pod(tolerant)), Ok("a".into()));
    }

    #[test]
    fn many_nodes_are_searched_in_part_from_where_the_last_decision_stopped() {
        // kube-scheduler's figures (schedule_one_test.go `TestNumFeasibleNodesToFind` has 10, 1,000
        // and 6,000; the others follow from its rule).
        assert_eq!(feasible_nodes_to_find(10), 10);
        assert_eq!(feasible_nodes_to_find(99), 99);
        assert_eq!(feasible_nodes_to_find(100), 100);
        assert_eq!(feasible_nodes_to_find(1_000), 420);
        assert_eq!(feasible_nodes_to_find(6_000), 300);
        assert_eq!(feasible_nodes_to_find(10_000), 500);
        let nodes: Vec<NodeInfo> = (0..1_000)
            .map(|i| {
                NodeInfo::new(Arc::new(node(
                    &format!("n{i:04}"),
                    json!({}),
                    json!([]),
                    "1",
                )))
            })
            .collect();
        let mut used: HashMap<String, BTreeMap<String, i128>> = HashMap::new();
        for (i, info) in nodes.iter().enumerate() {
            let name = info.node().metadata.name.clone().unwrap_or_default();
            let load = if i == 700 { 0 } else { 1 };
            used.insert(name, [("pods".into(), load)].into());
        }
        let p = pod(json!({}));
        let name = |r: Result<&NodeInfo, String>| r.map(|n| n.node().metadata.name.clone());
        // From node 0, 420 nodes fit and the search stops: n0700, the least loaded, is not
        // among them.
        let (chosen, examined) = choose_with(&p, &nodes, &used, &|_| Ok(()), 0);
        assert_eq!((name(chosen), examined), (Ok(Some("n0000".into())), 420));
        // From where it stopped, the next search reaches it.
        let (chosen, examined) = choose_with(&p, &nodes, &used, &|_| Ok(()), 420);
        assert_eq!((name(chosen), examined), (Ok(Some("n0700".into())), 420));
        // The search wraps around the end: from n0990 it reaches n0000 after n0999, and
        // among equally loaded nodes the lowest name wins.
        let (chosen, examined) = choose_with(&p, &nodes, &used, &|_| Ok(()), 990);
        assert_eq!((name(chosen), examined), (Ok(Some("n0000".into())), 420));
        let (chosen, _) = choose_with(&p, &nodes, &used, &|_| Ok(()), 500);
        assert_eq!(name(chosen), Ok(Some("n0700".into())));
        // Nodes that do not fit do not count: every node is looked at before giving up.
        let (chosen, examined) = choose_with(&p, &nodes, &used, &|_| Err("no room".to_owned()), 5);
        assert!(chosen.is_err_and(|e| e.starts_with("0/1000 nodes are available: 1000 no room.")));
        assert_eq!(examined, 1_000);
        // A node's parsed allocatable is what the node says.
        assert_eq!(Candidate::allocatable(&nodes[0], "cpu"), Some(1_000));
        assert_eq!(Candidate::allocatable(&nodes[0], "memory"), Some(1 << 30));
        assert_eq!(Candidate::allocatable(&nodes[0], "gpu"), None);
    }

    #[test]
    fn requests_must_fit_and_load_spreads() {
        let nodes = vec![
            node("a", json!({}), json!([]), "1"),
            node("b", json!({}), json!([]), "1"),
        ];
        let mut used: HashMap<String, BTreeMap<String, i128>> = HashMap::new();
        used.insert("a".into(), [("cpu".into(), 600), ("pods".into(), 1)].into());
        let p = pod(json!({}));
        assert_eq!(
            choose(&p, &nodes, &used).map(|n| n.metadata.name.clone()),
            Ok(Some("b".into()))
        );
        used.insert("b".into(), [("cpu".into(), 600), ("pods".into(), 1)].into());
        assert_eq!(
            choose(&p, &nodes, &used).map(|n| n.metadata.name.clone()),
            Err("0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.".into())
        );
    }
}
