//! Signatures of server bugs that are known and being fixed elsewhere. A finding that matches
//! one is counted under its name instead of failing the run, so a run can look past them;
//! each can be switched off (`--known`) to see it fail again, and the report always says how
//! often each one still occurred. A signature is a predicate on what the fuzzer saw (status,
//! message, request shape), narrow enough not to hide a different bug with the same status.

use crate::report::{Finding, FindingKind};

/// One known bug.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    /// Its name, for `--known` and the report.
    pub name: &'static str,
    /// What the bug is.
    pub description: &'static str,
    matches: fn(&Finding) -> bool,
}

impl Known {
    /// Whether `finding` is this bug.
    pub fn matches(&self, finding: &Finding) -> bool {
        (self.matches)(finding)
    }
}

fn is_error(finding: &Finding) -> bool {
    matches!(
        finding.kind,
        FindingKind::ServerError | FindingKind::WatchServerError | FindingKind::Sweep(_)
    )
}

fn is_slow(finding: &Finding) -> bool {
    matches!(finding.kind, FindingKind::Slow | FindingKind::Hang)
}

/// Every known signature.
pub const KNOWN: &[Known] = &[
    Known {
        name: "wrong-types-stored",
        description: "objects with wrong JSON types (labels {\"a\":{\"k\":1}}, ConfigMap data \
                      {\"a\":7}, replicas \"3\", a namespace's status \"str\") are stored with \
                      201 and then have no protobuf form (answered as JSON) or break other \
                      requests (500 \"stored namespace is not JSON: invalid type\")",
        matches: |f| {
            let no_protobuf = matches!(f.kind, FindingKind::Sweep(check) if check.contains("protobuf"))
                && f.message.contains("instead of protobuf");
            // A namespace stored with `status: "str"`: creates in it read it back typed.
            let unreadable = f.kind == FindingKind::ServerError
                && f.message.contains("is not JSON: invalid type");
            no_protobuf || unreadable
        },
    },
    Known {
        name: "patch-copy-too-deep",
        description: "JSON patch copy operations nest an object past the decoder's limit; \
                      reads then answer 500 \"recursion limit exceeded\"",
        matches: |f| is_error(f) && f.message.contains("recursion limit"),
    },
    Known {
        name: "patch-growth",
        description: "JSON patch results grow without bound (copy operations double a field); \
                      the server works on one for minutes, and its shutdown waits for it",
        matches: |f| {
            (is_slow(f) && f.op == "patch-json" && f.copy_ops > 0)
                || (f.kind == FindingKind::StopFailed
                    && f.message.contains("after a patch-growth hang")
                    && !f.message.contains("NEW"))
        },
    },
    Known {
        name: "yaml-deep-slow",
        description: "deeply nested YAML bodies are slow to decode",
        matches: |f| is_slow(f) && f.content_type.contains("yaml") && f.depth >= 100,
    },
    Known {
        name: "create-bad-resourceversion",
        description: "create with metadata.resourceVersion \"abc\"/\"0\"/\"-1\" answers 500 \
                      where upstream ignores it (also a PUT that creates); a positive one is \
                      upstream's own 500 and no finding",
        matches: |f| {
            f.kind == FindingKind::ServerError
                && matches!(f.method.as_str(), "POST" | "PUT")
                && f.message.contains("resourceVersion should not be set")
        },
    },
    Known {
        name: "crd-write-slow",
        description: "writes to a CustomResourceDefinition that change nothing the server \
                      serves (a no-op update, a dry run, a deletecollection of nothing) wait \
                      5 s for a sync that never comes",
        matches: |f| {
            let definitions = f.path.contains("/customresourcedefinitions");
            let no_op_write = match f.method.as_str() {
                "PUT" | "PATCH" | "DELETE" => true,
                "POST" => f.path.contains("dryRun=All"),
                _ => false,
            };
            f.kind == FindingKind::Slow && definitions && no_op_write && f.elapsed_ms >= 4000.0
        },
    },
];

/// The signatures named in `spec`: `all`, `none`, or names separated by commas.
pub fn parse(spec: &str) -> Result<Vec<Known>, String> {
    match spec {
        "all" => return Ok(KNOWN.to_vec()),
        "none" | "" => return Ok(Vec::new()),
        _ => {}
    }
    spec.split(',')
        .map(|name| {
            KNOWN
                .iter()
                .find(|k| k.name == name.trim())
                .copied()
                .ok_or_else(|| {
                    let names: Vec<&str> = KNOWN.iter().map(|k| k.name).collect();
                    format!("unknown signature {name:?}; known: {}", names.join(", "))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(kind: FindingKind, method: &str, message: &str) -> Finding {
        Finding {
            index: Some(1),
            kind,
            op: "create".to_owned(),
            method: method.to_owned(),
            path: "/api/v1/namespaces/fuzz-a/configmaps".to_owned(),
            status: Some(500),
            elapsed_ms: 1.0,
            message: message.to_owned(),
            content_type: "application/json".to_owned(),
            depth: 0,
            copy_ops: 0,
            known: None,
        }
    }

    #[test]
    fn signatures_match_their_bug_and_not_another() {
        let [rv] = parse("create-bad-resourceversion").unwrap()[..] else {
            panic!("one signature");
        };
        let bug = finding(
            FindingKind::ServerError,
            "POST",
            "resourceVersion should not be set on objects to be created",
        );
        assert!(rv.matches(&bug));
        assert!(!rv.matches(&finding(FindingKind::ServerError, "POST", "other")));
        assert!(!rv.matches(&finding(FindingKind::ServerError, "GET", &bug.message)));
        assert_eq!(parse("all").unwrap().len(), KNOWN.len());
        assert!(parse("none").unwrap().is_empty());
        assert!(parse("bogus").is_err());
    }
}
