//! The Endpoints controller (upstream `pkg/controller/endpoint`): one `Endpoints` object per
//! Service with a selector, named like it, listing the selected pods' addresses (ready ones
//! in `addresses`, the others in `notReadyAddresses`) with each Service port resolved on
//! the pod, packed into subsets of addresses sharing the same ports (upstream
//! `RepackSubsets`), and at most 1,000 addresses (the rest truncated, with the
//! `endpoints.kubernetes.io/over-capacity` annotation).

use crate::clock::Clock;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, Pod, Service,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::{
    Action, Api, ApiResource, Client, Controller, InformerFactory, ObjectKey, PostParams, Resource,
    SharedInformer, Store,
};
use tokio_util::sync::CancellationToken;

use super::{
    HEADLESS_LABEL, find_port, hostname_for, is_endpoint, is_headless, is_ipv6, is_managed,
    pod_address, pod_reference, selects, services_selecting,
};
use crate::error::Result;
use crate::replicaset::pods::is_ready;

/// Concurrent syncs (kube-controller-manager's `--concurrent-endpoint-syncs`).
const WORKERS: usize = 5;
/// At most this many addresses in one Endpoints object (upstream `maxCapacity`).
pub const MAX_CAPACITY: usize = 1000;
/// The annotation marking truncated Endpoints.
const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";

struct Context {
    client: Client,
    services: Store<Service>,
    pods: Store<Pod>,
    endpoints: Store<Endpoints>,
    recorder: Recorder,
}

/// The Endpoints controller.
pub struct EndpointsController {
    client: Client,
    services: SharedInformer<Service>,
    pods: SharedInformer<Pod>,
    endpoints: SharedInformer<Endpoints>,
    /// Where event timestamps come from (the system clock unless set).
    clock: Clock,
}

impl EndpointsController {
    /// A controller on `factory`'s shared Service, Pod and Endpoints informers.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        EndpointsController {
            client,
            services: factory.informer::<Service>(),
            pods: factory.informer::<Pod>(),
            endpoints: factory.informer::<Endpoints>(),
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
            endpoints: self.endpoints.store(),
            recorder: Recorder::new(self.client.clone(), "endpoint-controller")
                .with_clock(self.clock.clone()),
        });
        let services = self.services.store();
        let controller = Controller::new("endpoint", self.services)
            .workers(WORKERS)
            .watches(&self.pods, move |pod: &Pod| {
                services_selecting(&services, pod)
            })
            // An Endpoints object changed or deleted by someone else is put right.
            .watches(&self.endpoints, |endpoints: &Endpoints| {
                vec![endpoints.key()]
            });
        controller
            .run(
                move |key| sync(key, ctx.clone()),
                crate::error::error_policy,
                token,
            )
            .await;
    }
}

async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let namespace = key.namespace.clone().unwrap_or_default();
    let api: Api<Endpoints> = Api::namespaced(ctx.client.clone(), &namespace);
    let Some(service) = ctx.services.get(&key) else {
        // The Service is gone: so are its endpoints.
        if ctx.endpoints.get(&key).is_some() {
            match api
                .delete(&key.name, &kubemock_client::DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(err) if err.is_not_found() => {}
                Err(err) => return Err(err.into()),
            }
        }
        return Ok(Action::AwaitChange);
    };
    if !is_managed(&service) {
        return Ok(Action::AwaitChange);
    }
    let pods: Vec<Arc<Pod>> = ctx
        .pods
        .list_namespace(&namespace)
        .into_iter()
        .filter(|pod| selects(&service, pod))
        .collect();
    let (subsets, truncated) = truncate(subsets_for(&service, &pods));

    let current = ctx.endpoints.get(&key);
    let mut labels = service.metadata.labels.clone().unwrap_or_default();
    if is_headless(&service) {
        labels.insert(HEADLESS_LABEL.to_owned(), String::new());
    }
    if let Some(current) = &current {
        let unchanged = current.subsets.clone().unwrap_or_default() == subsets
            && current.metadata.labels.clone().unwrap_or_default() == labels
            && current
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(OVER_CAPACITY))
                == truncated;
        if unchanged {
            return Ok(Action::AwaitChange);
        }
    }
    let mut endpoints = current.as_deref().cloned().unwrap_or_else(|| Endpoints {
        metadata: ObjectMeta {
            name: Some(key.name.clone()),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        ..Endpoints::default()
    });
    endpoints.subsets = Some(subsets).filter(|s| !s.is_empty());
    endpoints.metadata.labels = Some(labels);
    let annotations = endpoints
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new);
    if truncated {
        annotations.insert(OVER_CAPACITY.to_owned(), "truncated".to_owned());
    } else {
        annotations.remove(OVER_CAPACITY);
    }
    if annotations.is_empty() {
        endpoints.metadata.annotations = None;
    }
    let result = if current.is_some() {
        api.replace(&key.name, &PostParams::default(), &endpoints)
            .await
            .map(drop)
    } else {
        api.create(&PostParams::default(), &endpoints)
            .await
            .map(drop)
    };
    match result {
        Ok(()) => Ok(Action::AwaitChange),
        // A terminating namespace takes no new objects: nothing to keep there.
        Err(err) if current.is_none() && err.is_forbidden() => Ok(Action::AwaitChange),
        Err(err) => {
            if !err.is_conflict() && !err.is_already_exists() {
                let (reason, verb) = if current.is_some() {
                    ("FailedToUpdateEndpoint", "update")
                } else {
                    ("FailedToCreateEndpoint", "create")
                };
                let reference = object_reference(service.as_ref(), &ApiResource::of::<Service>());
                ctx.recorder
                    .publish(
                        &reference,
                        EventType::Warning,
                        reason,
                        &format!("Failed to {verb} endpoint {namespace}/{}: {err}", key.name),
                    )
                    .await;
            }
            Err(err.into())
        }
    }
}

/// The subsets of `service` over `pods` (the ones it selects), packed and sorted.
fn subsets_for(service: &Service, pods: &[Arc<Pod>]) -> Vec<EndpointSubset> {
    let spec = service.spec.clone().unwrap_or_default();
    let tolerate_unready = spec.publish_not_ready_addresses.unwrap_or(false);
    let ipv6 = is_ipv6(service);
    let ports = spec.ports.unwrap_or_default();
    // Each (address, ready) offered per port; `None` is a headless Service without ports.
    let mut by_port: BTreeMap<Option<PortKey>, Addresses> = BTreeMap::new();
    for pod in pods {
        if !is_endpoint(pod, tolerate_unready) {
            continue;
        }
        let Some(ip) = pod_address(pod, ipv6) else {
            continue;
        };
        let address = EndpointAddress {
            ip: ip.clone(),
            hostname: hostname_for(pod, service),
            node_name: Some(
                pod.spec
                    .as_ref()
                    .and_then(|s| s.node_name.clone())
                    .unwrap_or_default(),
            ),
            target_ref: Some(pod_reference(pod)),
        };
        let ready = tolerate_unready || is_ready(pod);
        let key = AddressKey {
            ip,
            uid: pod.metadata.uid.clone().unwrap_or_default(),
        };
        let mut offer = |port: Option<PortKey>| {
            let addresses = by_port.entry(port).or_default();
            let entry = addresses
                .entry(key.clone())
                .or_insert_with(|| (address.clone(), ready));
            entry.1 |= ready;
        };
        if ports.is_empty() {
            if is_headless(service) {
                offer(None);
            }
            continue;
        }
        for service_port in &ports {
            if let Some(number) = find_port(pod, service_port) {
                offer(Some(PortKey {
                    name: service_port.name.clone().unwrap_or_default(),
                    port: number,
                    protocol: service_port
                        .protocol
                        .clone()
                        .unwrap_or_else(|| "TCP".to_owned()),
                    app_protocol: service_port.app_protocol.clone(),
                }));
            }
        }
    }
    // Ports offered by exactly the same addresses (and readiness) share a subset.
    let mut packed: BTreeMap<Signature, (Addresses, Vec<EndpointPort>)> = BTreeMap::new();
    for (port, addresses) in by_port {
        let signature = addresses
            .iter()
            .map(|(key, (_, ready))| (key.clone(), *ready))
            .collect();
        let entry = packed
            .entry(signature)
            .or_insert_with(|| (addresses, Vec::new()));
        if let Some(port) = port {
            entry.1.push(EndpointPort {
                name: Some(port.name).filter(|n| !n.is_empty()),
                port: port.port,
                protocol: Some(port.protocol),
                app_protocol: port.app_protocol,
            });
        }
    }
    packed
        .into_values()
        .map(|(addresses, ports)| {
            let (ready, not_ready): (Vec<_>, Vec<_>) =
                addresses.into_values().partition(|(_, ready)| *ready);
            let strip = |list: Vec<(EndpointAddress, bool)>| {
                Some(list.into_iter().map(|(a, _)| a).collect::<Vec<_>>()).filter(|a| !a.is_empty())
            };
            EndpointSubset {
                addresses: strip(ready),
                not_ready_addresses: strip(not_ready),
                ports: Some(ports).filter(|p| !p.is_empty()),
            }
        })
        .collect()
}

/// The addresses offering one port, each with its readiness.
type Addresses = BTreeMap<AddressKey, (EndpointAddress, bool)>;

/// Which addresses, ready or not, offer a port: the ports with one signature share a subset.
type Signature = Vec<(AddressKey, bool)>;

/// Identifies an address: its IP and the pod behind it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct AddressKey {
    ip: String,
    uid: String,
}

/// An endpoint port, ordered.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct PortKey {
    name: String,
    port: i32,
    protocol: String,
    app_protocol: Option<String>,
}

/// Cuts `subsets` to [`MAX_CAPACITY`] addresses as upstream's `truncateEndpoints` does:
/// not-ready addresses go first; each subset keeps its share (rounded up) of what remains.
/// Returns whether anything was cut.
fn truncate(mut subsets: Vec<EndpointSubset>) -> (Vec<EndpointSubset>, bool) {
    let count = |list: &Option<Vec<EndpointAddress>>| list.as_ref().map_or(0, Vec::len);
    let total_ready: usize = subsets.iter().map(|s| count(&s.addresses)).sum();
    let total_not_ready: usize = subsets.iter().map(|s| count(&s.not_ready_addresses)).sum();
    if total_ready + total_not_ready <= MAX_CAPACITY {
        return (subsets, false);
    }
    let truncate_ready = total_ready > MAX_CAPACITY;
    let (max, total) = if truncate_ready {
        (MAX_CAPACITY, total_ready)
    } else {
        (MAX_CAPACITY - total_ready, total_not_ready)
    };
    let mut room = max;
    for subset in &mut subsets {
        let list = if truncate_ready {
            subset.not_ready_addresses = None;
            &mut subset.addresses
        } else {
            &mut subset.not_ready_addresses
        };
        let here = count(list);
        let share = (here * max).div_ceil(total.max(1)).min(room);
        if let Some(addresses) = list.as_mut() {
            addresses.truncate(share);
        }
        room -= count(list);
        if list.as_ref().is_some_and(Vec::is_empty) {
            *list = None;
        }
    }
    (subsets, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, ip: &str, ready: bool, ports: serde_json::Value) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                             "labels": {"app": "web"}},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": ports}]},
                "status": {"phase": "Running", "podIP": ip, "conditions": [
                    {"type": "Ready", "status": if ready { "True" } else { "False" }}
                ]}
            }))
            .expect("a pod"),
        )
    }

    fn service(spec: serde_json::Value) -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": spec
        }))
        .expect("a service")
    }

    fn ips(list: &Option<Vec<EndpointAddress>>) -> Vec<&str> {
        list.iter().flatten().map(|a| a.ip.as_str()).collect()
    }

    #[test]
    fn ready_and_unready_pods_share_a_subset_when_they_offer_the_same_ports() {
        let svc = service(json!({"selector": {"app": "web"}, "clusterIP": "10.96.0.9",
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}));
        let http = json!([{"name": "http", "containerPort": 8080}]);
        let pods = vec![
            pod("b", "10.1.0.2", true, http.clone()),
            pod("a", "10.1.0.1", true, http.clone()),
            pod("c", "10.1.0.3", false, http),
            pod("d", "10.1.0.4", true, json!([])), // no port named http: not an endpoint
        ];
        let subsets = subsets_for(&svc, &pods);
        assert_eq!(subsets.len(), 1, "{subsets:?}");
        assert_eq!(ips(&subsets[0].addresses), ["10.1.0.1", "10.1.0.2"]);
        assert_eq!(ips(&subsets[0].not_ready_addresses), ["10.1.0.3"]);
        let ports = subsets[0].ports.clone().unwrap_or_default();
        assert_eq!(ports.len(), 1);
        assert_eq!(
            (ports[0].name.as_deref(), ports[0].port),
            (Some("http"), 8080)
        );
        let target = subsets[0]
            .addresses
            .as_ref()
            .and_then(|a| a[0].target_ref.clone());
        assert_eq!(target.and_then(|t| t.name).as_deref(), Some("a"));
    }

    #[test]
    fn pods_resolving_different_ports_get_different_subsets() {
        let svc = service(json!({"selector": {"app": "web"}, "clusterIP": "10.96.0.9",
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}));
        let pods = vec![
            pod(
                "a",
                "10.1.0.1",
                true,
                json!([{"name": "http", "containerPort": 8080}]),
            ),
            pod(
                "b",
                "10.1.0.2",
                true,
                json!([{"name": "http", "containerPort": 9090}]),
            ),
        ];
        let subsets = subsets_for(&svc, &pods);
        assert_eq!(subsets.len(), 2, "{subsets:?}");
    }

    #[test]
    fn headless_services_without_ports_list_addresses_without_ports() {
        let svc = service(json!({"selector": {"app": "web"}, "clusterIP": "None"}));
        let subsets = subsets_for(&svc, &[pod("a", "10.1.0.1", true, json!([]))]);
        assert_eq!(subsets.len(), 1);
        assert_eq!(subsets[0].ports, None);
        let with_ip = service(json!({"selector": {"app": "web"}, "clusterIP": "10.96.0.9"}));
        assert!(subsets_for(&with_ip, &[pod("a", "10.1.0.1", true, json!([]))]).is_empty());
    }

    #[test]
    fn publish_not_ready_addresses_lists_every_pod_as_ready() {
        let svc = service(json!({"selector": {"app": "web"}, "clusterIP": "10.96.0.9",
            "publishNotReadyAddresses": true, "ports": [{"port": 80}]}));
        let subsets = subsets_for(&svc, &[pod("a", "10.1.0.1", false, json!([]))]);
        assert_eq!(ips(&subsets[0].addresses), ["10.1.0.1"]);
        assert_eq!(subsets[0].not_ready_addresses, None);
    }

    #[test]
    fn more_than_a_thousand_addresses_are_truncated_not_ready_first() {
        let address = |i: usize| EndpointAddress {
            ip: format!("10.0.{}.{}", i / 256, i % 256),
            ..EndpointAddress::default()
        };
        let subsets = vec![EndpointSubset {
            addresses: Some((0..900).map(address).collect()),
            not_ready_addresses: Some((900..1200).map(address).collect()),
            ports: None,
        }];
        let (cut, truncated) = truncate(subsets);
        assert!(truncated);
        assert_eq!(cut[0].addresses.as_ref().map(Vec::len), Some(900));
        assert_eq!(cut[0].not_ready_addresses.as_ref().map(Vec::len), Some(100));
        let few = vec![EndpointSubset {
            addresses: Some((0..10).map(address).collect()),
            ..EndpointSubset::default()
        }];
        assert!(!truncate(few).1);
    }
}
