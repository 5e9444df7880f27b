//! The schemas compiled for the codec's hot paths. `schema` keeps messages by name, as
//! strategic merge patch reads them; decoding and encoding every object that way would hash a
//! type name per nested message and compare strings per field. Here every message is an index,
//! every field is found by number (decoding) or by JSON name (encoding) without hashing, and
//! each type's special JSON form is decided once.
//!
//! It also carries what the `.proto` files cannot say: which fields are Go values rather than
//! pointers. gogo-protobuf writes a Go value field even when it is zero (`name: ""`,
//! `generation: 0`) and a pointer only when set, and Go's JSON leaves zero `omitempty` values
//! out. Only the apimachinery types in every object and response (object and list metadata,
//! Status, watch events) are listed ([`GO_VALUES`], from `k8s.io/apimachinery`'s `types.go`);
//! for other types, fields absent from the JSON are left out of the protobuf, which a Go client
//! decodes to the same struct.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::schema::{FieldType, ProtoSchema};
use super::wire::Wire;

/// The package of apimachinery's `meta/v1`.
pub(crate) const META: &str = "apimachinery.pkg.apis.meta.v1";
/// The package of apiextensions' `v1`.
const APIEXTENSIONS: &str = "apiextensions_apiserver.pkg.apis.apiextensions.v1";

/// Fields Go holds as values: gogo writes them even when zero. Per message, the proto field
/// names and whether the JSON tag has `omitempty` (a zero number or `false` then means
/// "absent" when decoding). From `k8s.io/apimachinery/pkg/apis/meta/v1/types.go` and
/// `pkg/runtime/types.go`.
const GO_VALUES: &[(&str, &[(&str, bool)])] = &[
    (
        "apimachinery.pkg.apis.meta.v1.ObjectMeta",
        &[
            ("name", true),
            ("generateName", true),
            ("namespace", true),
            ("selfLink", true),
            ("uid", true),
            ("resourceVersion", true),
            ("generation", true),
            ("creationTimestamp", true),
        ],
    ),
    (
        "apimachinery.pkg.apis.meta.v1.ListMeta",
        &[
            ("selfLink", true),
            ("resourceVersion", true),
            ("continue", true),
        ],
    ),
    (
        "apimachinery.pkg.apis.meta.v1.Status",
        &[
            ("metadata", false),
            ("status", true),
            ("message", true),
            ("reason", true),
            ("code", true),
        ],
    ),
    (
        "apimachinery.pkg.apis.meta.v1.StatusDetails",
        &[
            ("name", true),
            ("group", true),
            ("kind", true),
            ("uid", true),
            ("retryAfterSeconds", true),
        ],
    ),
    (
        "apimachinery.pkg.apis.meta.v1.StatusCause",
        &[("reason", true), ("message", true), ("field", true)],
    ),
    (
        "apimachinery.pkg.apis.meta.v1.OwnerReference",
        &[
            ("apiVersion", false),
            ("kind", false),
            ("name", false),
            ("uid", false),
        ],
    ),
    (
        "apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
        &[
            ("manager", true),
            ("operation", true),
            ("apiVersion", true),
            ("fieldsType", true),
            ("subresource", true),
        ],
    ),
    (
        "apimachinery.pkg.apis.meta.v1.Condition",
        &[
            ("type", false),
            ("status", false),
            ("observedGeneration", true),
            ("lastTransitionTime", false),
            ("reason", false),
            ("message", false),
        ],
    ),
    (
        "apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
        &[("key", false), ("operator", false)],
    ),
    (
        "apimachinery.pkg.apis.meta.v1.WatchEvent",
        &[("type", false), ("object", false)],
    ),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        &[
            ("id", true),
            ("schema", true),
            ("description", true),
            ("type", true),
            ("format", true),
            ("title", true),
            ("exclusiveMaximum", true),
            ("exclusiveMinimum", true),
            ("pattern", true),
            ("uniqueItems", true),
            ("nullable", true),
            ("xKubernetesEmbeddedResource", true),
            ("xKubernetesIntOrString", true),
        ],
    ),
    (
        "apimachinery.pkg.runtime.TypeMeta",
        &[("apiVersion", true), ("kind", true)],
    ),
];

/// A fast hash for the short, trusted field names of the schemas (the Fx hash of rustc):
/// a lookup per JSON property is on the encoder's hot path, where SipHash's protection
/// against chosen keys buys nothing (the table's keys are fixed; a hostile property name
/// only costs one more probe).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NameHasher {
    hash: u64,
}

impl NameHasher {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A field's value type, messages by index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ty {
    /// `string`.
    String,
    /// `bytes` (base64 in JSON).
    Bytes,
    /// `bool`.
    Bool,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `double`.
    Double,
    /// `float`.
    Float,
    /// A message, by index into [`Table::messages`].
    Message(u32),
    /// `map<K, V>`: each entry a nested message of key (1) and value (2).
    Map(Box<Ty>, Box<Ty>),
}

impl Ty {
    /// The wire type of a single value.
    pub(crate) fn wire(&self) -> Wire {
        match self {
            Ty::Bool | Ty::Int32 | Ty::Int64 => Wire::Varint,
            Ty::Double => Wire::Fixed64,
            Ty::Float => Wire::Fixed32,
            Ty::String | Ty::Bytes | Ty::Message(_) | Ty::Map(..) => Wire::Len,
        }
    }

    /// Whether a repeated field of this type may come packed.
    pub(crate) fn packable(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Double | Ty::Float
        )
    }
}

/// How a message appears in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// A JSON object of its fields.
    Object,
    /// `metav1.Time`: an RFC 3339 string (seconds), `null` when zero.
    Time,
    /// `metav1.MicroTime`: an RFC 3339 string with microseconds.
    MicroTime,
    /// `metav1.Duration`: Go's duration string (`1h2m3s`).
    Duration,
    /// `resource.Quantity`: its string.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension`, `metav1.FieldsV1`, apiextensions' `JSON`: embedded JSON in
    /// field 1.
    Embedded,
    /// `JSONSchemaPropsOrArray`: a schema object or an array of them.
    PropsOrArray,
    /// `JSONSchemaPropsOrBool`: a schema object or a boolean.
    PropsOrBool,
    /// `JSONSchemaPropsOrStringArray`: a schema object or an array of strings.
    PropsOrStringArray,
    /// A named Go slice (`Verbs`, `ExtraValue`): a message of one `repeated items`, whose
    /// JSON is the array.
    NamedSlice,
}

/// One field.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    /// The JSON name.
    pub(crate) json: String,
    /// The field number.
    pub(crate) number: u32,
    /// The value type.
    pub(crate) ty: Ty,
    /// `repeated`.
    pub(crate) repeated: bool,
    /// An embedded Go struct whose fields JSON inlines into the parent.
    pub(crate) inline: bool,
    /// A Go value: written even when zero.
    pub(crate) go_value: bool,
    /// A Go value with `omitempty`: a zero number or `false` decodes as absent.
    pub(crate) omit_zero: bool,
}

/// A name's first eight bytes as one word, zero-padded.
fn name_head(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let u32_at = |at: usize| {
        bytes
            .get(at..)
            .and_then(|b| b.first_chunk::<4>())
            .map_or(0, |w| u64::from(u32::from_le_bytes(*w)))
    };
    match bytes.len() {
        8.. => bytes
            .first_chunk::<8>()
            .map_or(0, |w| u64::from_le_bytes(*w)),
        // Two overlapping four-byte loads: a variable-length copy into a word and a load of
        // it cost a `memcpy` call and a store-forwarding stall per key.
        len @ 4..=7 => u32_at(0) | (u32_at(len - 4) << (8 * (len - 4))),
        _ => bytes
            .iter()
            .rev()
            .fold(0, |word, byte| (word << 8) | u64::from(*byte)),
    }
}

/// The bit of a name in a message's `name_filter`, from its head and length.
#[inline]
fn name_bit(head: u64, len: u32) -> u64 {
    let mixed = (head ^ u64::from(len)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    1 << (mixed >> 58)
}

/// Whether two names of the same length with the same head are equal: their bytes past the
/// eighth, compared a word at a time, the last word overlapping the one before it (field
/// names are short; a `memcmp` call per key cost more than the comparison).
fn same_tail(a: &[u8], b: &[u8]) -> bool {
    let word = |bytes: &[u8], at: usize| {
        bytes
            .get(at..at + 8)
            .and_then(|w| w.first_chunk::<8>())
            .map(|w| u64::from_le_bytes(*w))
    };
    let len = a.len();
    if len <= 8 {
        return true;
    }
    let mut at = 8;
    while at + 8 < len {
        if word(a, at) != word(b, at) {
            return false;
        }
        at += 8;
    }
    word(a, len - 8) == word(b, len - 8)
}

/// One message.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    /// Full name (`api.core.v1.Pod`).
    pub(crate) name: String,
    /// Its JSON form.
    pub(crate) form: Form,
    /// Fields in declaration order (Go's struct order, which JSON follows).
    pub(crate) fields: Vec<Field>,
    /// Field number → index into `fields` plus one (0: no such field).
    by_number: Vec<u16>,
    /// JSON name → index of the fields that are not inlined.
    by_json: HashMap<String, u16, BuildHasherDefault<NameHasher>>,
    /// Indexes of the fields written whatever the JSON holds (inlined and Go value fields),
    /// by field number.
    pub(crate) always: Vec<u16>,
    /// Per field, [`name_head`] of its JSON name and its length (`u32::MAX` for inlined
    /// fields, which have no name in JSON): compact, for the encoder's look-ahead.
    names: Vec<(u64, u32)>,
    /// A one-bit-per-name filter over `names` ([`name_bit`]): most keys a message does not
    /// have (those of the struct inlined in it, or of the one it is inlined in) are told apart
    /// without hashing.
    name_filter: u64,
    /// Indexes of the fields by field number (the order Go writes them in).
    pub(crate) by_number_order: Vec<u16>,
    /// Whether the fields' numbers grow in declaration order (Go's, which JSON follows): then
    /// an object's fields can be written as they come.
    pub(crate) numbered_in_order: bool,
    /// A built-in list kind's `items`: `[]` in JSON even when there are none.
    pub(crate) list_items: Option<u16>,
}

impl Message {
    /// The index of field `number`.
    pub(crate) fn by_number(&self, number: u32) -> Option<usize> {
        let slot = *self.by_number.get(usize::try_from(number).ok()?)?;
        (slot > 0).then(|| usize::from(slot - 1))
    }

    /// The index of the (not inlined) field named `key`, looking at the `ahead` fields from
    /// `next` first (objects mostly list their fields in Go's order, some left out), then
    /// hashing. A candidate costs two integer comparisons for a name of up to eight bytes,
    /// and a tail comparison for a longer one only when its head and length match.
    #[inline]
    pub(crate) fn find(&self, next: usize, ahead: usize, key: &str) -> Option<usize> {
        let head = name_head(key);
        let len = u32::try_from(key.len()).ok()?;
        let end = self.names.len().min(next.saturating_add(ahead));
        for at in next..end {
            let (candidate_head, candidate_len) = self.names[at];
            if candidate_head == head
                && candidate_len == len
                && same_tail(self.fields[at].json.as_bytes(), key.as_bytes())
            {
                return Some(at);
            }
        }
        if self.name_filter & name_bit(head, len) == 0 {
            return None;
        }
        self.by_json(key)
    }

    /// The index of the (not inlined) field whose JSON name is `name`.
    pub(crate) fn by_json(&self, name: &str) -> Option<usize> {
        self.by_json.get(name).map(|i| usize::from(*i))
    }
}

/// Every message, compiled.
#[derive(Debug)]
pub(crate) struct Table {
    /// The messages, referenced by index.
    pub(crate) messages: Vec<Message>,
    /// Full name → index.
    by_name: HashMap<String, u32>,
    /// `{group}/{version}/{Kind}` (group: the first label of the API group, `core` for the
    /// legacy group) → index, the `api.` packages preferred over apimachinery's.
    by_kind: HashMap<String, u32>,
}

impl Table {
    /// Compiles `schema`.
    pub(crate) fn compile(schema: &ProtoSchema) -> Result<Table, String> {
        let mut names: Vec<&str> = schema.names().collect();
        names.sort_unstable();
        let by_name: HashMap<String, u32> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                Ok((
                    (*name).to_owned(),
                    u32::try_from(i).map_err(|e| e.to_string())?,
                ))
            })
            .collect::<Result<_, String>>()?;
        let index = |name: &str| {
            by_name
                .get(name)
                .copied()
                .ok_or_else(|| format!("unknown message {name}"))
        };
        let mut messages = Vec::with_capacity(names.len());
        for name in &names {
            let source = schema
                .message(name)
                .ok_or_else(|| format!("unknown message {name}"))?;
            let go_values = GO_VALUES
                .iter()
                .find(|(message, _)| message == name)
                .map_or(&[][..], |(_, fields)| fields);
            let mut fields = Vec::with_capacity(source.fields.len());
            for field in &source.fields {
                let value = go_values.iter().find(|(f, _)| *f == field.name);
                fields.push(Field {
                    json: field.json.clone(),
                    number: field.number,
                    ty: compile_type(&field.ty, &index)?,
                    repeated: field.repeated,
                    inline: field.inline,
                    go_value: value.is_some(),
                    omit_zero: value.is_some_and(|(_, omit)| *omit),
                });
            }
            let max = fields.iter().map(|f| f.number).max().unwrap_or(0);
            let mut by_number = vec![0u16; usize::try_from(max).map_err(|e| e.to_string())? + 1];
            let mut by_json = HashMap::default();
            let mut always = Vec::new();
            for (i, field) in fields.iter().enumerate() {
                let i = u16::try_from(i).map_err(|e| e.to_string())?;
                by_number[field.number as usize] = i + 1;
                if !field.inline {
                    by_json.insert(field.json.clone(), i);
                }
                if field.inline || field.go_value {
                    always.push(i);
                }
            }
            always.sort_by_key(|i| fields[usize::from(*i)].number);
            let mut by_number_order: Vec<u16> = (0..fields.len())
                .map(u16::try_from)
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            by_number_order.sort_by_key(|i| fields[usize::from(*i)].number);
            let names: Vec<(u64, u32)> = fields
                .iter()
                .map(|f| {
                    let len = if f.inline {
                        u32::MAX
                    } else {
                        u32::try_from(f.json.len()).unwrap_or(u32::MAX)
                    };
                    (name_head(&f.json), len)
                })
                .collect();
            let numbered_in_order = fields.windows(2).all(|w| w[0].number < w[1].number);
            let form = form_of(name, source.known, &fields);
            let list_items = name
                .ends_with("List")
                .then(|| {
                    fields
                        .iter()
                        .position(|f| f.json == "items" && f.repeated)
                        .and_then(|i| u16::try_from(i).ok())
                })
                .flatten();
            messages.push(Message {
                name: (*name).to_owned(),
                form,
                fields,
                by_number,
                by_json,
                numbered_in_order,
                by_number_order,
                name_filter: names
                    .iter()
                    .filter(|(_, len)| *len != u32::MAX)
                    .fold(0, |filter, (head, len)| filter | name_bit(*head, *len)),
                names,
                always,
                list_items,
            });
        }
        let mut by_kind: HashMap<String, u32> = HashMap::new();
        for (i, message) in messages.iter().enumerate() {
            let mut parts = message.name.rsplit('.');
            let (Some(kind), Some(version), Some(group)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let key = format!("{group}/{version}/{kind}");
            let i = u32::try_from(i).map_err(|e| e.to_string())?;
            match by_kind.get(&key) {
                Some(existing) if preferred(&messages[*existing as usize].name, &message.name) => {}
                _ => {
                    by_kind.insert(key, i);
                }
            }
        }
        Ok(Table {
            messages,
            by_name,
            by_kind,
        })
    }

    /// A message by index.
    pub(crate) fn get(&self, index: u32) -> &Message {
        &self.messages[index as usize]
    }

    /// A message's index by full name.
    pub(crate) fn index(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// The message of `kind` in `apiVersion` (`apps/v1` → `*.apps.v1`, `v1` → `*.core.v1`,
    /// `rbac.authorization.k8s.io/v1` → `*.rbac.v1`), as `ProtoSchema::kind` finds it; meta/v1's
    /// option and Status kinds from any group-version.
    pub(crate) fn kind(&self, api_version: &str, kind: &str) -> Option<u32> {
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group.split('.').next().unwrap_or(group), version),
            None => ("core", api_version),
        };
        self.by_kind
            .get(&format!("{group}/{version}/{kind}"))
            .copied()
            .or_else(|| self.index(&format!("{META}.{kind}")))
    }
}

/// Whether `existing` is preferred over `other` for the same kind: `api.` packages first, then
/// by name.
fn preferred(existing: &str, other: &str) -> bool {
    let rank = |name: &str| (!name.starts_with("api."), name.to_owned());
    rank(existing) <= rank(other)
}

fn compile_type(
    ty: &FieldType,
    index: &impl Fn(&str) -> Result<u32, String>,
) -> Result<Ty, String> {
    Ok(match ty {
        FieldType::String => Ty::String,
        FieldType::Bytes => Ty::Bytes,
        FieldType::Bool => Ty::Bool,
        FieldType::Int32 => Ty::Int32,
        FieldType::Int64 => Ty::Int64,
        FieldType::Double => Ty::Double,
        FieldType::Float => Ty::Float,
        FieldType::Message(name) => Ty::Message(index(name)?),
        FieldType::Map(key, value) => Ty::Map(
            Box::new(compile_type(key, index)?),
            Box::new(compile_type(value, index)?),
        ),
    })
}

/// The JSON form of a message.
fn form_of(name: &str, known: bool, fields: &[Field]) -> Form {
    if let Some(short) = name.strip_prefix(META).and_then(|r| r.strip_prefix('.')) {
        match short {
            "Time" => return Form::Time,
            "MicroTime" => return Form::MicroTime,
            "Duration" => return Form::Duration,
            "FieldsV1" => return Form::Embedded,
            _ => {}
        }
    }
    match name {
        "apimachinery.pkg.api.resource.Quantity" => return Form::Quantity,
        "apimachinery.pkg.util.intstr.IntOrString" => return Form::IntOrString,
        "apimachinery.pkg.runtime.RawExtension" => return Form::Embedded,
        _ => {}
    }
    if let Some(short) = name
        .strip_prefix(APIEXTENSIONS)
        .and_then(|r| r.strip_prefix('.'))
    {
        match short {
            "JSON" => return Form::Embedded,
            "JSONSchemaPropsOrArray" => return Form::PropsOrArray,
            "JSONSchemaPropsOrBool" => return Form::PropsOrBool,
            "JSONSchemaPropsOrStringArray" => return Form::PropsOrStringArray,
            _ => {}
        }
    }
    if let [only] = fields
        && !known
        && only.json == "items"
        && only.repeated
        && !name.ends_with("List")
    {
        return Form::NamedSlice;
    }
    Form::Object
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::{SCHEMA, TABLE};

    #[test]
    fn name_heads_and_tails_compare_names_exactly() {
        let reference = |name: &str| {
            let mut word = [0u8; 8];
            let n = name.len().min(8);
            word[..n].copy_from_slice(&name.as_bytes()[..n]);
            u64::from_le_bytes(word)
        };
        let alphabet = "abcdefghijklmnopqrstuvwxyz0123";
        for len in 0..=alphabet.len() {
            let name = &alphabet[..len];
            assert_eq!(name_head(name), reference(name), "head of {name:?}");
            assert!(same_tail(name.as_bytes(), name.as_bytes()));
            // A name differing in any one byte past the head has a different tail.
            for at in 8..len {
                let mut other = name.as_bytes().to_vec();
                other[at] = b'X';
                assert!(!same_tail(name.as_bytes(), &other), "{name:?} at {at}");
            }
        }
        let table = TABLE.as_ref().expect("table");
        let pod = table.get(table.kind("v1", "Pod").expect("Pod"));
        for (i, field) in pod.fields.iter().enumerate().filter(|(_, f)| !f.inline) {
            for next in [0, i.saturating_sub(3), i] {
                assert_eq!(pod.find(next, 8, &field.json), Some(i), "{}", field.json);
            }
        }
        assert_eq!(pod.find(0, 8, "metadatum"), None);
    }

    #[test]
    fn kinds_resolve_as_the_schema_resolves_them() {
        let schema = SCHEMA.as_ref().expect("schemas");
        let table = TABLE.as_ref().expect("table");
        for (api_version, kind) in [
            ("v1", "ConfigMap"),
            ("v1", "Status"),
            ("v1", "DeleteOptions"),
            ("meta.k8s.io/v1", "DeleteOptions"),
            ("apps/v1", "Deployment"),
            ("apps/v1beta1", "Deployment"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("autoscaling/v1", "Scale"),
            ("v1", "NoSuchKind"),
        ] {
            let by_schema = schema.kind(api_version, kind).map(|m| m.name.clone());
            let by_table = table
                .kind(api_version, kind)
                .map(|i| table.get(i).name.clone());
            assert_eq!(by_schema, by_table, "{api_version} {kind}");
        }
    }

    #[test]
    fn fields_are_found_by_number_and_json_name_and_forms_are_decided() {
        let table = TABLE.as_ref().expect("table");
        let meta = table.get(
            table
                .index(&format!("{META}.ObjectMeta"))
                .expect("ObjectMeta"),
        );
        let labels = meta.by_json("labels").expect("labels");
        assert_eq!(meta.fields[labels].number, 11);
        assert_eq!(
            meta.by_number(17).map(|i| meta.fields[i].json.as_str()),
            Some("managedFields")
        );
        assert_eq!(meta.by_number(15), None);
        assert_eq!(meta.by_number(1000), None);
        assert_eq!(meta.by_json("nope"), None);
        let numbers: Vec<u32> = meta
            .always
            .iter()
            .map(|i| meta.fields[usize::from(*i)].number)
            .collect();
        assert_eq!(numbers, [1, 2, 3, 4, 5, 6, 7, 8]);
        let form = |name: &str| table.index(name).map(|i| table.get(i).form);
        assert_eq!(form(&format!("{META}.Time")), Some(Form::Time));
        assert_eq!(
            form("apimachinery.pkg.api.resource.Quantity"),
            Some(Form::Quantity)
        );
        assert_eq!(form("api.core.v1.Pod"), Some(Form::Object));
        assert_eq!(form("api.rbac.v1.ClusterRole"), Some(Form::Object));
        assert_eq!(
            form("api.authentication.v1.ExtraValue"),
            Some(Form::NamedSlice)
        );
        let volume = table.get(table.index("api.core.v1.Volume").expect("Volume"));
        let inlined = volume.always.iter();
        assert_eq!(
            inlined
                .filter(|i| volume.fields[usize::from(**i)].inline)
                .count(),
            1
        );
        assert!(volume.by_json("name").is_some());
        assert!(
            volume.by_json("configMap").is_none(),
            "inlined: found through volumeSource"
        );
        let pods = table.get(table.index("api.core.v1.PodList").expect("PodList"));
        assert!(pods.list_items.is_some());
    }
}
