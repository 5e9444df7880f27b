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

use serde::Deserialize;
use serde_json::Value;

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

pub(crate) fn is_kind(fixture: &Fixture, group_version: &str, kind: &str) -> bool {
    fixture.object.get("apiVersion").and_then(Value::as_str) == Some(group_version)
        && fixture.object.get("kind").and_then(Value::as_str) == Some(kind)
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
