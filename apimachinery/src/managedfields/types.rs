//! What server-side apply must know of a kind's shape: which maps and structs are atomic,
//! which lists are keyed (and by what), sets, or atomic. This is structured-merge-diff's
//! schema, reduced to what the walks in `typed` read, and built from the same data the rest
//! of the server uses: the Go markers of the 1.32 `generated.proto` files for built-in kinds
//! (`+listType`, `+listMapKey`, `+patchStrategy`/`+patchMergeKey` as kube-openapi maps them,
//! `+mapType`/`+structType`), and a CRD's OpenAPI v3 schema (`x-kubernetes-list-type`, ...)
//! for custom resources.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use serde_json::Value;

use crate::protobuf::schema::{Field, FieldType, Message, ProtoSchema};

/// An index into a [`Types`] arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeId(usize);

/// How a list's elements are identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced as a whole.
    Atomic,
    /// Scalars identified by value.
    Set,
    /// Objects identified by these key fields.
    Map(Vec<String>),
}

/// One type.
#[derive(Debug, Clone)]
pub enum TypeDef {
    /// A scalar, or anything replaced as a whole.
    Scalar,
    /// Nothing known: objects are granular maps of untyped values, lists are atomic.
    Untyped,
    /// A struct (declared `fields`) or a map (values of type `elem`), or both.
    Map {
        /// The declared fields and their types.
        fields: HashMap<String, TypeId>,
        /// The type of the values of other keys (a map), if any.
        elem: Option<TypeId>,
        /// Replaced as a whole (`+structType=atomic`, `+mapType=atomic`).
        atomic: bool,
    },
    /// A list.
    List {
        /// The type of the elements.
        elem: TypeId,
        /// Whether elements are replaced together, identified by value, or by key fields.
        kind: ListKind,
    },
}

/// The types of one kind, with its root.
#[derive(Debug)]
pub struct Types {
    defs: Vec<TypeDef>,
    /// The kind's own type.
    pub root: TypeId,
}

/// The scalar type (always at index 0).
const SCALAR: TypeId = TypeId(0);
/// The untyped type (always at index 1).
const UNTYPED: TypeId = TypeId(1);

/// Default values of list-map key fields that clients may omit (upstream's schemas carry
/// these as OpenAPI defaults: a port's protocol).
pub fn key_default(field: &str) -> Option<Value> {
    (field == "protocol").then(|| Value::String("TCP".to_owned()))
}

impl Types {
    fn with_builtins() -> Types {
        Types {
            defs: vec![TypeDef::Scalar, TypeDef::Untyped],
            root: UNTYPED,
        }
    }

    /// The untyped shape (objects granular, lists atomic).
    pub fn untyped() -> Arc<Types> {
        static UNTYPED_TYPES: LazyLock<Arc<Types>> =
            LazyLock::new(|| Arc::new(Types::with_builtins()));
        Arc::clone(&UNTYPED_TYPES)
    }

    /// A type by id.
    pub fn def(&self, id: TypeId) -> &TypeDef {
        self.defs.get(id.0).unwrap_or(&TypeDef::Untyped)
    }

    /// The type of `key` in a map type (`None` for scalars and lists).
    pub fn child(&self, id: TypeId, key: &str) -> TypeId {
        match self.def(id) {
            TypeDef::Map { fields, elem, .. } => {
                fields.get(key).copied().or(*elem).unwrap_or(UNTYPED)
            }
            TypeDef::Untyped => UNTYPED,
            _ => UNTYPED,
        }
    }

    /// Whether `key` is a declared field of a struct type.
    pub fn declares(&self, id: TypeId, key: &str) -> bool {
        matches!(self.def(id), TypeDef::Map { fields, .. } if fields.contains_key(key))
    }

    fn push(&mut self, def: TypeDef) -> TypeId {
        self.defs.push(def);
        TypeId(self.defs.len() - 1)
    }

    /// The types of a built-in kind, from the protobuf schema's messages and markers.
    pub fn for_kind(schema: &ProtoSchema, api_version: &str, kind: &str) -> Arc<Types> {
        static CACHE: LazyLock<Mutex<HashMap<String, Arc<Types>>>> =
            LazyLock::new(|| Mutex::new(HashMap::new()));
        let cache_key = format!("{api_version}/{kind}");
        if let Some(types) = CACHE.lock().get(&cache_key) {
            return Arc::clone(types);
        }
        let types = Arc::new(match schema.kind(api_version, kind) {
            Some(message) => {
                let mut builder = ProtoBuilder {
                    schema,
                    types: Types::with_builtins(),
                    messages: HashMap::new(),
                };
                let root = builder.message(message);
                let mut types = builder.types;
                types.root = root;
                types
            }
            None => Types::with_builtins(),
        });
        CACHE.lock().insert(cache_key, Arc::clone(&types));
        types
    }

    /// The types of a custom resource from its structural OpenAPI v3 schema.
    #[allow(dead_code)] // until custom resources are served
    pub fn from_openapi(schema: &Value) -> Types {
        let mut types = Types::with_builtins();
        let root = types.openapi(schema);
        types.root = root;
        types
    }

    fn openapi(&mut self, schema: &Value) -> TypeId {
        let get = |key: &str| schema.get(key);
        if get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true)
            || get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true)
                && get("properties").is_none()
        {
            return SCALAR;
        }
        match get("type").and_then(Value::as_str) {
            Some("object") => {
                let properties = get("properties").and_then(Value::as_object);
                let additional = get("additionalProperties").filter(|v| v.is_object());
                let preserve = get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool)
                    == Some(true);
                let atomic = get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
                let id = self.push(TypeDef::Scalar);
                let mut fields = HashMap::new();
                for (name, property) in properties.into_iter().flatten() {
                    let child = self.openapi(property);
                    fields.insert(name.clone(), child);
                }
                let elem = match additional {
                    Some(additional) => Some(self.openapi(additional)),
                    None if preserve || properties.is_none() => Some(UNTYPED),
                    None => None,
                };
                self.defs[id.0] = TypeDef::Map {
                    fields,
                    elem,
                    atomic,
                };
                id
            }
            Some("array") => {
                let elem = match get("items") {
                    Some(items) => self.openapi(items),
                    None => UNTYPED,
                };
                let kind = match get("x-kubernetes-list-type").and_then(Value::as_str) {
                    Some("set") => ListKind::Set,
                    Some("map") => ListKind::Map(
                        get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .map(|keys| {
                                keys.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_owned)
                                    .collect()
                            })
                            .unwrap_or_default(),
                    ),
                    _ => ListKind::Atomic,
                };
                self.push(TypeDef::List { elem, kind })
            }
            Some(_) => SCALAR,
            None if get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool)
                == Some(true) =>
            {
                UNTYPED
            }
            None => UNTYPED,
        }
    }
}

/// Builds [`Types`] from protobuf messages, once per message (types may be recursive).
struct ProtoBuilder<'s> {
    schema: &'s ProtoSchema,
    types: Types,
    messages: HashMap<&'s str, TypeId>,
}

impl<'s> ProtoBuilder<'s> {
    fn message(&mut self, message: &'s Message) -> TypeId {
        if let Some(id) = self.messages.get(message.name.as_str()) {
            return *id;
        }
        if let Some(special) = special(&message.name) {
            return special;
        }
        // Reserve the id first: a message may refer to itself (JSONSchemaProps).
        let id = self.types.push(TypeDef::Untyped);
        self.messages.insert(&message.name, id);
        let mut fields = HashMap::new();
        self.collect_fields(message, &mut fields);
        self.types.defs[id.0] = TypeDef::Map {
            fields,
            elem: None,
            atomic: message.markers.map_type.as_deref() == Some("atomic"),
        };
        id
    }

    /// The fields of `message`, those of inlined embedded structs included.
    fn collect_fields(&mut self, message: &'s Message, fields: &mut HashMap<String, TypeId>) {
        for field in &message.fields {
            if field.inline {
                if let FieldType::Message(name) = &field.ty
                    && let Some(inner) = self.schema.message(name)
                {
                    self.collect_fields(inner, fields);
                }
                continue;
            }
            let id = self.field(field);
            fields.insert(field.json.clone(), id);
        }
    }

    fn field(&mut self, field: &'s Field) -> TypeId {
        if field.repeated {
            let elem = self.value(&field.ty);
            let markers = &field.markers;
            let kind = match markers.list_type.as_deref() {
                Some("map") if !markers.list_map_keys.is_empty() => {
                    ListKind::Map(markers.list_map_keys.clone())
                }
                Some("set") => ListKind::Set,
                Some(_) => ListKind::Atomic,
                // kube-openapi: a merging list with a merge key is keyed by it, one without
                // (of scalars) is a set; everything else is atomic.
                None if markers.merges() => match &markers.patch_merge_key {
                    Some(key) => ListKind::Map(vec![key.clone()]),
                    None => ListKind::Set,
                },
                None => ListKind::Atomic,
            };
            return self.types.push(TypeDef::List { elem, kind });
        }
        if let FieldType::Map(_, value) = &field.ty {
            let elem = self.value(value);
            let atomic = field.markers.map_type.as_deref() == Some("atomic");
            return self.types.push(TypeDef::Map {
                fields: HashMap::new(),
                elem: Some(elem),
                atomic,
            });
        }
        let id = self.value(&field.ty);
        if field.markers.map_type.as_deref() == Some("atomic")
            && matches!(self.types.def(id), TypeDef::Map { .. })
        {
            // `+structType=atomic` on the field rather than on its type.
            return SCALAR;
        }
        id
    }

    fn value(&mut self, ty: &'s FieldType) -> TypeId {
        match ty {
            FieldType::Message(name) => match self.schema.message(name) {
                Some(message) if !message.known && is_named_slice(message) => {
                    self.types.push(TypeDef::List {
                        elem: SCALAR,
                        kind: ListKind::Atomic,
                    })
                }
                Some(message) => self.message(message),
                None => UNTYPED,
            },
            FieldType::Map(_, value) => {
                let elem = self.value(value);
                self.types.push(TypeDef::Map {
                    fields: HashMap::new(),
                    elem: Some(elem),
                    atomic: false,
                })
            }
            _ => SCALAR,
        }
    }
}

/// A Go named slice (`type X []string`), which protobuf wraps in a message of one field.
fn is_named_slice(message: &Message) -> bool {
    matches!(message.fields.as_slice(), [only] if only.repeated && only.name == "items")
}

/// Types with their own JSON form: scalars (times, quantities, int-or-string) or untyped
/// (embedded raw JSON).
fn special(name: &str) -> Option<TypeId> {
    const META: &str = "apimachinery.pkg.apis.meta.v1.";
    const APIEXT: &str = "apiextensions_apiserver.pkg.apis.apiextensions.v1.";
    match name {
        "apimachinery.pkg.api.resource.Quantity" | "apimachinery.pkg.util.intstr.IntOrString" => {
            Some(SCALAR)
        }
        "apimachinery.pkg.runtime.RawExtension" => Some(UNTYPED),
        _ => match name.strip_prefix(META) {
            Some("Time" | "MicroTime" | "Duration") => Some(SCALAR),
            Some("FieldsV1") => Some(UNTYPED),
            _ => match name.strip_prefix(APIEXT) {
                Some(
                    "JSON"
                    | "JSONSchemaPropsOrArray"
                    | "JSONSchemaPropsOrBool"
                    | "JSONSchemaPropsOrStringArray",
                ) => Some(UNTYPED),
                _ => None,
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::SCHEMA;

    fn list_kind(types: &Types, id: TypeId) -> ListKind {
        match types.def(id) {
            TypeDef::List { kind, .. } => kind.clone(),
            other => panic!("not a list: {other:?}"),
        }
    }

    #[test]
    fn builtin_kinds_get_list_types_from_the_go_markers() {
        let schema = SCHEMA.as_ref().expect("schema");
        let types = Types::for_kind(schema, "apps/v1", "Deployment");
        let spec = types.child(types.root, "spec");
        let pod = types.child(types.child(spec, "template"), "spec");
        let containers = types.child(pod, "containers");
        assert_eq!(
            list_kind(&types, containers),
            ListKind::Map(vec!["name".into()])
        );
        let TypeDef::List {
            elem: container, ..
        } = types.def(containers).clone()
        else {
            panic!("containers is a list");
        };
        assert_eq!(
            list_kind(&types, types.child(container, "ports")),
            ListKind::Map(vec!["containerPort".into(), "protocol".into()])
        );
        assert_eq!(
            list_kind(&types, types.child(container, "args")),
            ListKind::Atomic
        );
        let metadata = types.child(types.root, "metadata");
        assert_eq!(
            list_kind(&types, types.child(metadata, "finalizers")),
            ListKind::Set
        );
        assert_eq!(
            list_kind(&types, types.child(metadata, "ownerReferences")),
            ListKind::Map(vec!["uid".into()])
        );
        // LabelSelector is `+structType=atomic`.
        assert!(matches!(
            types.def(types.child(spec, "selector")),
            TypeDef::Map { atomic: true, .. } | TypeDef::Scalar
        ));
        // Volumes inline their source.
        let volumes = types.child(pod, "volumes");
        let TypeDef::List { elem: volume, .. } = types.def(volumes).clone() else {
            panic!("volumes is a list");
        };
        assert!(types.declares(volume, "configMap"));
        assert!(matches!(
            types.def(types.child(metadata, "creationTimestamp")),
            TypeDef::Scalar
        ));
    }

    #[test]
    fn custom_resources_get_list_types_from_their_schema() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "items": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["id"],
                              "items": {"type": "object", "properties": {"id": {"type": "string"}}}},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}
            }
        });
        let types = Types::from_openapi(&schema);
        let spec = types.child(types.root, "spec");
        assert_eq!(
            list_kind(&types, types.child(spec, "items")),
            ListKind::Map(vec!["id".into()])
        );
        assert_eq!(list_kind(&types, types.child(spec, "tags")), ListKind::Set);
        let free = types.child(spec, "free");
        assert!(matches!(
            types.def(types.child(free, "anything")),
            TypeDef::Untyped
        ));
    }
}
