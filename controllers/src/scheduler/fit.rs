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
//!
//! What a decision reads per node is laid out for a scan of hundreds of nodes per pod (issue 23:
//! at 1,000 nodes this scan was a seventh of the whole process's CPU): a [`NodeInfo`] holds its
//! node's readiness, cordon and allocatable [`Resources`] as fields, and what is in use on it is
//! found by position in a table ([`NodeInfo::slot`]), not by a hash of the node's name.

use std::collections::BTreeMap;
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
    /// Not enough of these resources (`cpu`, `memory`), or too many pods (`pods`): every
    /// resource short on the node, as upstream's NodeResourcesFit reports them
    /// (`pkg/scheduler/framework/plugins/noderesources/fit.go`, `fitsRequest`).
    Insufficient(Vec<String>),
    /// A filter after these (the volume binding's), with its own reason text.
    Other(String),
}

impl Misfit {
    /// The reasons as kube-scheduler words them: one, or one per short resource.
    pub fn reasons(&self) -> Vec<String> {
        let one = match self {
            Misfit::NotReady => "node(s) had untolerated taint {node.kubernetes.io/not-ready: }",
            Misfit::Unschedulable => "node(s) were unschedulable",
            Misfit::Selector => "node(s) didn't match Pod's node affinity/selector",
            Misfit::Taint(taint) => return vec![format!("node(s) had untolerated taint {taint}")],
            Misfit::Insufficient(resources) => {
                return resources
                    .iter()
                    .map(|resource| match resource.as_str() {
                        "pods" => "Too many pods".to_owned(),
                        _ => format!("Insufficient {resource}"),
                    })
                    .collect();
            }
            Misfit::Other(reason) => reason,
        };
        vec![one.to_owned()]
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

/// Amounts of resources, as kube-scheduler's `framework.Resource`
/// (`pkg/scheduler/framework/types.go`) holds them: cpu in milli-units, memory in bytes and
/// pods in units as fields, since every decision reads them; any other resource
/// (`ephemeral-storage`, hugepages, extended resources) by name, in units. An amount not
/// declared is 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// Milli-cpu.
    pub cpu: i128,
    /// Bytes.
    pub memory: i128,
    /// Pods.
    pub pods: i128,
    /// Every other resource by name; no zero amounts.
    pub other: BTreeMap<String, i128>,
}

impl Resources {
    /// The amount of `resource`.
    pub fn get(&self, resource: &str) -> i128 {
        match resource {
            "cpu" => self.cpu,
            "memory" => self.memory,
            "pods" => self.pods,
            _ => self.other.get(resource).copied().unwrap_or(0),
        }
    }

    /// The amount of `resource`, for it to be changed.
    fn amount_mut(&mut self, resource: &str) -> &mut i128 {
        match resource {
            "cpu" => &mut self.cpu,
            "memory" => &mut self.memory,
            "pods" => &mut self.pods,
            _ => self.other.entry(resource.to_owned()).or_default(),
        }
    }

    /// Adds `value` of `resource` (a negative value takes it away).
    pub fn add(&mut self, resource: &str, value: i128) {
        *self.amount_mut(resource) += value;
        self.other.retain(|_, v| *v != 0);
    }

    /// Adds every amount of `other` times `sign` (1 adds, -1 takes away).
    pub fn add_all(&mut self, other: &Resources, sign: i128) {
        self.cpu += sign * other.cpu;
        self.memory += sign * other.memory;
        self.pods += sign * other.pods;
        for (resource, value) in &other.other {
            *self.other.entry(resource.clone()).or_default() += sign * value;
        }
        self.other.retain(|_, v| *v != 0);
    }

    /// Every amount that is not 0, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i128)> {
        [
            ("cpu", self.cpu),
            ("memory", self.memory),
            ("pods", self.pods),
        ]
        .into_iter()
        .chain(self.other.iter().map(|(name, v)| (name.as_str(), *v)))
        .filter(|(_, v)| *v != 0)
    }

    /// Whether every amount is 0.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// `quantities` by resource name, each read as [`parse_quantity`] reads it (an unparsable
    /// one is left out, as if not declared).
    fn parse(quantities: Option<&BTreeMap<String, Quantity>>) -> Resources {
        let mut resources = Resources::default();
        for (name, quantity) in quantities.into_iter().flatten() {
            if let Some(value) = parse_quantity(quantity, name == "cpu") {
                resources.add(name, value);
            }
        }
        resources
    }
}

/// A node as a decision reads it (kube-scheduler's `NodeInfo`): the node, and what of it every
/// decision reads, made once per change of the node.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    node: Arc<Node>,
    /// Where the node's usage is in the table a decision is given
    /// ([`super::usage::NodeUsage::table`]).
    slot: usize,
    /// The Ready condition is True.
    ready: bool,
    /// `spec.unschedulable`.
    cordoned: bool,
    /// Some taint is NoSchedule or NoExecute (only then are the pod's tolerations read).
    tainted: bool,
    /// Allocatable resources as [`parse_quantity`] reads them; `pods` is unlimited when the
    /// node declares none.
    allocatable: Resources,
}

/// The effects of the taints a pod must tolerate to be scheduled on a node.
const SCHEDULING_EFFECTS: [&str; 2] = ["NoSchedule", "NoExecute"];

impl NodeInfo {
    /// `node`, whose usage is at `slot` of the usage table. An allocatable quantity that does
    /// not parse is left out, as if the node did not declare it. A node that declares no pod
    /// limit takes any number of pods (upstream would take none; a hand-written Node in a test
    /// often declares only cpu and memory).
    pub fn new(node: Arc<Node>, slot: usize) -> Self {
        let declared = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
        let mut allocatable = Resources::parse(declared);
        let pods_declared = declared
            .and_then(|a| a.get("pods"))
            .is_some_and(|q| parse_quantity(q, false).is_some());
        if !pods_declared {
            allocatable.pods = i128::MAX;
        }
        NodeInfo {
            slot,
            ready: node_ready(&node),
            cordoned: node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true),
            tainted: node
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|t| {
                    t.iter()
                        .any(|t| SCHEDULING_EFFECTS.contains(&t.effect.as_str()))
                }),
            allocatable,
            node,
        }
    }

    /// The node.
    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// Where the node's usage is in the usage table.
    pub fn slot(&self) -> usize {
        self.slot
    }

    /// The node's allocatable `resource` as a decision reads it.
    pub fn allocatable(&self, resource: &str) -> i128 {
        self.allocatable.get(resource)
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
pub fn pod_requests(pod: &Pod) -> Resources {
    let mut total = Resources::default();
    let Some(spec) = pod.spec.as_ref() else {
        return total;
    };
    let requests_of = |c: &k8s_openapi::api::core::v1::Container| {
        Resources::parse(c.resources.as_ref().and_then(|r| r.requests.as_ref()))
    };
    for container in &spec.containers {
        total.add_all(&requests_of(container), 1);
    }
    for init in spec.init_containers.iter().flatten() {
        for (name, value) in requests_of(init).iter() {
            let entry = total.amount_mut(name);
            *entry = (*entry).max(value);
        }
    }
    total.pods = 1;
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
pub fn fits(pod: &Pod, node: &NodeInfo, used: &Resources) -> Result<(), Misfit> {
    fits_requests(pod, &pod_requests(pod), node, used)
}

/// [`fits`] with the pod's [`pod_requests`] computed once for all the nodes.
fn fits_requests(
    pod: &Pod,
    requests: &Resources,
    info: &NodeInfo,
    used: &Resources,
) -> Result<(), Misfit> {
    if !info.ready {
        return Err(Misfit::NotReady);
    }
    // A cordoned node takes only pods that tolerate its taint (daemon pods do): upstream's
    // NodeUnschedulable plugin.
    if info.cordoned && !tolerates_unschedulable(pod) {
        return Err(Misfit::Unschedulable);
    }
    if !selector_matches(pod, &info.node) {
        return Err(Misfit::Selector);
    }
    if info.tainted
        && let Some(taint) = untolerated_taint(pod, &info.node, &SCHEDULING_EFFECTS)
    {
        let value = taint.value.as_deref().unwrap_or_default();
        return Err(Misfit::Taint(format!("{{{}: {value}}}", taint.key)));
    }
    // Every short resource is a reason, as upstream's `fitsRequest` reports them; a resource
    // the pod does not request is not looked at.
    let short = |resource: &str, wanted: i128, used: i128, available: i128| {
        (wanted != 0 && used + wanted > available).then(|| resource.to_owned())
    };
    let mut insufficient: Vec<String> = [
        ("pods", requests.pods, used.pods, info.allocatable.pods),
        ("cpu", requests.cpu, used.cpu, info.allocatable.cpu),
        (
            "memory",
            requests.memory,
            used.memory,
            info.allocatable.memory,
        ),
    ]
    .into_iter()
    .filter_map(|(resource, wanted, used, available)| short(resource, wanted, used, available))
    .collect();
    for (resource, &wanted) in &requests.other {
        let available = info.allocatable.get(resource);
        insufficient.extend(short(resource, wanted, used.get(resource), available));
    }
    if insufficient.is_empty() {
        Ok(())
    } else {
        Err(Misfit::Insufficient(insufficient))
    }
}

/// The message of a pod a PreFilter refused (`FitError.Error` with a PreFilter message, then
/// the default preemption's, which finds no node worth preempting on).
pub fn prefilter_message(total: usize, reason: &str) -> String {
    format!(
        "0/{total} nodes are available: {reason}. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
    )
}

/// The node for `pod` among `nodes`, sorted by name, with what each has in use in `used` at
/// its [`NodeInfo::slot`] (nothing when the table is shorter): the fitting node with the fewest
/// pods, then the lowest name; or the reasons, counted, as kube-scheduler reports them. Looks
/// at every node from the first; see [`choose_with`].
pub fn choose<'a>(
    pod: &Pod,
    nodes: &'a [NodeInfo],
    used: &[Resources],
) -> Result<&'a NodeInfo, String> {
    choose_with(pod, nodes, used, &|_| Ok(()), 0).0
}

/// [`choose`] with one more filter, run on the nodes that pass the others (kube-scheduler's
/// later filter plugins): its error is the node's reason. The search starts at node `start`
/// (modulo their number) and stops once [`feasible_nodes_to_find`] nodes fit, as
/// kube-scheduler's `findNodesThatPassFilters` does; the second value is how many nodes it
/// looked at, to add to the next decision's start (`nextStartNodeIndex`). Of equally loaded
/// nodes, the first in `nodes` wins: the lowest name, as `nodes` are sorted by name.
pub fn choose_with<'a>(
    pod: &Pod,
    nodes: &'a [NodeInfo],
    used: &[Resources],
    extra: &dyn Fn(&Node) -> Result<(), String>,
    start: usize,
) -> (Result<&'a NodeInfo, String>, usize) {
    let nothing = Resources::default();
    let requests = pod_requests(pod);
    // The best node so far: its index in `nodes`, and its load.
    let mut best: Option<(usize, i128)> = None;
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
        let index = (start + offset) % total;
        let info = &nodes[index];
        examined += 1;
        let node_used = used.get(info.slot).unwrap_or(&nothing);
        match fits_requests(pod, &requests, info, node_used)
            .and_then(|()| extra(&info.node).map_err(Misfit::Other))
        {
            Ok(()) => {
                feasible += 1;
                let load = node_used.pods;
                if best.is_none_or(|(b, l)| (load, index) < (l, b)) {
                    best = Some((index, load));
                }
            }
            Err(misfit) => {
                resource_misfit |= matches!(misfit, Misfit::Insufficient(_));
                for reason in misfit.reasons() {
                    *reasons.entry(reason).or_default() += 1;
                }
            }
        }
    }
    if let Some((index, _)) = best {
        return (Ok(&nodes[index]), examined);
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

    /// `nodes` as a decision reads them, each with its usage at its own index.
    fn infos(nodes: Vec<Node>) -> Vec<NodeInfo> {
        nodes
            .into_iter()
            .enumerate()
            .map(|(slot, node)| NodeInfo::new(Arc::new(node), slot))
            .collect()
    }

    fn name_of(info: &NodeInfo) -> String {
        info.node().metadata.name.clone().unwrap_or_default()
    }

    /// A usage table entry with `cpu` milli-cpu and `pods` pods.
    fn using(cpu: i128, pods: i128) -> Resources {
        Resources {
            cpu,
            pods,
            ..Resources::default()
        }
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
        let nodes = infos(vec![
            node("a", json!({"disk": "ssd", "zone": "1"}), json!([]), "4"),
            node(
                "b",
                json!({"disk": "hdd", "zone": "2"}),
                json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
                "4",
            ),
        ]);
        let used = Vec::new();
        let chosen = |p: &Pod| choose(p, &nodes, &used).map(name_of);
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
        let nodes = infos(vec![
            node("a", json!({"cores": "4"}), json!([]), "4"),
            node("b", json!({"cores": "16"}), json!([]), "4"),
        ]);
        let used = Vec::new();
        let chosen = |expressions: serde_json::Value| {
            let spec = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}}});
            choose(&pod(spec), &nodes, &used).map(name_of)
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
        let nodes = infos(vec![cordoned, node("b", json!({}), json!([]), "4")]);
        let used = Vec::new();
        let chosen = |p: &Pod| choose(p, &nodes, &used).map(name_of);
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
        let nodes = infos(
            (0..1_000)
                .map(|i| node(&format!("n{i:04}"), json!({}), json!([]), "1"))
                .collect(),
        );
        let used: Vec<Resources> = (0..nodes.len())
            .map(|i| using(0, if i == 700 { 0 } else { 1 }))
            .collect();
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
        assert_eq!(nodes[0].allocatable("cpu"), 1_000);
        assert_eq!(nodes[0].allocatable("memory"), 1 << 30);
        assert_eq!(nodes[0].allocatable("pods"), 110);
        assert_eq!(nodes[0].allocatable("gpu"), 0);
    }

    #[test]
    fn requests_must_fit_and_load_spreads() {
        let nodes = infos(vec![
            node("a", json!({}), json!([]), "1"),
            node("b", json!({}), json!([]), "1"),
        ]);
        let mut used = vec![using(600, 1)];
        let p = pod(json!({}));
        assert_eq!(choose(&p, &nodes, &used).map(name_of), Ok("b".into()));
        used.push(using(600, 1));
        assert_eq!(
            choose(&p, &nodes, &used).map(name_of),
            Err("0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.".into())
        );
    }

    #[test]
    fn every_short_resource_is_a_reason_and_other_resources_are_checked_by_name() {
        // a: one pod of room left at most, its cpu and memory taken; b: the same, and no room
        // for another pod; c: declares no pod limit and 2 of an extended resource.
        let mut tight = node("a", json!({}), json!([]), "1");
        let status = tight.status.get_or_insert_with(Default::default);
        let allocatable = status.allocatable.get_or_insert_with(Default::default);
        allocatable.insert("pods".into(), Quantity("1".into()));
        let mut roomy = node("c", json!({}), json!([]), "4");
        let status = roomy.status.get_or_insert_with(Default::default);
        let allocatable = status.allocatable.get_or_insert_with(Default::default);
        allocatable.remove("pods");
        allocatable.insert("example.com/gpu".into(), Quantity("2".into()));
        let nodes = infos(vec![node("a0", json!({}), json!([]), "1"), tight, roomy]);
        assert_eq!(
            nodes[2].allocatable("pods"),
            i128::MAX,
            "no pod limit declared"
        );
        let full = Resources {
            cpu: 600,
            memory: 1 << 30,
            pods: 1,
            ..Resources::default()
        };
        let used = vec![full.clone(), full, using(0, 500)];
        let mut p = pod(json!({}));
        if let Some(spec) = p.spec.as_mut() {
            spec.containers[0].resources = serde_json::from_value(json!({"requests":
                {"cpu": "500m", "memory": "64Mi", "example.com/gpu": "1"}}))
            .expect("requests");
        }
        let requests = pod_requests(&p);
        assert_eq!(
            (requests.cpu, requests.memory, requests.pods),
            (500, 64 << 20, 1)
        );
        assert_eq!(requests.get("example.com/gpu"), 1);
        // As upstream's FitError: each node counts once per reason, the reasons sorted.
        assert_eq!(
            fits(&p, &nodes[1], &used[1]),
            Err(Misfit::Insufficient(vec![
                "pods".into(),
                "cpu".into(),
                "memory".into(),
                "example.com/gpu".into()
            ]))
        );
        assert_eq!(
            choose(&p, &nodes[..2], &used).map(name_of),
            Err("0/2 nodes are available: 1 Too many pods, 2 Insufficient cpu, 2 Insufficient example.com/gpu, 2 Insufficient memory. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.".into())
        );
        // c has the extended resource and no pod limit: it takes the pod, with 500 pods there.
        assert_eq!(choose(&p, &nodes, &used).map(name_of), Ok("c".into()));
        let mut more = p.clone();
        if let Some(spec) = more.spec.as_mut() {
            spec.containers[0].resources =
                serde_json::from_value(json!({"requests": {"example.com/gpu": "3"}}))
                    .expect("requests");
        }
        assert_eq!(
            fits(&more, &nodes[2], &used[2]),
            Err(Misfit::Insufficient(vec!["example.com/gpu".into()]))
        );
    }

    #[test]
    fn usage_is_read_at_each_nodes_slot_not_its_position() {
        // Slots in reverse order of the nodes: a's usage is the table's second entry.
        let nodes = vec![
            NodeInfo::new(Arc::new(node("a", json!({}), json!([]), "1")), 1),
            NodeInfo::new(Arc::new(node("b", json!({}), json!([]), "1")), 0),
        ];
        let p = pod(json!({}));
        assert_eq!(
            choose(&p, &nodes, &[using(0, 3), using(0, 1)]).map(name_of),
            Ok("a".into())
        );
        assert_eq!(
            choose(&p, &nodes, &[using(0, 1), using(900, 1)]).map(name_of),
            Ok("b".into())
        );
        // A slot past the table's end has nothing in use.
        assert_eq!(
            choose(&p, &nodes, &[using(900, 1)]).map(name_of),
            Ok("a".into())
        );
    }

    #[test]
    fn resources_add_take_away_and_keep_no_zero_amounts() {
        let mut r = Resources::default();
        assert!(r.is_empty());
        r.add("cpu", 250);
        r.add("hugepages-2Mi", 1 << 21);
        let other = Resources {
            memory: 10,
            pods: 1,
            other: [("hugepages-2Mi".to_owned(), 1 << 21)].into(),
            ..Resources::default()
        };
        r.add_all(&other, 1);
        assert_eq!(
            r.iter().collect::<Vec<_>>(),
            vec![
                ("cpu", 250),
                ("memory", 10),
                ("pods", 1),
                ("hugepages-2Mi", 1 << 22)
            ]
        );
        r.add_all(&other, -1);
        r.add_all(&other, -1);
        assert_eq!(r.get("hugepages-2Mi"), 0);
        assert!(r.other.is_empty(), "a zero amount is dropped: {r:?}");
        r.add("cpu", -250);
        assert_eq!(
            r.iter().collect::<Vec<_>>(),
            vec![("memory", -10), ("pods", -1)]
        );
        // Init containers: at least each one's request, per resource.
        let mut p = pod(json!({}));
        if let Some(spec) = p.spec.as_mut() {
            spec.init_containers = serde_json::from_value(json!([
                {"name": "i", "image": "x", "resources": {"requests": {"cpu": "2", "ephemeral-storage": "1k"}}},
                {"name": "j", "image": "x", "resources": {"requests": {"cpu": "100m", "memory": "1"}}}]))
            .expect("init containers");
        }
        let requests = pod_requests(&p);
        assert_eq!(
            requests.iter().collect::<Vec<_>>(),
            vec![
                ("cpu", 2000),
                ("memory", 1),
                ("pods", 1),
                ("ephemeral-storage", 1000)
            ]
        );
    }
}
