//! The EndpointSlice controller (upstream `pkg/controller/endpointslice` and
//! `staging/.../endpointslice/reconciler.go`): for every Service with a selector, slices of at
//! most 100 endpoints per address family and port set, owned by the Service and labelled
//! `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`. Terminating pods
//! stay listed (`terminating: true`, `ready: false`), as kube-proxy's graceful termination
//! needs. A Service with no endpoints keeps one empty placeholder slice.
//!
//! Slices are created with `generateName`, so a sync on a cache that has not yet seen the
//! slices written by the previous one would create duplicates: like upstream's
//! `EndpointSliceTracker`, the controller remembers what it wrote and waits for the cache to
//! show it before syncing that Service again.

use crate::clock::Clock;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubemock_client::controller::controller_reference;
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::{
    Action, Api, ApiResource, Client, Controller, DeleteParams, InformerFactory, ObjectKey,
    PostParams, SharedInformer, Store,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::{
    HEADLESS_LABEL, find_port, hostname_for, is_endpoint, is_headless, is_managed, pod_address,
    pod_reference, selects, services_selecting,
};
use crate::error::Result;
use crate::replicaset::pods::is_ready;

/// Concurrent syncs (kube-controller-manager's `--concurrent-service-endpoint-syncs`).
const WORKERS: usize = 5;
/// Endpoints per slice (kube-controller-manager's `--max-endpoints-per-slice`).
pub const MAX_ENDPOINTS_PER_SLICE: usize = 100;
/// The label naming a slice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming who manages a slice.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// This controller's value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// The zone label of nodes, copied to their endpoints.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

struct Context {
    client: Client,
    services: Store<Service>,
    pods: Store<Pod>,
    nodes: Store<Node>,
    slices: Store<EndpointSlice>,
    tracker: Tracker,
    recorder: Recorder,
}

/// The EndpointSlice controller.
pub struct EndpointSliceController {
    client: Client,
    services: SharedInformer<Service>,
    pods: SharedInformer<Pod>,
    nodes: SharedInformer<Node>,
    slices: SharedInformer<EndpointSlice>,
    /// Where event timestamps come from (the system clock unless set).
    clock: Clock,
}

impl EndpointSliceController {
    /// A controller on `factory`'s shared Service, Pod, Node and EndpointSlice informers.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        EndpointSliceController {
            client,
            services: factory.informer::<Service>(),
            pods: factory.informer::<Pod>(),
            nodes: factory.informer::<Node>(),
            slices: factory.informer::<EndpointSlice>(),
            clock: Clock::system(),
        }
    }

    /// Reads the time from `clock` (the server's virtual clock in tests and with
    /// `--virtual-clock`).
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            services: self.services.store(),
            pods: self.pods.store(),
            nodes: self.nodes.store(),
            slices: self.slices.store(),
            tracker: Tracker::default(),
            recorder: Recorder::new(self.client.clone(), "endpoint-slice-controller")
                .with_clock(self.clock.clone()),
        });
        let services = self.services.store();
        let controller = Controller::new("endpointslice", self.services)
            .workers(WORKERS)
            .watches(&self.pods, move |pod: &Pod| {
                services_selecting(&services, pod)
            })
            .watches(&self.slices, |slice: &EndpointSlice| {
                service_of(slice).into_iter().collect()
            })
            // Zones come from the nodes; only their cache is needed.
            .watches(&self.nodes, |_: &Node| Vec::new());
        controller
            .run(
                move |key| sync(key, ctx.clone()),
                crate::error::error_policy,
                token,
            )
            .await;
    }
}

/// The Service a slice managed by this controller belongs to.
fn service_of(slice: &EndpointSlice) -> Option<ObjectKey> {
    let labels = slice.metadata.labels.as_ref()?;
    if labels.get(MANAGED_BY_LABEL).map(String::as_str) != Some(MANAGED_BY) {
        return None;
    }
    let service = labels.get(SERVICE_NAME_LABEL)?;
    Some(ObjectKey::new(slice.metadata.namespace.as_deref(), service))
}

async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(service) = ctx.services.get(&key) else {
        // Its slices are owned by it: the garbage collector removes them.
        ctx.tracker.forget(&key);
        return Ok(Action::AwaitChange);
    };
    if !is_managed(&service) {
        return Ok(Action::AwaitChange);
    }
    let namespace = key.namespace.clone().unwrap_or_default();
    let existing: Vec<Arc<EndpointSlice>> = ctx
        .slices
        .list_namespace(&namespace)
        .into_iter()
        .filter(|slice| service_of(slice).as_ref() == Some(&key))
        .collect();
    if ctx.tracker.is_stale(&key, &existing) {
        // The slices written last time are not all in the cache yet; their events requeue.
        return Ok(Action::AwaitChange);
    }
    let pods: Vec<Arc<Pod>> = ctx
        .pods
        .list_namespace(&namespace)
        .into_iter()
        .filter(|pod| selects(&service, pod) && is_endpoint(pod, true))
        .collect();
    let families = address_types(&service);
    let mut plan = Plan::default();
    for family in &families {
        let desired = desired_endpoints(&service, &pods, family == "IPv6", &ctx.nodes);
        let mine: Vec<&EndpointSlice> = existing
            .iter()
            .map(AsRef::as_ref)
            .filter(|s| &s.address_type == family)
            .collect();
        plan_family(&service, family, desired, &mine, &mut plan);
    }
    // Slices of an address family the Service no longer has.
    for slice in &existing {
        if !families.contains(&slice.address_type) {
            plan.delete.push((**slice).clone());
        }
    }
    apply(&ctx, &service, &key, plan).await?;
    Ok(Action::AwaitChange)
}

/// The address families of the Service's slices (its `ipFamilies`, IPv4 when unset).
fn address_types(service: &Service) -> Vec<String> {
    let families: Vec<String> = service
        .spec
        .as_ref()
        .and_then(|s| s.ip_families.clone())
        .unwrap_or_default();
    if families.is_empty() {
        vec!["IPv4".to_owned()]
    } else {
        families
    }
}

/// An endpoint with the ports it offers.
struct Desired {
    endpoint: Endpoint,
    ports: Vec<EndpointPort>,
}

/// The endpoints of `pods` for `service` in one family, keyed by pod uid and address.
fn desired_endpoints(
    service: &Service,
    pods: &[Arc<Pod>],
    ipv6: bool,
    nodes: &Store<Node>,
) -> BTreeMap<String, Desired> {
    let spec = service.spec.clone().unwrap_or_default();
    let publish_not_ready = spec.publish_not_ready_addresses.unwrap_or(false);
    let service_ports = spec.ports.unwrap_or_default();
    let mut desired = BTreeMap::new();
    for pod in pods {
        let Some(ip) = pod_address(pod, ipv6) else {
            continue;
        };
        let serving = publish_not_ready || is_ready(pod);
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let node_name = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty());
        let zone = node_name
            .as_deref()
            .and_then(|n| nodes.get_by(None, n))
            .and_then(|node| node.metadata.labels.as_ref()?.get(ZONE_LABEL).cloned())
            .filter(|z| !z.is_empty());
        let endpoint = Endpoint {
            addresses: vec![ip.clone()],
            conditions: Some(EndpointConditions {
                ready: Some(publish_not_ready || (serving && !terminating)),
                serving: Some(serving),
                terminating: Some(terminating),
            }),
            hostname: hostname_for(pod, service),
            node_name,
            zone,
            target_ref: Some(pod_reference(pod)),
            ..Endpoint::default()
        };
        let mut ports: Vec<EndpointPort> = service_ports
            .iter()
            .filter_map(|sp| {
                find_port(pod, sp).map(|port| EndpointPort {
                    name: Some(sp.name.clone().unwrap_or_default()),
                    port: Some(port),
                    protocol: Some(sp.protocol.clone().unwrap_or_else(|| "TCP".to_owned())),
                    app_protocol: sp.app_protocol.clone(),
                })
            })
            .collect();
        sort_ports(&mut ports);
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        desired.insert(endpoint_key_of(&uid, &ip), Desired { endpoint, ports });
    }
    desired
}

fn endpoint_key_of(uid: &str, ip: &str) -> String {
    format!("{uid}/{ip}")
}

/// The key of an endpoint already in a slice.
fn endpoint_key(endpoint: &Endpoint) -> String {
    let uid = endpoint
        .target_ref
        .as_ref()
        .and_then(|r| r.uid.as_deref())
        .unwrap_or_default();
    endpoint_key_of(uid, endpoint.addresses.first().map_or("", String::as_str))
}

fn sort_ports(ports: &mut [EndpointPort]) {
    ports.sort_by(|a, b| {
        (&a.name, a.port, &a.protocol, &a.app_protocol).cmp(&(
            &b.name,
            b.port,
            &b.protocol,
            &b.app_protocol,
        ))
    });
}

fn ports_of(slice: &EndpointSlice) -> Vec<EndpointPort> {
    let mut ports = slice.ports.clone().unwrap_or_default();
    sort_ports(&mut ports);
    ports
}

/// What one sync writes.
#[derive(Default)]
struct Plan {
    create: Vec<EndpointSlice>,
    update: Vec<EndpointSlice>,
    delete: Vec<EndpointSlice>,
}

/// Plans one address family: endpoints stay in the slice that has them when it still
/// offers their ports; slices with changes take new endpoints first, then new slices are
/// made; emptied slices go; a Service without endpoints keeps one placeholder.
fn plan_family(
    service: &Service,
    family: &str,
    mut desired: BTreeMap<String, Desired>,
    existing: &[&EndpointSlice],
    plan: &mut Plan,
) {
    let labels = slice_labels(service);
    // Endpoints grouped by their port set.
    let mut groups: BTreeMap<String, (Vec<EndpointPort>, BTreeMap<String, Endpoint>)> =
        BTreeMap::new();
    let total = desired.len();
    for (key, Desired { endpoint, ports }) in std::mem::take(&mut desired) {
        let group = groups
            .entry(ports_key(&ports))
            .or_insert_with(|| (ports, BTreeMap::new()));
        group.1.insert(key, endpoint);
    }
    let mut kept_placeholder = false;
    let mut unchanged: Vec<EndpointSlice> = Vec::new();
    for slice in existing {
        let is_placeholder = slice.endpoints.is_empty() && slice.ports.is_none();
        if total == 0 && is_placeholder && !kept_placeholder {
            kept_placeholder = true;
            let mut updated = (*slice).clone();
            updated.metadata.labels = Some(labels.clone());
            if &updated != *slice {
                plan.update.push(updated);
            }
            continue;
        }
        let Some((_, wanted)) = groups.get_mut(&ports_key(&ports_of(slice))) else {
            plan.delete.push((*slice).clone());
            continue;
        };
        let endpoints: Vec<Endpoint> = slice
            .endpoints
            .iter()
            .filter_map(|e| wanted.remove(&endpoint_key(e)))
            .collect();
        if endpoints.is_empty() {
            plan.delete.push((*slice).clone());
            continue;
        }
        let mut updated = (*slice).clone();
        updated.endpoints = endpoints;
        updated.metadata.labels = Some(labels.clone());
        if &updated == *slice {
            unchanged.push(updated);
        } else {
            plan.update.push(updated);
        }
    }
    // Fuller slices first, as upstream fills them.
    unchanged.sort_by_key(|s| std::cmp::Reverse(s.endpoints.len()));
    // The endpoints no slice had: into slices being updated anyway, then into unchanged
    // slices with room, then new slices.
    for (key, (ports, remaining)) in groups {
        let mut remaining: Vec<Endpoint> = remaining.into_values().collect();
        for slice in plan
            .update
            .iter_mut()
            .filter(|s| s.address_type == family && ports_key(&ports_of(s)) == key)
        {
            let room = MAX_ENDPOINTS_PER_SLICE.saturating_sub(slice.endpoints.len());
            let take = room.min(remaining.len());
            slice.endpoints.extend(remaining.drain(..take));
        }
        for slice in &mut unchanged {
            let room = MAX_ENDPOINTS_PER_SLICE.saturating_sub(slice.endpoints.len());
            if remaining.is_empty() || room == 0 || ports_key(&ports_of(slice)) != key {
                continue;
            }
            let take = room.min(remaining.len());
            let mut filled = slice.clone();
            filled.endpoints.extend(remaining.drain(..take));
            plan.update.push(filled);
        }
        while !remaining.is_empty() {
            let take = MAX_ENDPOINTS_PER_SLICE.min(remaining.len());
            let endpoints = remaining.drain(..take).collect();
            plan.create.push(new_slice(
                service,
                family,
                labels.clone(),
                Some(ports.clone()).filter(|p| !p.is_empty()),
                endpoints,
            ));
        }
    }
    if total == 0 && !kept_placeholder {
        plan.create
            .push(new_slice(service, family, labels, None, Vec::new()));
    }
}

fn ports_key(ports: &[EndpointPort]) -> String {
    serde_json::to_string(ports).unwrap_or_default()
}

/// The labels of a Service's slices (upstream `setEndpointSliceLabels`).
fn slice_labels(service: &Service) -> BTreeMap<String, String> {
    let mut labels = service.metadata.labels.clone().unwrap_or_default();
    labels.remove(HEADLESS_LABEL);
    if is_headless(service) {
        labels.insert(HEADLESS_LABEL.to_owned(), String::new());
    }
    labels.insert(
        SERVICE_NAME_LABEL.to_owned(),
        service.metadata.name.clone().unwrap_or_default(),
    );
    labels.insert(MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned());
    labels
}

fn new_slice(
    service: &Service,
    family: &str,
    labels: BTreeMap<String, String>,
    ports: Option<Vec<EndpointPort>>,
    endpoints: Vec<Endpoint>,
) -> EndpointSlice {
    let name = service.metadata.name.clone().unwrap_or_default();
    // Upstream's prefix: the Service name and a dash, cut so generated names stay valid.
    let mut prefix = format!("{name}-");
    if prefix.len() > 58 {
        prefix.truncate(57);
        prefix.push('-');
    }
    let owner = controller_reference(service).map(|mut r| {
        r.block_owner_deletion = Some(true);
        vec![r]
    });
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(prefix),
            namespace: service.metadata.namespace.clone(),
            labels: Some(labels),
            owner_references: owner,
            ..ObjectMeta::default()
        },
        address_type: family.to_owned(),
        endpoints,
        ports,
    }
}

async fn apply(ctx: &Context, service: &Service, key: &ObjectKey, plan: Plan) -> Result<()> {
    let namespace = key.namespace.clone().unwrap_or_default();
    let api: Api<EndpointSlice> = Api::namespaced(ctx.client.clone(), &namespace);
    let post = PostParams::default();
    let mut first_error = None;
    for slice in &plan.create {
        match api.create(&post, slice).await {
            Ok(created) => ctx.tracker.written(key, &created),
            // A terminating namespace takes no new objects: nothing to keep there.
            Err(err) if err.is_forbidden() => return Ok(()),
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    for slice in &plan.update {
        let name = slice.metadata.name.clone().unwrap_or_default();
        match api.replace(&name, &post, slice).await {
            Ok(updated) => ctx.tracker.written(key, &updated),
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    for slice in &plan.delete {
        let name = slice.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => ctx.tracker.deleted(key, &name),
            Err(err) if err.is_not_found() => {}
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    let Some(err) = first_error else {
        return Ok(());
    };
    if !err.is_conflict() && !err.is_already_exists() {
        let reference = object_reference(service, &ApiResource::of::<Service>());
        ctx.recorder
            .publish(
                &reference,
                EventType::Warning,
                "FailedToUpdateEndpointSlices",
                &format!(
                    "Error updating Endpoint Slices for Service {namespace}/{}: {err}",
                    key.name
                ),
            )
            .await;
    }
    Err(err.into())
}

/// What the controller wrote and the cache must show before a Service is synced again
/// (upstream `EndpointSliceTracker`): per Service, each slice written with the
/// resourceVersion the server gave it, or deleted.
#[derive(Default)]
struct Tracker {
    expected: Mutex<HashMap<ObjectKey, HashMap<String, Option<u64>>>>,
}

impl Tracker {
    fn written(&self, service: &ObjectKey, slice: &EndpointSlice) {
        let name = slice.metadata.name.clone().unwrap_or_default();
        let version = slice
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok());
        self.expected
            .lock()
            .entry(service.clone())
            .or_default()
            .insert(name, version.or(Some(0)));
    }

    fn deleted(&self, service: &ObjectKey, name: &str) {
        self.expected
            .lock()
            .entry(service.clone())
            .or_default()
            .insert(name.to_owned(), None);
    }

    fn forget(&self, service: &ObjectKey) {
        self.expected.lock().remove(service);
    }

    /// Whether `cached` (the Service's slices in the cache) lacks a write; expectations
    /// the cache has met are dropped.
    fn is_stale(&self, service: &ObjectKey, cached: &[Arc<EndpointSlice>]) -> bool {
        let mut expected = self.expected.lock();
        let Some(slices) = expected.get_mut(service) else {
            return false;
        };
        slices.retain(|name, version| {
            let seen = cached
                .iter()
                .find(|s| s.metadata.name.as_deref() == Some(name.as_str()));
            let met = match (version, seen) {
                (None, None) => true,
                (None, Some(_)) | (Some(_), None) => false,
                (Some(version), Some(slice)) => slice
                    .metadata
                    .resource_version
                    .as_deref()
                    .and_then(|rv| rv.parse::<u64>().ok())
                    .is_none_or(|rv| rv >= *version),
            };
            !met
        });
        let stale = !slices.is_empty();
        if !stale {
            expected.remove(service);
        }
        stale
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service() -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid",
                         "labels": {"team": "a"}},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10",
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
        }))
        .expect("a service")
    }

    fn pods(n: usize) -> Vec<Arc<Pod>> {
        (0..n)
            .map(|i| {
                Arc::new(
                    serde_json::from_value(json!({
                        "metadata": {"name": format!("p{i}"), "namespace": "ns",
                                     "uid": format!("uid-{i:03}"), "labels": {"app": "web"}},
                        "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
                        "status": {"phase": "Running", "podIP": format!("10.1.{}.{}", i / 200, i % 200),
                                   "conditions": [{"type": "Ready", "status": "True"}]}
                    }))
                    .expect("a pod"),
                )
            })
            .collect()
    }

    fn plan(pods: &[Arc<Pod>], existing: &[&EndpointSlice]) -> Plan {
        let svc = service();
        let desired = desired_endpoints(&svc, pods, false, &Store::new());
        let mut plan = Plan::default();
        plan_family(&svc, "IPv4", desired, existing, &mut plan);
        plan
    }

    fn named(mut slice: EndpointSlice, name: &str) -> EndpointSlice {
        slice.metadata.name = Some(name.to_owned());
        slice
    }

    #[test]
    fn endpoints_are_cut_into_slices_of_a_hundred_with_the_labels_and_owner() {
        let plan = plan(&pods(250), &[]);
        let sizes: Vec<usize> = plan.create.iter().map(|s| s.endpoints.len()).collect();
        assert_eq!(sizes, [100, 100, 50]);
        let slice = &plan.create[0];
        let labels = slice.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get(SERVICE_NAME_LABEL).map(String::as_str),
            Some("web")
        );
        assert_eq!(
            labels.get(MANAGED_BY_LABEL).map(String::as_str),
            Some(MANAGED_BY)
        );
        assert_eq!(labels.get("team").map(String::as_str), Some("a"));
        let owner = &slice.metadata.owner_references.clone().unwrap_or_default()[0];
        assert_eq!(
            (owner.uid.as_str(), owner.controller),
            ("svc-uid", Some(true))
        );
        let port = &slice.ports.clone().unwrap_or_default()[0];
        assert_eq!(
            (port.name.as_deref(), port.port),
            (Some("http"), Some(8080))
        );
    }

    #[test]
    fn an_unchanged_slice_is_left_alone_and_a_new_pod_joins_a_slice_with_room() {
        let first = plan(&pods(3), &[]);
        let slice = named(first.create[0].clone(), "web-abc");
        let again = plan(&pods(3), &[&slice]);
        assert!(again.create.is_empty() && again.update.is_empty() && again.delete.is_empty());
        let grown = plan(&pods(4), &[&slice]);
        assert!(grown.create.is_empty(), "the new endpoint fits in web-abc");
        assert_eq!(grown.update.len(), 1);
        assert_eq!(grown.update[0].endpoints.len(), 4);
    }

    #[test]
    fn a_service_without_endpoints_keeps_one_placeholder() {
        let first = plan(&[], &[]);
        assert_eq!(first.create.len(), 1);
        assert!(first.create[0].endpoints.is_empty() && first.create[0].ports.is_none());
        let placeholder = named(first.create[0].clone(), "web-p");
        let again = plan(&[], &[&placeholder]);
        assert!(again.create.is_empty() && again.update.is_empty() && again.delete.is_empty());
        let filled = plan(&pods(1), &[&placeholder]);
        assert_eq!((filled.create.len(), filled.delete.len()), (1, 1));
    }

    #[test]
    fn terminating_pods_stay_listed_as_not_ready_but_serving() {
        let mut pod = (*pods(1)[0]).clone();
        pod.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(kubemock_client::resource::now()),
        );
        let plan = plan(&[Arc::new(pod)], &[]);
        let conditions = plan.create[0].endpoints[0]
            .conditions
            .clone()
            .unwrap_or_default();
        assert_eq!(
            (conditions.ready, conditions.serving, conditions.terminating),
            (Some(false), Some(true), Some(true))
        );
    }

    #[test]
    fn the_tracker_waits_for_the_cache_to_show_each_write() {
        let tracker = Tracker::default();
        let key = ObjectKey::new(Some("ns"), "web");
        let mut slice = named(plan(&pods(1), &[]).create[0].clone(), "web-1");
        slice.metadata.resource_version = Some("7".to_owned());
        tracker.written(&key, &slice);
        assert!(tracker.is_stale(&key, &[]));
        let mut old = slice.clone();
        old.metadata.resource_version = Some("5".to_owned());
        assert!(tracker.is_stale(&key, &[Arc::new(old)]));
        assert!(!tracker.is_stale(&key, &[Arc::new(slice.clone())]));
        tracker.deleted(&key, "web-1");
        assert!(tracker.is_stale(&key, &[Arc::new(slice)]));
        assert!(!tracker.is_stale(&key, &[]));
    }
}
