//! The printers of the networking kinds: core/v1 Endpoints, discovery.k8s.io EndpointSlices and
//! networking.k8s.io Ingresses, IngressClasses and NetworkPolicies (`printEndpoints`,
//! `printEndpointSlice`, `printIngress`, `printIngressClass`, `printNetworkPolicy` and their
//! `format*` helpers).

use serde_json::{Value, json};

use super::{
    AGE, Column, NAME, age, column, docs, field, first_of, format_label_selector, int, list,
    load_balancer_ingress, more, name, text,
};

/// How many addresses (or ports) the list cells show before ` + N more...`.
const SHOWN: usize = 3;

pub(super) const ENDPOINTS_COLUMNS: &[Column] = &[
    NAME,
    column("Endpoints", "string", docs::ENDPOINTS_SUBSETS),
    AGE,
];

pub(super) const ENDPOINT_SLICE_COLUMNS: &[Column] = &[
    NAME,
    column("AddressType", "string", docs::ENDPOINT_SLICE_ADDRESS_TYPE),
    column("Ports", "string", docs::ENDPOINT_SLICE_PORTS),
    column("Endpoints", "string", docs::ENDPOINT_SLICE_ENDPOINTS),
    AGE,
];

/// `printEndpoints`.
pub(super) fn endpoints(endpoints: &Value, now: i128) -> Vec<Value> {
    vec![
        json!(name(endpoints)),
        json!(format_endpoints(endpoints)),
        json!(age(endpoints, now)),
    ]
}

/// `formatEndpoints` (all ports): `ip:port` for each port and address of each subset (the bare
/// IP where a subset has no ports, as headless services' do), the first three, then
/// ` + N more...`; `<none>` without subsets.
fn format_endpoints(endpoints: &Value) -> String {
    let subsets = list(endpoints, &["subsets"]);
    if subsets.is_empty() {
        return "<none>".to_owned();
    }
    let entries = subsets.iter().flat_map(|subset| {
        let addresses = list(subset, &["addresses"]);
        let ports: Vec<Option<i64>> = match list(subset, &["ports"]) {
            [] => vec![None],
            ports => ports
                .iter()
                .map(|port| Some(int(port, &["port"])))
                .collect(),
        };
        ports.into_iter().flat_map(move |port| {
            addresses.iter().map(move |address| {
                let ip = text(address, &["ip"]);
                port.map_or_else(|| ip.to_owned(), |port| join_host_port(ip, port))
            })
        })
    });
    first_of(entries, SHOWN, ",")
}

/// Go's `net.JoinHostPort`: IPv6 addresses in brackets.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `printEndpointSlice`.
pub(super) fn endpoint_slice(slice: &Value, now: i128) -> Vec<Value> {
    // `formatDiscoveryPorts`: the number, else the name, else `*` (all ports).
    let ports = list(slice, &["ports"]).iter().map(|port| {
        match (
            field(port, &["port"]).and_then(Value::as_i64),
            field(port, &["name"]).and_then(Value::as_str),
        ) {
            (Some(number), _) => number.to_string(),
            (None, Some(name)) => name.to_owned(),
            (None, None) => "*".to_owned(),
        }
    });
    // `formatDiscoveryEndpoints`: every address of every endpoint.
    let addresses = list(slice, &["endpoints"]).iter().flat_map(|endpoint| {
        list(endpoint, &["addresses"])
            .iter()
            .map(|address| address.as_str().unwrap_or_default().to_owned())
    });
    vec![
        json!(name(slice)),
        json!(text(slice, &["addressType"])),
        json!(or_unset(first_of(ports, SHOWN, ","))),
        json!(or_unset(first_of(addresses, SHOWN, ","))),
        json!(age(slice, now)),
    ]
}

/// `listWithMoreString`'s `<unset>` for an empty list.
fn or_unset(cell: String) -> String {
    if cell.is_empty() {
        "<unset>".to_owned()
    } else {
        cell
    }
}

pub(super) const INGRESS_COLUMNS: &[Column] = &[
    NAME,
    column("Class", "string", docs::INGRESS_CLASS),
    column("Hosts", "string", docs::INGRESS_HOSTS),
    column("Address", "string", docs::INGRESS_ADDRESS),
    column("Ports", "string", docs::INGRESS_PORTS),
    AGE,
];

pub(super) const INGRESS_CLASS_COLUMNS: &[Column] = &[
    NAME,
    column("Controller", "string", docs::INGRESS_CLASS_CONTROLLER),
    column("Parameters", "string", docs::INGRESS_CLASS_PARAMETERS),
    AGE,
];

pub(super) const NETWORK_POLICY_COLUMNS: &[Column] = &[
    NAME,
    column("Pod-Selector", "string", docs::NETWORK_POLICY_POD_SELECTOR),
    AGE,
];

/// `printIngress`.
pub(super) fn ingress(ingress: &Value, now: i128) -> Vec<Value> {
    let class = field(ingress, &["spec", "ingressClassName"])
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    // `formatHosts`: the first three hosts; once three are listed, any further rule (with a
    // host or not) makes ` + N more...` of all the rules not among the first three.
    let rules = list(ingress, &["spec", "rules"]);
    let mut hosts = Vec::new();
    let mut more_rules = false;
    for rule in rules {
        if hosts.len() == SHOWN {
            more_rules = true;
            break;
        }
        match text(rule, &["host"]) {
            "" => {}
            host => hosts.push(host),
        }
    }
    let hosts = if hosts.is_empty() {
        "*".to_owned()
    } else {
        let hidden = if more_rules { rules.len() - SHOWN } else { 0 };
        more(hosts.join(","), hidden)
    };
    let ports = if list(ingress, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        json!(name(ingress)),
        json!(class),
        json!(hosts),
        json!(load_balancer_ingress(ingress).join(",")),
        json!(ports),
        json!(age(ingress, now)),
    ]
}

/// `printIngressClass`: the parameters as `Kind[.apiGroup]/name`.
pub(super) fn ingress_class(class: &Value, now: i128) -> Vec<Value> {
    let parameters = match field(class, &["spec", "parameters"]) {
        None => "<none>".to_owned(),
        Some(parameters) => {
            let kind = text(parameters, &["kind"]);
            let name = text(parameters, &["name"]);
            match field(parameters, &["apiGroup"]).and_then(Value::as_str) {
                Some(group) => format!("{kind}.{group}/{name}"),
                None => format!("{kind}/{name}"),
            }
        }
    };
    vec![
        json!(name(class)),
        json!(text(class, &["spec", "controller"])),
        json!(parameters),
        json!(age(class, now)),
    ]
}

/// `printNetworkPolicy`.
pub(super) fn network_policy(policy: &Value, now: i128) -> Vec<Value> {
    vec![
        json!(name(policy)),
        json!(format_label_selector(field(
            policy,
            &["spec", "podSelector"]
        ))),
        json!(age(policy, now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::tests::{CREATED, cells};
    use super::*;
    use crate::registry::Printer;

    #[test]
    fn endpoints_print_the_first_three_ip_ports_then_how_many_more() {
        let endpoints = json!({
            "metadata": {"name": "web", "creationTimestamp": CREATED},
            "subsets": [
                {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                 "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]},
                {"addresses": [{"ip": "fd00::5"}], "ports": [{"port": 8080}]},
            ],
        });
        assert_eq!(
            cells(Printer::Endpoints, endpoints),
            [
                json!("web"),
                json!("10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 2 more..."),
                json!("10m")
            ],
            "ports outside, addresses inside; every address of every port counts"
        );
        let three = json!({"metadata": {"name": "e"}, "subsets": [
            {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 53}]},
            {"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 53}]},
        ]});
        assert_eq!(
            cells(Printer::Endpoints, three)[1],
            "10.0.0.1:53,10.0.0.2:53,[fd00::1]:53",
            "exactly three: no suffix; IPv6 in brackets"
        );
    }

    #[test]
    fn endpoints_without_ports_print_bare_ips_and_none_without_subsets() {
        let headless = json!({"metadata": {"name": "h"}, "subsets": [
            {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "10.0.0.3"}, {"ip": "10.0.0.4"}]},
        ]});
        assert_eq!(
            cells(Printer::Endpoints, headless)[1],
            "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."
        );
        let none = json!({"metadata": {"name": "n"}});
        assert_eq!(cells(Printer::Endpoints, none)[1], "<none>");
        let not_ready = json!({"metadata": {"name": "n"}, "subsets": [
            {"notReadyAddresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 80}]},
        ]});
        assert_eq!(
            cells(Printer::Endpoints, not_ready)[1],
            "",
            "not-ready addresses are not listed"
        );
    }

    #[test]
    fn endpoint_slices_print_ports_and_addresses_with_unset_for_none() {
        let slice = json!({
            "metadata": {"name": "web-abc", "creationTimestamp": CREATED},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80}, {"name": "metrics"}, {}, {"port": 9000}],
            "endpoints": [
                {"addresses": ["10.0.0.1"]},
                {"addresses": ["10.0.0.2", "10.0.0.3"]},
                {"addresses": ["10.0.0.4"]},
                {"addresses": ["10.0.0.5"]},
            ],
        });
        assert_eq!(
            cells(Printer::EndpointSlice, slice),
            [
                json!("web-abc"),
                json!("IPv4"),
                json!("80,metrics,* + 1 more..."),
                json!("10.0.0.1,10.0.0.2,10.0.0.3 + 2 more..."),
                json!("10m")
            ]
        );
        let empty = json!({"metadata": {"name": "e"}, "addressType": "IPv6", "endpoints": [{"addresses": []}]});
        assert_eq!(
            cells(Printer::EndpointSlice, empty)[1..4],
            [json!("IPv6"), json!("<unset>"), json!("<unset>")]
        );
    }

    #[test]
    fn ingresses_print_class_hosts_address_and_ports() {
        let ingress = json!({
            "metadata": {"name": "web", "creationTimestamp": CREATED},
            "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example"]}],
                     "rules": [{"host": "a.example"}, {"host": "b.example"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}, {"hostname": "lb.example"}, {"ip": "10.0.0.9"}]}},
        });
        assert_eq!(
            cells(Printer::Ingress, ingress),
            [
                json!("web"),
                json!("nginx"),
                json!("a.example,b.example"),
                json!("10.0.0.9,lb.example"),
                json!("80, 443"),
                json!("10m")
            ]
        );
        let bare = json!({"metadata": {"name": "w"}, "spec": {"rules": [{}]}});
        assert_eq!(
            cells(Printer::Ingress, bare)[1..5],
            [json!("<none>"), json!("*"), json!(""), json!("80")]
        );
    }

    #[test]
    fn ingress_hosts_count_every_rule_past_the_first_three_hosts() {
        let hosts = |rules: Value| {
            cells(
                Printer::Ingress,
                json!({"metadata": {"name": "w"}, "spec": {"rules": rules}}),
            )[2]
            .clone()
        };
        assert_eq!(
            hosts(json!([{"host": "a"}, {}, {"host": "b"}, {"host": "c"}, {}])),
            "a,b,c + 2 more...",
            "rules without a host count once three hosts are listed"
        );
        assert_eq!(
            hosts(json!([{}, {}, {}, {}, {"host": "a"}])),
            "a",
            "not before"
        );
        assert_eq!(
            hosts(json!([{"host": "a"}, {"host": "b"}, {"host": "c"}])),
            "a,b,c"
        );
    }

    #[test]
    fn ingress_classes_and_network_policies() {
        let class = json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external"}}});
        assert_eq!(
            cells(Printer::IngressClass, class)[1..3],
            [
                json!("k8s.io/ingress-nginx"),
                json!("IngressParameters.k8s.example.com/external")
            ]
        );
        let core = json!({"metadata": {"name": "c"}, "spec": {"controller": "x",
            "parameters": {"kind": "ConfigMap", "name": "cfg"}}});
        assert_eq!(cells(Printer::IngressClass, core)[2], "ConfigMap/cfg");
        let none = json!({"metadata": {"name": "n"}, "spec": {"controller": "x"}});
        assert_eq!(cells(Printer::IngressClass, none)[2], "<none>");
        let policy = json!({"metadata": {"name": "deny", "creationTimestamp": CREATED},
                            "spec": {"podSelector": {"matchLabels": {"role": "db"}}}});
        assert_eq!(
            cells(Printer::NetworkPolicy, policy),
            [json!("deny"), json!("role=db"), json!("10m")]
        );
        let all = json!({"metadata": {"name": "all"}, "spec": {"podSelector": {}}});
        assert_eq!(cells(Printer::NetworkPolicy, all)[1], "<none>");
    }
}
