//! The Kubernetes protobuf schemas as data: a parser for the proto2 subset Kubernetes'
//! `generated.proto` files use (packages, imports, options, messages of `optional` /
//! `repeated` / `map<>` fields of scalar or message type; no enums, oneofs or services), and
//! the resolved message table the codec walks. The text comes from `build.rs`.

use std::collections::HashMap;

use super::comments::strip_comments;

/// A field's value type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `bool`.
    Bool,
    /// `int32` (also `uint32`, `sint32` are absent from Kubernetes schemas).
    Int32,
    /// `int64`.
    Int64,
    /// `double`.
    Double,
    /// `float`.
    Float,
    /// A message, by full name (`api.core.v1.PodSpec`).
    Message(String),
    /// `map<K, V>`.
    Map(Box<FieldType>, Box<FieldType>),
}

/// One field of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The protobuf name: usually the JSON name (`clusterIP`), not always (`aPIGroup`).
    pub name: String,
    /// The JSON name (see [`ProtoSchema::set_json_names`]).
    pub json: String,
    /// An embedded Go struct whose fields JSON inlines into the parent (`Volume.volumeSource`).
    pub inline: bool,
    /// The Go markers of the field (patch strategy, list type, ...).
    pub markers: Markers,
    /// The field number.
    pub number: u32,
    /// `repeated`.
    pub repeated: bool,
    /// The value type.
    pub ty: FieldType,
}

/// The Go markers that strategic merge patch and server-side apply read, as upstream's
/// `generated.proto` comments carry them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Markers {
    /// `+patchStrategy`: `merge`, `replace`, `retainKeys`, `merge,retainKeys`.
    pub patch_strategy: Option<String>,
    /// `+patchMergeKey`.
    pub patch_merge_key: Option<String>,
    /// `+listType`: `atomic`, `set`, `map`.
    pub list_type: Option<String>,
    /// `+listMapKey` (repeatable).
    pub list_map_keys: Vec<String>,
    /// `+mapType` or `+structType`: `atomic`, `granular`.
    pub map_type: Option<String>,
}

impl Markers {
    fn from_pending(pending: &mut Vec<(String, String)>) -> Markers {
        let mut markers = Markers::default();
        for (name, value) in pending.drain(..) {
            match name.as_str() {
                "patchStrategy" => markers.patch_strategy = Some(value),
                "patchMergeKey" => markers.patch_merge_key = Some(value),
                "listType" => markers.list_type = Some(value),
                "listMapKey" => markers.list_map_keys.push(value),
                "mapType" | "structType" => markers.map_type = Some(value),
                _ => {}
            }
        }
        markers
    }

    /// Whether strategic merge patch merges this list (rather than replacing it).
    pub fn merges(&self) -> bool {
        self.patch_strategy
            .as_deref()
            .is_some_and(|s| s.split(',').any(|part| part == "merge"))
    }

    /// Whether the `retainKeys` strategy applies.
    pub fn retains_keys(&self) -> bool {
        self.patch_strategy
            .as_deref()
            .is_some_and(|s| s.split(',').any(|part| part == "retainKeys"))
    }
}

/// One message: its fields in declaration order (the Go struct's order).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    /// Full name (`api.core.v1.Pod`).
    pub name: String,
    /// Fields in declaration order.
    pub fields: Vec<Field>,
    /// Whether the JSON property names are known (an OpenAPI schema of the type exists):
    /// a message without one and with a single `repeated items` field is a named Go slice.
    pub known: bool,
    /// The type's own markers (`+structType=atomic`).
    pub markers: Markers,
}

#[cfg(test)]
impl Message {
    /// The field with this number.
    pub fn field(&self, number: u32) -> Option<&Field> {
        self.fields.iter().find(|f| f.number == number)
    }

    /// The field with this (JSON) name.
    pub fn field_named(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Every message of the schemas, by full name.
#[derive(Debug, Default)]
pub struct ProtoSchema {
    messages: HashMap<String, Message>,
}

impl ProtoSchema {
    /// Parses concatenated `.proto` files (comments already stripped or not) and resolves
    /// every message reference.
    pub fn parse(text: &str) -> Result<ProtoSchema, String> {
        let tokens = tokenize(text);
        let mut parser = Parser {
            tokens: &tokens,
            at: 0,
        };
        let mut package = String::new();
        let mut messages = Vec::new();
        let mut pending = Vec::new();
        while let Some(token) = parser.next() {
            match token {
                "syntax" | "option" | "import" => parser.skip_statement(),
                "package" => {
                    package = parser.expect_word()?.to_owned();
                    parser.expect(";")?;
                }
                "message" => parser.message(&package, "", &mut pending, &mut messages)?,
                marker if marker.starts_with('@') => push_marker(marker, &mut pending),
                other => return Err(format!("unexpected {other:?} at top level")),
            }
        }
        let mut schema = ProtoSchema {
            messages: HashMap::new(),
        };
        // Resolve references: `.a.b.C` is absolute; otherwise the innermost scope wins.
        let names: std::collections::HashSet<String> =
            messages.iter().map(|(_, m)| m.name.clone()).collect();
        for (scope, mut message) in messages {
            for field in &mut message.fields {
                resolve(&mut field.ty, &scope, &names).map_err(|missing| {
                    format!("{}.{}: unknown type {missing}", message.name, field.name)
                })?;
            }
            schema.messages.insert(message.name.clone(), message);
        }
        Ok(schema)
    }

    /// Sets each field's JSON name and inlining from `properties`, which gives the JSON
    /// property names of a message when known (the OpenAPI schema of the same type): a field is
    /// named by the property that matches it ignoring case, `$` and `-` (`aPIGroup` is
    /// `apiGroup`, `schema` is `$schema`); a message field that matches none and is named after
    /// its type (`volumeSource: VolumeSource`) is an inlined embedded struct. Without known
    /// properties, names stay as they are and nothing is inlined.
    pub fn set_json_names(&mut self, properties: impl Fn(&str) -> Option<Vec<String>>) {
        let normal = |name: &str| -> String {
            name.chars()
                .filter(|c| *c != '$' && *c != '-')
                .flat_map(char::to_lowercase)
                .collect()
        };
        for message in self.messages.values_mut() {
            let Some(known) = properties(&message.name) else {
                continue;
            };
            message.known = true;
            for field in &mut message.fields {
                if let Some(property) = known.iter().find(|p| normal(p) == normal(&field.name)) {
                    field.json = property.clone();
                } else {
                    field.inline = !field.repeated && matches!(field.ty, FieldType::Message(_));
                }
            }
        }
    }

    /// A message by full name.
    pub fn message(&self, name: &str) -> Option<&Message> {
        self.messages.get(name)
    }

    /// The full names of every message.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.messages.keys().map(String::as_str)
    }

    /// The message of a kind: `kind` in the package of `apiVersion`'s group and version
    /// (`apps/v1` → `*.apps.v1`, `v1` → `*.core.v1`, `rbac.authorization.k8s.io/v1` →
    /// `*.rbac.v1`), preferring the `api.` packages over apimachinery's; meta/v1's option
    /// kinds from any group-version.
    pub fn kind(&self, api_version: &str, kind: &str) -> Option<&Message> {
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group.split('.').next().unwrap_or(group), version),
            None => ("core", api_version),
        };
        let suffix = format!(".{group}.{version}.{kind}");
        let mut candidates: Vec<&Message> = self
            .messages
            .values()
            .filter(|m| m.name.ends_with(&suffix))
            .collect();
        candidates.sort_by_key(|m| (!m.name.starts_with("api."), m.name.clone()));
        // Options and Status are registered in every group-version (`v1` DeleteOptions).
        candidates
            .first()
            .copied()
            .or_else(|| self.message(&format!("apimachinery.pkg.apis.meta.v1.{kind}")))
    }

    /// How many messages there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.messages.len()
    }
}

fn resolve(
    ty: &mut FieldType,
    scope: &str,
    names: &std::collections::HashSet<String>,
) -> Result<(), String> {
    match ty {
        FieldType::Message(name) => {
            if let Some(absolute) = name.strip_prefix('.') {
                *name = absolute.to_owned();
            } else {
                // Innermost scope first: `a.b.C` then `a.C` then `C`.
                let mut prefix = scope.to_owned();
                loop {
                    let candidate = if prefix.is_empty() {
                        name.clone()
                    } else {
                        format!("{prefix}.{name}")
                    };
                    if names.contains(&candidate) {
                        *name = candidate;
                        break;
                    }
                    if prefix.is_empty() {
                        return Err(name.clone());
                    }
                    prefix = prefix
                        .rsplit_once('.')
                        .map_or(String::new(), |(p, _)| p.to_owned());
                }
            }
            if names.contains(name.as_str()) {
                Ok(())
            } else {
                Err(name.clone())
            }
        }
        FieldType::Map(key, value) => {
            resolve(key, scope, names)?;
            resolve(value, scope, names)
        }
        _ => Ok(()),
    }
}

/// Words and punctuation, without comments.
fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for line in strip_comments(text).lines() {
        if line.starts_with('@') {
            tokens.push(line.to_owned());
            continue;
        }
        let mut start = None;
        for (i, c) in line.char_indices() {
            let punctuation = matches!(c, '{' | '}' | ';' | '=' | '<' | '>' | ',' | '[' | ']');
            if c.is_whitespace() || punctuation {
                if let Some(s) = start.take() {
                    tokens.push(line[s..i].to_owned());
                }
                if punctuation {
                    tokens.push(line[i..i + 1].to_owned());
                }
            } else if start.is_none() {
                start = Some(i);
            }
        }
        if let Some(s) = start {
            tokens.push(line[s..].to_owned());
        }
    }
    tokens
}

struct Parser<'a> {
    tokens: &'a [String],
    at: usize,
}

impl<'a> Parser<'a> {
    fn next(&mut self) -> Option<&'a str> {
        let token = self.tokens.get(self.at).map(String::as_str);
        self.at += 1;
        token
    }

    fn expect(&mut self, wanted: &str) -> Result<(), String> {
        match self.next() {
            Some(token) if token == wanted => Ok(()),
            other => Err(format!("expected {wanted:?}, found {other:?}")),
        }
    }

    fn expect_word(&mut self) -> Result<&'a str, String> {
        match self.next() {
            Some(token)
                if token
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.') =>
            {
                Ok(token)
            }
            other => Err(format!("expected a name, found {other:?}")),
        }
    }

    fn skip_statement(&mut self) {
        while let Some(token) = self.next() {
            if token == ";" {
                return;
            }
        }
    }

    /// `message Name { ... }`, after the `message` keyword; nested messages are named
    /// `Outer.Inner`. Each message is pushed with the scope its references resolve in.
    fn message(
        &mut self,
        package: &str,
        outer: &str,
        type_markers: &mut Vec<(String, String)>,
        into: &mut Vec<(String, Message)>,
    ) -> Result<(), String> {
        let name = self.expect_word()?;
        let full = match (package.is_empty(), outer.is_empty()) {
            (_, false) => format!("{outer}.{name}"),
            (true, true) => name.to_owned(),
            (false, true) => format!("{package}.{name}"),
        };
        self.expect("{")?;
        let mut message = Message {
            name: full.clone(),
            fields: Vec::new(),
            known: false,
            markers: Markers::from_pending(type_markers),
        };
        let mut pending = Vec::new();
        loop {
            match self.next() {
                Some("}") => break,
                Some("message") => {
                    pending.clear();
                    self.message(package, &full, &mut Vec::new(), into)?;
                }
                Some("option" | "reserved") => self.skip_statement(),
                Some(label @ ("optional" | "repeated" | "required")) => {
                    let ty = self.expect_word()?;
                    let ty = if ty == "map" {
                        self.map_type()?
                    } else {
                        scalar_or_message(ty)
                    };
                    let markers = Markers::from_pending(&mut pending);
                    message
                        .fields
                        .push(self.field(label == "repeated", ty, markers)?);
                }
                Some("map") => {
                    let ty = self.map_type()?;
                    let markers = Markers::from_pending(&mut pending);
                    message.fields.push(self.field(false, ty, markers)?);
                }
                Some(marker) if marker.starts_with('@') => push_marker(marker, &mut pending),
                other => return Err(format!("unexpected {other:?} in message {full}")),
            }
        }
        into.push((full, message));
        Ok(())
    }

    /// `<K, V>` after `map`.
    fn map_type(&mut self) -> Result<FieldType, String> {
        self.expect("<")?;
        let key = scalar_or_message(self.expect_word()?);
        self.expect(",")?;
        let value = scalar_or_message(self.expect_word()?);
        self.expect(">")?;
        Ok(FieldType::Map(Box::new(key), Box::new(value)))
    }

    /// `name = N [options];` after the type.
    fn field(&mut self, repeated: bool, ty: FieldType, markers: Markers) -> Result<Field, String> {
        let name = self.expect_word()?.to_owned();
        self.expect("=")?;
        let number = self
            .next()
            .and_then(|n| n.parse::<u32>().ok())
            .ok_or_else(|| format!("field {name}: expected a number"))?;
        match self.next() {
            Some(";") => {}
            Some("[") => {
                while self.next().is_some_and(|t| t != "]") {}
                self.expect(";")?;
            }
            other => return Err(format!("field {name}: expected ';', found {other:?}")),
        }
        Ok(Field {
            json: name.clone(),
            inline: false,
            markers,
            name,
            number,
            repeated,
            ty,
        })
    }
}

/// Records an `@name=value` marker token.
fn push_marker(token: &str, pending: &mut Vec<(String, String)>) {
    if let Some((name, value)) = token.trim_start_matches('@').split_once('=') {
        pending.push((name.to_owned(), value.to_owned()));
    }
}

fn scalar_or_message(name: &str) -> FieldType {
    match name {
        "string" => FieldType::String,
        "bytes" => FieldType::Bytes,
        "bool" => FieldType::Bool,
        "int32" | "uint32" | "sint32" | "fixed32" | "sfixed32" => FieldType::Int32,
        "int64" | "uint64" | "sint64" | "fixed64" | "sfixed64" => FieldType::Int64,
        "double" => FieldType::Double,
        "float" => FieldType::Float,
        other => FieldType::Message(other.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
/*
License block.
*/
syntax = "proto2";
package api.demo.v1;
import "apimachinery/pkg/apis/meta/v1/generated.proto";
option go_package = "k8s.io/api/demo/v1";

// Widget is a demo.
message Widget {
  // Standard object's metadata.
  optional .meta.ObjectMeta metadata = 1;
  optional WidgetSpec spec = 2;
  repeated string tags = 3;
  map<string, string> labels = 4;
  map<string, WidgetSpec> parts = 5 [packed = false];

  // Specs, merged by name.
  // +patchStrategy=merge
  // +patchMergeKey=name
  // +listType=map
  // +listMapKey=name
  repeated WidgetSpec specs = 6;
}

// A spec.
// +structType=atomic
message WidgetSpec {
  optional int32 size = 1;
  optional string clusterIP = 2;
}
package meta;
message ObjectMeta {
  optional string name = 1;
}
"#;

    #[test]
    fn parses_fields_in_order_and_resolves_references() {
        let schema = ProtoSchema::parse(SAMPLE).expect("parses");
        assert_eq!(schema.len(), 3);
        let widget = schema.message("api.demo.v1.Widget").expect("Widget");
        let names: Vec<&str> = widget.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["metadata", "spec", "tags", "labels", "parts", "specs"]
        );
        let specs = widget.field(6).expect("specs");
        assert!(specs.markers.merges());
        assert_eq!(specs.markers.patch_merge_key.as_deref(), Some("name"));
        assert_eq!(specs.markers.list_type.as_deref(), Some("map"));
        assert_eq!(specs.markers.list_map_keys, ["name"]);
        assert_eq!(
            widget.field(5).map(|f| f.markers.clone()),
            Some(Markers::default())
        );
        assert_eq!(
            widget.field(1).map(|f| &f.ty),
            Some(&FieldType::Message("meta.ObjectMeta".to_owned()))
        );
        assert_eq!(
            widget.field(2).map(|f| &f.ty),
            Some(&FieldType::Message("api.demo.v1.WidgetSpec".to_owned()))
        );
        assert!(widget.field(3).is_some_and(|f| f.repeated));
        assert_eq!(
            widget.field(5).map(|f| &f.ty),
            Some(&FieldType::Map(
                Box::new(FieldType::String),
                Box::new(FieldType::Message("api.demo.v1.WidgetSpec".to_owned()))
            ))
        );
        let spec = schema.message("api.demo.v1.WidgetSpec").expect("spec");
        assert_eq!(spec.markers.map_type.as_deref(), Some("atomic"));
        assert_eq!(spec.field_named("clusterIP").map(|f| f.number), Some(2));
        assert_eq!(
            schema
                .kind("demo.example.com/v1", "Widget")
                .map(|m| m.name.as_str()),
            Some("api.demo.v1.Widget")
        );
    }

    #[test]
    fn unknown_references_and_syntax_errors_are_reported() {
        let err = ProtoSchema::parse("package p;\nmessage A { optional B b = 1; }\n")
            .expect_err("unknown type");
        assert!(err.contains("unknown type B"), "{err}");
        assert!(ProtoSchema::parse("message A { optional string a = x; }").is_err());
        assert!(ProtoSchema::parse("enum E { A = 1; }").is_err());
    }
}
