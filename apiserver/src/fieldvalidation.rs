//! Decoding a write's object as upstream's typed decoding does (docs/api-behaviour.md#field-validation, #content-types): a built-in kind
//! is read against its schema the way Go's `encoding/json` (`sigs.k8s.io/json`) fills the
//! kind's struct, so a value of the wrong JSON type is refused with Go's own message (`json:
//! cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32`),
//! a timestamp, an int-or-string or base64 data their own decoders refuse is refused in those
//! decoders' words, and what upstream writes back canonically (timestamps in UTC, quantities in
//! their canonical form, base64 without line breaks, a null in a list or map as its element's
//! zero value) is stored so.
//! Without this, an object that no typed client can read (an informer, the protobuf encoder)
//! could be stored by any client. Custom resources get the same for their `metadata`; their
//! bodies are the definition's structural schema's business (`crd::schema`).
//!
//! Fields the kind does not have are dropped, as the real server drops what its Go types cannot
//! hold, and reported as `fieldValidation` asks: silently (`Ignore`), as `Warning` headers
//! (`Warn`, the default), or as an error (`Strict`, what kubectl sends once OpenAPI tells it the
//! server validates). A type error wins over unknown fields, as in upstream's decoder. The
//! schemas are the ones the OpenAPI documents serve (`kubemock_apimachinery::openapi`).
//!
//! Differences, where the OpenAPI schema does not carry what Go's types do: named Go types are
//! reported by their underlying type (`string`, not `v1.Protocol`; `map[string]resource.Quantity`,
//! not `v1.ResourceList`); a number is quoted as JSON re-prints it (`1000`, not `1e3`); a null in
//! a field is kept unless the field is required (Go would drop an `omitempty` one and zero the
//! rest).

use axum::http::HeaderValue;
use axum::response::Response;
use base64::Engine as _;
use std::sync::LazyLock;

use kubemock_apimachinery::gotime;
use kubemock_apimachinery::json::{json_kind, object_too_deep, too_deep_message};
use kubemock_apimachinery::openapi::{COMPONENTS_PREFIX, Schemas};
use kubemock_apimachinery::quantity::{Quantity, QuantityError};
use serde_json::{Map, Value, json};

use crate::object::Object;
use crate::query::Query;
use crate::registry::Resource;
use crate::status::{ApiError, ApiResult};

/// How unknown fields are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    /// Dropped silently.
    Ignore,
    /// Dropped, each reported in a `Warning` header.
    Warn,
    /// Refused with a 400.
    Strict,
}

impl FieldValidation {
    /// `?fieldValidation=`; `Warn` when absent, as the real server defaults.
    pub(crate) fn from_query(query: &Query) -> ApiResult<FieldValidation> {
        match query.get("fieldValidation").unwrap_or("") {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\" or \"Strict\", got {other:?}"
            ))),
        }
    }
}

/// Why an object could not be decoded into its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// Nested more than [`MAX_DEPTH`](kubemock_apimachinery::json::MAX_DEPTH) deep.
    TooDeep,
    /// A value of the wrong JSON type for its field (Go's `UnmarshalTypeError`).
    Type(Box<TypeError>),
    /// A value its type's own decoder refused (a timestamp, an int-or-string, base64 data), in
    /// that decoder's words.
    Value {
        /// The full JSON path of the value (`spec.template.spec.containers[0].ports[0]`).
        path: String,
        /// The decoder's message.
        message: String,
    },
}

/// A value of the wrong JSON type, with what Go's decoder and structured-merge-diff need to
/// word it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeError {
    /// What was found, as Go names it: `string`, `number`, `number 3.5`, `bool`, `object`,
    /// `array`.
    pub(crate) found: String,
    /// The Go type that could not hold it (`int32`, `map[string]string`, `v1.PodSpec`).
    pub(crate) go_type: String,
    /// The innermost Go struct holding the field (`DeploymentSpec`).
    pub(crate) structure: String,
    /// The struct fields from the root, map keys and list indexes left out (Go's error
    /// context: `spec.template.spec.containers.image`).
    pub(crate) fields: String,
    /// The full JSON path (`spec.template.spec.containers[0].image`).
    pub(crate) path: String,
    /// The scalar kind structured-merge-diff expected (`string`, `numeric (int or float)`,
    /// `boolean`, `map`, `list`).
    pub(crate) expected: &'static str,
    /// The value as structured-merge-diff prints it.
    pub(crate) value: String,
}

impl DecodeError {
    /// The message of Go's decoder (what follows `Kind in version "v1" cannot be handled as a
    /// Kind: `).
    pub(crate) fn message(&self) -> String {
        match self {
            DecodeError::TooDeep => too_deep_message(),
            DecodeError::Type(e) if e.structure.is_empty() && e.fields.is_empty() => format!(
                "json: cannot unmarshal {} into Go value of type {}",
                e.found, e.go_type
            ),
            DecodeError::Type(e) => format!(
                "json: cannot unmarshal {} into Go struct field {}.{} of type {}",
                e.found, e.structure, e.fields, e.go_type
            ),
            DecodeError::Value { message, .. } => message.clone(),
        }
    }

    /// The message of structured-merge-diff's typed conversion, which server-side apply runs
    /// on the applied configuration (`failed to create typed patch object (...): ` precedes it).
    pub(crate) fn apply_message(&self) -> String {
        match self {
            DecodeError::TooDeep => too_deep_message(),
            DecodeError::Type(e) => {
                format!(".{}: expected {}, got {}", e.path, e.expected, e.value)
            }
            DecodeError::Value { path, message } => format!(".{path}: {message}"),
        }
    }
}

/// What decoding refused: the object itself, or (under `Strict`) its unknown fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The object cannot be decoded into its kind.
    Decode(DecodeError),
    /// `fieldValidation=Strict` and fields the kind does not have: the `unknown field "..."`
    /// messages, in input order.
    Strict(Vec<String>),
}

impl Refusal {
    /// The message after `Kind in version "v1" cannot be handled as a Kind: `.
    pub(crate) fn message(&self) -> String {
        match self {
            Refusal::Decode(err) => err.message(),
            Refusal::Strict(unknown) => format!("strict decoding error: {}", unknown.join(", ")),
        }
    }
}

/// Decodes `object`, an object of `resource`, as upstream's typed decoding would: checks its
/// depth and its values' types, writes canonical forms in place, drops the fields the kind
/// does not have and reports them as `mode` says. Returns the warnings to send (for `Warn`).
pub(crate) fn decode<'a>(
    schemas: &'a Schemas,
    resource: &'a Resource,
    mode: FieldValidation,
    object: &mut Object,
) -> Result<Vec<String>, Refusal> {
    if object_too_deep(object) {
        return Err(Refusal::Decode(DecodeError::TooDeep));
    }
    let mut decoder = Decoder::new(schemas);
    if let Some(custom) = &resource.custom {
        // Upstream decodes a custom resource's metadata alone into `metav1.ObjectMeta`
        // (`apiextensions-apiserver/pkg/apiserver/schema/objectmeta/coerce.go`), so its error
        // context starts at `ObjectMeta`.
        if let Some(metadata) = object.get_mut("metadata") {
            decoder.path.push_str("metadata");
            decoder
                .value(&OBJECT_META, metadata)
                .map_err(Refusal::Decode)?;
            decoder.path.clear();
        }
        if let Some(schema) = &custom.schema {
            crate::crd::schema::prune(schema, object, &mut decoder.unknown);
        }
    } else if let Some(schema) = schemas
        .kind(&resource.group, &resource.version, &resource.kind)
        .and_then(|name| schemas.component(name))
    {
        decoder.structure = resource.kind.as_str();
        decoder
            .structure_fields(schema, object)
            .map_err(Refusal::Decode)?;
    }
    if let Some(saved) = decoder.saved {
        return Err(Refusal::Decode(saved));
    }
    let messages: Vec<String> = decoder
        .unknown
        .iter()
        .map(|field| format!("unknown field \"{field}\""))
        .collect();
    match mode {
        _ if messages.is_empty() => Ok(Vec::new()),
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(messages),
        FieldValidation::Strict => Err(Refusal::Strict(messages)),
    }
}

/// Decodes `object`, a body of the built-in kind `group`/`version`/`kind` that is not itself
/// stored (a `Scale`, a `Binding`), as [`decode`] decodes a stored kind: depth and types
/// checked, canonical forms written. Unknown fields are dropped without a word.
pub(crate) fn decode_kind(
    schemas: &Schemas,
    group: &str,
    version: &str,
    kind: &str,
    object: &mut Object,
) -> Result<(), DecodeError> {
    if object_too_deep(object) {
        return Err(DecodeError::TooDeep);
    }
    let Some(schema) = schemas
        .kind(group, version, kind)
        .and_then(|name| schemas.component(name))
    else {
        return Ok(());
    };
    let mut decoder = Decoder::new(schemas);
    decoder.structure = kind;
    decoder.structure_fields(schema, object)?;
    decoder.saved.map_or(Ok(()), Err)
}

/// Adds one `Warning: 299 - "..."` header per message, as the real server sends them.
pub(crate) fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for warning in warnings {
        let escaped = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            response.headers_mut().append("warning", value);
        }
    }
    response
}

/// A reference to `metav1.ObjectMeta`, the schema of a custom resource's metadata.
static OBJECT_META: LazyLock<Value> = LazyLock::new(
    || json!({"$ref": format!("{COMPONENTS_PREFIX}io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")}),
);

/// How Go decodes a schema's values: the types with decoders of their own by name, the rest
/// by the schema's shape.
#[derive(Debug, Clone, Copy)]
enum Shape<'s> {
    /// A struct: the component's short name and its schema.
    Struct(&'s str, &'s Value),
    /// `map[string]T`.
    Map(&'s Value),
    /// `[]T`.
    Slice(&'s Value),
    /// `string`.
    Text,
    /// `[]byte`: base64 in JSON.
    Bytes,
    /// An integer of this many bits.
    Integer(u32),
    /// `float64`.
    Float,
    /// `bool`.
    Bool,
    /// `intstr.IntOrString`.
    IntOrString,
    /// `resource.Quantity`.
    Quantity,
    /// `metav1.Time` (`false`) or `metav1.MicroTime` (`true`).
    Time(bool),
    /// `JSONSchemaPropsOrBool`, `OrArray`, `OrStringArray`: a schema or the alternative.
    SchemaOr(Alternative, &'s Value),
    /// Anything goes (`RawExtension`, `FieldsV1`, apiextensions `JSON`, free-form objects).
    Any,
}

/// The alternative of a `JSONSchemaPropsOr...` type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alternative {
    Bool,
    Array,
    StringArray,
}

/// The Go package of a component (`io.k8s.api.apps.v1.Deployment` is in `v1`).
fn go_package(component: &str) -> &str {
    let mut parts = component.rsplit('.');
    parts.next();
    parts.next().unwrap_or("")
}

/// The short (Go) name of a component.
fn short_name(component: &str) -> &str {
    component.rsplit('.').next().unwrap_or(component)
}

/// Walks one object against its kind's schema, recording the first type error Go would save,
/// and the unknown fields. An error Go returns at once (a custom decoder's) ends the walk.
struct Decoder<'s> {
    schemas: &'s Schemas,
    /// The full JSON path of the value being decoded.
    path: String,
    /// Go's error context: the struct fields from the root, joined by dots.
    fields: String,
    /// The innermost struct being decoded.
    structure: &'s str,
    /// Paths of fields the kind does not have, in input order.
    unknown: Vec<String>,
    /// The first type error: Go's decoder saves it and decodes on, then returns it.
    saved: Option<DecodeError>,
}

impl<'s> Decoder<'s> {
    fn new(schemas: &'s Schemas) -> Self {
        Decoder {
            schemas,
            path: String::new(),
            fields: String::new(),
            structure: "",
            unknown: Vec::new(),
            saved: None,
        }
    }

    /// The shape of `schema`, following references.
    fn shape(&self, schema: &'s Value) -> Shape<'s> {
        let (name, schema) = self.schemas.follow(schema);
        if let Some(name) = name {
            match short_name(name) {
                "Quantity" => return Shape::Quantity,
                "Time" if go_package(name) == "v1" => return Shape::Time(false),
                "MicroTime" => return Shape::Time(true),
                "IntOrString" => return Shape::IntOrString,
                "RawExtension" | "FieldsV1" | "JSON" => return Shape::Any,
                "JSONSchemaPropsOrBool" => return self.schema_or(Alternative::Bool, schema),
                "JSONSchemaPropsOrArray" => return self.schema_or(Alternative::Array, schema),
                "JSONSchemaPropsOrStringArray" => {
                    return self.schema_or(Alternative::StringArray, schema);
                }
                _ => {}
            }
        }
        if schema
            .get("x-kubernetes-int-or-string")
            .and_then(Value::as_bool)
            == Some(true)
        {
            return Shape::IntOrString;
        }
        let format = schema.get("format").and_then(Value::as_str);
        match schema.get("type").and_then(Value::as_str) {
            Some("object") => {
                if let Some(items) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                    Shape::Map(items)
                } else if schema.get("properties").is_some() {
                    Shape::Struct(name.map_or("", short_name), schema)
                } else {
                    Shape::Any
                }
            }
            Some("array") => schema.get("items").map_or(Shape::Any, Shape::Slice),
            Some("string") if format == Some("byte") => Shape::Bytes,
            Some("string") => Shape::Text,
            Some("integer") if format == Some("int32") => Shape::Integer(32),
            Some("integer") => Shape::Integer(64),
            Some("number") => Shape::Float,
            Some("boolean") => Shape::Bool,
            _ => Shape::Any,
        }
    }

    /// A `JSONSchemaPropsOr...` type: its schema alternative is the first `oneOf` member.
    fn schema_or(&self, alternative: Alternative, schema: &'s Value) -> Shape<'s> {
        match schema
            .get("oneOf")
            .and_then(Value::as_array)
            .and_then(|one_of| one_of.first())
        {
            Some(props) => Shape::SchemaOr(alternative, props),
            None => Shape::Any,
        }
    }

    /// The Go type of `schema`, as `reflect.Type.String()` would print it.
    fn go_type(&self, schema: &'s Value) -> String {
        let (name, _) = self.schemas.follow(schema);
        let named =
            |component: &str| format!("{}.{}", go_package(component), short_name(component));
        match self.shape(schema) {
            Shape::Struct(..) | Shape::IntOrString | Shape::Quantity | Shape::Time(_) => {
                name.map_or_else(|| "struct {}".to_owned(), named)
            }
            Shape::SchemaOr(..) => name.map_or_else(|| "interface {}".to_owned(), named),
            Shape::Map(items) => format!("map[string]{}", self.go_type(items)),
            Shape::Slice(items) => format!("[]{}", self.go_type(items)),
            Shape::Text => "string".to_owned(),
            Shape::Bytes => "[]uint8".to_owned(),
            Shape::Integer(bits) => format!("int{bits}"),
            Shape::Float => "float64".to_owned(),
            Shape::Bool => "bool".to_owned(),
            Shape::Any => match name {
                Some(component) => named(component),
                None => "interface {}".to_owned(),
            },
        }
    }

    /// Records a type error, unless an earlier one was saved (Go keeps the first).
    fn mismatch(&mut self, schema: &'s Value, value: &Value, expected: &'static str) {
        if self.saved.is_some() {
            return;
        }
        let found = match value {
            Value::String(_) => "string".to_owned(),
            Value::Number(n) => match self.shape(schema) {
                Shape::Integer(_) | Shape::Float => format!("number {n}"),
                _ => "number".to_owned(),
            },
            Value::Bool(_) => "bool".to_owned(),
            Value::Object(_) => "object".to_owned(),
            Value::Array(_) => "array".to_owned(),
            Value::Null => "null".to_owned(),
        };
        let shown = match (expected, value) {
            ("string", _) => format!("&value.valueUnstructured{{Value:{}}}", go_print(value)),
            ("numeric (int or float)", _) => go_unstructured_type(value).to_owned(),
            _ => format!("&{{{}}}", go_print(value)),
        };
        self.saved = Some(DecodeError::Type(Box::new(TypeError {
            found,
            go_type: self.go_type(schema),
            structure: self.structure.to_owned(),
            fields: self.fields.clone(),
            path: self.path.clone(),
            expected,
            value: shown,
        })));
    }

    /// Records a custom decoder's error, unless an earlier one was saved.
    fn refuse(&mut self, message: String) {
        if self.saved.is_none() {
            self.saved = Some(DecodeError::Value {
                path: self.path.clone(),
                message,
            });
        }
    }

    /// An error Go's decoder returns at once (a custom `UnmarshalJSON`'s).
    fn abort(&self, message: String) -> DecodeError {
        DecodeError::Value {
            path: self.path.clone(),
            message,
        }
    }

    /// Decodes `value` as `schema` says; `Err` is an error that ends decoding.
    fn value(&mut self, schema: &'s Value, value: &mut Value) -> Result<(), DecodeError> {
        if value.is_null() {
            // Null leaves a Go value as it is; a custom decoder never sees it for a pointer.
            return Ok(());
        }
        match self.shape(schema) {
            Shape::Any => Ok(()),
            Shape::Struct(name, resolved) => match value {
                Value::Object(map) => {
                    let outer = std::mem::replace(&mut self.structure, name);
                    let result = self.structure_fields(resolved, map);
                    self.structure = outer;
                    result
                }
                other => {
                    self.mismatch(schema, other, "map");
                    Ok(())
                }
            },
            Shape::Map(items) => match value {
                Value::Object(map) => {
                    for (key, item) in map.iter_mut() {
                        let len = self.path.len();
                        self.path.push('.');
                        self.path.push_str(key);
                        let result = self.element(items, item);
                        self.path.truncate(len);
                        result?;
                    }
                    Ok(())
                }
                other => {
                    self.mismatch(schema, other, "map");
                    Ok(())
                }
            },
            Shape::Slice(items) => match value {
                Value::Array(list) => {
                    for (index, item) in list.iter_mut().enumerate() {
                        let len = self.path.len();
                        self.path.push_str(&format!("[{index}]"));
                        let result = self.element(items, item);
                        self.path.truncate(len);
                        result?;
                    }
                    Ok(())
                }
                other => {
                    self.mismatch(schema, other, "list");
                    Ok(())
                }
            },
            Shape::Text => {
                if !value.is_string() {
                    self.mismatch(schema, value, "string");
                }
                Ok(())
            }
            Shape::Bytes => {
                match value {
                    Value::String(text) => match go_base64(text) {
                        Ok(canonical) => {
                            if let Some(canonical) = canonical {
                                *text = canonical;
                            }
                        }
                        Err(offset) => {
                            self.refuse(format!("illegal base64 data at input byte {offset}"));
                        }
                    },
                    other => self.mismatch(schema, other, "string"),
                }
                Ok(())
            }
            Shape::Integer(bits) => {
                let fits = match value {
                    Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                        (Some(i), _) => bits == 64 || i32::try_from(i).is_ok(),
                        (None, Some(_)) => false,
                        (None, None) => false,
                    },
                    _ => false,
                };
                if !fits {
                    self.mismatch(schema, value, "numeric (int or float)");
                }
                Ok(())
            }
            Shape::Float => {
                if !value.is_number() {
                    self.mismatch(schema, value, "numeric (int or float)");
                }
                Ok(())
            }
            Shape::Bool => {
                if !value.is_boolean() {
                    self.mismatch(schema, value, "boolean");
                }
                Ok(())
            }
            Shape::IntOrString => match value {
                Value::String(_) => Ok(()),
                // `IntOrString.UnmarshalJSON` decodes anything but a string into an int32,
                // without the field's context, and returns at once.
                Value::Number(n) if n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()) => Ok(()),
                Value::Number(n) => Err(self.abort(format!(
                    "json: cannot unmarshal number {n} into Go value of type int32"
                ))),
                other => Err(self.abort(format!(
                    "json: cannot unmarshal {} into Go value of type int32",
                    json_kind(other)
                ))),
            },
            // `Quantity.UnmarshalJSON` parses the raw JSON (unquoted, trimmed) as a quantity
            // and returns its error at once; upstream writes back the canonical form.
            Shape::Quantity => {
                let parsed = match value {
                    Value::String(text) => Quantity::parse(text.trim()),
                    Value::Number(n) => Quantity::parse(&n.to_string()),
                    _ => Err(QuantityError::FormatWrong),
                };
                match parsed {
                    Ok(quantity) => {
                        let canonical = quantity.to_string();
                        if value.as_str() != Some(canonical.as_str()) {
                            *value = Value::String(canonical);
                        }
                        Ok(())
                    }
                    Err(err) => Err(self.abort(err.to_string())),
                }
            }
            Shape::Time(micro) => match value {
                Value::String(text) => match gotime::parse(text, micro) {
                    Ok(nanos) => {
                        let canonical = gotime::format(nanos, micro);
                        if canonical != *text {
                            *text = canonical;
                        }
                        Ok(())
                    }
                    Err(message) => Err(self.abort(message)),
                },
                other => Err(self.abort(format!(
                    "json: cannot unmarshal {} into Go value of type string",
                    json_kind(other)
                ))),
            },
            Shape::SchemaOr(alternative, props) => match (alternative, &mut *value) {
                (_, Value::Object(_)) => self.value(props, value),
                (Alternative::Bool, Value::Bool(_)) => Ok(()),
                (Alternative::Array, Value::Array(items)) => {
                    for item in items {
                        self.value(props, item)?;
                    }
                    Ok(())
                }
                (Alternative::StringArray, Value::Array(items)) => {
                    match items.iter().find(|item| !item.is_string()) {
                        Some(item) => Err(self.abort(format!(
                            "json: cannot unmarshal {} into Go value of type string",
                            json_kind(item)
                        ))),
                        None => Ok(()),
                    }
                }
                (_, other) => Err(self.abort(format!(
                    "json: cannot unmarshal {} into Go value of type {}",
                    json_kind(other),
                    self.go_type(props)
                ))),
            },
        }
    }

    /// A list item or map value: null becomes the element type's zero value, as Go stores it.
    fn element(&mut self, schema: &'s Value, value: &mut Value) -> Result<(), DecodeError> {
        if value.is_null() {
            *value = self.zero(schema);
            return Ok(());
        }
        self.value(schema, value)
    }

    /// The JSON of a Go zero value of `schema`'s type.
    fn zero(&self, schema: &'s Value) -> Value {
        match self.shape(schema) {
            Shape::Struct(..) => Value::Object(Map::new()),
            Shape::Text | Shape::Bytes => Value::String(String::new()),
            Shape::Integer(_) | Shape::Float | Shape::IntOrString => Value::from(0),
            Shape::Bool => Value::Bool(false),
            Shape::Quantity => Value::String("0".to_owned()),
            Shape::Map(_) | Shape::Slice(_) | Shape::Time(_) | Shape::SchemaOr(..) | Shape::Any => {
                Value::Null
            }
        }
    }

    /// Decodes the fields of a struct-shaped `map` against `schema`'s properties; unknown ones
    /// are recorded and dropped (kept under `x-kubernetes-preserve-unknown-fields`).
    fn structure_fields(
        &mut self,
        schema: &'s Value,
        map: &mut Map<String, Value>,
    ) -> Result<(), DecodeError> {
        let properties = schema.get("properties").and_then(Value::as_object);
        let preserve = schema
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true)
            || schema.get("additionalProperties").and_then(Value::as_bool) == Some(true);
        let required = |key: &str| {
            schema
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|name| name == key))
        };
        let mut dropped = Vec::new();
        for (key, child) in map.iter_mut() {
            let path_len = self.path.len();
            if !self.path.is_empty() {
                self.path.push('.');
            }
            self.path.push_str(key);
            let result = match properties.and_then(|p| p.get(key)) {
                Some(field) => {
                    let fields_len = self.fields.len();
                    if !self.fields.is_empty() {
                        self.fields.push('.');
                    }
                    self.fields.push_str(key);
                    let result = if child.is_null() && required(key) {
                        *child = self.zero(field);
                        Ok(())
                    } else {
                        self.value(field, child)
                    };
                    self.fields.truncate(fields_len);
                    result
                }
                None if preserve => Ok(()),
                None => {
                    self.unknown.push(self.path.clone());
                    dropped.push(key.clone());
                    Ok(())
                }
            };
            self.path.truncate(path_len);
            result?;
        }
        for key in dropped {
            map.shift_remove(&key);
        }
        Ok(())
    }
}

/// The Go type of `value` decoded without a schema (structured-merge-diff's `%T`).
fn go_unstructured_type(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::Bool(_) => "bool",
        Value::Object(_) => "map[string]interface {}",
        Value::Array(_) => "[]interface {}",
        Value::Null => "<nil>",
    }
}

/// `value` as Go's `%v` prints it decoded without a schema (`map[a:1 b:[x y]]`).
pub(crate) fn go_print(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "<nil>".to_owned(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(go_print).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let pairs: Vec<String> = keys
                .into_iter()
                .map(|key| format!("{key}:{}", go_print(&map[key])))
                .collect();
            format!("map[{}]", pairs.join(" "))
        }
    }
}

/// Reads `text` as Go's `base64.StdEncoding.Decode` does (line breaks skipped, padding
/// required): `Ok(Some(canonical))` when it is valid but not in the canonical form Go writes
/// back, `Ok(None)` when it already is, `Err(offset)` with the offset Go reports otherwise.
fn go_base64(text: &str) -> Result<Option<String>, usize> {
    let src = text.as_bytes();
    let is_break = |b: u8| b == b'\n' || b == b'\r';
    let is_symbol = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    let mut si = 0;
    let mut decoded = Vec::with_capacity(src.len() / 4 * 3);
    loop {
        // One quantum of four symbols (Go's `decodeQuantum`).
        let mut quantum = [0_u8; 4];
        let mut j = 0;
        let mut length = 4;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    length = 0;
                    break;
                }
                return Err(si - j);
            }
            let byte = src[si];
            si += 1;
            if is_symbol(byte) {
                quantum[j] = byte;
                j += 1;
                continue;
            }
            if is_break(byte) {
                continue;
            }
            if byte != b'=' {
                return Err(si - 1);
            }
            // Padding ends the data.
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && is_break(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && is_break(src[si]) {
                si += 1;
            }
            if si < src.len() {
                return Err(si);
            }
            length = j;
            break;
        }
        if length == 0 {
            break;
        }
        let mut padded = quantum;
        for slot in padded.iter_mut().skip(length) {
            *slot = b'A';
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(padded)
            .map_err(|_| si.saturating_sub(1))?;
        decoded.extend_from_slice(&bytes[..length - 1]);
        if length < 4 {
            break;
        }
    }
    let canonical = base64::engine::general_purpose::STANDARD.encode(&decoded);
    Ok((canonical != text).then_some(canonical))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use kubemock_apimachinery::json::{MAX_DEPTH, too_deep};
    use serde_json::json;
    use std::sync::LazyLock;

    static SCHEMAS: LazyLock<Schemas> = LazyLock::new(Schemas::builtin);

    fn check(
        group: &str,
        plural: &str,
        mode: FieldValidation,
        value: Value,
    ) -> (ApiResult<Vec<String>>, Value) {
        let registry = Registry::builtin();
        let resource = registry.lookup(group, "v1", plural).expect("a resource");
        let Value::Object(mut object) = value else {
            panic!("an object")
        };
        let result = decode(&SCHEMAS, &resource, mode, &mut object).map_err(|refusal| {
            ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: {}",
                refusal.message(),
                kind = resource.kind,
                version = resource.version,
            ))
        });
        (result, Value::Object(object))
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"a": "b"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
                "template": {
                    "metadata": {"labels": {"app": "web"}, "creationTimestamp": null},
                    "spec": {
                        "containers": [{
                            "name": "web", "image": "nginx:1.27",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "1"}},
                            "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}}
                        }],
                        "nodeSelector": {"disk": "ssd"},
                        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
                    }
                }
            },
            "status": {"replicas": 0}
        })
    }

    #[test]
    fn a_realistic_deployment_has_no_unknown_fields() {
        let (result, after) = check("apps", "deployments", FieldValidation::Strict, deployment());
        assert_eq!(result.expect("valid"), Vec::<String>::new());
        assert_eq!(after, deployment());
    }

    #[test]
    fn unknown_fields_are_reported_with_their_paths_in_input_order_and_dropped() {
        let mut value = deployment();
        value["spec"]["foo"] = json!(1);
        value["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = json!("Always");
        value["metadata"]["bogus"] = json!("x");
        let (result, after) = check("apps", "deployments", FieldValidation::Warn, value.clone());
        assert_eq!(
            result.expect("warnings"),
            [
                "unknown field \"metadata.bogus\"",
                "unknown field \"spec.template.spec.containers[0].imagePullPolicyy\"",
                "unknown field \"spec.foo\"",
            ]
        );
        assert_eq!(after, deployment());
        let (result, _) = check(
            "apps",
            "deployments",
            FieldValidation::Strict,
            value.clone(),
        );
        let err = result.expect_err("strict");
        assert_eq!(err.code.as_u16(), 400);
        assert_eq!(
            err.message,
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: \
             unknown field \"metadata.bogus\", \
             unknown field \"spec.template.spec.containers[0].imagePullPolicyy\", \
             unknown field \"spec.foo\""
        );
        let (result, after) = check("apps", "deployments", FieldValidation::Ignore, value);
        assert!(result.expect("ignored").is_empty());
        assert_eq!(after, deployment());
    }

    #[test]
    fn maps_and_free_form_fields_accept_any_key() {
        let value = json!({
            "metadata": {"name": "c"},
            "data": {"any.key": "v", "other": "w"},
            "binaryData": {"b": "AAEC"},
        });
        let (result, _) = check("", "configmaps", FieldValidation::Strict, value);
        assert!(result.expect("valid").is_empty());
        // A CRD's schema is free-form JSON below openAPIV3Schema.
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"},
                     "scope": "Namespaced",
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                       "x-kubernetes-preserve-unknown-fields": true,
                                       "properties": {"spec": {"type": "object"}}}}}]}
        });
        let registry = Registry::builtin();
        let resource = registry
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .expect("crds");
        let Value::Object(mut object) = crd else {
            panic!("an object")
        };
        let result = decode(&SCHEMAS, &resource, FieldValidation::Strict, &mut object);
        assert!(result.expect("valid").is_empty());
    }

    /// Finding 4: values of the wrong JSON type are refused with Go's decoder's message
    /// (`sigs.k8s.io/json`, `UnmarshalTypeError`), the first one in document order.
    #[test]
    fn finding_4_wrong_types_are_refused_with_gos_message() {
        let refused = |group: &str, plural: &str, value: Value| {
            let (result, _) = check(group, plural, FieldValidation::Strict, value.clone());
            let err = result.expect_err(&value.to_string());
            assert_eq!(err.code.as_u16(), 400);
            err.message
        };
        let prefix = "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: ";
        for (value, message) in [
            (
                json!({"metadata": {"name": "c", "labels": {"a": {"k": 1}}}}),
                "json: cannot unmarshal object into Go struct field ObjectMeta.metadata.labels of type string",
            ),
            (
                json!({"metadata": {"name": "c", "annotations": "str"}}),
                "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.annotations of type map[string]string",
            ),
            (
                json!({"metadata": {"name": "c", "finalizers": "x"}}),
                "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.finalizers of type []string",
            ),
            (
                json!({"metadata": {"name": "c"}, "data": {"a": 7}}),
                "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
            ),
            (
                json!({"metadata": {"name": "c", "generation": 1.5}}),
                "json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.metadata.generation of type int64",
            ),
            (
                json!({"metadata": {"name": "c", "creationTimestamp": "yesterday"}}),
                "parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\"",
            ),
            (
                json!({"metadata": {"name": 5}, "data": {"a": 7}}),
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string",
            ),
            (
                json!({"metadata": {"name": "c"}, "binaryData": {"b": "AAE*"}}),
                "illegal base64 data at input byte 3",
            ),
        ] {
            assert_eq!(
                refused("", "configmaps", value),
                format!("{prefix}{message}")
            );
        }
        let mut replicas = deployment();
        replicas["spec"]["replicas"] = json!("3");
        assert_eq!(
            refused("apps", "deployments", replicas),
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
        let mut port = deployment();
        port["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] =
            json!(1_u64 << 40);
        assert_eq!(
            refused("apps", "deployments", port),
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal number 1099511627776 into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32"
        );
        let mut spec = deployment();
        spec["spec"]["template"]["spec"] = json!("x");
        assert_eq!(
            refused("apps", "deployments", spec),
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field PodTemplateSpec.spec.template.spec of type v1.PodSpec"
        );
        // An int-or-string's own decoder returns at once, without the field's context.
        let mut surge = deployment();
        surge["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = json!(2.5);
        assert_eq!(
            refused("apps", "deployments", surge),
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal number 2.5 into Go value of type int32"
        );
        // A type error wins over unknown fields.
        let mut both = deployment();
        both["spec"]["bogus"] = json!(1);
        both["spec"]["paused"] = json!("yes");
        assert!(refused("apps", "deployments", both).ends_with(
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool"
        ));
    }

    #[test]
    fn canonical_forms_are_written_back_as_go_writes_them() {
        let value = json!({
            "metadata": {"name": "c", "creationTimestamp": "2024-05-01T12:00:00.5+02:00"},
            "data": {"a": null, "b": "x"},
            "binaryData": {"b": "AA\nEC"},
        });
        let (result, after) = check("", "configmaps", FieldValidation::Strict, value);
        result.expect("valid");
        assert_eq!(
            after["metadata"]["creationTimestamp"],
            "2024-05-01T10:00:00Z"
        );
        assert_eq!(after["data"], json!({"a": "", "b": "x"}));
        assert_eq!(after["binaryData"]["b"], "AAEC");
        // A required field's null is its zero value; an optional one's stays null.
        let mut null_name = deployment();
        null_name["spec"]["template"]["spec"]["containers"][0]["name"] = Value::Null;
        null_name["spec"]["template"]["spec"]["containers"][0]["env"] = Value::Null;
        let (result, after) = check("apps", "deployments", FieldValidation::Strict, null_name);
        result.expect("valid");
        let container = &after["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["name"], "");
        assert_eq!(container["env"], Value::Null);
    }

    /// Quantities are read as upstream's `ParseQuantity` reads them and stored canonically.
    #[test]
    fn quantities_are_parsed_and_stored_in_canonical_form() {
        let mut pod_like = deployment();
        let resources = &mut pod_like["spec"]["template"]["spec"]["containers"][0]["resources"];
        *resources = json!({"requests": {"cpu": "0.1", "memory": "1.5Gi"}, "limits": {"cpu": 2}});
        let (result, after) = check("apps", "deployments", FieldValidation::Strict, pod_like);
        result.expect("valid");
        let resources = &after["spec"]["template"]["spec"]["containers"][0]["resources"];
        assert_eq!(
            resources,
            &json!({"requests": {"cpu": "100m", "memory": "1536Mi"}, "limits": {"cpu": "2"}})
        );
        for (bad, message) in [
            (
                "abc",
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            ),
            ("1ki", "unable to parse quantity's suffix"),
        ] {
            let mut pod_like = deployment();
            pod_like["spec"]["template"]["spec"]["containers"][0]["resources"] =
                json!({"requests": {"cpu": bad}});
            let (result, _) = check("apps", "deployments", FieldValidation::Strict, pod_like);
            assert_eq!(
                result.expect_err(bad).message,
                format!(
                    "Deployment in version \"v1\" cannot be handled as a Deployment: {message}"
                )
            );
        }
    }

    /// Finding 5: nothing deeper than the server can read back is accepted.
    #[test]
    fn finding_5_objects_deeper_than_the_limit_are_refused() {
        let mut deep = json!("leaf");
        for _ in 0..(MAX_DEPTH - 1) {
            deep = json!({ "d": deep });
        }
        // Unknown fields are dropped only after the depth is checked.
        let fits = json!({"metadata": {"name": "c"}, "data": {}, "x": deep.clone()});
        assert!(!too_deep(&fits));
        let (result, _) = check("", "configmaps", FieldValidation::Ignore, fits);
        result.expect("at the limit");
        let over = json!({"metadata": {"name": "c"}, "x": {"d": deep}});
        assert!(too_deep(&over));
        let (result, _) = check("", "configmaps", FieldValidation::Ignore, over);
        assert_eq!(
            result.expect_err("too deep").message,
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: exceeded max depth of 100"
        );
    }

    #[test]
    fn base64_is_read_as_go_reads_it() {
        assert_eq!(go_base64("AAEC"), Ok(None));
        assert_eq!(go_base64("AA==\n"), Ok(Some("AA==".to_owned())));
        assert_eq!(go_base64(""), Ok(None));
        assert_eq!(go_base64("A"), Err(0));
        assert_eq!(go_base64("AAA"), Err(0));
        assert_eq!(go_base64("AAAA*"), Err(4));
        assert_eq!(go_base64("AA=A"), Err(2));
        assert_eq!(go_base64("AA="), Err(3));
        assert_eq!(go_base64("AA==AA"), Err(4));
    }

    #[test]
    fn warnings_become_headers() {
        let response = with_warnings(
            Response::new(axum::body::Body::empty()),
            &["unknown field \"spec.foo\"".to_owned()],
        );
        assert_eq!(
            response.headers().get("warning").expect("a header"),
            "299 - \"unknown field \\\"spec.foo\\\"\""
        );
    }
}
