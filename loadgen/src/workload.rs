//! What a load run sends: each scenario is a function from (connection, sequence number) to the
//! bytes of one request, built without allocation into a reused buffer, plus the setup it needs
//! on the server first (a namespace, an object to read).

use std::io::Write;
use std::net::SocketAddr;

use anyhow::{Context, bail};
use clap::ValueEnum;
use serde::Serialize;

use crate::http::{Connection, Endpoint};

/// The namespace the kubemock scenarios create and work in.
pub(crate) const NAMESPACE: &str = "loadgen";
/// The ConfigMap the `get` scenario reads.
pub(crate) const GET_TARGET: &str = "loadgen-get";
/// The data every created ConfigMap carries (and the baseline POST body's, for equal sizes).
const DATA: &str = r#"{"key":"value","other":"a somewhat longer value of a few dozen bytes"}"#;

/// A kind of request, sent back to back on every connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Scenario {
    /// kubemock: `POST` a ConfigMap with a unique name into the `loadgen` namespace.
    Create,
    /// kubemock: `GET` one existing ConfigMap.
    Get,
    /// hello-baseline: `GET /`.
    BaselineGet,
    /// hello-baseline: `POST /` with a ConfigMap-sized JSON body.
    BaselinePost,
    /// etcd's HTTP/JSON gateway: `POST /v3/kv/put` of a distinct key with a ConfigMap-sized
    /// JSON value (what kubemock stores for a create).
    EtcdPut,
    /// etcd's HTTP/JSON gateway: `POST /v3/kv/range` of one existing key.
    EtcdRange,
}

impl Scenario {
    /// The scenario's name, as on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scenario::Create => "create",
            Scenario::Get => "get",
            Scenario::BaselineGet => "baseline-get",
            Scenario::BaselinePost => "baseline-post",
            Scenario::EtcdPut => "etcd-put",
            Scenario::EtcdRange => "etcd-range",
        }
    }
}

/// The requests of one run: a scenario against one server.
#[derive(Debug, Clone)]
pub(crate) struct Workload {
    scenario: Scenario,
    /// The `Host` header value.
    host: String,
    /// The request path.
    path: String,
    /// Makes created names unique across runs against the same server.
    run_id: String,
    /// A bearer token every measured request carries (`with_token`); the server was prepared
    /// by someone else then, and `setup` does nothing.
    token: Option<String>,
}

impl Workload {
    /// `scenario` against the server at `addr`.
    pub(crate) fn new(scenario: Scenario, addr: SocketAddr) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = match scenario {
            Scenario::Create => format!("/api/v1/namespaces/{NAMESPACE}/configmaps"),
            Scenario::Get => format!("/api/v1/namespaces/{NAMESPACE}/configmaps/{GET_TARGET}"),
            Scenario::BaselineGet | Scenario::BaselinePost => "/".to_owned(),
            Scenario::EtcdPut => "/v3/kv/put".to_owned(),
            Scenario::EtcdRange => "/v3/kv/range".to_owned(),
        };
        Workload {
            scenario,
            host: addr.to_string(),
            path,
            run_id: format!("{:x}", nanos % (1 << 40)),
            token: None,
        }
    }

    /// The same requests, each with `Authorization: Bearer token`, against a server whose
    /// namespace and object to read were created beforehand (by an administrator: the token's
    /// user may not be allowed to create namespaces).
    pub(crate) fn with_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    /// The scenario.
    pub(crate) fn scenario(&self) -> Scenario {
        self.scenario
    }

    /// Writes request number `seq` of connection `connection` into `out` (cleared first).
    pub(crate) fn write_request(&self, connection: usize, seq: u64, out: &mut Vec<u8>) {
        out.clear();
        match self.scenario {
            Scenario::Create | Scenario::BaselinePost => {
                let body = format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"lg-{}-{connection}-{seq}"}},"data":{DATA}}}"#,
                    self.run_id
                );
                self.write_head(out, "POST", Some(body.len()));
                out.extend_from_slice(body.as_bytes());
            }
            Scenario::Get | Scenario::BaselineGet => {
                self.write_head(out, "GET", None);
            }
            Scenario::EtcdPut => {
                let key = format!(
                    "/registry/configmaps/{NAMESPACE}/lg-{}-{connection}-{seq}",
                    self.run_id
                );
                let body = etcd_put_body(&key, &configmap_json(&key));
                self.write_head(out, "POST", Some(body.len()));
                out.extend_from_slice(body.as_bytes());
            }
            Scenario::EtcdRange => {
                let body = etcd_range_body(&etcd_get_key());
                self.write_head(out, "POST", Some(body.len()));
                out.extend_from_slice(body.as_bytes());
            }
        }
    }

    /// The head of a measured request, with the token when there is one.
    fn write_head(&self, out: &mut Vec<u8>, method: &str, body_len: Option<usize>) {
        write_head(out, method, &self.path, &self.host, body_len);
        if let Some(token) = &self.token {
            // Before the blank line that ends the head.
            out.truncate(out.len() - 2);
            let _ = write!(out, "Authorization: Bearer {token}\r\n\r\n");
        }
    }

    /// Prepares the server: for the kubemock scenarios, the namespace and the ConfigMap `get`
    /// reads (both may exist already). Nothing with a token (`with_token`).
    pub(crate) async fn setup(&self, endpoint: &Endpoint) -> anyhow::Result<()> {
        if self.token.is_some()
            || matches!(
                self.scenario,
                Scenario::BaselineGet | Scenario::BaselinePost | Scenario::EtcdPut
            )
        {
            return Ok(());
        }
        if self.scenario == Scenario::EtcdRange {
            let mut connection = Connection::connect(endpoint)
                .await
                .with_context(|| format!("connecting to {endpoint}"))?;
            let key = etcd_get_key();
            let body = etcd_put_body(&key, &configmap_json(&key));
            return self.create_once(&mut connection, "/v3/kv/put", &body).await;
        }
        let mut connection = Connection::connect(endpoint)
            .await
            .with_context(|| format!("connecting to {endpoint}"))?;
        let namespace = format!(
            r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{NAMESPACE}"}}}}"#
        );
        self.create_once(&mut connection, "/api/v1/namespaces", &namespace)
            .await?;
        let configmap = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{GET_TARGET}"}},"data":{DATA}}}"#
        );
        self.create_once(
            &mut connection,
            &format!("/api/v1/namespaces/{NAMESPACE}/configmaps"),
            &configmap,
        )
        .await
    }

    /// Prepares the server for `with_token` runs, as an administrator (`endpoint`): what
    /// `setup` creates, a Role in the namespace that may read and write ConfigMaps, and a
    /// RoleBinding giving it to `user`.
    pub(crate) async fn setup_for_user(
        &self,
        endpoint: &Endpoint,
        user: &str,
    ) -> anyhow::Result<()> {
        let admin = Workload {
            token: None,
            ..self.clone()
        };
        admin.setup(endpoint).await?;
        let mut connection = Connection::connect(endpoint)
            .await
            .with_context(|| format!("connecting to {endpoint}"))?;
        let rbac = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}");
        let role = format!(
            r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{{"name":"{user}"}},"rules":[{{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list","watch","create","update","patch","delete"]}}]}}"#
        );
        self.create_once(&mut connection, &format!("{rbac}/roles"), &role)
            .await?;
        let binding = format!(
            r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{{"name":"{user}"}},"roleRef":{{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"{user}"}},"subjects":[{{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"{user}"}}]}}"#
        );
        self.create_once(&mut connection, &format!("{rbac}/rolebindings"), &binding)
            .await
    }

    /// `POST`s `body` to `path`; an existing object (409) is fine.
    async fn create_once(
        &self,
        connection: &mut Connection,
        path: &str,
        body: &str,
    ) -> anyhow::Result<()> {
        let mut request = Vec::new();
        write_head(&mut request, "POST", path, &self.host, Some(body.len()));
        request.extend_from_slice(body.as_bytes());
        let response = connection
            .round_trip(&request)
            .await
            .with_context(|| format!("POST {path}"))?;
        if !matches!(response.status, 200..=299 | 409) {
            bail!(
                "setup: POST {path} answered {}: {}",
                response.status,
                String::from_utf8_lossy(response.body)
            );
        }
        Ok(())
    }
}

/// The etcd key the `etcd-range` scenario reads (where kubemock's layout would keep
/// [`GET_TARGET`]).
pub(crate) fn etcd_get_key() -> String {
    format!("/registry/configmaps/{NAMESPACE}/{GET_TARGET}")
}

/// A ConfigMap's JSON as a value to store under `key` (its name is the key's last segment), the
/// same data kubemock's `create` scenario sends.
pub(crate) fn configmap_json(key: &str) -> String {
    let name = key.rsplit('/').next().unwrap_or(key);
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"{NAMESPACE}"}},"data":{DATA}}}"#
    )
}

/// The body of etcd's gateway `POST /v3/kv/put` (`etcdserverpb.PutRequest` in JSON: bytes
/// fields are base64, see etcd's `api/etcdserverpb/rpc.proto`).
pub(crate) fn etcd_put_body(key: &str, value: &str) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    format!(
        r#"{{"key":"{}","value":"{}"}}"#,
        b64.encode(key),
        b64.encode(value)
    )
}

/// The body of etcd's gateway `POST /v3/kv/range` for one key (`etcdserverpb.RangeRequest`).
pub(crate) fn etcd_range_body(key: &str) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    format!(r#"{{"key":"{}"}}"#, b64.encode(key))
}

/// Writes a request head; `body_len` adds the JSON content headers.
pub(crate) fn write_head(
    out: &mut Vec<u8>,
    method: &str,
    path: &str,
    host: &str,
    body_len: Option<usize>,
) {
    let _ = write!(
        out,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: kubemock-loadgen\r\nAccept: application/json\r\n"
    );
    if let Some(len) = body_len {
        let _ = write!(
            out,
            "Content-Type: application/json\r\nContent-Length: {len}\r\n"
        );
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(scenario: Scenario, seq: u64) -> String {
        let workload = Workload::new(scenario, "127.0.0.1:8080".parse().unwrap());
        let mut out = Vec::new();
        workload.write_request(3, seq, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn create_requests_carry_unique_names_and_exact_lengths() {
        let first = request(Scenario::Create, 7);
        let second = request(Scenario::Create, 8);
        assert!(first.starts_with("POST /api/v1/namespaces/loadgen/configmaps HTTP/1.1\r\n"));
        assert_ne!(first, second);
        let (head, body) = first.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("Content-Length: {}", body.len())),
            "{head}"
        );
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(
            body["metadata"]["name"].as_str().unwrap().ends_with("-3-7"),
            "{body}"
        );
    }

    #[test]
    fn baseline_post_sends_a_body_of_the_same_shape() {
        let post = request(Scenario::BaselinePost, 1);
        let (head, body) = post.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("POST / HTTP/1.1"));
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        let create = request(Scenario::Create, 1);
        let (_, create_body) = create.split_once("\r\n\r\n").unwrap();
        assert_eq!(body.len(), create_body.len());
    }

    #[test]
    fn etcd_requests_are_gateway_json_with_base64_keys_and_values() {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let put = request(Scenario::EtcdPut, 5);
        assert!(put.starts_with("POST /v3/kv/put HTTP/1.1\r\n"), "{put}");
        assert_ne!(put, request(Scenario::EtcdPut, 6));
        let (head, body) = put.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        let key = String::from_utf8(b64.decode(body["key"].as_str().unwrap()).unwrap()).unwrap();
        assert!(
            key.starts_with("/registry/configmaps/loadgen/lg-") && key.ends_with("-3-5"),
            "{key}"
        );
        let value: serde_json::Value =
            serde_json::from_slice(&b64.decode(body["value"].as_str().unwrap()).unwrap()).unwrap();
        assert_eq!(value["kind"], "ConfigMap");
        assert_eq!(value["data"]["key"], "value");
        let range = request(Scenario::EtcdRange, 0);
        let (head, body) = range.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("POST /v3/kv/range HTTP/1.1"));
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        let key = b64.decode(body["key"].as_str().unwrap()).unwrap();
        assert_eq!(key, etcd_get_key().as_bytes());
    }

    #[test]
    fn gets_have_no_body() {
        for scenario in [Scenario::Get, Scenario::BaselineGet] {
            let get = request(scenario, 0);
            assert!(get.starts_with("GET "));
            assert!(get.ends_with("\r\n\r\n"));
            assert!(!get.contains("Content-Length"));
        }
    }

    #[test]
    fn a_token_goes_into_every_measured_request_head() {
        let workload =
            Workload::new(Scenario::Create, "127.0.0.1:8080".parse().unwrap()).with_token("t0k3n");
        let mut out = Vec::new();
        workload.write_request(0, 1, &mut out);
        let text = String::from_utf8(out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.ends_with("\r\nAuthorization: Bearer t0k3n"), "{head}");
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        assert!(body.starts_with('{'));
    }
}
