//! A CRD's structural schema seen from CEL (upstream's
//! `staging/src/k8s.io/apiserver/pkg/cel/common/schemas.go` and `model/escaping.go`): the
//! type a rule is checked against, and the value an object becomes under it.
//!
//! Property names that are CEL keywords or hold `-`, `.`, `/` or `__` are escaped
//! (`foo-bar` is `self.foo__dash__bar`); a name with other characters cannot be reached from
//! CEL. `format: byte` strings are bytes, `duration` durations, `date`/`date-time`
//! timestamps; an int-or-string or a preserved-unknown subtree without properties is `dyn`.
//! The root (and every embedded resource) has `apiVersion`, `kind` and a `metadata` holding
//! only `name` and `generateName`, as upstream declares them.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use serde_json::Value as Json;

use crate::types::{ObjectType, Type};
use crate::value::{Key, MapValue, Value};

/// CEL's reserved words (escaping.go `celReservedSymbols`): a schema property of that name
/// is escaped as `__word__`, and a policy variable may not be named so.
pub const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The CEL name of a property, `None` when it cannot be one.
pub fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let first = name.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return None;
    }
    let mut out = String::new();
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

fn flag(schema: &Json, key: &str) -> bool {
    schema.get(key).and_then(Json::as_bool) == Some(true)
}

fn metadata_type() -> Type {
    let mut fields = BTreeMap::new();
    fields.insert("name".to_string(), Type::String);
    fields.insert("generateName".to_string(), Type::String);
    Type::Object(Arc::new(ObjectType {
        name: "metadata".into(),
        fields,
    }))
}

/// The CEL type of the schema node `schema` (`root` for the resource's own root, which gets
/// `apiVersion`, `kind` and `metadata`).
pub fn schema_type(schema: &Json, root: bool, path: &str) -> Type {
    if flag(schema, "x-kubernetes-int-or-string") {
        return Type::Dyn;
    }
    let properties = schema.get("properties").and_then(Json::as_object);
    let embedded = root || flag(schema, "x-kubernetes-embedded-resource");
    match schema.get("type").and_then(Json::as_str) {
        Some("object") => {
            if let Some(items) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                return Type::map(
                    Type::String,
                    schema_type(items, false, &format!("{path}.@")),
                );
            }
            if properties.is_none() && !embedded {
                return if flag(schema, "x-kubernetes-preserve-unknown-fields") {
                    Type::Dyn
                } else {
                    Type::map(Type::String, Type::Dyn)
                };
            }
            let mut fields = BTreeMap::new();
            for (name, child) in properties.into_iter().flatten() {
                if let Some(escaped) = escape(name) {
                    fields.insert(
                        escaped,
                        schema_type(child, false, &format!("{path}.{name}")),
                    );
                }
            }
            if embedded {
                fields.insert("apiVersion".into(), Type::String);
                fields.insert("kind".into(), Type::String);
                fields.insert("metadata".into(), metadata_type());
            }
            if flag(schema, "x-kubernetes-preserve-unknown-fields") && !root && properties.is_none()
            {
                return Type::Dyn;
            }
            Type::Object(Arc::new(ObjectType {
                name: path.to_string(),
                fields,
            }))
        }
        Some("array") => Type::list(schema.get("items").map_or(Type::Dyn, |i| {
            schema_type(i, false, &format!("{path}.@idx"))
        })),
        Some("string") => match schema.get("format").and_then(Json::as_str) {
            Some("byte") => Type::Bytes,
            Some("duration") => Type::Duration,
            Some("date" | "date-time") => Type::Timestamp,
            _ => Type::String,
        },
        Some("integer") => Type::Int,
        Some("number") => Type::Double,
        Some("boolean") => Type::Bool,
        _ => Type::Dyn,
    }
}

/// The CEL value of `json` under `schema` (property names escaped as [`schema_type`]
/// declares them; a string that does not parse as its format stays a string, the schema
/// validator reports it).
pub fn to_value(schema: Option<&Json>, json: &Json) -> Value {
    let Some(schema) = schema else {
        return Value::from_json(json);
    };
    if flag(schema, "x-kubernetes-int-or-string") {
        return Value::from_json(json);
    }
    match json {
        Json::Object(map) => {
            let items = schema.get("additionalProperties").filter(|a| a.is_object());
            let properties = schema.get("properties").and_then(Json::as_object);
            let mut out = MapValue::new();
            for (name, child) in map {
                if let Some(items) = items {
                    out.insert(
                        Key::String(name.as_str().into()),
                        to_value(Some(items), child),
                    );
                    continue;
                }
                match properties.and_then(|p| p.get(name)) {
                    Some(child_schema) => {
                        if let Some(escaped) = escape(name) {
                            out.insert(
                                Key::String(escaped.into()),
                                to_value(Some(child_schema), child),
                            );
                        }
                    }
                    None => {
                        out.insert(Key::String(name.as_str().into()), Value::from_json(child));
                    }
                }
            }
            Value::Map(Arc::new(out))
        }
        Json::Array(items) => {
            let item_schema = schema.get("items");
            Value::list(items.iter().map(|i| to_value(item_schema, i)).collect())
        }
        Json::String(s) => match schema.get("format").and_then(Json::as_str) {
            Some("byte") => match base64::engine::general_purpose::STANDARD.decode(s) {
                Ok(bytes) => Value::Bytes(bytes.into()),
                Err(_) => Value::string(s.as_str()),
            },
            Some("duration") => match kubemock_apimachinery::duration::parse_duration(s) {
                Ok(d) => Value::Duration(d),
                Err(_) => Value::string(s.as_str()),
            },
            Some("date") => {
                match kubemock_apimachinery::time::parse_rfc3339(&format!("{s}T00:00:00Z")) {
                    Some(t) => Value::Timestamp(t),
                    None => Value::string(s.as_str()),
                }
            }
            Some("date-time") => match kubemock_apimachinery::time::parse_rfc3339(s) {
                Some(t) => Value::Timestamp(t),
                None => Value::string(s.as_str()),
            },
            _ => Value::string(s.as_str()),
        },
        Json::Number(n) if schema.get("type").and_then(Json::as_str) == Some("number") => {
            Value::Double(n.as_f64().unwrap_or(f64::NAN))
        }
        other => Value::from_json(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_escape_as_upstream() {
        assert_eq!(escape("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("x__y").as_deref(), Some("x__underscores__y"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
    }
}
