//! Protobuf over HTTP on a real socket (docs/api-behaviour.md#content-types): bodies sent as client-go's typed clients send
//! them, answers negotiated from `Accept`, Status errors and watch streams in protobuf.

use std::time::Duration;

use kubemock_apiserver::protobuf::{self, MEDIA_TYPE, WATCH_MEDIA_TYPE};
use kubemock_apiserver::{ServerConfig, TestServer};
use kubemock_storage::Kv;
use reqwest::{Client, Method, Response};
use serde_json::{Value, json};

/// client-go's typed clients' `Accept`.
const ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf, */*";
const WAIT: Duration = Duration::from_secs(20);

struct Api {
    server: TestServer,
    client: Client,
}

/// How a request body is sent.
enum Body<'a> {
    None,
    Json(&'a Value),
    Protobuf(&'a Value),
}

impl Api {
    async fn start(config: ServerConfig) -> Api {
        let server = TestServer::start_with(config, kubemock_storage::Config::ephemeral())
            .await
            .expect("server");
        Api {
            server,
            client: Client::new(),
        }
    }

    async fn send(&self, method: Method, path: &str, body: Body<'_>, accept: &str) -> Response {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.server.url()))
            .header("accept", accept);
        request = match body {
            Body::None => request,
            Body::Json(value) => request
                .header("content-type", "application/json")
                .body(value.to_string()),
            Body::Protobuf(value) => request
                .header("content-type", MEDIA_TYPE)
                .body(protobuf::encode(value).expect("encodes")),
        };
        request.send().await.expect("the server answers")
    }

    /// Sends and decodes the answer by its `Content-Type`: (status, content type, body).
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Body<'_>,
        accept: &str,
    ) -> (u16, String, Value) {
        let response = self.send(method, path, body, accept).await;
        let status = response.status().as_u16();
        let content_type = response.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .to_owned();
        let bytes = response.bytes().await.expect("a body");
        let body = if content_type == MEDIA_TYPE {
            protobuf::decode(&bytes).expect("a protobuf body decodes")
        } else {
            serde_json::from_slice(&bytes).expect("a JSON body")
        };
        (status, content_type, body)
    }

    async fn json(&self, method: Method, path: &str, body: Body<'_>) -> (u16, Value) {
        let (status, content_type, body) = self.call(method, path, body, "application/json").await;
        assert_eq!(content_type, "application/json");
        (status, body)
    }

    async fn namespace(&self, name: &str) {
        let (status, body) = self
            .json(
                Method::POST,
                "/api/v1/namespaces",
                Body::Json(&json!({"metadata": {"name": name}})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
}

fn configmap() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "labels": {"app": "web", "tier": "a"},
                     "annotations": {"note": "x"}},
        "data": {"mode": "fast", "empty": ""},
        "binaryData": {"blob": "AAECAw=="},
        "immutable": false})
}

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web-0", "labels": {"app": "web"}},
    "spec": {
        "containers": [{
            "name": "main", "image": "nginx:1.27",
            "args": ["-g", "daemon off;"],
            "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
            "env": [{"name": "MODE", "value": "fast"},
                    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                          "requests": {"cpu": "0.1"}},
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                               "periodSeconds": 5},
            "livenessProbe": {"tcpSocket": {"port": 8080}},
            "securityContext": {"runAsUser": 1000, "allowPrivilegeEscalation": false},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}]
        }],
        "volumes": [{"name": "config", "configMap": {"name": "settings", "defaultMode": 420}},
                    {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
        "terminationGracePeriodSeconds": 0,
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule",
                         "tolerationSeconds": 30}],
        "securityContext": {}
    }})
}

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "replicas": 0,
        "selector": {"matchLabels": {"app": "web"},
                     "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
        "strategy": {"type": "RollingUpdate",
                     "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
        "minReadySeconds": 3,
        "progressDeadlineSeconds": 600,
        "template": {
            "metadata": {"labels": {"app": "web", "tier": "a"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.27",
                                     "resources": {"requests": {"memory": "64Mi"}}}]}
        }
    }})
}

/// The object without what differs between two creations of it.
fn comparable(mut object: Value) -> Value {
    let metadata = object["metadata"].as_object_mut().expect("metadata");
    for field in ["uid", "resourceVersion", "creationTimestamp", "namespace"] {
        metadata.shift_remove(field);
    }
    // Per-object and per-second values: write times, the generated token volume's name.
    for entry in metadata
        .get_mut("managedFields")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(entry) = entry.as_object_mut() {
            entry.shift_remove("time");
        }
    }
    fn mask_generated(value: &mut Value) {
        match value {
            Value::String(text) if text.starts_with("kube-api-access-") => {
                *text = "kube-api-access-*".to_owned();
            }
            Value::Array(items) => items.iter_mut().for_each(mask_generated),
            Value::Object(map) => map.values_mut().for_each(mask_generated),
            _ => {}
        }
    }
    mask_generated(&mut object);
    object
}

#[tokio::test]
async fn objects_created_with_protobuf_bodies_read_back_as_json_created_ones() {
    let api = Api::start(ServerConfig::default()).await;
    api.namespace("by-json").await;
    api.namespace("by-protobuf").await;
    for (object, collection) in [
        (configmap(), "/api/v1/namespaces/{ns}/configmaps"),
        (pod(), "/api/v1/namespaces/{ns}/pods"),
        (deployment(), "/apis/apps/v1/namespaces/{ns}/deployments"),
    ] {
        let name = object["metadata"]["name"]
            .as_str()
            .expect("name")
            .to_owned();
        let by_json = collection.replace("{ns}", "by-json");
        let by_protobuf = collection.replace("{ns}", "by-protobuf");
        let (status, created_json) = api.json(Method::POST, &by_json, Body::Json(&object)).await;
        assert_eq!(status, 201, "{created_json}");
        let (status, content_type, created_protobuf) = api
            .call(
                Method::POST,
                &by_protobuf,
                Body::Protobuf(&object),
                ACCEPT_PROTOBUF,
            )
            .await;
        assert_eq!(status, 201, "{created_protobuf}");
        assert_eq!(content_type, MEDIA_TYPE, "the answer is negotiated too");
        let (_, read_json) = api
            .json(Method::GET, &format!("{by_json}/{name}"), Body::None)
            .await;
        let (_, read_protobuf) = api
            .json(Method::GET, &format!("{by_protobuf}/{name}"), Body::None)
            .await;
        assert_eq!(
            comparable(read_protobuf.clone()),
            comparable(read_json),
            "{name}: created from protobuf as from JSON"
        );
        assert_eq!(
            created_protobuf, read_protobuf,
            "{name}: the protobuf answer"
        );
        // Read back in protobuf: the same object.
        let (status, content_type, got) = api
            .call(
                Method::GET,
                &format!("{by_protobuf}/{name}"),
                Body::None,
                MEDIA_TYPE,
            )
            .await;
        assert_eq!((status, content_type.as_str()), (200, MEDIA_TYPE));
        assert_eq!(got, read_protobuf, "{name}: GET in protobuf");
        // And the list, as a PodList/DeploymentList/ConfigMapList.
        let (status, content_type, list) = api
            .call(Method::GET, &by_protobuf, Body::None, ACCEPT_PROTOBUF)
            .await;
        assert_eq!((status, content_type.as_str()), (200, MEDIA_TYPE));
        let (_, list_json) = api.json(Method::GET, &by_protobuf, Body::None).await;
        assert_eq!(list, list_json, "{name}: the list in protobuf");
        assert_eq!(
            list["kind"],
            format!("{}List", object["kind"].as_str().unwrap_or(""))
        );
    }
    // An empty list keeps its `items: []`.
    let (_, _, empty) = api
        .call(
            Method::GET,
            "/api/v1/namespaces/by-json/secrets",
            Body::None,
            ACCEPT_PROTOBUF,
        )
        .await;
    assert_eq!(empty["items"], json!([]));
}

#[tokio::test]
async fn a_stale_protobuf_update_gets_the_409_status_in_protobuf() {
    let api = Api::start(ServerConfig::default()).await;
    api.namespace("team").await;
    let path = "/api/v1/namespaces/team/configmaps";
    let (_, _, created) = api
        .call(
            Method::POST,
            path,
            Body::Protobuf(&configmap()),
            ACCEPT_PROTOBUF,
        )
        .await;
    let mut update = created.clone();
    update["data"]["mode"] = json!("slow");
    let (status, _, updated) = api
        .call(
            Method::PUT,
            &format!("{path}/settings"),
            Body::Protobuf(&update),
            ACCEPT_PROTOBUF,
        )
        .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["data"]["mode"], "slow");
    // The same stale body again.
    let (status, content_type, body) = api
        .call(
            Method::PUT,
            &format!("{path}/settings"),
            Body::Protobuf(&update),
            ACCEPT_PROTOBUF,
        )
        .await;
    assert_eq!((status, content_type.as_str()), (409, MEDIA_TYPE));
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Operation cannot be fulfilled on configmaps \"settings\": the object has been modified; please apply your changes to the latest version and try again",
            "reason": "Conflict", "details": {"name": "settings", "kind": "configmaps"},
            "code": 409})
    );
    // A JSON client gets it in JSON; a missing object is a 404 in protobuf.
    let (status, content_type, _) = api
        .call(
            Method::PUT,
            &format!("{path}/settings"),
            Body::Protobuf(&update),
            "application/json",
        )
        .await;
    assert_eq!((status, content_type.as_str()), (409, "application/json"));
    let (status, content_type, body) = api
        .call(
            Method::GET,
            &format!("{path}/missing"),
            Body::None,
            ACCEPT_PROTOBUF,
        )
        .await;
    assert_eq!((status, content_type.as_str()), (404, MEDIA_TYPE));
    assert_eq!(body["reason"], "NotFound");
}

#[tokio::test]
async fn protobuf_delete_options_choose_the_propagation_policy() {
    let api = Api::start(ServerConfig::default()).await;
    api.namespace("team").await;
    let path = "/apis/apps/v1/namespaces/team/deployments";
    for (name, policy, finalizer) in [
        ("fg", "Foreground", "foregroundDeletion"),
        ("orphan", "Orphan", "orphan"),
    ] {
        let mut object = deployment();
        object["metadata"]["name"] = json!(name);
        let (status, _, _) = api
            .call(Method::POST, path, Body::Protobuf(&object), ACCEPT_PROTOBUF)
            .await;
        assert_eq!(status, 201);
        let options = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
            "propagationPolicy": policy});
        let (status, content_type, deleted) = api
            .call(
                Method::DELETE,
                &format!("{path}/{name}"),
                Body::Protobuf(&options),
                ACCEPT_PROTOBUF,
            )
            .await;
        assert_eq!(
            (status, content_type.as_str()),
            (200, MEDIA_TYPE),
            "{deleted}"
        );
        assert_eq!(
            deleted["metadata"]["finalizers"],
            json!([finalizer]),
            "{policy}"
        );
        assert!(
            deleted["metadata"]["deletionTimestamp"].is_string(),
            "{deleted}"
        );
    }
    // Background: removed at once, answered with a Status.
    let mut object = deployment();
    object["metadata"]["name"] = json!("bg");
    api.call(Method::POST, path, Body::Protobuf(&object), ACCEPT_PROTOBUF)
        .await;
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1",
        "propagationPolicy": "Background", "preconditions": {"resourceVersion": "1"}});
    let (status, _, body) = api
        .call(
            Method::DELETE,
            &format!("{path}/bg"),
            Body::Protobuf(&options),
            ACCEPT_PROTOBUF,
        )
        .await;
    assert_eq!(
        status, 409,
        "the precondition is read from protobuf: {body}"
    );
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1",
        "propagationPolicy": "Background"});
    let (status, _, body) = api
        .call(
            Method::DELETE,
            &format!("{path}/bg"),
            Body::Protobuf(&options),
            ACCEPT_PROTOBUF,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        (body["kind"].as_str(), body["status"].as_str()),
        (Some("Status"), Some("Success"))
    );
}

/// A watch response read event by event, as JSON lines or protobuf frames by its
/// `Content-Type`.
struct Watch {
    response: Response,
    protobuf: bool,
    buffer: Vec<u8>,
}

impl Watch {
    async fn open(api: &Api, path: &str, accept: &str) -> Watch {
        let response = api.send(Method::GET, path, Body::None, accept).await;
        assert_eq!(response.status().as_u16(), 200);
        let content_type = response.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .to_owned();
        let protobuf = content_type == WATCH_MEDIA_TYPE;
        assert!(
            protobuf || content_type == "application/json",
            "{content_type}"
        );
        Watch {
            response,
            protobuf,
            buffer: Vec::new(),
        }
    }

    /// The next event, `None` when the stream ends.
    async fn next(&mut self) -> Option<Value> {
        tokio::time::timeout(WAIT, async {
            loop {
                if self.protobuf {
                    if let Some(len) = self.buffer.get(..4) {
                        let len = u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize;
                        if self.buffer.len() >= 4 + len {
                            let frame: Vec<u8> = self.buffer.drain(..4 + len).skip(4).collect();
                            return Some(protobuf::decode_watch_event(&frame).expect("a frame"));
                        }
                    }
                } else if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = self.buffer.drain(..=end).collect();
                    return Some(serde_json::from_slice(&line).expect("a JSON event"));
                }
                match self.response.chunk().await.expect("the stream reads") {
                    Some(chunk) => self.buffer.extend_from_slice(&chunk),
                    None => return None,
                }
            }
        })
        .await
        .expect("an event before the deadline")
    }

    /// The next event that is not a bookmark.
    async fn next_change(&mut self) -> Value {
        loop {
            let event = self.next().await.expect("an event");
            if event["type"] != "BOOKMARK" {
                return event;
            }
        }
    }

    /// Events up to and including the next bookmark.
    async fn next_bookmark(&mut self) -> Value {
        loop {
            let event = self.next().await.expect("an event");
            if event["type"] == "BOOKMARK" {
                return event;
            }
        }
    }
}

#[tokio::test]
async fn a_protobuf_watch_delivers_the_events_of_the_json_stream() {
    let config = ServerConfig {
        bookmark_interval: Duration::from_millis(100),
        ..ServerConfig::default()
    };
    let api = Api::start(config).await;
    api.namespace("team").await;
    let path = "/api/v1/namespaces/team/configmaps";
    let (_, list) = api.json(Method::GET, path, Body::None).await;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_owned();
    let watch_path = format!("{path}?watch=true&allowWatchBookmarks=true&resourceVersion={rv}");
    let mut json_watch = Watch::open(&api, &watch_path, "application/json").await;
    let mut protobuf_watch = Watch::open(
        &api,
        &watch_path,
        "application/vnd.kubernetes.protobuf;stream=watch, application/json",
    )
    .await;
    assert!(protobuf_watch.protobuf && !json_watch.protobuf);
    let (_, created) = api.json(Method::POST, path, Body::Json(&configmap())).await;
    let mut update = created.clone();
    update["data"]["mode"] = json!("slow");
    let (status, _) = api
        .json(
            Method::PUT,
            &format!("{path}/settings"),
            Body::Json(&update),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = api
        .json(Method::DELETE, &format!("{path}/settings"), Body::None)
        .await;
    assert_eq!(status, 200);
    let mut kinds = Vec::new();
    for _ in 0..3 {
        let from_json = json_watch.next_change().await;
        let from_protobuf = protobuf_watch.next_change().await;
        assert_eq!(from_protobuf, from_json);
        kinds.push(from_json["type"].as_str().unwrap_or("").to_owned());
    }
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    let from_json = json_watch.next_bookmark().await;
    let from_protobuf = protobuf_watch.next_bookmark().await;
    for bookmark in [&from_json, &from_protobuf] {
        assert_eq!(bookmark["object"]["kind"], "ConfigMap");
        assert_eq!(bookmark["object"]["apiVersion"], "v1");
        assert!(bookmark["object"]["metadata"]["resourceVersion"].is_string());
    }
    // A compacted start: one ERROR event with the 410 Status, then the end.
    let store = api.server.store();
    store.compact(store.revision()).await.expect("compacts");
    let old = format!("{path}?watch=true&resourceVersion={rv}");
    let mut json_watch = Watch::open(&api, &old, "application/json").await;
    let mut protobuf_watch = Watch::open(&api, &old, ACCEPT_PROTOBUF).await;
    let from_json = json_watch.next().await.expect("an error event");
    let from_protobuf = protobuf_watch.next().await.expect("an error event");
    assert_eq!(from_json["type"], "ERROR");
    assert_eq!(from_json["object"]["code"], 410);
    assert_eq!(from_protobuf, from_json);
    assert!(protobuf_watch.next().await.is_none(), "the stream ends");
}
