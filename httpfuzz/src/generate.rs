//! Request generation: request `index` of a run with seed `seed` is drawn from a generator
//! seeded with both alone, so the same seed gives the same request sequence, and any request
//! can be regenerated from its index. Two things come from the server's answers, never from
//! the generator: the last resourceVersion seen of an object (PUT of definitions, leases and
//! custom resources needs one) and protobuf bodies read back (the only valid protobuf the
//! fuzzer has to mutate); a request that used either says so (`from_server`).

use std::collections::HashMap;

use base64::Engine as _;
use fastrand::Rng;
use reqwest::Method;
use serde_json::{Value, json};

use crate::mutate::{self, BAD_NAMES, BAD_RESOURCE_VERSIONS, Body, pick};
use crate::target::{NAMESPACES, POOL_NAMES, TARGETS, Target, conditional_update};

/// resourceVersions for reads: current or old, malformed, but never newer than the store.
const READ_RESOURCE_VERSIONS: &[&str] = &["0", "1", "", "5", "abc", "-1", " 1", "1e3", "0x10"];
/// Most `copy` operations in a doubling JSON patch: 2^16 copies of a field is far past any
/// sane size, yet a server without a bound survives it; more would only eat the machine.
const MAX_DOUBLINGS: usize = 16;
/// Protobuf bodies kept per resource; the newest replaces the oldest.
const PROTO_POOL: usize = 4;
/// Largest protobuf body kept for mutation.
const MAX_PROTO_BODY: usize = 64 * 1024;

/// What a request does, for the per-operation histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    /// POST to a collection.
    Create,
    /// PUT of an object.
    Update,
    /// GET of an object.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch`, read briefly.
    Watch,
    /// DELETE of an object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
    /// PATCH with `application/json-patch+json`.
    JsonPatch,
    /// PATCH with `application/merge-patch+json`.
    MergePatch,
    /// PATCH with `application/strategic-merge-patch+json`.
    StrategicPatch,
    /// PATCH with `application/apply-patch+yaml` (server-side apply).
    Apply,
    /// GET, PUT or PATCH of `status`.
    Status,
    /// GET, PUT or PATCH of `scale`.
    Scale,
    /// Any method, any path, a garbage body.
    Garbage,
    /// Discovery, OpenAPI, health and unknown paths.
    Path,
}

impl Op {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Update => "update",
            Op::Get => "get",
            Op::List => "list",
            Op::Watch => "watch",
            Op::Delete => "delete",
            Op::DeleteCollection => "deletecollection",
            Op::JsonPatch => "patch-json",
            Op::MergePatch => "patch-merge",
            Op::StrategicPatch => "patch-strategic",
            Op::Apply => "apply",
            Op::Status => "status",
            Op::Scale => "scale",
            Op::Garbage => "garbage",
            Op::Path => "path",
        }
    }
}

/// Operations and their relative weights.
const OPS: &[(Op, u32)] = &[
    (Op::Create, 18),
    (Op::Update, 9),
    (Op::Get, 8),
    (Op::List, 7),
    (Op::Watch, 2),
    (Op::Delete, 6),
    (Op::DeleteCollection, 1),
    (Op::JsonPatch, 7),
    (Op::MergePatch, 6),
    (Op::StrategicPatch, 6),
    (Op::Apply, 7),
    (Op::Status, 5),
    (Op::Scale, 4),
    (Op::Garbage, 3),
    (Op::Path, 2),
];

/// One request, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuzzRequest {
    /// What it does.
    pub op: Op,
    /// The resource aimed at (plural), or `-` for none.
    pub resource: &'static str,
    /// HTTP method.
    pub method: Method,
    /// Path and query, percent-encoded.
    pub path_and_query: String,
    /// Request headers.
    pub headers: Vec<(String, String)>,
    /// The body, if any.
    pub body: Option<Vec<u8>>,
    /// A watch: read for a moment, then hang up.
    pub watch: bool,
    /// The deepest nesting the body was given (0: none).
    pub depth: usize,
    /// JSON patch `copy` operations in the body.
    pub copy_ops: usize,
    /// The body holds a resourceVersion or protobuf bytes read from the server.
    pub from_server: bool,
}

impl FuzzRequest {
    /// The `Content-Type` sent, or `""`.
    pub fn content_type(&self) -> &str {
        self.header("content-type")
    }

    /// A header's value, or `""`.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map_or("", |(_, v)| v.as_str())
    }
}

/// What the fuzzer learnt from the server's answers (see the module doc).
#[derive(Debug, Default)]
pub struct Memory {
    /// Last resourceVersion seen, by (resource, namespace, name).
    resource_versions: HashMap<(String, String, String), String>,
    /// Protobuf bodies read back, by resource.
    protos: HashMap<String, Vec<Vec<u8>>>,
}

impl Memory {
    /// Learns from an answer to `request`: the object's resourceVersion, a protobuf body.
    pub fn learn(&mut self, request: &FuzzRequest, status: u16, content_type: &str, body: &[u8]) {
        if !(200..300).contains(&status) || request.resource == "-" {
            return;
        }
        if content_type.starts_with("application/vnd.kubernetes.protobuf")
            && request.method == Method::GET
            && !request.watch
            && body.len() <= MAX_PROTO_BODY
            && matches!(request.op, Op::Get)
        {
            let pool = self.protos.entry(request.resource.to_owned()).or_default();
            if pool.len() >= PROTO_POOL {
                pool.remove(0);
            }
            pool.push(body.to_vec());
        }
        if content_type.starts_with("application/json") && !request.watch {
            let Ok(value) = serde_json::from_slice::<Value>(body) else {
                return;
            };
            let metadata = &value["metadata"];
            if let (Some(name), Some(rv)) = (
                metadata["name"].as_str(),
                metadata["resourceVersion"].as_str(),
            ) {
                let namespace = metadata["namespace"].as_str().unwrap_or("");
                self.resource_versions.insert(
                    (
                        request.resource.to_owned(),
                        namespace.to_owned(),
                        name.to_owned(),
                    ),
                    rv.to_owned(),
                );
            }
        }
    }

    fn resource_version(&self, resource: &str, namespace: &str, name: &str) -> Option<&str> {
        self.resource_versions
            .get(&(resource.to_owned(), namespace.to_owned(), name.to_owned()))
            .map(String::as_str)
    }

    fn proto(&self, resource: &str, rng: &mut Rng) -> Option<&[u8]> {
        let pool = self.protos.get(resource)?;
        let i = rng.usize(..pool.len().max(1));
        pool.get(i).map(Vec::as_slice)
    }
}

/// The generator seed of request `index` of a run seeded `seed` (splitmix64 of both).
fn request_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn weighted<T: Copy>(rng: &mut Rng, items: &[(T, u32)]) -> T {
    let total: u32 = items.iter().map(|(_, w)| w).sum();
    let mut at = rng.u32(..total.max(1));
    for (item, weight) in items {
        if at < *weight {
            return *item;
        }
        at -= weight;
    }
    items[0].0
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Generates request `index` of the run seeded `seed`.
pub fn generate(seed: u64, index: u64, memory: &Memory) -> FuzzRequest {
    let mut rng = Rng::with_seed(request_seed(seed, index));
    let rng = &mut rng;
    let weights: Vec<(usize, u32)> = TARGETS
        .iter()
        .enumerate()
        .map(|(i, t)| (i, t.weight))
        .collect();
    let target = &TARGETS[weighted(rng, &weights)];
    let op = weighted(rng, OPS);
    Builder::new(rng, target, op, memory).build()
}

/// The parts of one request while it is built.
struct Builder<'a> {
    rng: &'a mut Rng,
    target: &'a Target,
    op: Op,
    memory: &'a Memory,
    namespace: String,
    name: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    depth: usize,
    copy_ops: usize,
    from_server: bool,
}

impl<'a> Builder<'a> {
    fn new(rng: &'a mut Rng, target: &'a Target, op: Op, memory: &'a Memory) -> Self {
        let namespace = match rng.u8(..100) {
            0..=69 => NAMESPACES[0].to_owned(),
            70..=89 => NAMESPACES[1].to_owned(),
            90..=93 => "default".to_owned(),
            94..=96 => format!("fuzz-ns-{}", rng.usize(..POOL_NAMES)),
            97..=98 => "fuzz-missing".to_owned(),
            _ => (*pick(rng, &["Bad_NS", "a%2Fb", "🦀", "x.y"])).to_owned(),
        };
        let name = if rng.u8(..100) < 6 {
            (*pick(rng, BAD_NAMES)).to_owned()
        } else {
            target.pool_name(rng.usize(..POOL_NAMES))
        };
        Builder {
            rng,
            target,
            op,
            memory,
            namespace,
            name,
            query: Vec::new(),
            headers: Vec::new(),
            depth: 0,
            copy_ops: 0,
            from_server: false,
        }
    }

    fn collection(&mut self) -> String {
        let t = self.target;
        let ns = if t.namespaced || self.rng.u8(..50) == 0 {
            format!("/namespaces/{}", encode(&self.namespace))
        } else {
            String::new()
        };
        format!("{}{ns}/{}", t.prefix(), t.plural)
    }

    fn item(&mut self) -> String {
        let collection = self.collection();
        format!("{collection}/{}", encode(&self.name))
    }

    fn valid_object(&self) -> Value {
        self.target.object(&self.name, &self.namespace)
    }

    /// The seed object, mutated 0 to 3 times (unmutated a third of the time).
    fn object_body(&mut self, value: Value) -> Body {
        let mut body = Body::new(value);
        let mutations = match self.rng.u8(..6) {
            0 | 1 => 0,
            2 | 3 => 1,
            4 => 2,
            _ => 3,
        };
        for _ in 0..mutations {
            mutate::mutate(self.rng, &mut body, self.target.kind);
        }
        body
    }

    /// Encodes an object body as JSON, YAML, protobuf (from the server's own) or garbage,
    /// with a matching (or not) `Content-Type`, and sometimes damages the bytes.
    fn encode_object(&mut self, body: &Body) -> Vec<u8> {
        self.depth = self.depth.max(body.depth);
        let (content_type, mut bytes) = match self.rng.u8(..100) {
            0..=74 => ("application/json".to_owned(), body.to_json()),
            75..=86 => ("application/yaml".to_owned(), body.to_yaml()),
            87..=94 => {
                let bytes = match self.memory.proto(self.target.plural, self.rng) {
                    Some(bytes) => {
                        self.from_server = true;
                        let mut bytes = bytes.to_vec();
                        if self.rng.u8(..3) > 0 {
                            for _ in 0..self.rng.usize(1..4) {
                                mutate::damage_bytes(self.rng, &mut bytes);
                            }
                        }
                        bytes
                    }
                    None => mutate::garbage_bytes(self.rng),
                };
                ("application/vnd.kubernetes.protobuf".to_owned(), bytes)
            }
            _ => (
                (*pick(
                    self.rng,
                    &[
                        "text/plain",
                        "application/json; charset=utf-16",
                        "application/xml",
                        "",
                        "application/json;;",
                        "application/x-www-form-urlencoded",
                        "*/*",
                    ],
                ))
                .to_owned(),
                body.to_json(),
            ),
        };
        if self.rng.u8(..10) == 0 {
            mutate::damage_bytes(self.rng, &mut bytes);
        }
        if !content_type.is_empty() {
            self.headers.push(("content-type".to_owned(), content_type));
        }
        bytes
    }

    fn maybe_param(&mut self, key: &str, values: &[&str], percent: u8) {
        if self.rng.u8(..100) < percent {
            let value = (*pick(self.rng, values)).to_owned();
            self.query.push((key.to_owned(), value));
        }
    }

    fn write_params(&mut self) {
        self.maybe_param("dryRun", &["All", "bogus", "", "All,All"], 10);
        self.maybe_param("fieldManager", &["fuzz", "", "ü", &"m".repeat(200)], 15);
        self.maybe_param(
            "fieldValidation",
            &["Strict", "Warn", "Ignore", "bogus", ""],
            20,
        );
        self.maybe_param("pretty", &["true", "1", "x"], 5);
    }

    fn list_params(&mut self) {
        self.maybe_param(
            "labelSelector",
            &[
                "app=fuzz",
                "app in (fuzz,x)",
                "!app",
                "app!=",
                "=",
                "app in (",
                "app notin ()",
                "a=b,c!=d,!e,f",
                "ä=ö",
                "a=b=c",
                ",,",
                "a>1",
                "app",
                &"k".repeat(500),
            ],
            25,
        );
        self.maybe_param(
            "fieldSelector",
            &[
                "metadata.name=f0",
                "metadata.namespace!=x",
                "spec.nodeName=",
                "status.phase=Running",
                "bogus=1",
                "metadata.name",
                "=",
                "metadata.name==a,metadata.name!=b",
                "a\\,b=c",
                "involvedObject.name=f0",
                "type=kubernetes.io/dockercfg",
            ],
            20,
        );
        self.maybe_param(
            "limit",
            &["1", "2", "0", "-1", "abc", "99999999999999999999"],
            25,
        );
        self.maybe_param(
            "continue",
            &[
                "garbage",
                "",
                "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJmMCJ9",
                "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiXHUwMDAwIn0",
                "e30",
            ],
            10,
        );
        self.resource_version_params();
        self.maybe_param("timeoutSeconds", &["1", "0", "-1", "abc", "99999999999"], 5);
    }

    fn resource_version_params(&mut self) {
        // A resourceVersion newer than the store is held for 3 s before its 504 (as
        // upstream's watch cache does): rare, or it would be most of a run's time.
        if self.rng.u16(..2000) == 0 {
            self.query
                .push(("resourceVersion".to_owned(), "999999999".to_owned()));
        } else {
            self.maybe_param("resourceVersion", READ_RESOURCE_VERSIONS, 20);
        }
        self.maybe_param(
            "resourceVersionMatch",
            &["NotOlderThan", "Exact", "bogus", ""],
            10,
        );
    }

    /// Sometimes a parameter of any verb, valid or not, whatever the request is.
    fn stray_params(&mut self) {
        if self.rng.u8(..10) > 0 {
            return;
        }
        let pool: &[(&str, &[&str])] = &[
            ("watch", &["true", "1", "false", "bogus"]),
            ("propagationPolicy", &["Foreground", "Orphan", "bogus"]),
            ("gracePeriodSeconds", &["0", "-1", "abc"]),
            ("timeoutSeconds", &["1", "abc"]),
            ("allowWatchBookmarks", &["true", "x"]),
            ("sendInitialEvents", &["true", "false", "x"]),
            ("includeObject", &["None", "Object", "Metadata", "bogus"]),
            ("orphanDependents", &["true", "false", "x"]),
            ("force", &["true", "false", "x"]),
            ("resourceVersion", READ_RESOURCE_VERSIONS),
            ("limit", &["1", "-5"]),
            ("foo", &["bar"]),
            ("", &[""]),
            ("%zz", &["%zz"]),
        ];
        for _ in 0..self.rng.usize(1..4) {
            let (key, values) = *pick(self.rng, pool);
            let value = (*pick(self.rng, values)).to_owned();
            self.query.push((key.to_owned(), value));
        }
    }

    fn accept(&mut self) {
        if self.rng.u8(..100) < 45 {
            return;
        }
        let accept = *pick(
            self.rng,
            &[
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf",
                "application/vnd.kubernetes.protobuf, application/json",
                "application/json;as=Table;v=v1;g=meta.k8s.io",
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
                "application/yaml;as=Table;v=v1;g=meta.k8s.io",
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
                "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
                "application/json;as=Table;v=v2;g=meta.k8s.io",
                "application/json;stream=watch",
                "application/json;as=Bogus;v=v1;g=meta.k8s.io",
                "*/*",
                "text/html",
                "a/b;c=;=",
                "application/*;q=0.5, */*;q=0",
                "application/json;q=abc",
                ",",
            ],
        );
        self.headers.push(("accept".to_owned(), accept.to_owned()));
    }

    fn build(mut self) -> FuzzRequest {
        let (method, path, body, watch) = match self.op {
            Op::Create => {
                let mut value = self.valid_object();
                if self.rng.u8(..10) == 0 {
                    mutate::remove(&mut value, "/metadata/name");
                    mutate::set(&mut value, "/metadata/generateName", json!("gen-"));
                }
                let body = self.object_body(value);
                let bytes = self.encode_object(&body);
                self.write_params();
                (Method::POST, self.collection(), Some(bytes), false)
            }
            Op::Update => {
                let mut value = self.valid_object();
                self.current_resource_version(&mut value);
                let body = self.object_body(value);
                let bytes = self.encode_object(&body);
                self.write_params();
                (Method::PUT, self.item(), Some(bytes), false)
            }
            Op::Get => {
                self.resource_version_params();
                (Method::GET, self.item(), None, false)
            }
            Op::List => {
                self.list_params();
                if self.rng.u8(..20) == 0 {
                    // All namespaces.
                    let t = self.target;
                    (
                        Method::GET,
                        format!("{}/{}", t.prefix(), t.plural),
                        None,
                        false,
                    )
                } else {
                    (Method::GET, self.collection(), None, false)
                }
            }
            Op::Watch => {
                self.list_params();
                self.maybe_param("allowWatchBookmarks", &["true", "false", "x"], 30);
                self.maybe_param("sendInitialEvents", &["true", "false", "x"], 20);
                let path = if self.rng.u8(..8) == 0 {
                    // The legacy form, /api/v1/watch/namespaces/NS/PLURAL.
                    let t = self.target;
                    let ns = if t.namespaced {
                        format!("/namespaces/{}", encode(&self.namespace))
                    } else {
                        String::new()
                    };
                    format!("{}/watch{ns}/{}", t.prefix(), t.plural)
                } else {
                    let value = *pick(self.rng, &["true", "1", "True", "bogus"]);
                    self.query.insert(0, ("watch".to_owned(), value.to_owned()));
                    self.collection()
                };
                (Method::GET, path, None, true)
            }
            Op::Delete => {
                self.maybe_param(
                    "propagationPolicy",
                    &["Foreground", "Background", "Orphan", "bogus"],
                    25,
                );
                self.maybe_param("gracePeriodSeconds", &["0", "-1", "abc", "30"], 15);
                self.maybe_param("dryRun", &["All", "bogus"], 10);
                self.maybe_param("orphanDependents", &["true", "false", "x"], 5);
                let body = self.delete_options();
                (Method::DELETE, self.item(), body, false)
            }
            Op::DeleteCollection => {
                self.list_params();
                self.maybe_param("propagationPolicy", &["Background", "Orphan", "bogus"], 25);
                let body = self.delete_options();
                (Method::DELETE, self.collection(), body, false)
            }
            Op::JsonPatch => {
                let body = self.json_patch();
                self.patch_type("application/json-patch+json");
                self.write_params();
                let path = self.item_or_subresource();
                (Method::PATCH, path, Some(body), false)
            }
            Op::MergePatch | Op::StrategicPatch => {
                let body = self.merge_patch(self.op == Op::StrategicPatch);
                let kind = if self.op == Op::StrategicPatch {
                    "application/strategic-merge-patch+json"
                } else {
                    "application/merge-patch+json"
                };
                self.patch_type(kind);
                self.write_params();
                let path = self.item_or_subresource();
                (Method::PATCH, path, Some(body), false)
            }
            Op::Apply => {
                let value = self.valid_object();
                let body = self.object_body(value);
                self.depth = self.depth.max(body.depth);
                let mut bytes = if self.rng.u8(..4) == 0 {
                    body.to_json()
                } else {
                    body.to_yaml()
                };
                if self.rng.u8(..10) == 0 {
                    mutate::damage_bytes(self.rng, &mut bytes);
                }
                self.patch_type("application/apply-patch+yaml");
                if self.rng.u8(..10) > 0 {
                    self.query
                        .push(("fieldManager".to_owned(), "fuzz-apply".to_owned()));
                }
                self.maybe_param("force", &["true", "false", "x"], 30);
                self.write_params();
                let path = self.item_or_subresource();
                (Method::PATCH, path, Some(bytes), false)
            }
            Op::Status | Op::Scale => self.subresource(),
            Op::Garbage => self.garbage(),
            Op::Path => {
                let path = *pick(
                    self.rng,
                    &[
                        "/api",
                        "/apis",
                        "/apis/fuzz.example.com",
                        "/apis/fuzz.example.com/v1",
                        "/apis/f0.fuzz.example.com/v1",
                        "/openapi/v3",
                        "/openapi/v3/apis/fuzz.example.com/v1",
                        "/openapi/v3/api/v1",
                        "/version",
                        "/healthz/ping",
                        "/readyz/bogus",
                        "/livez",
                        "/api/v2",
                        "/apis/bogus/v1/things",
                        "/api/v1/namespaces/fuzz-a/pods/f0/log",
                        "/api/v1/namespaces/fuzz-a/pods/f0/exec",
                        "/api/v1/namespaces/fuzz-a/configmaps/f0/",
                        "//api//v1",
                        "/api/v1/namespaces/fuzz-a/configmaps/f0/status",
                        "/api/v1/namespaces//configmaps",
                        "/api/v1/namespaces/fuzz-a/bogus",
                        "/apis/apps/v1/namespaces/fuzz-a/deployments/f0/scale/extra",
                        "/api/v1/namespaces/fuzz-a/pods/f0/binding",
                        "/api/v1/namespaces/fuzz-a/finalize",
                    ],
                );
                let method = if self.rng.u8(..4) == 0 {
                    Method::POST
                } else {
                    Method::GET
                };
                (method, path.to_owned(), None, false)
            }
        };
        if !watch {
            self.stray_params();
        }
        self.accept();
        let watch =
            watch || self.query.iter().any(|(k, _)| k == "watch") || path.contains("/watch/");
        let query = self
            .query
            .iter()
            .map(|(k, v)| {
                if k == "%zz" {
                    "%zz=%zz".to_owned()
                } else {
                    format!("{}={}", encode(k), encode(v))
                }
            })
            .collect::<Vec<_>>()
            .join("&");
        let path_and_query = if query.is_empty() {
            path
        } else {
            format!("{path}?{query}")
        };
        FuzzRequest {
            op: self.op,
            resource: if self.op == Op::Path {
                "-"
            } else {
                self.target.plural
            },
            method,
            path_and_query,
            headers: self.headers,
            body,
            watch,
            depth: self.depth,
            copy_ops: self.copy_ops,
            from_server: self.from_server,
        }
    }

    /// Puts the last resourceVersion seen in `value` (most of the time for kinds that need
    /// one on PUT, sometimes for the others).
    fn current_resource_version(&mut self, value: &mut Value) {
        let percent = if conditional_update(self.target) {
            85
        } else {
            30
        };
        if self.rng.u8(..100) >= percent {
            return;
        }
        let namespace = if self.target.namespaced {
            self.namespace.as_str()
        } else {
            ""
        };
        if let Some(rv) = self
            .memory
            .resource_version(self.target.plural, namespace, &self.name)
        {
            self.from_server = true;
            mutate::set(value, "/metadata/resourceVersion", json!(rv));
        }
    }

    /// A patch's own media type most of the time, another now and then.
    fn patch_type(&mut self, own: &str) {
        let content_type = if self.rng.u8(..12) > 0 {
            own
        } else {
            *pick(
                self.rng,
                &[
                    "application/json",
                    "application/yaml",
                    "application/apply-patch+json",
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                    "application/apply-patch+yaml",
                    "application/vnd.kubernetes.protobuf",
                    "text/plain",
                ],
            )
        };
        self.headers
            .push(("content-type".to_owned(), content_type.to_owned()));
    }

    fn item_or_subresource(&mut self) -> String {
        let item = self.item();
        if !self.target.subresources.is_empty() && self.rng.u8(..8) == 0 {
            let sub = *pick(self.rng, self.target.subresources);
            format!("{item}/{sub}")
        } else {
            item
        }
    }

    fn delete_options(&mut self) -> Option<Vec<u8>> {
        if self.rng.bool() {
            return None;
        }
        let mut options = json!({"kind": "DeleteOptions", "apiVersion": "v1"});
        if self.rng.bool() {
            options["propagationPolicy"] = json!(pick(
                self.rng,
                &["Foreground", "Background", "Orphan", "bogus"]
            ));
        }
        if self.rng.u8(..3) == 0 {
            options["gracePeriodSeconds"] = json!(pick(self.rng, &[0, -1, 30]));
        }
        if self.rng.u8(..4) == 0 {
            options["preconditions"] = json!({
                "uid": pick(self.rng, mutate::BAD_UIDS),
                "resourceVersion": pick(self.rng, BAD_RESOURCE_VERSIONS)
            });
        }
        if self.rng.u8(..6) == 0 {
            options["dryRun"] = json!(["All"]);
        }
        let mut body = Body::new(options);
        if self.rng.u8(..3) == 0 {
            mutate::mutate(self.rng, &mut body, "DeleteOptions");
        }
        self.depth = self.depth.max(body.depth);
        let mut bytes = body.to_json();
        if self.rng.u8(..10) == 0 {
            mutate::damage_bytes(self.rng, &mut bytes);
        }
        self.headers
            .push(("content-type".to_owned(), "application/json".to_owned()));
        Some(bytes)
    }

    /// A JSON patch of 1 to 6 operations on the seed's fields (and some that are not there),
    /// or a chain of `copy` operations that doubles a field each time.
    fn json_patch(&mut self) -> Vec<u8> {
        let object = self.valid_object();
        let pointers = mutate::pointers(&object);
        let mut body = Body::new(json!([]));
        let mut ops = Vec::new();
        if self.rng.u8(..12) == 0 {
            // Doubling: copy /x into /x/y, again and again.
            let base = *pick(
                self.rng,
                &[
                    "/metadata/annotations",
                    "/spec",
                    "/data",
                    "/metadata/labels",
                ],
            );
            for i in 0..self.rng.usize(1..=MAX_DOUBLINGS) {
                ops.push(json!({"op": "copy", "from": base, "path": format!("{base}/c{i}")}));
            }
        }
        for _ in 0..self.rng.usize(1..7) {
            let op = *pick(
                self.rng,
                &["add", "remove", "replace", "copy", "move", "test", "bogus"],
            );
            let path = self.patch_pointer(&pointers);
            let mut entry = json!({"op": op, "path": path});
            match op {
                "copy" | "move" => entry["from"] = json!(self.patch_pointer(&pointers)),
                "remove" => {}
                _ => {
                    let value = if self.rng.bool() {
                        let old = object.pointer(&path).cloned().unwrap_or(Value::Null);
                        mutate::wrong_type(self.rng, &mut body, &old)
                    } else {
                        mutate::any_value(self.rng, &mut body)
                    };
                    entry["value"] = value;
                }
            }
            if self.rng.u8(..15) == 0 {
                // A malformed operation: no path, a number path, an unknown field.
                match self.rng.u8(..3) {
                    0 => {
                        if let Some(map) = entry.as_object_mut() {
                            map.remove("path");
                        }
                    }
                    1 => entry["path"] = json!(7),
                    _ => entry["extra"] = json!(true),
                }
            }
            ops.push(entry);
        }
        self.copy_ops = ops.iter().filter(|op| op["op"] == "copy").count();
        body.value = Value::Array(ops);
        self.depth = self.depth.max(body.depth);
        let mut bytes = body.to_json();
        if self.rng.u8(..12) == 0 {
            mutate::damage_bytes(self.rng, &mut bytes);
        }
        bytes
    }

    fn patch_pointer(&mut self, pointers: &[String]) -> String {
        match self.rng.u8(..10) {
            0 => (*pick(
                self.rng,
                &[
                    "",
                    "/",
                    "/-",
                    "~2",
                    "/metadata/labels/a~1b",
                    "/spec/containers/999",
                    "/spec/containers/-",
                    "/metadata/x/y/z",
                    "/data/🦀",
                    "metadata",
                ],
            ))
            .to_owned(),
            1 => format!("{}/new", pick(self.rng, pointers)),
            _ => pick(self.rng, pointers).clone(),
        }
    }

    /// A merge patch: part of a mutated seed, some fields set to `null`; a strategic one also
    /// gets directives (`$patch`, `$retainKeys`, `$setElementOrder`, `$deleteFromPrimitiveList`).
    fn merge_patch(&mut self, strategic: bool) -> Vec<u8> {
        let value = self.valid_object();
        let mut body = self.object_body(value);
        let pointers = mutate::pointers(&body.value);
        for _ in 0..self.rng.usize(0..3) {
            let at = pick(self.rng, &pointers).clone();
            if self.rng.bool() {
                mutate::remove(&mut body.value, &at);
            } else if !at.is_empty() {
                mutate::set(&mut body.value, &at, Value::Null);
            }
        }
        if strategic && self.rng.bool() {
            let (at, directive) = match self.rng.u8(..8) {
                0 => (
                    "/spec/template/spec/containers",
                    json!([{"name": "c", "$patch": "delete"}]),
                ),
                1 => (
                    "/spec/template/spec/$setElementOrder~1containers",
                    json!([{"name": "c"}, {"name": "z"}]),
                ),
                2 => (
                    "/metadata/$deleteFromPrimitiveList~1finalizers",
                    json!(["x"]),
                ),
                3 => ("/spec/$retainKeys", json!(["replicas", "bogus"])),
                4 => (
                    "/$patch",
                    json!(pick(self.rng, &["replace", "delete", "merge", "bogus"])),
                ),
                5 => (
                    "/spec/containers",
                    json!([{"$patch": "replace"}, {"name": "c", "image": "x"}]),
                ),
                6 => ("/metadata/labels/$patch", json!("delete")),
                _ => (
                    "/spec/ports",
                    json!([{"port": 80, "$patch": "delete"}, {"port": "x"}]),
                ),
            };
            mutate::set(&mut body.value, at, directive);
        }
        self.depth = self.depth.max(body.depth);
        let mut bytes = body.to_json();
        if self.rng.u8(..12) == 0 {
            mutate::damage_bytes(self.rng, &mut bytes);
        }
        bytes
    }

    fn subresource(&mut self) -> (Method, String, Option<Vec<u8>>, bool) {
        let subresource = if self.op == Op::Scale {
            "scale"
        } else {
            "status"
        };
        let path = format!("{}/{subresource}", self.item());
        let method = pick(
            self.rng,
            &[
                Method::GET,
                Method::PUT,
                Method::PUT,
                Method::PATCH,
                Method::PATCH,
            ],
        )
        .clone();
        if method == Method::GET {
            return (method, path, None, false);
        }
        let value = if subresource == "scale" {
            let mut scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {"name": self.name}, "spec": {"replicas": self.rng.u8(..5)}});
            if self.target.namespaced {
                scale["metadata"]["namespace"] = json!(self.namespace);
            }
            scale
        } else {
            let mut object = self.valid_object();
            object["status"] = json!({"replicas": 1, "readyReplicas": 1, "phase": "Running",
                "podIP": "10.0.0.5", "size": 2, "observedGeneration": 1,
                "conditions": [{"type": "Ready", "status": "True",
                    "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "Fuzz",
                    "message": "fuzzed"}]});
            object
        };
        let mut value = value;
        if method == Method::PUT {
            self.current_resource_version(&mut value);
        }
        let body = self.object_body(value);
        let bytes = if method == Method::PATCH {
            self.depth = self.depth.max(body.depth);
            let kind = *pick(
                self.rng,
                &[
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                    "application/apply-patch+yaml",
                ],
            );
            self.headers
                .push(("content-type".to_owned(), kind.to_owned()));
            if kind.contains("apply") {
                self.query
                    .push(("fieldManager".to_owned(), "fuzz-apply".to_owned()));
                body.to_yaml()
            } else {
                body.to_json()
            }
        } else {
            self.encode_object(&body)
        };
        self.write_params();
        (method, path, Some(bytes), false)
    }

    fn garbage(&mut self) -> (Method, String, Option<Vec<u8>>, bool) {
        let method = pick(
            self.rng,
            &[
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
                Method::HEAD,
                Method::OPTIONS,
            ],
        )
        .clone();
        let path = match self.rng.u8(..5) {
            0 => self.collection(),
            1 => self.item(),
            2 => format!(
                "{}/{}",
                self.item(),
                pick(
                    self.rng,
                    &["status", "scale", "bogus", "finalize", "binding"]
                )
            ),
            3 => format!("{}/{}/extra/segments", self.item(), "status"),
            // Not a huge string: a URI longer than 64 KiB cannot even be sent.
            _ => format!(
                "{}/{}",
                self.target.prefix(),
                encode(pick::<&str>(self.rng, mutate::ODD_STRINGS))
            ),
        };
        let body = match self.rng.u8(..4) {
            0 => mutate::garbage_bytes(self.rng),
            1 => {
                let mut body = Body::new(json!({}));
                body.value = mutate::any_value(self.rng, &mut body);
                self.depth = self.depth.max(body.depth);
                body.to_json()
            }
            2 => {
                let text = mutate::odd_string(self.rng);
                base64::engine::general_purpose::STANDARD
                    .encode(text)
                    .into_bytes()
            }
            _ => {
                let value = self.valid_object();
                let mut bytes = Body::new(value).to_json();
                mutate::damage_bytes(self.rng, &mut bytes);
                bytes
            }
        };
        let content_type = *pick(
            self.rng,
            &[
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf",
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
                "application/apply-patch+yaml",
                "application/octet-stream",
                "",
            ],
        );
        if !content_type.is_empty() {
            self.headers
                .push(("content-type".to_owned(), content_type.to_owned()));
        }
        (method, path, Some(body), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_generates_the_same_requests() {
        let memory = Memory::default();
        let first: Vec<FuzzRequest> = (0..300).map(|i| generate(42, i, &memory)).collect();
        let again: Vec<FuzzRequest> = (0..300).map(|i| generate(42, i, &memory)).collect();
        assert_eq!(first, again);
        let other: Vec<FuzzRequest> = (0..300).map(|i| generate(43, i, &memory)).collect();
        assert_ne!(first, other);
    }

    #[test]
    fn every_operation_and_target_is_generated() {
        let memory = Memory::default();
        let requests: Vec<FuzzRequest> = (0..5000).map(|i| generate(7, i, &memory)).collect();
        for (op, _) in OPS {
            assert!(
                requests.iter().any(|r| r.op == *op),
                "{op:?} never generated"
            );
        }
        for target in TARGETS {
            assert!(
                requests.iter().any(|r| r.resource == target.plural),
                "{} never generated",
                target.plural
            );
        }
        assert!(requests.iter().any(|r| r.depth > 128));
        assert!(requests.iter().any(|r| r.copy_ops > 3));
        assert!(
            requests
                .iter()
                .any(|r| r.content_type() == "application/yaml")
        );
    }

    #[test]
    fn learnt_resource_versions_are_sent_on_update() {
        let mut memory = Memory::default();
        let lease = FuzzRequest {
            op: Op::Get,
            resource: "leases",
            method: Method::GET,
            path_and_query: String::new(),
            headers: Vec::new(),
            body: None,
            watch: false,
            depth: 0,
            copy_ops: 0,
            from_server: false,
        };
        for namespace in NAMESPACES {
            for i in 0..POOL_NAMES {
                let body = json!({"metadata": {"name": format!("f{i}"), "namespace": namespace,
                    "resourceVersion": "4242"}});
                memory.learn(&lease, 200, "application/json", body.to_string().as_bytes());
            }
        }
        let sent = (0..5_000)
            .map(|i| generate(9, i, &memory))
            .filter(|r| r.op == Op::Update && r.resource == "leases")
            .filter(|r| {
                r.body
                    .as_ref()
                    .is_some_and(|b| String::from_utf8_lossy(b).contains("4242"))
            })
            .count();
        assert!(sent > 0);
    }
}
