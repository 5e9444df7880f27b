//! Endpoints and EndpointSlices for Services (issue 6 item 8): kube-controller-manager's
//! `endpoints-controller` and `endpointslice-controller`. Every client that resolves a
//! Service (kube-proxy, DNS, service meshes, `kubectl describe service`, tests waiting for
//! a backend) reads one of the two, so both are kept, each from the Services and the Pods
//! they select, exactly as upstream computes them.
//!
//! This module holds what both controllers agree on (upstream's `endpointsliceutil` and
//! `podutil.FindPort`): which Services select a pod, which pods are endpoints at all, the
//! pod's address of the Service's IP family, and how a Service port resolves on a pod.

mod legacy;
mod slices;

pub use legacy::{EndpointsController, MAX_CAPACITY};
pub use slices::{
    EndpointSliceController, MANAGED_BY, MANAGED_BY_LABEL, MAX_ENDPOINTS_PER_SLICE,
    SERVICE_NAME_LABEL,
};

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubemock_apimachinery::labels::Selector;
use kubemock_client::{ObjectKey, Resource, Store};

/// The Services of `pod`'s namespace whose selector selects it (upstream
/// `GetPodServiceMemberships`: a Service without a selector selects nothing; an empty one
/// everything).
pub(crate) fn services_selecting(services: &Store<Service>, pod: &Pod) -> Vec<ObjectKey> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    services
        .list_namespace(&namespace)
        .iter()
        .filter(|service| selects(service, pod))
        .map(|service| service.key())
        .collect()
}

/// Whether `service`'s selector selects `pod`.
pub(crate) fn selects(service: &Service, pod: &Pod) -> bool {
    let Some(selector) = service.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return false;
    };
    let no_labels = BTreeMap::new();
    Selector::from_set(selector).matches(pod.metadata.labels.as_ref().unwrap_or(&no_labels))
}

/// Whether the controllers keep endpoints for `service` at all: not for ExternalName
/// Services, nor for Services without a selector (their endpoints are written by users).
pub(crate) fn is_managed(service: &Service) -> bool {
    let Some(spec) = service.spec.as_ref() else {
        return false;
    };
    spec.type_.as_deref() != Some("ExternalName") && spec.selector.is_some()
}

/// Whether `pod` is an endpoint (upstream `ShouldPodBeInEndpoints`): not terminal, has an
/// address, and is not terminating unless those are included.
pub(crate) fn is_endpoint(pod: &Pod, include_terminating: bool) -> bool {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    let has_ip = status.is_some_and(|s| {
        s.pod_ip.as_deref().is_some_and(|ip| !ip.is_empty())
            || s.pod_ips.as_ref().is_some_and(|ips| !ips.is_empty())
    });
    has_ip && (include_terminating || pod.metadata.deletion_timestamp.is_none())
}

/// The IP family a Service's endpoints have: its first `ipFamilies`, else IPv4.
pub(crate) fn is_ipv6(service: &Service) -> bool {
    service
        .spec
        .as_ref()
        .and_then(|s| s.ip_families.as_ref())
        .and_then(|families| families.first())
        .is_some_and(|family| family == "IPv6")
}

/// `pod`'s address of the family (`podIPs`, else `podIP`).
pub(crate) fn pod_address(pod: &Pod, ipv6: bool) -> Option<String> {
    let status = pod.status.as_ref()?;
    let mut ips: Vec<&str> = status
        .pod_ips
        .iter()
        .flatten()
        .map(|ip| ip.ip.as_str())
        .collect();
    if ips.is_empty() {
        ips.extend(status.pod_ip.as_deref());
    }
    ips.into_iter()
        .find(|ip| !ip.is_empty() && ip.contains(':') == ipv6)
        .map(str::to_owned)
}

/// The port `service_port` reaches on `pod` (upstream `podutil.FindPort`): a named
/// `targetPort` is looked up among the containers' ports of the same protocol; a number is
/// taken as it is; none is the Service port itself.
pub(crate) fn find_port(pod: &Pod, service_port: &ServicePort) -> Option<i32> {
    match &service_port.target_port {
        None => Some(service_port.port),
        Some(IntOrString::Int(port)) => Some(*port),
        Some(IntOrString::String(name)) => {
            let protocol = service_port.protocol.as_deref().unwrap_or("TCP");
            let spec = pod.spec.as_ref()?;
            spec.containers
                .iter()
                .flat_map(|c| c.ports.iter().flatten())
                .find(|p| {
                    p.name.as_deref() == Some(name.as_str())
                        && p.protocol.as_deref().unwrap_or("TCP") == protocol
                })
                .map(|p| p.container_port)
        }
    }
}

/// Whether the endpoint of `pod` carries its hostname (upstream `ShouldSetHostname`): the
/// pod names one and its subdomain is the Service.
pub(crate) fn hostname_for(pod: &Pod, service: &Service) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    let hostname = spec.hostname.as_deref().filter(|h| !h.is_empty())?;
    (spec.subdomain.as_deref() == service.metadata.name.as_deref()
        && pod.metadata.namespace == service.metadata.namespace)
        .then(|| hostname.to_owned())
}

/// The reference to `pod` an endpoint carries.
pub(crate) fn pod_reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".to_owned()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

/// Whether the Service has a cluster IP (a headless one has `None`).
pub(crate) fn is_headless(service: &Service) -> bool {
    service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.as_deref())
        .is_none_or(|ip| ip.is_empty() || ip == "None")
}

/// The label upstream puts on the endpoints of headless Services.
pub(crate) const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).expect("a pod")
    }

    fn port(value: serde_json::Value) -> ServicePort {
        serde_json::from_value(value).expect("a service port")
    }

    #[test]
    fn named_target_ports_resolve_on_the_containers_of_the_same_protocol() {
        let p = pod(json!({"spec": {"containers": [
            {"name": "a", "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"}]},
            {"name": "b", "ports": [{"name": "http", "containerPort": 8080}]}
        ]}}));
        assert_eq!(
            find_port(&p, &port(json!({"port": 80, "targetPort": "http"}))),
            Some(8080)
        );
        assert_eq!(
            find_port(
                &p,
                &port(json!({"port": 53, "targetPort": "dns", "protocol": "UDP"}))
            ),
            Some(53)
        );
        assert_eq!(
            find_port(&p, &port(json!({"port": 53, "targetPort": "dns"}))),
            None,
            "dns is UDP, the Service port TCP"
        );
        assert_eq!(
            find_port(&p, &port(json!({"port": 80, "targetPort": 9090}))),
            Some(9090)
        );
        assert_eq!(find_port(&p, &port(json!({"port": 80}))), Some(80));
    }

    #[test]
    fn only_live_pods_with_an_address_are_endpoints() {
        let running = pod(json!({"status": {"phase": "Running", "podIP": "10.0.0.1"}}));
        assert!(is_endpoint(&running, false));
        let no_ip = pod(json!({"status": {"phase": "Pending"}}));
        assert!(!is_endpoint(&no_ip, true));
        let done = pod(json!({"status": {"phase": "Succeeded", "podIP": "10.0.0.1"}}));
        assert!(!is_endpoint(&done, true));
        let terminating = pod(json!({
            "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}
        }));
        assert!(!is_endpoint(&terminating, false));
        assert!(is_endpoint(&terminating, true));
    }

    #[test]
    fn the_address_of_the_services_family_is_used() {
        let p = pod(json!({"status": {"podIP": "10.0.0.1",
            "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}}));
        assert_eq!(pod_address(&p, false).as_deref(), Some("10.0.0.1"));
        assert_eq!(pod_address(&p, true).as_deref(), Some("fd00::1"));
        let v4 = pod(json!({"status": {"podIP": "10.0.0.2"}}));
        assert_eq!(pod_address(&v4, true), None);
    }

    #[test]
    fn selectors_select_by_every_label_and_absent_selectors_nothing() {
        let svc: Service = serde_json::from_value(json!({
            "spec": {"selector": {"app": "web", "tier": "front"}}
        }))
        .expect("a service");
        let both = pod(json!({"metadata": {"labels": {"app": "web", "tier": "front", "x": "y"}}}));
        let one = pod(json!({"metadata": {"labels": {"app": "web"}}}));
        assert!(selects(&svc, &both));
        assert!(!selects(&svc, &one));
        let none: Service = serde_json::from_value(json!({"spec": {}})).expect("a service");
        assert!(!selects(&none, &both));
        assert!(!is_managed(&none));
    }
}
