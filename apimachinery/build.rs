//! Gathers the Kubernetes 1.32 protobuf schemas (`generated.proto` of every API group and of
//! apimachinery) for the protobuf codec, from the `k8s-rs-pb` crate that carries them: a
//! registry dependency, so a build needs nothing outside cargo. Comments are stripped and the
//! files concatenated into `$OUT_DIR/k8s-protos.txt`, which `protobuf` embeds and
//! parses at run time. (Only the `.proto` sources are used; `k8s-rs-pb` is a build dependency
//! without features, so none of its generated code is compiled.)

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "src/protobuf/comments.rs"]
mod proto_comments;
use proto_comments::strip_comments;

/// The schema crate and the Kubernetes version whose schemas are used.
const SCHEMA_CRATE: &str = "k8s-rs-pb";
const SCHEMA_VERSION_DIR: &str = "src/v1_32";

fn main() -> Result<(), String> {
    println!("cargo:rerun-if-changed=build.rs");
    let root = schema_crate_dir()
        .map_err(|err| format!("cannot find the {SCHEMA_CRATE} sources: {err}"))?
        .join(SCHEMA_VERSION_DIR);
    let mut files = Vec::new();
    collect_protos(&root, &mut files);
    files.sort();
    if files.len() < 50 {
        return Err(format!(
            "expected the Kubernetes .proto files under {}, found {}",
            root.display(),
            files.len()
        ));
    }
    let mut out = String::new();
    for file in &files {
        let text =
            fs::read_to_string(file).map_err(|err| format!("reading {}: {err}", file.display()))?;
        out.push_str(&strip_comments(&text));
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|err| format!("OUT_DIR: {err}"))?);
    fs::write(out_dir.join("k8s-protos.txt"), out)
        .map_err(|err| format!("writing the schemas: {err}"))
}

/// The directory of the schema crate's package: asked of `cargo metadata` (offline first,
/// as the build has already fetched every dependency), then looked up in the registry cache.
fn schema_crate_dir() -> Result<PathBuf, String> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?)
        .join("Cargo.toml");
    let target = env::var("TARGET").map_err(|e| e.to_string())?;
    let mut errors = Vec::new();
    for offline in [true, false] {
        let mut command = Command::new(&cargo);
        command
            .args(["metadata", "--format-version", "1", "--filter-platform"])
            .arg(&target)
            .arg("--manifest-path")
            .arg(&manifest);
        if offline {
            command.arg("--offline");
        }
        match command.output() {
            Ok(output) if output.status.success() => {
                let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
                    .map_err(|e| format!("cargo metadata: {e}"))?;
                let found = metadata["packages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|p| p["name"] == SCHEMA_CRATE)
                    .and_then(|p| p["manifest_path"].as_str())
                    .and_then(|path| Path::new(path).parent().map(Path::to_path_buf));
                match found {
                    Some(dir) => return Ok(dir),
                    None => errors.push(format!("cargo metadata does not list {SCHEMA_CRATE}")),
                }
            }
            Ok(output) => errors.push(String::from_utf8_lossy(&output.stderr).into_owned()),
            Err(err) => errors.push(err.to_string()),
        }
    }
    Err(errors.join("; "))
}

fn collect_protos(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_protos(&path, into);
        } else if path.extension().is_some_and(|e| e == "proto") {
            into.push(path);
        }
    }
}
