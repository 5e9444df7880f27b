//! docs/api-behaviour.md#server-side-defaults, Services: their defaults, cluster IPs allocated from the service range
//! (`--service-cluster-ip-range`, the `kubernetes` Service holding the first address), node
//! ports from 30000-32767, both unique under concurrent creates and across a restart of a
//! durable server, checked when requested, kept by updates that leave them out, and given back
//! on delete.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use kubemock_apiserver::{ServerConfig, TestServer};
use kubemock_conformance::{Harness, causes};
use serde_json::{Value, json};

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

fn web(name: &str) -> Value {
    service(
        name,
        json!({"selector": {"app": name}, "ports": [{"port": 80}]}),
    )
}

/// True if `ip` is a usable address of 10.96.0.0/12.
fn in_default_range(ip: &str) -> bool {
    let ip: Ipv4Addr = ip.parse().expect("an IPv4 address");
    let base = u32::from(Ipv4Addr::new(10, 96, 0, 0));
    let offset = u32::from(ip).wrapping_sub(base);
    offset > 0 && offset < (1 << 20) - 1
}

#[tokio::test]
async fn s3_10_a_service_gets_its_defaults_and_a_cluster_ip_from_the_range() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-svc").await;
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/services"), &web("web"))
        .await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    let spec = &reply.body["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(
        spec["ports"],
        json!([{"port": 80, "protocol": "TCP", "targetPort": 80}])
    );
    let ip = spec["clusterIP"].as_str().expect("a cluster IP");
    assert!(in_default_range(ip), "{ip}");
    assert_ne!(ip, "10.96.0.1", "the kubernetes Service's");
    assert_eq!(spec["clusterIPs"], json!([ip]));
    assert!(spec.get("externalTrafficPolicy").is_none());
    assert_eq!(reply.body["status"], json!({"loadBalancer": {}}));
    let kubernetes = h
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(kubernetes.body["spec"]["clusterIP"], "10.96.0.1");
}

#[tokio::test]
async fn s3_10_requested_cluster_ips_are_checked_for_range_and_conflicts() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-svc-ip").await;
    let collection = format!("/api/v1/namespaces/{ns}/services");
    let mut pinned = web("pinned");
    pinned["spec"]["clusterIP"] = json!("10.96.100.100");
    let reply = h.post(&collection, &pinned).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_eq!(reply.body["spec"]["clusterIPs"], json!(["10.96.100.100"]));
    let mut again = web("again");
    again["spec"]["clusterIP"] = json!("10.96.100.100");
    let reply = h.post(&collection, &again).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "Service \"again\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.96.100.100\"}: failed to allocate IP 10.96.100.100: provided IP is already allocated"
    );
    let mut outside = web("outside");
    outside["spec"]["clusterIP"] = json!("192.168.0.1");
    let reply = h.post(&collection, &outside).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        causes(&reply.body),
        [
            "spec.clusterIPs: Invalid value: []string{\"192.168.0.1\"}: failed to allocate IP 192.168.0.1: the provided IP (192.168.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12"
        ]
    );
    // Deleting the holder gives the address back.
    let deleted = h.delete(&format!("{collection}/pinned"), None).await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    let reply = h.post(&collection, &again).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    // A dry run takes nothing.
    let mut dry = web("dry");
    dry["spec"]["clusterIP"] = json!("10.96.100.101");
    let reply = h
        .request(
            reqwest::Method::POST,
            &format!("{collection}?dryRun=All"),
            Some(dry.to_string().into_bytes()),
            "application/json",
        )
        .await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_eq!(h.post(&collection, &dry).await.status, 201);
}

#[tokio::test]
async fn s3_10_headless_and_external_name_services_get_no_cluster_ip() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-svc-headless").await;
    let collection = format!("/api/v1/namespaces/{ns}/services");
    let mut headless = web("headless");
    headless["spec"]["clusterIP"] = json!("None");
    let reply = h.post(&collection, &headless).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_eq!(reply.body["spec"]["clusterIPs"], json!(["None"]));
    assert_eq!(reply.body["spec"]["ipFamilyPolicy"], "SingleStack");
    let external = service(
        "ext",
        json!({"type": "ExternalName", "externalName": "example.com"}),
    );
    let reply = h.post(&collection, &external).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert!(reply.body["spec"].get("clusterIP").is_none());
    assert!(reply.body["spec"].get("ipFamilies").is_none());
    let unnamed = service("noname", json!({"type": "ExternalName"}));
    let reply = h.post(&collection, &unnamed).await;
    assert_eq!(reply.status, 422);
    assert_eq!(causes(&reply.body), ["spec.externalName: Required value"]);
}

#[tokio::test]
async fn s3_10_several_ports_must_be_named_and_unique() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-svc-ports").await;
    let collection = format!("/api/v1/namespaces/{ns}/services");
    let body = service(
        "multi",
        json!({"ports": [{"name": "http", "port": 80}, {"port": 443},
                         {"name": "http", "port": 8080}, {"name": "big", "port": 70000}]}),
    );
    let reply = h.post(&collection, &body).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        causes(&reply.body),
        [
            "spec.ports[1].name: Required value",
            "spec.ports[2].name: Duplicate value: \"http\"",
            "spec.ports[3].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.ports[3].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ]
    );
    let none = h.post(&collection, &service("none", json!({}))).await;
    assert_eq!(none.status, 422);
    assert_eq!(causes(&none.body), ["spec.ports: Required value"]);
}

#[tokio::test]
async fn s3_10_node_ports_are_allocated_checked_and_given_back() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-svc-nodeport").await;
    let collection = format!("/api/v1/namespaces/{ns}/services");
    let body = service(
        "np",
        json!({"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81, "nodePort": 31080}]}),
    );
    let reply = h.post(&collection, &body).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    let spec = &reply.body["spec"];
    let allocated = spec["ports"][0]["nodePort"].as_i64().expect("a node port");
    assert!((30000..=32767).contains(&allocated), "{allocated}");
    assert_eq!(spec["ports"][1]["nodePort"], 31080);
    assert_eq!(spec["externalTrafficPolicy"], "Cluster");
    let taken = service(
        "taken",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 31080}]}),
    );
    let reply = h.post(&collection, &taken).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        causes(&reply.body),
        ["spec.ports[0].nodePort: Invalid value: 31080: provided port is already allocated"]
    );
    let outside = service(
        "outside",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 8080}]}),
    );
    let reply = h.post(&collection, &outside).await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        causes(&reply.body),
        [
            "spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767"
        ]
    );
    let cluster_ip = service("cip", json!({"ports": [{"port": 80, "nodePort": 31081}]}));
    let reply = h.post(&collection, &cluster_ip).await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        causes(&reply.body),
        ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]
    );
    // Back to ClusterIP: the node ports are dropped and given back.
    let patch = json!({"spec": {"type": "ClusterIP"}});
    let reply = h
        .patch(
            &format!("{collection}/np"),
            "application/merge-patch+json",
            &patch,
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert!(reply.body["spec"]["ports"][1].get("nodePort").is_none());
    assert!(reply.body["spec"].get("externalTrafficPolicy").is_some());
    let reply = h.post(&collection, &taken).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    // Deleted: its port is free again.
    assert_eq!(
        h.delete(&format!("{collection}/taken"), None).await.status,
        200
    );
    let again = service(
        "again",
        json!({"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 31080}]}),
    );
    let reply = h.post(&collection, &again).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_eq!(reply.body["spec"]["allocateLoadBalancerNodePorts"], true);
}

#[tokio::test]
async fn s3_10_updates_keep_allocated_values_and_the_cluster_ip_is_immutable() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-svc-update").await;
    let collection = format!("/api/v1/namespaces/{ns}/services");
    let body = service(
        "np",
        json!({"type": "NodePort", "selector": {"app": "x"}, "ports": [{"name": "http", "port": 80}]}),
    );
    let created = h.post(&collection, &body).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    // The manifest again (no clusterIP, no nodePort), as `kubectl replace` sends it.
    let mut replace = body.clone();
    replace["metadata"]["resourceVersion"] = created.body["metadata"]["resourceVersion"].clone();
    replace["spec"]["selector"] = json!({"app": "y"});
    let put = h.put(&format!("{collection}/np"), &replace).await;
    assert_eq!(put.status, 200, "{:?}", put.body);
    assert_eq!(
        put.body["spec"]["clusterIP"],
        created.body["spec"]["clusterIP"]
    );
    assert_eq!(
        put.body["spec"]["ports"][0]["nodePort"],
        created.body["spec"]["ports"][0]["nodePort"]
    );
    assert_eq!(put.body["spec"]["selector"], json!({"app": "y"}));
    let moved = h
        .patch(
            &format!("{collection}/np"),
            "application/merge-patch+json",
            &json!({"spec": {"clusterIP": "10.96.200.200", "clusterIPs": ["10.96.200.200"]}}),
        )
        .await;
    assert_eq!(moved.status, 422, "{:?}", moved.body);
    assert_eq!(
        causes(&moved.body),
        ["spec.clusterIPs[0]: Invalid value: \"10.96.200.200\": may not change once set"]
    );
}

#[tokio::test]
async fn s3_10_concurrent_creates_get_distinct_addresses_and_ports() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-svc-concurrent").await;
    let collection = format!("/api/v1/namespaces/{ns}/services");
    let creates = (0..48).map(|i| {
        let body = service(
            &format!("s{i}"),
            json!({"type": "NodePort", "ports": [{"port": 80}]}),
        );
        let h = &h;
        let collection = &collection;
        async move { h.post(collection, &body).await }
    });
    let replies = futures_util::future::join_all(creates).await;
    let mut ips = HashSet::new();
    let mut ports = HashSet::new();
    for reply in replies {
        assert_eq!(reply.status, 201, "{:?}", reply.body);
        let ip = reply.body["spec"]["clusterIP"]
            .as_str()
            .expect("ip")
            .to_owned();
        assert!(in_default_range(&ip), "{ip}");
        assert!(ips.insert(ip.clone()), "{ip} given twice");
        let port = reply.body["spec"]["ports"][0]["nodePort"]
            .as_i64()
            .expect("port");
        assert!(ports.insert(port), "{port} given twice");
    }
    assert_eq!(ips.len(), 48);
}

#[tokio::test]
async fn s3_10_the_service_range_is_configurable_and_the_kubernetes_service_has_its_first_ip() {
    let h = Harness::start_with(ServerConfig {
        service_cluster_ip_range: "10.200.0.0/28".parse().expect("a CIDR"),
        service_node_port_range: "31000-31001".parse().expect("a range"),
        ..ServerConfig::default()
    })
    .await;
    if h.in_process().is_none() {
        eprintln!("skipped: needs an in-process server with its own service range");
        return;
    }
    let kubernetes = h
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(kubernetes.body["spec"]["clusterIP"], "10.200.0.1");
    let ns = h.namespace("s3-10-svc-range").await;
    let collection = format!("/api/v1/namespaces/{ns}/services");
    // Two node ports: the third NodePort Service fails, and gives back the address it took.
    let np = |name: &str| service(name, json!({"type": "NodePort", "ports": [{"port": 80}]}));
    let mut seen = HashSet::new();
    for name in ["np1", "np2"] {
        let reply = h.post(&collection, &np(name)).await;
        assert_eq!(reply.status, 201, "{:?}", reply.body);
        seen.insert(
            reply.body["spec"]["clusterIP"]
                .as_str()
                .expect("ip")
                .to_owned(),
        );
    }
    let reply = h.post(&collection, &np("np3")).await;
    assert_eq!(reply.status, 500, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "Internal error occurred: failed to allocate a nodePort: range is full"
    );
    // 16 addresses, minus network, broadcast, the kubernetes Service's and the two above.
    for i in 0..11 {
        let reply = h.post(&collection, &web(&format!("s{i}"))).await;
        assert_eq!(reply.status, 201, "{:?}", reply.body);
        let ip: Ipv4Addr = reply.body["spec"]["clusterIP"]
            .as_str()
            .expect("ip")
            .parse()
            .expect("IPv4");
        assert_eq!(&ip.octets()[..3], &[10, 200, 0], "{ip}");
        assert!((2..=14).contains(&ip.octets()[3]), "{ip}");
        assert!(seen.insert(ip.to_string()), "{ip} twice");
    }
    let full = h.post(&collection, &web("full")).await;
    assert_eq!(full.status, 500, "{:?}", full.body);
    assert_eq!(
        full.body["message"],
        "Internal error occurred: failed to allocate a serviceIP: range is full"
    );
}

#[tokio::test]
async fn s3_10_allocations_survive_a_restart_of_a_durable_server() {
    if std::env::var(kubemock_conformance::URL_VARIABLE).is_ok_and(|u| !u.is_empty()) {
        eprintln!("skipped: starts its own durable server");
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let start = || async {
        TestServer::start_with(
            ServerConfig::default(),
            kubemock_storage::Config::durable(dir.path()),
        )
        .await
        .expect("start a durable server")
    };
    let server = start().await;
    let h = Harness::connect(server.url());
    let ns = h.namespace("s3-10-svc-durable").await;
    let collection = format!("/api/v1/namespaces/{ns}/services");
    let held = service(
        "held",
        json!({"type": "NodePort", "clusterIP": "10.96.50.50", "ports": [{"port": 80, "nodePort": 30500}]}),
    );
    let reply = h.post(&collection, &held).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    let allocated = h.post(&collection, &web("allocated")).await;
    assert_eq!(allocated.status, 201, "{:?}", allocated.body);
    server.stop().await.expect("a clean stop");

    let server = start().await;
    let h = Harness::connect(server.url());
    let kubernetes = h
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(kubernetes.body["spec"]["clusterIP"], "10.96.0.1");
    let same_ip = service(
        "same-ip",
        json!({"clusterIP": "10.96.50.50", "ports": [{"port": 80}]}),
    );
    let reply = h.post(&collection, &same_ip).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    let mut taken = web("taken");
    taken["spec"]["clusterIP"] = allocated.body["spec"]["clusterIP"].clone();
    assert_eq!(h.post(&collection, &taken).await.status, 422);
    let same_port = service(
        "same-port",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30500}]}),
    );
    assert_eq!(h.post(&collection, &same_port).await.status, 422);
    assert_eq!(
        h.delete(&format!("{collection}/held"), None).await.status,
        200
    );
    assert_eq!(h.post(&collection, &same_ip).await.status, 201);
    assert_eq!(h.post(&collection, &same_port).await.status, 201);
    server.stop().await.expect("a clean stop");
}
