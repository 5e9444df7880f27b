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
use crate::value::{Key, ListKind, MapValue, Value};

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
/// `apiVersion`, `kind` and `metadata`); `dyn` where upstream declares nothing.
pub fn schema_type(schema: &Json, root: bool, path: &str) -> Type {
    decl_type(schema, root, path).unwrap_or(Type::Dyn)
}

/// Upstream's `SchemaDeclType` (`staging/src/k8s.io/apiserver/pkg/cel/common/schemas.go`):
/// `None` for a node CEL cannot see (no type, an array whose items or a map whose values are
/// not declared), which its parent object then leaves out of its fields. An object without
/// `additionalProperties` is an object of its declared properties, even with
/// `x-kubernetes-preserve-unknown-fields` (the unknown fields are in its value, compared by
/// equality, but cannot be selected).
fn decl_type(schema: &Json, root: bool, path: &str) -> Option<Type> {
    if flag(schema, "x-kubernetes-int-or-string") {
        return Some(Type::Dyn);
    }
    let embedded = root || flag(schema, "x-kubernetes-embedded-resource");
    Some(match schema.get("type").and_then(Json::as_str)? {
        "object" => {
            if let Some(items) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                let value = decl_type(items, embedded_flag(items), &format!("{path}.@"))?;
                return Some(Type::map(Type::String, value));
            }
            let mut fields = BTreeMap::new();
            // WithTypeAndObjectMeta: a resource root that does not declare `kind`,
            // `apiVersion` and `metadata.name`/`generateName` gets them, `metadata` then
            // holding only those two.
            let own_meta = embedded && has_type_and_object_meta(schema);
            for (name, child) in schema
                .get("properties")
                .and_then(Json::as_object)
                .into_iter()
                .flatten()
            {
                if embedded
                    && !own_meta
                    && matches!(name.as_str(), "kind" | "apiVersion" | "metadata")
                {
                    continue;
                }
                if let (Some(escaped), Some(t)) = (
                    escape(name),
                    decl_type(child, embedded_flag(child), &format!("{path}.{name}")),
                ) {
                    fields.insert(escaped, t);
                }
            }
            if embedded && !own_meta {
                fields.insert("apiVersion".into(), Type::String);
                fields.insert("kind".into(), Type::String);
                fields.insert("metadata".into(), metadata_type());
            }
            Type::Object(Arc::new(ObjectType {
                name: path.to_string(),
                fields,
            }))
        }
        "array" => {
            let items = schema.get("items").filter(|i| i.is_object())?;
            Type::list(decl_type(
                items,
                embedded_flag(items),
                &format!("{path}.@idx"),
            )?)
        }
        "string" => match schema.get("format").and_then(Json::as_str) {
            Some("byte") => Type::Bytes,
            Some("duration") => Type::Duration,
            Some("date" | "date-time") => Type::Timestamp,
            _ => Type::String,
        },
        "integer" => Type::Int,
        "number" => Type::Double,
        "boolean" => Type::Bool,
        _ => return None,
    })
}

fn embedded_flag(schema: &Json) -> bool {
    flag(schema, "x-kubernetes-embedded-resource")
}

/// The field `name` of an object value or type: upstream also finds a field whose name is a
/// CEL reserved word when it is written unescaped (`self.namespace` for `__namespace__`,
/// `DeclTypeProvider.FindStructFieldType` with `recognizeKeywordAsFieldName`, on since 1.31).
pub fn field_name_fallback(name: &str) -> Option<String> {
    RESERVED.contains(&name).then(|| format!("__{name}__"))
}

/// Upstream's `DefaultMaxRequestSizeBytes` (`staging/src/k8s.io/apiserver/pkg/apis/cel/
/// config.go` `MaxRequestSizeBytes`): the largest request body, from which the estimate
/// bounds a list, map or string the schema leaves unbounded.
pub const MAX_REQUEST_SIZE_BYTES: i64 = 3 * 1024 * 1024;
/// `MinStringSize` (`pkg/cel/limits.go`): `""`.
const MIN_STRING_SIZE: i64 = 2;
/// `MinBoolSize`: `true`.
const MIN_BOOL_SIZE: i64 = 4;
/// `MinNumberSize`: `0`.
const MIN_NUMBER_SIZE: i64 = 1;
/// `MaxDurationSizeJSON`: the longest duration string upstream assumes, with its quotes.
const MAX_DURATION_SIZE_JSON: i64 = 32;
/// `MaxDatetimeSizeJSON`: `9999-12-31T23:59:59.999999999Z` with its quotes.
const MAX_DATETIME_SIZE_JSON: i64 = 32;
/// `MinDurationSizeJSON`: `"0"`.
const MIN_DURATION_SIZE_JSON: i64 = 3;
/// `JSONDateSize`: `"YYYY-MM-DD"`.
const JSON_DATE_SIZE: i64 = 12;
/// `MinDatetimeSizeJSON`: a full date and time with its quotes and `T`.
const MIN_DATETIME_SIZE_JSON: i64 = 21;

/// The sizes upstream's `DeclType` carries for a schema node
/// (`staging/src/k8s.io/apiserver/pkg/cel/types.go`), made as `SchemaDeclType` makes them
/// (`pkg/cel/common/schemas.go`): what the compile-time cost estimate (`crate::cost`) reads
/// for the size of `self`, a field, a list's items, a map's keys or values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeclSize {
    /// `MaxElements`: the most characters of a string (bytes for `format: byte`), items
    /// of a list or entries of a map (`maxLength` (times 4 for a string, a rune being up
    /// to 4 bytes), `maxItems`, `maxProperties`, else as many as fit in a request); 0 for
    /// scalars.
    pub max_elements: i64,
    /// `MinSerializedSize`: the fewest bytes a value takes in JSON.
    pub min_serialized_size: i64,
    /// An object's fields, by (escaped) CEL name.
    pub fields: BTreeMap<String, DeclSize>,
    /// A list's items or a map's values.
    pub elem: Option<Box<DeclSize>>,
    /// A map's keys.
    pub key: Option<Box<DeclSize>>,
}

impl DeclSize {
    fn simple(min_serialized_size: i64, max_elements: i64) -> DeclSize {
        DeclSize {
            max_elements,
            min_serialized_size,
            ..DeclSize::default()
        }
    }

    /// The node a cost-estimate path names below this one (`@items`, `@values`, `@keys` or
    /// a field), as upstream's CRD `sizeEstimator` walks it.
    pub fn child(&self, step: &str) -> Option<&DeclSize> {
        match step {
            "@items" | "@values" => self.elem.as_deref(),
            "@keys" => self.key.as_deref(),
            name => self.fields.get(name),
        }
    }
}

fn int_of(schema: &Json, key: &str) -> Option<i64> {
    schema.get(key).and_then(Json::as_i64).map(|v| v.max(0))
}

/// `estimateMaxStringLengthPerRequest` for a string that is not int-or-string.
fn max_string_length(format: Option<&str>) -> i64 {
    match format {
        Some("duration") => MAX_DURATION_SIZE_JSON,
        Some("date") => JSON_DATE_SIZE,
        Some("date-time") => MAX_DATETIME_SIZE_JSON,
        // 2 for the quotes
        _ => MAX_REQUEST_SIZE_BYTES - 2,
    }
}

/// Whether the root already declares `kind`, `apiVersion` and `metadata.name`/`generateName`
/// as upstream's `WithTypeAndObjectMeta` wants them; else it puts its own in their place.
fn has_type_and_object_meta(schema: &Json) -> bool {
    let prop = |s: &Json, name: &str, t: &str| {
        s.get("properties")
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Json::as_str)
            == Some(t)
    };
    let metadata = schema.get("properties").and_then(|p| p.get("metadata"));
    prop(schema, "kind", "string")
        && prop(schema, "apiVersion", "string")
        && prop(schema, "metadata", "object")
        && metadata.is_some_and(|m| prop(m, "name", "string") && prop(m, "generateName", "string"))
}

/// The sizes of the schema node `schema` (`root` for a resource's root), `None` where
/// upstream's `SchemaDeclType` declares nothing (an array without items, a map whose
/// values are not declared, a node without a type).
pub fn schema_sizes(schema: &Json, root: bool) -> Option<DeclSize> {
    if flag(schema, "x-kubernetes-int-or-string") {
        return Some(DeclSize::simple(1, MAX_REQUEST_SIZE_BYTES - 2));
    }
    let embedded = |s: &Json| flag(s, "x-kubernetes-embedded-resource");
    match schema.get("type").and_then(Json::as_str) {
        Some("array") => {
            let items = schema.get("items").filter(|i| i.is_object())?;
            let item = schema_sizes(items, embedded(items))?;
            let max = int_of(schema, "maxItems").unwrap_or(
                // estimateMaxArrayItemsFromMinSize: 2 for `[]`, 1 per comma
                (MAX_REQUEST_SIZE_BYTES - 2) / (item.min_serialized_size + 1),
            );
            Some(DeclSize {
                max_elements: max,
                min_serialized_size: 2,
                elem: Some(Box::new(item)),
                ..DeclSize::default()
            })
        }
        Some("object") => {
            if let Some(values) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                let value = schema_sizes(values, embedded(values))?;
                let max = int_of(schema, "maxProperties").unwrap_or(
                    // estimateMaxAdditionalPropertiesFromMinSize: a key of 2 bytes with its
                    // quotes, colon and comma around the smallest value, in `{}`
                    (MAX_REQUEST_SIZE_BYTES - 2) / (value.min_serialized_size + 6),
                );
                return Some(DeclSize {
                    max_elements: max,
                    min_serialized_size: 2,
                    elem: Some(Box::new(value)),
                    key: Some(Box::new(DeclSize::simple(MIN_STRING_SIZE, 0))),
                    ..DeclSize::default()
                });
            }
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Json::as_array)
                .map(|r| r.iter().filter_map(Json::as_str).collect())
                .unwrap_or_default();
            let mut out = DeclSize::simple(2, 0);
            let meta = root && !has_type_and_object_meta(schema);
            for (name, child) in schema
                .get("properties")
                .and_then(Json::as_object)
                .into_iter()
                .flatten()
            {
                if meta && matches!(name.as_str(), "kind" | "apiVersion" | "metadata") {
                    continue;
                }
                if let Some(size) = schema_sizes(child, embedded(child)) {
                    if required.contains(&name.as_str()) && child.get("default").is_none() {
                        out.min_serialized_size += name.len() as i64 + size.min_serialized_size + 4;
                    }
                    if let Some(escaped) = escape(name) {
                        out.fields.insert(escaped, size);
                    }
                }
            }
            if meta {
                let string = || DeclSize::simple(MIN_STRING_SIZE, MAX_REQUEST_SIZE_BYTES - 2);
                let mut metadata = DeclSize::simple(2, 0);
                metadata.fields.insert("name".into(), string());
                metadata.fields.insert("generateName".into(), string());
                out.fields.insert("kind".into(), string());
                out.fields.insert("apiVersion".into(), string());
                out.fields.insert("metadata".into(), metadata);
            }
            Some(out)
        }
        Some("string") => {
            let format = schema.get("format").and_then(Json::as_str);
            let max_length = int_of(schema, "maxLength");
            Some(match format {
                Some("byte") => DeclSize::simple(
                    MIN_STRING_SIZE,
                    max_length.unwrap_or(max_string_length(format)),
                ),
                Some("duration") => {
                    DeclSize::simple(MIN_DURATION_SIZE_JSON, max_string_length(format))
                }
                Some("date") => DeclSize::simple(JSON_DATE_SIZE, max_string_length(format)),
                Some("date-time") => {
                    DeclSize::simple(MIN_DATETIME_SIZE_JSON, max_string_length(format))
                }
                _ => {
                    let enum_max = schema
                        .get("enum")
                        .and_then(Json::as_array)
                        .filter(|e| !e.is_empty())
                        .map(|e| {
                            e.iter()
                                .filter_map(Json::as_str)
                                .map(|s| s.len() as i64)
                                .max()
                                .unwrap_or(0)
                        });
                    let max = match (max_length, enum_max) {
                        (Some(m), _) => m.saturating_mul(4),
                        (None, Some(e)) => e,
                        (None, None) => max_string_length(format),
                    };
                    DeclSize::simple(MIN_STRING_SIZE, max)
                }
            })
        }
        Some("boolean") => Some(DeclSize::simple(MIN_BOOL_SIZE, 0)),
        Some("number" | "integer") => Some(DeclSize::simple(MIN_NUMBER_SIZE, 0)),
        _ => None,
    }
}

/// The CEL type upstream's `SchemaDeclType` gives a resolved OpenAPI schema (a built-in
/// kind's, or a custom resource's as `/openapi/v3` serves it, references populated by
/// [`populate_refs`]): what a ValidatingAdmissionPolicy's `object` is type-checked against
/// (`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/typechecking.go`).
///
/// Unlike [`schema_type`] (a CRD's own structural schema, where kubemock is lenient), it
/// follows upstream to the letter: a node without a type, an array without items and a map
/// whose values are not declared are not declared at all (`None`; their field is left
/// out); `x-kubernetes-preserve-unknown-fields` is ignored, so an object without
/// properties has no fields; the root (`root`) and embedded resources keep their own
/// `metadata` when it declares `name` and `generateName` (`WithTypeAndObjectMeta`).
/// `name` names the root object type in messages (`Deployment`; its fields
/// `Deployment.spec`, ...).
pub fn resolved_type(schema: &Json, root: bool, name: &str) -> Option<Type> {
    if flag(schema, "x-kubernetes-int-or-string") {
        return Some(Type::Dyn);
    }
    let embedded = |s: &Json| flag(s, "x-kubernetes-embedded-resource");
    match schema.get("type").and_then(Json::as_str) {
        Some("array") => {
            let items = schema.get("items").filter(|i| i.is_object())?;
            Some(Type::list(resolved_type(
                items,
                embedded(items),
                &format!("{name}.@idx"),
            )?))
        }
        Some("object") => {
            if let Some(values) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                return Some(Type::map(
                    Type::String,
                    resolved_type(values, embedded(values), &format!("{name}.@"))?,
                ));
            }
            let meta = root && !has_type_and_object_meta(schema);
            let mut fields = BTreeMap::new();
            for (property, child) in schema
                .get("properties")
                .and_then(Json::as_object)
                .into_iter()
                .flatten()
            {
                if meta && matches!(property.as_str(), "kind" | "apiVersion" | "metadata") {
                    continue;
                }
                let child_name = format!("{name}.{property}");
                if let (Some(t), Some(escaped)) = (
                    resolved_type(child, embedded(child), &child_name),
                    escape(property),
                ) {
                    fields.insert(escaped, t);
                }
            }
            if meta {
                fields.insert("apiVersion".into(), Type::String);
                fields.insert("kind".into(), Type::String);
                fields.insert("metadata".into(), metadata_type());
            }
            Some(Type::Object(Arc::new(ObjectType {
                name: name.to_owned(),
                fields,
            })))
        }
        Some("string") => Some(match schema.get("format").and_then(Json::as_str) {
            Some("byte") => Type::Bytes,
            Some("duration") => Type::Duration,
            Some("date" | "date-time") => Type::Timestamp,
            _ => Type::String,
        }),
        Some("integer") => Some(Type::Int),
        Some("number") => Some(Type::Double),
        Some("boolean") => Some(Type::Bool),
        _ => None,
    }
}

/// The component `root` (a name under `#/components/schemas/`) with every reference replaced
/// by what it refers to, as upstream's `PopulateRefs` does
/// (`staging/src/k8s.io/apiserver/pkg/cel/openapi/resolver/refs.go`): a `$ref`, alone or
/// wrapped in `allOf` (to keep a description), becomes the referred schema, in properties,
/// `additionalProperties` and `items`; a reference back into its own chain (a recursive
/// type: `JSONSchemaProps`) becomes an empty object. `None` when `root` is not found.
pub fn populate_refs<'a>(root: &str, component: &dyn Fn(&str) -> Option<&'a Json>) -> Option<Json> {
    let schema = component(root)?;
    let mut visiting = vec![root.to_owned()];
    populate(schema, component, &mut visiting)
}

/// Where component references point.
const REF_PREFIX: &str = "#/components/schemas/";

/// The reference a schema node is (`$ref`, or one inside `allOf`: upstream's `refOf`).
fn reference_of(schema: &Json) -> Option<&str> {
    if let Some(r) = schema.get("$ref").and_then(Json::as_str) {
        return Some(r);
    }
    schema
        .get("allOf")
        .and_then(Json::as_array)?
        .iter()
        .find_map(reference_of)
}

fn populate<'a>(
    schema: &'a Json,
    component: &dyn Fn(&str) -> Option<&'a Json>,
    visiting: &mut Vec<String>,
) -> Option<Json> {
    let mut pushed = false;
    let mut node = schema;
    if let Some(reference) = reference_of(schema) {
        let name = reference.strip_prefix(REF_PREFIX).unwrap_or(reference);
        if visiting.iter().any(|v| v == name) {
            return Some(serde_json::json!({"type": "object"}));
        }
        node = component(name)?;
        visiting.push(name.to_owned());
        pushed = true;
    }
    let result = (|| {
        let Json::Object(map) = node else {
            return Some(node.clone());
        };
        let mut out = map.clone();
        if let Some(Json::Object(properties)) = map.get("properties") {
            let mut populated = serde_json::Map::new();
            for (name, child) in properties {
                populated.insert(name.clone(), populate(child, component, visiting)?);
            }
            out.insert("properties".to_owned(), Json::Object(populated));
        }
        for key in ["additionalProperties", "items"] {
            if let Some(child) = map.get(key).filter(|c| c.is_object()) {
                out.insert(key.to_owned(), populate(child, component, visiting)?);
            }
        }
        Some(Json::Object(out))
    })();
    if pushed {
        visiting.pop();
    }
    result
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
                // A null property is an absent one (upstream's object values); a map keeps
                // its null values.
                if child.is_null() {
                    continue;
                }
                match properties.and_then(|p| p.get(name)) {
                    Some(child_schema) => {
                        // A name CEL cannot spell stays in the value under its own name: it
                        // still counts in equality, as upstream's unknown fields do.
                        let key = escape(name).unwrap_or_else(|| name.clone());
                        out.insert(Key::String(key.into()), to_value(Some(child_schema), child));
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
            let values = items.iter().map(|i| to_value(item_schema, i)).collect();
            Value::typed_list(values, list_kind(schema))
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

/// The [`ListKind`] of an array schema's `x-kubernetes-list-type` (map keys escaped as the
/// items' properties are).
fn list_kind(schema: &Json) -> ListKind {
    match schema.get("x-kubernetes-list-type").and_then(Json::as_str) {
        Some("set") => ListKind::Set,
        Some("map") => {
            let keys = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .filter_map(Json::as_str)
                .map(|k| Arc::from(escape(k).unwrap_or_else(|| k.to_owned())))
                .collect();
            ListKind::Map(keys)
        }
        _ => ListKind::Atomic,
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

    #[test]
    fn resolved_types_follow_upstreams_schema_decl_type() {
        let components = serde_json::json!({
            "Root": {"type": "object", "properties": {
                "kind": {"type": "string"}, "apiVersion": {"type": "string"},
                "metadata": {"$ref": "#/components/schemas/Meta"},
                "spec": {"allOf": [{"$ref": "#/components/schemas/Spec"}], "description": "d"},
            }},
            "Meta": {"type": "object", "properties": {
                "name": {"type": "string"}, "generateName": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "Spec": {"type": "object", "properties": {
                "n": {"type": "integer"},
                "untyped": {"description": "no type"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true},
                "self": {"$ref": "#/components/schemas/Spec"},
                "items": {"type": "array", "items": {"$ref": "#/components/schemas/Missing"}},
            }},
        });
        let lookup = |name: &str| components.get(name);
        // A reference that does not resolve fails the whole, as upstream's resolver.
        assert_eq!(populate_refs("Root", &lookup), None);
        let mut components = components.clone();
        if let Some(Json::Object(spec)) = components.pointer_mut("/Spec/properties") {
            spec.shift_remove("items");
        }
        let lookup = |name: &str| components.get(name);
        let schema = populate_refs("Root", &lookup).expect("resolves");
        // The recursive reference is an empty object.
        assert_eq!(
            schema.pointer("/properties/spec/properties/self"),
            Some(&serde_json::json!({"type": "object"}))
        );
        let Some(Type::Object(root)) = resolved_type(&schema, true, "Root") else {
            panic!("an object");
        };
        // The metadata declares name and generateName: kept whole.
        let Some(Type::Object(meta)) = root.fields.get("metadata") else {
            panic!("metadata is an object");
        };
        assert_eq!(
            meta.fields.get("labels"),
            Some(&Type::map(Type::String, Type::String))
        );
        let Some(Type::Object(spec)) = root.fields.get("spec") else {
            panic!("spec is an object");
        };
        assert_eq!(spec.name, "Root.spec");
        assert_eq!(spec.fields.get("n"), Some(&Type::Int));
        assert_eq!(spec.fields.get("port"), Some(&Type::Dyn));
        assert_eq!(spec.fields.get("untyped"), None);
        let Some(Type::Object(free)) = spec.fields.get("free") else {
            panic!("a preserve-unknown object is an object without fields");
        };
        assert!(free.fields.is_empty());
        // A root without metadata gets upstream's kind, apiVersion and metadata.name.
        let Some(Type::Object(bare)) =
            resolved_type(&serde_json::json!({"type": "object"}), true, "X")
        else {
            panic!("an object");
        };
        let names: Vec<&str> = bare.fields.keys().map(String::as_str).collect();
        assert_eq!(names, ["apiVersion", "kind", "metadata"]);
    }

    fn list_schemas() -> (Json, Json, Json, Json) {
        let int = serde_json::json!({"type": "integer", "format": "int64"});
        let map_list = serde_json::json!({"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["key"],
            "items": {"type": "object", "properties": {"key": {"type": "string"}, "val": int}}});
        let multi_key = serde_json::json!({"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["key1", "key2"],
            "items": {"type": "object", "properties": {"key1": {"type": "string"},
                "key2": {"type": "string"}, "val": int}}});
        let set = serde_json::json!({"type": "array", "x-kubernetes-list-type": "set",
            "items": {"type": "string"}});
        let atomic = serde_json::json!({"type": "array", "items": {"type": "string"}});
        (map_list, multi_key, set, atomic)
    }

    // Upstream's table: apiextensions-apiserver/pkg/apiserver/schema/cel/values_test.go
    // `TestEquality` (its list cases; objects and maps are plain maps here).
    #[test]
    fn lists_compare_as_their_list_type_says() {
        use serde_json::json;
        let (map_list, multi_key, set, atomic) = list_schemas();
        let kv = |k: &str, v: i64| json!({"key": k, "val": v});
        let kkv = |a: &str, b: &str, v: i64| json!({"key1": a, "key2": b, "val": v});
        let cases = [
            (
                "map lists are equal regardless of order",
                &map_list,
                json!([kv("a", 1), kv("b", 2)]),
                json!([kv("b", 2), kv("a", 1)]),
                true,
            ),
            (
                "map lists are not equal if contents differs",
                &map_list,
                json!([kv("a", 1), kv("b", 2)]),
                json!([kv("a", 1), kv("b", 3)]),
                false,
            ),
            (
                "map lists are not equal if length differs",
                &map_list,
                json!([kv("a", 1), kv("b", 2)]),
                json!([kv("a", 1), kv("b", 2), kv("c", 3)]),
                false,
            ),
            (
                "multi-key map lists are equal regardless of order",
                &multi_key,
                json!([kkv("a1", "a2", 1), kkv("b1", "b2", 2)]),
                json!([kkv("b1", "b2", 2), kkv("a1", "a2", 1)]),
                true,
            ),
            (
                "multi-key map lists with different contents are not equal",
                &multi_key,
                json!([kkv("a1", "a2", 1), kkv("b1", "b2", 2)]),
                json!([kkv("a1", "a2", 1), kkv("b1", "b2", 3)]),
                false,
            ),
            (
                "multi-key map lists with different keys are not equal",
                &multi_key,
                json!([kkv("a1", "a2", 1), kkv("b1", "b2", 2)]),
                json!([kkv("a1", "a2", 1), kkv("c1", "c2", 3)]),
                false,
            ),
            (
                "multi-key map lists with different lengths are not equal",
                &multi_key,
                json!([kkv("a1", "a2", 1)]),
                json!([kkv("a1", "a2", 1), kkv("b1", "b2", 3)]),
                false,
            ),
            (
                "set lists are equal regardless of order",
                &set,
                json!(["a", "b"]),
                json!(["b", "a"]),
                true,
            ),
            (
                "set lists are not equal if contents differ",
                &set,
                json!(["a", "b"]),
                json!(["a", "c"]),
                false,
            ),
            (
                "set lists are not equal if lengths differ",
                &set,
                json!(["a", "b"]),
                json!(["a", "b", "c"]),
                false,
            ),
            (
                "identical atomic lists are equal",
                &atomic,
                json!(["a", "b"]),
                json!(["a", "b"]),
                true,
            ),
            (
                "atomic lists are not equal if order differs",
                &atomic,
                json!(["a", "b"]),
                json!(["b", "a"]),
                false,
            ),
            (
                "atomic lists are not equal if contents differ",
                &atomic,
                json!(["a", "b"]),
                json!(["a", "c"]),
                false,
            ),
            (
                "atomic lists are not equal if lengths differ",
                &atomic,
                json!(["a", "b"]),
                json!(["a", "b", "c"]),
                false,
            ),
        ];
        for (name, schema, lhs, rhs, equal) in cases {
            let (lhs, rhs) = (to_value(Some(schema), &lhs), to_value(Some(schema), &rhs));
            assert_eq!(lhs.equals(&rhs), equal, "{name}");
            assert_eq!(rhs.equals(&lhs), equal, "{name}, reversed");
        }
    }

    // Upstream: values_test.go `TestLister` (Contains and Add of each list type).
    #[test]
    fn lists_add_as_their_list_type_says() {
        use serde_json::json;
        let (map_list, _, set, atomic) = list_schemas();
        let kv = |k: &str, v: i64| json!({"key": k, "val": v});
        let cases = [
            (
                &map_list,
                json!([kv("a", 1), kv("b", 2)]),
                json!([kv("a", 2), kv("c", 1)]),
                json!([kv("b", 3), kv("c", 4)]),
                json!([kv("a", 1), kv("b", 3), kv("c", 4)]),
            ),
            (
                &set,
                json!(["a", "b"]),
                json!(["c"]),
                json!(["b", "c"]),
                json!(["a", "b", "c"]),
            ),
            (
                &atomic,
                json!(["a", "b"]),
                json!(["c"]),
                json!(["b", "c"]),
                json!(["a", "b", "b", "c"]),
            ),
        ];
        for (schema, items, absent, addition, expected) in cases {
            let Value::List(list) = to_value(Some(schema), &items) else {
                panic!("a list");
            };
            let item_schema = schema.get("items");
            for item in items.as_array().into_iter().flatten() {
                let item = to_value(item_schema, item);
                assert!(list.iter().any(|i| i.equals(&item)), "contains {item}");
            }
            for item in absent.as_array().into_iter().flatten() {
                let item = to_value(item_schema, item);
                assert!(
                    !list.iter().any(|i| i.equals(&item)),
                    "does not contain {item}"
                );
            }
            let Value::List(addition) = to_value(Some(schema), &addition) else {
                panic!("a list");
            };
            let added = Value::concat_lists(&list, &addition);
            let expected = to_value(None, &expected);
            // Compared element by element: the result keeps the list's kind.
            assert!(expected.equals(&added), "{added} is not {expected}");
            let Value::List(added) = added else {
                panic!("a list")
            };
            assert_eq!(added.kind(), list.kind());
        }
    }
}
