//! Fixtures (`kubemock serve --load PATH`): objects a test suite starts from, created at
//! startup through the same create path as any request (defaulting, validation,
//! admission), before the server accepts its first connection.
//!
//! Order: CustomResourceDefinitions first, each waited for until it is Established and
//! served (its custom resources can then be created), then Namespaces, then everything else
//! in the order read (files sorted by path, documents in file order, List items in list
//! order). A fixture that cannot be read or created stops the start, with an error naming
//! its file and document: a server that silently started without part of its fixtures
//! would fail tests far from the cause. An object that exists already (a durable store
//! started again with the same fixtures) is left as it is.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Method, Request, header};
use serde::Deserialize;
use serde_json::Value;
use tower::ServiceExt;

use crate::state::AppState;

/// How long startup waits for a fixture CRD to be Established.
const ESTABLISHED_WAIT: Duration = Duration::from_secs(30);
/// How often it looks while it waits.
const ESTABLISHED_POLL: Duration = Duration::from_millis(10);
/// The most a fixture answer may be read of (an answer is an object or a Status).
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// One object of a fixture file.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The file it was read from.
    pub file: PathBuf,
    /// Its document in the file, from 1 (and its item, from 1, when the document is a List).
    pub document: usize,
    /// Its item in a List document.
    pub item: Option<usize>,
    /// The object.
    pub object: Value,
}

impl Fixture {
    /// Where it comes from, as errors name it: `path, document 2` (`, item 3`).
    pub fn origin(&self) -> String {
        let mut text = format!("{}, document {}", self.file.display(), self.document);
        if let Some(item) = self.item {
            text.push_str(&format!(", item {item}"));
        }
        text
    }
}

/// Why fixtures could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// A path could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// A document is not YAML or JSON, or not an object.
    #[error("{origin}: {message}")]
    Parse {
        /// File and document.
        origin: String,
        /// Why.
        message: String,
    },
    /// An object was refused.
    #[error("{origin}: {message}")]
    Create {
        /// File and document.
        origin: String,
        /// What was refused, and the server's message.
        message: String,
    },
}

/// Reads every fixture under `paths` (files, or folders read recursively for `.yaml`,
/// `.yml` and `.json` files, in path order).
pub fn read(paths: &[PathBuf]) -> Result<Vec<Fixture>, FixtureError> {
    let mut files = Vec::new();
    for path in paths {
        collect(path, &mut files)?;
    }
    let mut fixtures = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|source| FixtureError::Read {
            path: file.display().to_string(),
            source,
        })?;
        read_documents(&file, &text, &mut fixtures)?;
    }
    Ok(fixtures)
}

fn collect(path: &Path, files: &mut Vec<PathBuf>) -> Result<(), FixtureError> {
    let error = |source| FixtureError::Read {
        path: path.display().to_string(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(error)?;
    if !metadata.is_dir() {
        files.push(path.to_owned());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(error)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        let fixture_file = entry
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
        if entry.is_dir() || fixture_file {
            collect(&entry, files)?;
        }
    }
    Ok(())
}

/// The documents of one file: YAML documents (JSON is YAML), `---` separated.
fn read_documents(file: &Path, text: &str, out: &mut Vec<Fixture>) -> Result<(), FixtureError> {
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let number = index + 1;
        let origin = || format!("{}, document {number}", file.display());
        let value = Value::deserialize(document).map_err(|err| FixtureError::Parse {
            origin: origin(),
            message: err.to_string(),
        })?;
        match value {
            Value::Null => {}
            Value::Object(ref map)
                if map
                    .get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List"))
                    && map.get("items").is_some_and(Value::is_array) =>
            {
                let items = map
                    .get("items")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten();
                for (item, object) in items.enumerate() {
                    if !object.is_object() {
                        return Err(FixtureError::Parse {
                            origin: format!("{}, item {}", origin(), item + 1),
                            message: "not an object".to_owned(),
                        });
                    }
                    out.push(Fixture {
                        file: file.to_owned(),
                        document: number,
                        item: Some(item + 1),
                        object: object.clone(),
                    });
                }
            }
            Value::Object(_) => out.push(Fixture {
                file: file.to_owned(),
                document: number,
                item: None,
                object: value,
            }),
            _ => {
                return Err(FixtureError::Parse {
                    origin: origin(),
                    message: "not an object".to_owned(),
                });
            }
        }
    }
    Ok(())
}

fn is_kind(fixture: &Fixture, group_version: &str, kind: &str) -> bool {
    fixture.object.get("apiVersion").and_then(Value::as_str) == Some(group_version)
        && fixture.object.get("kind").and_then(Value::as_str) == Some(kind)
}

/// Creates `fixtures` through `routes` (the server's router, without the pipeline: as the
/// open mode's `system:admin`, neither logged nor faulted), in dependency order.
pub(crate) async fn create(
    state: &AppState,
    routes: &axum::Router,
    fixtures: &[Fixture],
) -> Result<(), FixtureError> {
    let crd = |f: &&Fixture| is_kind(f, "apiextensions.k8s.io/v1", "CustomResourceDefinition");
    let namespace = |f: &&Fixture| is_kind(f, "v1", "Namespace");
    let definitions: Vec<&Fixture> = fixtures.iter().filter(crd).collect();
    for fixture in &definitions {
        create_one(state, routes, fixture).await?;
    }
    for fixture in &definitions {
        established(routes, fixture).await?;
    }
    for fixture in fixtures.iter().filter(namespace) {
        create_one(state, routes, fixture).await?;
    }
    for fixture in fixtures.iter().filter(|f| !crd(f) && !namespace(f)) {
        create_one(state, routes, fixture).await?;
    }
    Ok(())
}

/// The collection path `fixture`'s object is created at.
fn collection(state: &AppState, fixture: &Fixture) -> Result<(String, bool), FixtureError> {
    let object = &fixture.object;
    let text = |field: &str| object.get(field).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let refused = |message: String| FixtureError::Create {
        origin: fixture.origin(),
        message,
    };
    if api_version.is_empty() || kind.is_empty() {
        return Err(refused("apiVersion and kind are required".to_owned()));
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let resource = state
        .registry()
        .resources_in(group, version)
        .into_iter()
        .find(|r| r.kind == kind)
        .ok_or_else(|| {
            refused(format!(
                "no resource serves kind {kind} in {api_version} (is its CustomResourceDefinition among the fixtures?)"
            ))
        })?;
    let root = if group.is_empty() {
        "/api/v1".to_owned()
    } else {
        format!("/apis/{group}/{version}")
    };
    let path = if resource.namespaced {
        let namespace = object
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default");
        format!("{root}/namespaces/{namespace}/{}", resource.plural)
    } else {
        format!("{root}/{}", resource.plural)
    };
    Ok((path, resource.namespaced))
}

async fn call(
    routes: &axum::Router,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut request = Request::builder().method(method).uri(path);
    let body = match body {
        Some(value) => {
            request = request.header(header::CONTENT_TYPE, "application/json");
            Body::from(serde_json::to_vec(value).unwrap_or_default())
        }
        None => Body::empty(),
    };
    let Ok(request) = request.body(body) else {
        return (400, Value::Null);
    };
    let Ok(response) = routes.clone().oneshot(request).await;
    let code = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES)
        .await
        .unwrap_or_default();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn create_one(
    state: &AppState,
    routes: &axum::Router,
    fixture: &Fixture,
) -> Result<(), FixtureError> {
    let (path, _) = collection(state, fixture)?;
    let (code, answer) = call(routes, Method::POST, &path, Some(&fixture.object)).await;
    match code {
        200..=299 => Ok(()),
        409 if answer.get("reason").and_then(Value::as_str) == Some("AlreadyExists") => {
            tracing::info!(origin = %fixture.origin(), "fixture exists already; left as it is");
            Ok(())
        }
        _ => Err(FixtureError::Create {
            origin: fixture.origin(),
            message: format!(
                "creating {} {:?}: {} {}",
                fixture
                    .object
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                fixture
                    .object
                    .get("metadata")
                    .and_then(|m| m.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                code,
                answer
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
            ),
        }),
    }
}

/// Waits until the fixture CRD is Established.
async fn established(routes: &axum::Router, fixture: &Fixture) -> Result<(), FixtureError> {
    let name = fixture
        .object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let path = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}");
    let deadline = Instant::now() + ESTABLISHED_WAIT;
    loop {
        let (_, answer) = call(routes, Method::GET, &path, None).await;
        let is_established = answer
            .get("status")
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| {
                c.get("type") == Some(&Value::from("Established"))
                    && c.get("status") == Some(&Value::from("True"))
            });
        if is_established {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(FixtureError::Create {
                origin: fixture.origin(),
                message: format!(
                    "CustomResourceDefinition {name:?} was not Established in {ESTABLISHED_WAIT:?}"
                ),
            });
        }
        tokio::time::sleep(ESTABLISHED_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_lists_and_empty_documents_are_read_with_their_positions() {
        let mut out = Vec::new();
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\n\
                    {\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"c\"}}]}\n";
        read_documents(Path::new("f.yaml"), text, &mut out).unwrap();
        let origins: Vec<String> = out.iter().map(Fixture::origin).collect();
        assert_eq!(
            origins,
            ["f.yaml, document 1", "f.yaml, document 3, item 1"]
        );
        let error =
            read_documents(Path::new("g.yaml"), "a: 1\n---\n[1, 2]\n", &mut out).unwrap_err();
        assert_eq!(error.to_string(), "g.yaml, document 2: not an object");
        let error = read_documents(Path::new("h.yaml"), "a: [1\n", &mut out).unwrap_err();
        assert!(
            error.to_string().starts_with("h.yaml, document 1: "),
            "{error}"
        );
    }
}
