//! The final sweep: whatever the fuzzing left behind must still be served. Every resource the
//! server lists in discovery is listed across namespaces; every object is read as JSON, as
//! protobuf (built-in kinds; custom resources have no protobuf form) and as a Table, and every
//! object created during the run is deleted and must then be gone. Finalizers the fuzzer set
//! are removed after the delete, as their owner would; namespaces stay Terminating, as they do
//! without the namespace controller (`--no-controllers`).

use std::collections::HashSet;

use anyhow::{Context, bail};
use reqwest::Client;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::client::status_message;
use crate::generate::encode;
use crate::report::{Finding, FindingKind, Report, SweepReport};

/// Objects per page when listing.
const PAGE: usize = 500;
/// The Table media type kubectl asks for.
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
/// kubemock's own API group (the request log), served as JSON and YAML only.
const TESTING_GROUP: &str = "testing.kubemock.dev";
/// Groups kubemock serves whose kinds have no protobuf form.
const JSON_ONLY_GROUPS: [&str; 2] = [TESTING_GROUP, "kwok.x-k8s.io"];
/// The protobuf media type.
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A resource from discovery.
#[derive(Debug, Clone)]
pub(crate) struct Resource {
    prefix: String,
    plural: String,
    namespaced: bool,
    deletable: bool,
    /// Served as protobuf (a built-in kind).
    protobuf: bool,
}

/// An object found by listing.
#[derive(Debug, Clone)]
struct Object {
    resource: usize,
    path: String,
    uid: String,
}

/// A failed check, to be recorded.
pub(crate) struct Failure {
    pub(crate) check: &'static str,
    pub(crate) method: &'static str,
    pub(crate) path: String,
    pub(crate) status: Option<u16>,
    pub(crate) elapsed_ms: f64,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn into_finding(self) -> Finding {
        Finding {
            index: None,
            kind: FindingKind::Sweep(self.check),
            op: "sweep".to_owned(),
            method: self.method.to_owned(),
            path: self.path,
            status: self.status,
            elapsed_ms: self.elapsed_ms,
            message: self.message,
            content_type: String::new(),
            depth: 0,
            copy_ops: 0,
            known: None,
        }
    }
}

/// A plain answer: status, content type, body, time.
struct Answer {
    status: u16,
    content_type: String,
    body: Vec<u8>,
    elapsed_ms: f64,
}

async fn request(
    client: &Client,
    method: reqwest::Method,
    url: &str,
    accept: Option<&str>,
    body: Option<(&str, Vec<u8>)>,
) -> Result<Answer, String> {
    let start = Instant::now();
    let mut builder = client.request(method, url);
    if let Some(accept) = accept {
        builder = builder.header("accept", accept);
    }
    if let Some((content_type, body)) = body {
        builder = builder.header("content-type", content_type).body(body);
    }
    let response = tokio::time::timeout(crate::client::HANG_LIMIT, builder.send())
        .await
        .map_err(|_| "no answer in time".to_owned())?
        .map_err(|err| format!("transport: {err}"))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = tokio::time::timeout(crate::client::HANG_LIMIT, response.bytes())
        .await
        .map_err(|_| "no body in time".to_owned())?
        .map_err(|err| format!("reading the body: {err}"))?;
    Ok(Answer {
        status,
        content_type,
        body: body.to_vec(),
        elapsed_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}

async fn get_json(client: &Client, url: &str) -> anyhow::Result<Value> {
    let answer = request(client, reqwest::Method::GET, url, None, None)
        .await
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("GET {url}"))?;
    if answer.status != 200 {
        bail!(
            "GET {url}: {} {}",
            answer.status,
            status_message(&answer.body)
        );
    }
    serde_json::from_slice(&answer.body).with_context(|| format!("GET {url}: not JSON"))
}

/// Every listable resource in discovery, once per group and plural (preferred version first).
pub(crate) async fn discover(client: &Client, base: &str) -> anyhow::Result<Vec<Resource>> {
    let mut prefixes = vec!["/api/v1".to_owned()];
    let groups = get_json(client, &format!("{base}/apis")).await?;
    for group in groups["groups"].as_array().into_iter().flatten() {
        for version in group["versions"].as_array().into_iter().flatten() {
            if let Some(gv) = version["groupVersion"].as_str() {
                prefixes.push(format!("/apis/{gv}"));
            }
        }
    }
    let definitions = get_json(
        client,
        &format!("{base}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
    )
    .await?;
    let custom: HashSet<(String, String)> = definitions["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|crd| {
            Some((
                crd["spec"]["group"].as_str()?.to_owned(),
                crd["spec"]["names"]["plural"].as_str()?.to_owned(),
            ))
        })
        .collect();
    let mut seen = HashSet::new();
    let mut resources = Vec::new();
    for prefix in prefixes {
        let group = prefix
            .strip_prefix("/apis/")
            .and_then(|gv| gv.split_once('/'))
            .map_or("", |(group, _)| group)
            .to_owned();
        let list = match get_json(client, &format!("{base}{prefix}")).await {
            Ok(list) => list,
            // A definition deleted since /apis was read.
            Err(_) if !group.is_empty() && custom.iter().all(|(g, _)| *g != group) => continue,
            Err(err) => return Err(err),
        };
        for resource in list["resources"].as_array().into_iter().flatten() {
            let Some(plural) = resource["name"].as_str() else {
                continue;
            };
            let verbs: Vec<&str> = resource["verbs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if plural.contains('/') || !verbs.contains(&"list") {
                continue;
            }
            if !seen.insert((group.clone(), plural.to_owned())) {
                continue;
            }
            resources.push(Resource {
                prefix: prefix.clone(),
                plural: plural.to_owned(),
                namespaced: resource["namespaced"].as_bool().unwrap_or(false),
                deletable: verbs.contains(&"delete"),
                // Custom resources have no protobuf form, nor have kubemock's own
                // `testing.kubemock.dev` and kwok's `kwok.x-k8s.io` (a CRD where kwok runs;
                // no .proto schema); all answer a protobuf-only Accept with 406, as
                // kube-apiserver does for CRDs.
                protobuf: !JSON_ONLY_GROUPS.contains(&group.as_str())
                    && !custom.contains(&(group.clone(), plural.to_owned())),
            });
        }
    }
    Ok(resources)
}

/// Lists every object of every resource (JSON, paged).
async fn list_all(
    client: &Client,
    base: &str,
    resources: &[Resource],
    failures: &mut Vec<Failure>,
) -> Vec<Object> {
    let mut objects = Vec::new();
    for (i, resource) in resources.iter().enumerate() {
        let mut continue_token = String::new();
        loop {
            let path = format!(
                "{}/{}?limit={PAGE}&continue={}",
                resource.prefix,
                resource.plural,
                encode(&continue_token)
            );
            let answer = match request(
                client,
                reqwest::Method::GET,
                &format!("{base}{path}"),
                None,
                None,
            )
            .await
            {
                Ok(answer) if answer.status == 200 => answer,
                Ok(answer) => {
                    failures.push(Failure {
                        check: "list",
                        method: "GET",
                        path,
                        status: Some(answer.status),
                        elapsed_ms: answer.elapsed_ms,
                        message: status_message(&answer.body),
                    });
                    break;
                }
                Err(message) => {
                    failures.push(Failure {
                        check: "list",
                        method: "GET",
                        path,
                        status: None,
                        elapsed_ms: 0.0,
                        message,
                    });
                    break;
                }
            };
            let list = match serde_json::from_slice::<Value>(&answer.body) {
                Ok(list) => list,
                Err(err) => {
                    // Its objects are neither read nor deleted: the failure says why.
                    failures.push(Failure {
                        check: "list",
                        method: "GET",
                        path,
                        status: Some(answer.status),
                        elapsed_ms: answer.elapsed_ms,
                        message: format!("the list is not JSON: {err}"),
                    });
                    break;
                }
            };
            for item in list["items"].as_array().into_iter().flatten() {
                let metadata = &item["metadata"];
                let name = metadata["name"].as_str().unwrap_or("");
                let namespace = metadata["namespace"].as_str().unwrap_or("");
                let scope = if resource.namespaced {
                    format!("/namespaces/{}", encode(namespace))
                } else {
                    String::new()
                };
                objects.push(Object {
                    resource: i,
                    path: format!(
                        "{}{scope}/{}/{}",
                        resource.prefix,
                        resource.plural,
                        encode(name)
                    ),
                    uid: metadata["uid"].as_str().unwrap_or("").to_owned(),
                });
            }
            match list["metadata"]["continue"].as_str() {
                Some(token) if !token.is_empty() => continue_token = token.to_owned(),
                _ => break,
            }
        }
    }
    objects
}

/// The uids of every object the server has now.
pub(crate) async fn inventory(client: &Client, base: &str) -> anyhow::Result<HashSet<String>> {
    let resources = discover(client, base).await?;
    let mut failures = Vec::new();
    let objects = list_all(client, base, &resources, &mut failures).await;
    if let Some(failure) = failures.first() {
        bail!(
            "listing {} before the run: {:?} {}",
            failure.path,
            failure.status,
            failure.message
        );
    }
    Ok(objects.into_iter().map(|o| o.uid).collect())
}

/// Reads `path` with `accept` and checks the answer with `ok`.
async fn check_read(
    client: &Client,
    base: &str,
    path: &str,
    accept: Option<&str>,
    check: &'static str,
    failures: &mut Vec<Failure>,
    ok: impl Fn(&Answer) -> Result<(), String>,
) {
    match request(
        client,
        reqwest::Method::GET,
        &format!("{base}{path}"),
        accept,
        None,
    )
    .await
    {
        Ok(answer) => {
            let verdict = if answer.status == 200 {
                ok(&answer)
            } else {
                Err(status_message(&answer.body))
            };
            if let Err(message) = verdict {
                failures.push(Failure {
                    check,
                    method: "GET",
                    path: path.to_owned(),
                    status: Some(answer.status),
                    elapsed_ms: answer.elapsed_ms,
                    message,
                });
            }
        }
        Err(message) => failures.push(Failure {
            check,
            method: "GET",
            path: path.to_owned(),
            status: None,
            elapsed_ms: 0.0,
            message,
        }),
    }
}

fn is_protobuf(answer: &Answer) -> Result<(), String> {
    if answer.content_type.starts_with(PROTOBUF) && answer.body.starts_with(b"k8s\0") {
        Ok(())
    } else {
        Err(format!(
            "answered {} instead of protobuf",
            if answer.content_type.is_empty() {
                "no content type"
            } else {
                &answer.content_type
            }
        ))
    }
}

fn is_table(answer: &Answer) -> Result<(), String> {
    match serde_json::from_slice::<Value>(&answer.body) {
        Ok(table) if table["kind"] == "Table" => Ok(()),
        _ => Err("the answer is not a Table".to_owned()),
    }
}

fn is_json_object(answer: &Answer) -> Result<(), String> {
    match serde_json::from_slice::<Value>(&answer.body) {
        Ok(Value::Object(_)) => Ok(()),
        _ => Err("the answer is not a JSON object".to_owned()),
    }
}

/// Runs the sweep; failed checks go to `failures`, figures to the report.
pub(crate) async fn sweep(
    client: &Client,
    base: &str,
    preexisting: &HashSet<String>,
    report: &mut Report,
    failures: &mut Vec<Failure>,
) -> anyhow::Result<()> {
    let resources = discover(client, base).await?;
    let objects = list_all(client, base, &resources, failures).await;
    let mut figures = SweepReport {
        resources: resources.len(),
        objects: objects.len(),
        ..SweepReport::default()
    };
    for resource in &resources {
        let path = format!("{}/{}", resource.prefix, resource.plural);
        if resource.protobuf {
            check_read(
                client,
                base,
                &path,
                Some(PROTOBUF),
                "list-protobuf",
                failures,
                is_protobuf,
            )
            .await;
        }
        check_read(
            client,
            base,
            &path,
            Some(TABLE),
            "list-table",
            failures,
            is_table,
        )
        .await;
    }
    for object in &objects {
        let resource = &resources[object.resource];
        check_read(
            client,
            base,
            &object.path,
            None,
            "get-json",
            failures,
            is_json_object,
        )
        .await;
        if resource.protobuf {
            check_read(
                client,
                base,
                &object.path,
                Some(PROTOBUF),
                "get-protobuf",
                failures,
                is_protobuf,
            )
            .await;
        }
        check_read(
            client,
            base,
            &object.path,
            Some(TABLE),
            "get-table",
            failures,
            is_table,
        )
        .await;
    }
    // Delete what the run created: namespaced objects and custom resources, then other
    // cluster-scoped ones, definitions, and namespaces last.
    let rank = |object: &Object| {
        let resource = &resources[object.resource];
        match resource.plural.as_str() {
            "namespaces" if resource.prefix == "/api/v1" => 3,
            "customresourcedefinitions" => 2,
            _ if resource.namespaced => 0,
            _ => 1,
        }
    };
    let mut doomed: Vec<&Object> = objects
        .iter()
        .filter(|o| {
            if preexisting.contains(&o.uid) {
                figures.preexisting += 1;
                false
            } else {
                resources[o.resource].deletable
            }
        })
        .collect();
    doomed.sort_by_key(|o| rank(o));
    for object in doomed {
        let resource = &resources[object.resource];
        let namespace = resource.prefix == "/api/v1" && resource.plural == "namespaces";
        match delete(client, base, object, resource).await {
            Ok(Gone::Yes) => figures.deleted += 1,
            Ok(Gone::Terminating) if namespace => figures.terminating_namespaces += 1,
            Ok(Gone::Terminating) => failures.push(Failure {
                check: "delete-not-gone",
                method: "DELETE",
                path: object.path.clone(),
                status: Some(200),
                elapsed_ms: 0.0,
                message: "still there after the delete and without finalizers".to_owned(),
            }),
            Err(failure) => failures.push(failure),
        }
    }
    report.sweep = figures;
    Ok(())
}

enum Gone {
    Yes,
    /// Still there, marked for deletion.
    Terminating,
}

/// Deletes `object`, removes its finalizers if it has any, and checks it is gone.
async fn delete(
    client: &Client,
    base: &str,
    object: &Object,
    resource: &Resource,
) -> Result<Gone, Failure> {
    let grace = if resource.plural == "pods" {
        "&gracePeriodSeconds=0"
    } else {
        ""
    };
    let path = format!("{}?propagationPolicy=Background{grace}", object.path);
    let fail = |check: &'static str, method: &'static str, status, ms, message| Failure {
        check,
        method,
        path: object.path.clone(),
        status,
        elapsed_ms: ms,
        message,
    };
    let answer = request(
        client,
        reqwest::Method::DELETE,
        &format!("{base}{path}"),
        None,
        None,
    )
    .await
    .map_err(|m| fail("delete", "DELETE", None, 0.0, m))?;
    if !matches!(answer.status, 200 | 202 | 404) {
        return Err(fail(
            "delete",
            "DELETE",
            Some(answer.status),
            answer.elapsed_ms,
            status_message(&answer.body),
        ));
    }
    for attempt in 0..2 {
        let url = format!("{base}{}", object.path);
        let answer = request(client, reqwest::Method::GET, &url, None, None)
            .await
            .map_err(|m| fail("delete-get", "GET", None, 0.0, m))?;
        match answer.status {
            404 => return Ok(Gone::Yes),
            200 => {}
            status => {
                return Err(fail(
                    "delete-get",
                    "GET",
                    Some(status),
                    answer.elapsed_ms,
                    status_message(&answer.body),
                ));
            }
        }
        let value: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        if !object.uid.is_empty() && value["metadata"]["uid"].as_str() != Some(object.uid.as_str())
        {
            // Deleted and made again by a controller, as kube-apiserver's autoregistration
            // does for the local APIService of every served group-version.
            return Ok(Gone::Yes);
        }
        let finalizers = value["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        if !finalizers || attempt > 0 {
            return if value["metadata"]["deletionTimestamp"].is_string() {
                Ok(Gone::Terminating)
            } else {
                Err(fail(
                    "delete-not-gone",
                    "GET",
                    Some(200),
                    answer.elapsed_ms,
                    "still there after the delete, not marked for deletion".to_owned(),
                ))
            };
        }
        let patch = json!({"metadata": {"finalizers": null}})
            .to_string()
            .into_bytes();
        let answer = request(
            client,
            reqwest::Method::PATCH,
            &url,
            None,
            Some(("application/merge-patch+json", patch)),
        )
        .await
        .map_err(|m| fail("remove-finalizers", "PATCH", None, 0.0, m))?;
        if !matches!(answer.status, 200 | 404) {
            return Err(fail(
                "remove-finalizers",
                "PATCH",
                Some(answer.status),
                answer.elapsed_ms,
                status_message(&answer.body),
            ));
        }
    }
    Ok(Gone::Terminating)
}
