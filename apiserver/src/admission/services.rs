//! Services: `SetDefaults_Service`, the IP family fields, cluster IP and node port allocation
//! (`pkg/registry/core/service/storage/alloc.go`: allocate on create, keep what an update does
//! not change, give back what it drops or a delete frees), the strategy's patching of allocated
//! values a PUT left out, and the validation users meet (ports, types, immutable cluster IP).

use std::net::Ipv4Addr;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::fields::{
    child, default_to, duplicate, each_object_mut, forbidden, go_int_or_string, go_str,
    go_string_slice, invalid, items, not_supported, required, str_at,
};
use crate::allocator::{AllocError, Held, Reservation, ServiceAllocator};
use crate::meta::{self, FieldError};
use crate::object::Object;
use crate::registry::NameRule;
use crate::status::ApiError;

const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];

/// `SetDefaults_Service`.
pub(super) fn default_service(object: &mut Object) {
    let spec = child(object, "spec");
    default_to(spec, "sessionAffinity", json!("None"));
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("None") {
        spec.shift_remove("sessionAffinityConfig");
    } else if spec.get("sessionAffinity").and_then(Value::as_str) == Some("ClientIP") {
        let timeout = super::fields::at(
            &Value::Object(spec.clone()),
            &["sessionAffinityConfig", "clientIP", "timeoutSeconds"],
        )
        .is_some();
        if !timeout {
            spec.insert(
                "sessionAffinityConfig".to_owned(),
                json!({"clientIP": {"timeoutSeconds": 10800}}),
            );
        }
    }
    default_to(spec, "type", json!("ClusterIP"));
    for port in each_object_mut(spec, "ports") {
        default_to(port, "protocol", json!("TCP"));
        let unset = match port.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(v) => v.as_i64() == Some(0),
        };
        if unset && let Some(number) = port.get("port").cloned() {
            port.insert("targetPort".to_owned(), number);
        }
    }
    let kind = service_type(spec).to_owned();
    if kind == "NodePort" || kind == "LoadBalancer" {
        default_to(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if ["NodePort", "LoadBalancer", "ClusterIP"].contains(&kind.as_str()) {
        default_to(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        default_to(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    // ServiceStatus is a struct: always there.
    let status = child(object, "status");
    default_to(status, "loadBalancer", json!({}));
}

fn service_type(spec: &Map<String, Value>) -> &str {
    spec.get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
}

fn needs_node_ports(kind: &str) -> bool {
    kind == "NodePort" || kind == "LoadBalancer"
}

/// The initial status of a created Service (the strategy resets it).
pub(super) fn reset_status(object: &mut Object) {
    object.insert("status".to_owned(), json!({"loadBalancer": {}}));
}

/// The strategy's `patchAllocatedValues` and `dropTypeDependentFields` for an update: values
/// the old object had allocated and the new one leaves out are kept, and those a type change
/// makes meaningless are dropped.
pub(super) fn prepare_update(existing: &Object, object: &mut Object) {
    let Some(old) = existing.get("spec").and_then(Value::as_object) else {
        return;
    };
    let spec = child(object, "spec");
    let (old_type, new_type) = (service_type(old).to_owned(), service_type(spec).to_owned());
    if old_type != "ExternalName" && new_type != "ExternalName" {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            let missing = match spec.get(field) {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => false,
            };
            if missing && let Some(value) = old.get(field) {
                spec.insert(field.to_owned(), value.clone());
            }
        }
    }
    if new_type == "ExternalName" && old_type != "ExternalName" {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if spec.get(field) == old.get(field) {
                spec.shift_remove(field);
            }
        }
    }
    let old_ports = items(existing.get("spec"), "ports").to_vec();
    if needs_node_ports(&old_type) && needs_node_ports(&new_type) {
        let used: Vec<i64> = items(Some(&Value::Object(spec.clone())), "ports")
            .iter()
            .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
            .collect();
        for port in each_object_mut(spec, "ports") {
            if port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                continue;
            }
            let name = port.get("name").and_then(Value::as_str).unwrap_or("");
            let old = old_ports
                .iter()
                .find(|p| str_at(p, &["name"]) == name)
                .and_then(|p| p.get("nodePort"))
                .and_then(Value::as_i64);
            if let Some(old) = old.filter(|o| !used.contains(o)) {
                port.insert("nodePort".to_owned(), json!(old));
            }
        }
        if spec.get("healthCheckNodePort").is_none()
            && let Some(port) = old.get("healthCheckNodePort").cloned()
        {
            spec.insert("healthCheckNodePort".to_owned(), port);
        }
    }
    if needs_node_ports(&old_type) && !needs_node_ports(&new_type) {
        for (i, port) in each_object_mut(spec, "ports").enumerate() {
            let old = old_ports.get(i).and_then(|p| p.get("nodePort"));
            if old.is_some() && port.get("nodePort") == old {
                port.shift_remove("nodePort");
            }
        }
    }
    if new_type != "LoadBalancer"
        && spec.get("healthCheckNodePort") == old.get("healthCheckNodePort")
    {
        spec.shift_remove("healthCheckNodePort");
    }
}

/// `ValidateService`: types, ports (named when several, unique, in range), node ports only
/// where they mean something, ExternalName's name, the cluster IP's form.
pub(super) fn validate_service(object: &Object, errors: &mut Vec<FieldError>) {
    let empty = Map::new();
    let spec = object
        .get("spec")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let kind = service_type(spec);
    if !TYPES.contains(&kind) {
        errors.push(not_supported("spec.type", kind, &TYPES));
    }
    let cluster_ip = spec.get("clusterIP").and_then(Value::as_str).unwrap_or("");
    let headless = cluster_ip == "None";
    let spec_value = Value::Object(spec.clone());
    let ports = items(Some(&spec_value), "ports");
    if ports.is_empty() && !headless && kind != "ExternalName" {
        errors.push(required("spec.ports", ""));
    }
    let mut names: Vec<&str> = Vec::new();
    let mut keys: Vec<(i64, &str)> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let at = format!("spec.ports[{i}]");
        let name = str_at(port, &["name"]);
        if ports.len() > 1 && name.is_empty() {
            errors.push(required(format!("{at}.name"), ""));
        } else if !name.is_empty() {
            for detail in meta::name_errors(name, NameRule::Label, false) {
                errors.push(FieldError {
                    field: format!("{at}.name"),
                    reason: "FieldValueInvalid",
                    detail,
                });
            }
            if names.contains(&name) {
                errors.push(duplicate(format!("{at}.name"), go_str(name)));
            }
            names.push(name);
        }
        let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&number) {
            errors.push(invalid(
                format!("{at}.port"),
                number.to_string(),
                "must be between 1 and 65535, inclusive",
            ));
        }
        let protocol = str_at(port, &["protocol"]);
        if !PROTOCOLS.contains(&protocol) {
            errors.push(not_supported(
                format!("{at}.protocol"),
                protocol,
                &PROTOCOLS,
            ));
        }
        if keys.contains(&(number, protocol)) {
            errors.push(duplicate(
                at.clone(),
                format!(
                    "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{number}, TargetPort:{}, NodePort:0}}",
                    go_str(protocol),
                    go_int_or_string(None)
                ),
            ));
        }
        keys.push((number, protocol));
        match port.get("targetPort") {
            Some(Value::String(s)) if s.is_empty() || s.len() > 15 => errors.push(invalid(
                format!("{at}.targetPort"),
                go_str(s),
                "must be no more than 15 characters",
            )),
            Some(v @ Value::Number(_)) if !(1..=65535).contains(&v.as_i64().unwrap_or(0)) => {
                errors.push(invalid(
                    format!("{at}.targetPort"),
                    v.to_string(),
                    "must be between 1 and 65535, inclusive",
                ));
            }
            _ => {}
        }
        if port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0
            && (kind == "ClusterIP" || kind == "ExternalName")
        {
            errors.push(forbidden(
                format!("{at}.nodePort"),
                &format!("may not be used when `type` is '{kind}'"),
            ));
        }
    }
    if headless && needs_node_ports(kind) {
        errors.push(invalid(
            "spec.clusterIPs[0]",
            go_str("None"),
            "may not be set to 'None' for LoadBalancer or NodePort services",
        ));
    }
    if kind == "ExternalName" {
        let name = spec
            .get("externalName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if name.is_empty() {
            errors.push(required("spec.externalName", ""));
        }
        if !cluster_ip.is_empty() {
            errors.push(forbidden(
                "spec.clusterIPs",
                "may not be set for ExternalName services",
            ));
        }
    }
    let affinity = spec
        .get("sessionAffinity")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !["ClientIP", "None"].contains(&affinity) {
        errors.push(not_supported(
            "spec.sessionAffinity",
            affinity,
            &["ClientIP", "None"],
        ));
    }
    for (i, ip) in items(Some(&spec_value), "clusterIPs").iter().enumerate() {
        let ip = ip.as_str().unwrap_or("");
        if ip != "None" && ip.parse::<Ipv4Addr>().is_err() {
            errors.push(invalid(
                format!("spec.clusterIPs[{i}]"),
                go_str(ip),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    if !cluster_ip.is_empty()
        && let Some(first) = items(Some(&spec_value), "clusterIPs").first()
        && first.as_str() != Some(cluster_ip)
    {
        errors.push(invalid(
            "spec.clusterIPs",
            go_string_slice(spec.get("clusterIPs")),
            "element [0] must match clusterIP",
        ));
    }
}

/// `ValidateServiceUpdate`: the cluster IP, once set, stays (unless the type changes to or
/// from ExternalName).
pub(super) fn validate_service_update(
    existing: &Object,
    updated: &Object,
    errors: &mut Vec<FieldError>,
) {
    let old = existing.get("spec");
    let new = updated.get("spec");
    fn kind(spec: Option<&Value>) -> &str {
        spec.map_or("ClusterIP", |s| str_at(s, &["type"]))
    }
    if kind(old) == "ExternalName" || kind(new) == "ExternalName" {
        return;
    }
    let first = |s: Option<&Value>| {
        items(s, "clusterIPs")
            .first()
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| s.map(|s| str_at(s, &["clusterIP"]).to_owned()))
            .unwrap_or_default()
    };
    let (was, is) = (first(old), first(new));
    if !was.is_empty() && was != is {
        errors.push(invalid(
            "spec.clusterIPs[0]",
            go_str(&is),
            "may not change once set",
        ));
    }
}

/// Allocates what `object` needs (a cluster IP unless headless or ExternalName; node ports for
/// NodePort and LoadBalancer; a health check port for Local external traffic) and sets the IP
/// family fields; with `existing`, only what it did not hold yet, freeing what it drops.
pub(super) async fn allocate(
    allocator: &Arc<ServiceAllocator>,
    existing: Option<&Object>,
    object: &mut Object,
    dry_run: bool,
) -> Result<Reservation, AllocFailure> {
    let held_before = existing
        .map(|e| Held::of_service(&Value::Object(e.clone())))
        .unwrap_or_default();
    let mut taken = Held::default();
    let spec = child(object, "spec");
    if let Err(failure) = allocate_spec(allocator, &held_before, spec, dry_run, &mut taken).await {
        if !dry_run {
            allocator.release(&taken).await;
        }
        return Err(failure);
    }
    if dry_run {
        return Ok(Reservation::default());
    }
    let held_after = Held::of_service(&Value::Object(object.clone()));
    let freed = Held {
        ips: held_before
            .ips
            .iter()
            .filter(|ip| !held_after.ips.contains(ip))
            .copied()
            .collect(),
        ports: held_before
            .ports
            .iter()
            .filter(|p| !held_after.ports.contains(p))
            .copied()
            .collect(),
    };
    Ok(Reservation::new(allocator.clone(), taken, freed))
}

/// [`allocate`] on the spec, recording in `taken` what it took (to give back on failure).
async fn allocate_spec(
    allocator: &ServiceAllocator,
    held_before: &Held,
    spec: &mut Map<String, Value>,
    dry_run: bool,
    taken: &mut Held,
) -> Result<(), AllocFailure> {
    let kind = service_type(spec).to_owned();
    if kind == "ExternalName" {
        for field in ["ipFamilies", "ipFamilyPolicy"] {
            spec.shift_remove(field);
        }
        return Ok(());
    }
    allocate_cluster_ip(allocator, held_before, spec, dry_run, taken).await?;
    if needs_node_ports(&kind) {
        allocate_node_ports(allocator, held_before, spec, dry_run, taken).await?;
        let local = spec.get("externalTrafficPolicy").and_then(Value::as_str) == Some("Local");
        if kind == "LoadBalancer" && local {
            allocate_health_check_port(allocator, held_before, spec, dry_run, taken).await?;
        }
    }
    Ok(())
}

/// The cluster IP (requested or next free) and the IP family fields.
async fn allocate_cluster_ip(
    allocator: &ServiceAllocator,
    held_before: &Held,
    spec: &mut Map<String, Value>,
    dry_run: bool,
    taken: &mut Held,
) -> Result<(), AllocFailure> {
    let cluster_ip = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let requested = if cluster_ip.is_empty() {
        items(Some(&Value::Object(spec.clone())), "clusterIPs")
            .first()
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    } else {
        cluster_ip
    };
    let selectorless = spec
        .get("selector")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if requested == "None" {
        // Headless: no address; a selectorless one defaults to both families.
        spec.insert("clusterIP".to_owned(), json!("None"));
        spec.insert("clusterIPs".to_owned(), json!(["None"]));
        let policy = if selectorless {
            "RequireDualStack"
        } else {
            "SingleStack"
        };
        default_to(spec, "ipFamilyPolicy", json!(policy));
        let single = spec.get("ipFamilyPolicy").and_then(Value::as_str) == Some("SingleStack");
        let families = if single {
            json!(["IPv4"])
        } else {
            json!(["IPv4", "IPv6"])
        };
        default_to(spec, "ipFamilies", families);
        return Ok(());
    }
    default_to(spec, "ipFamilyPolicy", json!("SingleStack"));
    default_to(spec, "ipFamilies", json!(["IPv4"]));
    let policy = spec
        .get("ipFamilyPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    if policy == "RequireDualStack" {
        return Err(AllocFailure::Invalid(vec![invalid(
            "spec.ipFamilyPolicy",
            go_str(policy),
            "this cluster is not configured for dual-stack services",
        )]));
    }
    let families = items(Some(&Value::Object(spec.clone())), "ipFamilies").to_vec();
    for (i, family) in families.iter().enumerate() {
        let family = family.as_str().unwrap_or("");
        if family != "IPv4" {
            return Err(AllocFailure::Invalid(vec![invalid(
                format!("spec.ipFamilies[{i}]"),
                go_str(family),
                "not configured on this cluster",
            )]));
        }
    }
    let ip = if requested.is_empty() {
        let ip = allocator.allocate_next_ip(dry_run).await.map_err(|err| {
            failure(err, |err| {
                AllocFailure::Internal(format!(
                    "failed to allocate a serviceIP: {}",
                    ip_message(&err, allocator, "")
                ))
            })
        })?;
        taken.ips.push(ip);
        ip.to_string()
    } else {
        // A malformed address is left to validation to report.
        if let Ok(ip) = requested.parse::<Ipv4Addr>()
            && !held_before.ips.contains(&ip)
        {
            allocator.allocate_ip(ip, dry_run).await.map_err(|err| {
                failure(err, |err| {
                    AllocFailure::Invalid(vec![invalid(
                        "spec.clusterIPs",
                        go_string_slice(Some(&json!([requested]))),
                        &format!(
                            "failed to allocate IP {requested}: {}",
                            ip_message(&err, allocator, &requested)
                        ),
                    )])
                })
            })?;
            taken.ips.push(ip);
        }
        requested
    };
    spec.insert("clusterIP".to_owned(), json!(ip));
    spec.insert("clusterIPs".to_owned(), json!([ip]));
    Ok(())
}

/// Node ports: the requested ones (unless already held), the next free one for the others
/// (shared between entries of one port number), none for a LoadBalancer that asks for none.
async fn allocate_node_ports(
    allocator: &ServiceAllocator,
    held_before: &Held,
    spec: &mut Map<String, Value>,
    dry_run: bool,
    taken: &mut Held,
) -> Result<(), AllocFailure> {
    let allocate_new = service_type(spec) == "NodePort"
        || spec
            .get("allocateLoadBalancerNodePorts")
            .and_then(Value::as_bool)
            != Some(false);
    let requested: Vec<(i64, i64)> = items(Some(&Value::Object(spec.clone())), "ports")
        .iter()
        .map(|p| {
            (
                p.get("port").and_then(Value::as_i64).unwrap_or(0),
                p.get("nodePort").and_then(Value::as_i64).unwrap_or(0),
            )
        })
        .collect();
    let mut by_port: Vec<(i64, i64)> = Vec::new();
    for (i, port) in each_object_mut(spec, "ports").enumerate() {
        let (number, node_port) = requested.get(i).copied().unwrap_or_default();
        if node_port == 0 && !allocate_new {
            continue;
        }
        if node_port != 0 {
            let wanted = u16::try_from(node_port)
                .map_err(|_| port_error(i, node_port, AllocError::NotInRange, allocator))?;
            if !held_before.ports.contains(&wanted) && !taken.ports.contains(&wanted) {
                allocator
                    .allocate_port(wanted, dry_run)
                    .await
                    .map_err(|err| port_error(i, node_port, err, allocator))?;
                taken.ports.push(wanted);
            }
            by_port.push((number, node_port));
            continue;
        }
        // An entry of the same port number (another protocol) shares its node port.
        let shared = by_port
            .iter()
            .find(|(n, _)| *n == number)
            .map(|(_, p)| *p)
            .or_else(|| {
                requested
                    .iter()
                    .skip(i + 1)
                    .find(|(n, p)| *n == number && *p != 0)
                    .map(|(_, p)| *p)
            });
        let chosen = match shared {
            Some(p) => p,
            None => {
                let p = allocator.allocate_next_port(dry_run).await.map_err(|err| {
                    failure(err, |err| {
                        AllocFailure::Internal(format!(
                            "failed to allocate a nodePort: {}",
                            port_message(&err, allocator)
                        ))
                    })
                })?;
                taken.ports.push(p);
                i64::from(p)
            }
        };
        port.insert("nodePort".to_owned(), json!(chosen));
        by_port.push((number, chosen));
    }
    Ok(())
}

/// The health check node port of a LoadBalancer with Local external traffic.
async fn allocate_health_check_port(
    allocator: &ServiceAllocator,
    held_before: &Held,
    spec: &mut Map<String, Value>,
    dry_run: bool,
    taken: &mut Held,
) -> Result<(), AllocFailure> {
    match spec
        .get("healthCheckNodePort")
        .and_then(Value::as_i64)
        .filter(|p| *p != 0)
    {
        Some(port) => {
            let wanted = u16::try_from(port).unwrap_or(0);
            if !held_before.ports.contains(&wanted) {
                allocator
                    .allocate_port(wanted, dry_run)
                    .await
                    .map_err(|err| {
                        failure(err, |err| {
                            AllocFailure::Internal(format!(
                                "failed to allocate requested HealthCheck NodePort {port}: {}",
                                port_message(&err, allocator)
                            ))
                        })
                    })?;
                taken.ports.push(wanted);
            }
        }
        None => {
            let port = allocator.allocate_next_port(dry_run).await.map_err(|err| {
                failure(err, |err| {
                    AllocFailure::Internal(format!(
                        "failed to allocate a HealthCheck NodePort: {}",
                        port_message(&err, allocator)
                    ))
                })
            })?;
            taken.ports.push(port);
            spec.insert("healthCheckNodePort".to_owned(), json!(port));
        }
    }
    Ok(())
}

/// Why an allocation failed: a 422 with these causes, or a 500.
#[derive(Debug)]
pub(super) enum AllocFailure {
    /// The request asked for something it cannot have.
    Invalid(Vec<FieldError>),
    /// The ranges are full.
    Internal(String),
    /// The allocation records could not be read or written.
    Store(ApiError),
}

/// The store's failure as it is; the allocator's refusal as `refused` words it.
fn failure(err: AllocError, refused: impl FnOnce(AllocError) -> AllocFailure) -> AllocFailure {
    match err {
        AllocError::Store(error) => AllocFailure::Store(error),
        other => refused(other),
    }
}

impl AllocFailure {
    /// The error answered to the client.
    pub(super) fn into_error(self, invalid: impl FnOnce(Vec<FieldError>) -> ApiError) -> ApiError {
        match self {
            AllocFailure::Invalid(errors) => invalid(errors),
            AllocFailure::Internal(message) => ApiError::internal(message),
            AllocFailure::Store(error) => error,
        }
    }
}

fn ip_message(err: &AllocError, allocator: &ServiceAllocator, ip: &str) -> String {
    match err {
        AllocError::Allocated => "provided IP is already allocated".to_owned(),
        AllocError::NotInRange => format!(
            "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {}",
            allocator.cidr()
        ),
        AllocError::Full => "range is full".to_owned(),
        AllocError::Store(error) => error.message.clone(),
    }
}

fn port_message(err: &AllocError, allocator: &ServiceAllocator) -> String {
    match err {
        AllocError::Allocated => "provided port is already allocated".to_owned(),
        AllocError::NotInRange => format!(
            "provided port is not in the valid range. The range of valid ports is {}",
            allocator.node_ports()
        ),
        AllocError::Full => "range is full".to_owned(),
        AllocError::Store(error) => error.message.clone(),
    }
}

fn port_error(
    index: usize,
    port: i64,
    err: AllocError,
    allocator: &ServiceAllocator,
) -> AllocFailure {
    failure(err, |err| {
        AllocFailure::Invalid(vec![invalid(
            format!("spec.ports[{index}].nodePort"),
            port.to_string(),
            &port_message(&err, allocator),
        )])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::{NodePortRange, ServiceCidr};

    fn object(value: Value) -> Object {
        value.as_object().cloned().unwrap()
    }

    fn allocator() -> Arc<ServiceAllocator> {
        Arc::new(ServiceAllocator::for_tests(
            "10.0.0.0/24".parse::<ServiceCidr>().unwrap(),
            "30000-30009".parse::<NodePortRange>().unwrap(),
        ))
    }

    #[test]
    fn defaults_fill_type_affinity_protocols_and_target_ports() {
        let mut svc = object(json!({"spec": {"type": "LoadBalancer",
            "ports": [{"port": 80}, {"port": 81, "targetPort": "http"}]}}));
        default_service(&mut svc);
        let spec = &svc["spec"];
        assert_eq!(spec["sessionAffinity"], "None");
        assert_eq!(
            spec["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80})
        );
        assert_eq!(spec["ports"][1]["targetPort"], "http");
        assert_eq!(spec["externalTrafficPolicy"], "Cluster");
        assert_eq!(spec["allocateLoadBalancerNodePorts"], true);
        assert_eq!(svc["status"], json!({"loadBalancer": {}}));
    }

    #[tokio::test]
    async fn a_failed_allocation_gives_back_what_it_took() {
        let a = allocator();
        // Ten node ports: the eleventh port fails after its address and ten ports were taken.
        let ports: Vec<Value> = (0..11)
            .map(|i| json!({"name": format!("p{i}"), "port": 80 + i}))
            .collect();
        let mut svc = object(json!({"spec": {"type": "NodePort", "ports": ports}}));
        default_service(&mut svc);
        assert!(matches!(
            allocate(&a, None, &mut svc, false).await,
            Err(AllocFailure::Internal(_))
        ));
        let mut one = object(json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.9",
            "ports": [{"port": 80, "nodePort": 30000}]}}));
        default_service(&mut one);
        let reservation = allocate(&a, None, &mut one, false)
            .await
            .expect("all free again");
        reservation.commit().await;
        let mut again = one.clone();
        assert!(matches!(
            allocate(&a, None, &mut again, false).await,
            Err(AllocFailure::Invalid(_))
        ));
    }

    #[test]
    fn updates_keep_allocated_values_and_drop_node_ports_with_the_type() {
        let old = object(json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.5",
            "clusterIPs": ["10.0.0.5"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "http", "port": 80, "nodePort": 30001}]}}));
        let mut new = object(json!({"spec": {"type": "NodePort",
            "ports": [{"name": "http", "port": 8080}]}}));
        prepare_update(&old, &mut new);
        assert_eq!(new["spec"]["clusterIP"], "10.0.0.5");
        assert_eq!(new["spec"]["ports"][0]["nodePort"], 30001);
        let mut cluster_ip = old.clone();
        cluster_ip["spec"]["type"] = json!("ClusterIP");
        prepare_update(&old, &mut cluster_ip);
        assert!(cluster_ip["spec"]["ports"][0].get("nodePort").is_none());
    }
}
