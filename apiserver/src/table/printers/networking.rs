//! The printers of the networking kinds: core/v1 Endpoints and discovery.k8s.io EndpointSlices
//! (`printEndpoints`, `printEndpointSlice` and their `format*` helpers).

use serde_json::{Value, json};

use super::{AGE, Column, NAME, age, column, docs, field, first_of, int, list, name, text};

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
}
