//! CEL values and types as Kubernetes' environment has them: the standard ones plus the
//! Kubernetes library types (`kubernetes.Quantity`, `net.IP`, `net.CIDR`, `kubernetes.URL`,
//! `kubernetes.NamedFormat`) and `optional_type`.
//!
//! Values are cheap to clone (`Arc` inside), because the interpreter copies them into
//! comprehension variables and results; a JSON object becomes a `Map` with string keys.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use kubemock_apimachinery::quantity::Quantity;

/// A map key: CEL allows bool, int, uint and string keys.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// A bool key.
    Bool(bool),
    /// An int key (a uint key that fits is stored as an int, so `1` and `1u` are one key).
    Int(i64),
    /// A uint key beyond `i64::MAX`.
    Uint(u64),
    /// A string key.
    String(Arc<str>),
}

impl Key {
    /// The key as a value.
    pub fn to_value(&self) -> Value {
        match self {
            Key::Bool(b) => Value::Bool(*b),
            Key::Int(i) => Value::Int(*i),
            Key::Uint(u) => Value::Uint(*u),
            Key::String(s) => Value::String(s.clone()),
        }
    }

    /// The key a value stands for, `None` when its type cannot be a key.
    pub fn from_value(value: &Value) -> Option<Key> {
        Some(match value {
            Value::Bool(b) => Key::Bool(*b),
            Value::Int(i) => Key::Int(*i),
            Value::Uint(u) => match i64::try_from(*u) {
                Ok(i) => Key::Int(i),
                Err(_) => Key::Uint(*u),
            },
            Value::Double(d) if d.fract() == 0.0 && *d >= i64::MIN as f64 && *d < 9.2e18 => {
                Key::Int(*d as i64)
            }
            Value::String(s) => Key::String(s.clone()),
            _ => return None,
        })
    }
}

/// A CEL map.
pub type MapValue = BTreeMap<Key, Value>;

/// How a list from an object compares and concatenates: its schema's
/// `x-kubernetes-list-type` (upstream: `apiserver/pkg/cel/common/values.go`,
/// `unstructuredList`, `unstructuredSetList`, `unstructuredMapList`). Lists written in an
/// expression are atomic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ListKind {
    /// Ordered: equal element by element; `+` concatenates.
    #[default]
    Atomic,
    /// `set`: equal when of one size and every element of the other is in it, in any order;
    /// `+` appends the other's elements not in it yet.
    Set,
    /// `map`, keyed by these properties (escaped as CEL sees them): equal when of one size and
    /// every element of the other has an equal element of the same key in it; `+` replaces
    /// elements of the same key in place and appends the others.
    Map(Arc<[Arc<str>]>),
}

/// A list value: its elements (the `Vec` it dereferences to) and its [`ListKind`].
#[derive(Clone, Debug, Default)]
pub struct ListValue {
    items: Vec<Value>,
    kind: ListKind,
}

impl std::ops::Deref for ListValue {
    type Target = Vec<Value>;

    fn deref(&self) -> &Vec<Value> {
        &self.items
    }
}

impl ListValue {
    /// How the list compares and concatenates.
    pub fn kind(&self) -> &ListKind {
        &self.kind
    }

    /// The key of a map list's element: its key properties' values (absent ones `None`);
    /// `None` when the element is not an object.
    fn map_key(keys: &[Arc<str>], element: &Value) -> Option<Vec<Option<Value>>> {
        let Value::Map(fields) = element else {
            return None;
        };
        Some(
            keys.iter()
                .map(|k| fields.get(&Key::String(k.clone())).cloned())
                .collect(),
        )
    }

    fn same_key(a: &[Option<Value>], b: &[Option<Value>]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| match (x, y) {
                (None, None) => true,
                (Some(x), Some(y)) => x.type_name() == y.type_name() && x.equals(y),
                _ => false,
            })
    }

    /// `self == other` with `self` on the left: upstream's `Equal` of the left operand's list
    /// kind decides (so the comparison is not symmetric when only one side is a set or map
    /// list, as upstream's is not).
    fn equals(&self, other: &ListValue) -> bool {
        if self.items.len() != other.items.len() {
            return false;
        }
        match &self.kind {
            ListKind::Atomic => self
                .items
                .iter()
                .zip(other.items.iter())
                .all(|(x, y)| x.equals(y)),
            // Upstream looks elements up in a Go map of the native values: same type and
            // value.
            ListKind::Set => other.items.iter().all(|o| {
                self.items
                    .iter()
                    .any(|s| s.type_name() == o.type_name() && s.equals(o))
            }),
            ListKind::Map(keys) => other.items.iter().all(|o| {
                let Some(key) = Self::map_key(keys, o) else {
                    return false;
                };
                self.items.iter().any(|s| {
                    Self::map_key(keys, s).is_some_and(|k| Self::same_key(&k, &key)) && s.equals(o)
                })
            }),
        }
    }

    /// `self + other`, keeping `self`'s kind.
    fn concat(&self, other: &ListValue) -> ListValue {
        let mut items = self.items.clone();
        match &self.kind {
            ListKind::Atomic => items.extend(other.items.iter().cloned()),
            ListKind::Set => {
                for o in other.items.iter() {
                    if !items
                        .iter()
                        .any(|s| s.type_name() == o.type_name() && s.equals(o))
                    {
                        items.push(o.clone());
                    }
                }
            }
            ListKind::Map(keys) => {
                let mut item_keys: Vec<Option<Vec<Option<Value>>>> =
                    items.iter().map(|i| Self::map_key(keys, i)).collect();
                for o in other.items.iter() {
                    let key = Self::map_key(keys, o);
                    let at = key.as_ref().and_then(|key| {
                        item_keys
                            .iter()
                            .position(|k| k.as_ref().is_some_and(|k| Self::same_key(k, key)))
                    });
                    match at {
                        Some(at) => items[at] = o.clone(),
                        None => {
                            items.push(o.clone());
                            item_keys.push(key);
                        }
                    }
                }
            }
        }
        ListValue {
            items,
            kind: self.kind.clone(),
        }
    }
}

/// A CIDR: the address as written and its prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    /// The address as written (not masked).
    pub addr: IpAddr,
    /// The prefix length.
    pub prefix: u8,
}

/// A parsed URL, as Go's `url.URL` splits it (the parts the url library reads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// The text it was parsed from.
    pub text: String,
    /// `https`, `http`, ...
    pub scheme: String,
    /// `host[:port]`, brackets kept for IPv6.
    pub host: String,
    /// The unescaped path.
    pub path: String,
    /// The raw query (after `?`, before `#`).
    pub raw_query: String,
}

/// A CEL value.
#[derive(Clone, Debug)]
pub enum Value {
    /// `null`.
    Null,
    /// `bool`.
    Bool(bool),
    /// `int`.
    Int(i64),
    /// `uint`.
    Uint(u64),
    /// `double`.
    Double(f64),
    /// `string`.
    String(Arc<str>),
    /// `bytes`.
    Bytes(Arc<[u8]>),
    /// `list(T)`.
    List(Arc<ListValue>),
    /// `map(K, V)`; JSON objects too.
    Map(Arc<MapValue>),
    /// `google.protobuf.Duration`, in nanoseconds.
    Duration(i64),
    /// `google.protobuf.Timestamp`, nanoseconds since the Unix epoch.
    Timestamp(i128),
    /// A type value (`type(x)`, `int`, ...), by name.
    Type(Arc<str>),
    /// `optional_type(T)`.
    Optional(Option<Arc<Value>>),
    /// `kubernetes.Quantity`.
    Quantity(Arc<Quantity>),
    /// `net.IP`.
    Ip(IpAddr),
    /// `net.CIDR`.
    Cidr(Cidr),
    /// `kubernetes.URL`.
    Url(Arc<Url>),
    /// `kubernetes.NamedFormat`, by name.
    Format(Arc<str>),
    /// The authorizer library's values (`kubernetes.authorization.*`).
    Authz(Arc<crate::authz::AuthzValue>),
}

impl Value {
    /// A string value.
    pub fn string(s: impl Into<Arc<str>>) -> Value {
        Value::String(s.into())
    }

    /// A list value (atomic, as lists written in expressions are).
    pub fn list(items: Vec<Value>) -> Value {
        Value::typed_list(items, ListKind::Atomic)
    }

    /// A list value of an object's list of `kind` (its schema's `x-kubernetes-list-type`).
    pub fn typed_list(items: Vec<Value>, kind: ListKind) -> Value {
        Value::List(Arc::new(ListValue { items, kind }))
    }

    /// `a + b` of two lists: `a`'s kind decides ([`ListKind`]).
    pub fn concat_lists(a: &ListValue, b: &ListValue) -> Value {
        Value::List(Arc::new(a.concat(b)))
    }

    /// The CEL type name of the value, as cel-go prints it in errors and `type()`.
    pub fn type_name(&self) -> String {
        match self {
            Value::Null => "null_type".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Uint(_) => "uint".into(),
            Value::Double(_) => "double".into(),
            Value::String(_) => "string".into(),
            Value::Bytes(_) => "bytes".into(),
            Value::List(_) => "list".into(),
            Value::Map(_) => "map".into(),
            Value::Duration(_) => "google.protobuf.Duration".into(),
            Value::Timestamp(_) => "google.protobuf.Timestamp".into(),
            Value::Type(_) => "type".into(),
            Value::Optional(_) => "optional_type".into(),
            Value::Quantity(_) => "kubernetes.Quantity".into(),
            Value::Ip(_) => "net.IP".into(),
            Value::Cidr(_) => "net.CIDR".into(),
            Value::Url(_) => "kubernetes.URL".into(),
            Value::Format(_) => "kubernetes.NamedFormat".into(),
            Value::Authz(a) => a.type_name().into(),
        }
    }

    /// The value from JSON without a schema: integers are `int` (or `uint`/`double` when they
    /// do not fit), other numbers `double`, objects maps.
    pub fn from_json(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(i)
                } else if let Some(u) = n.as_u64() {
                    Value::Uint(u)
                } else {
                    Value::Double(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            serde_json::Value::String(s) => Value::string(s.as_str()),
            serde_json::Value::Array(items) => {
                Value::list(items.iter().map(Value::from_json).collect())
            }
            serde_json::Value::Object(fields) => Value::Map(Arc::new(
                fields
                    .iter()
                    .map(|(k, v)| (Key::String(k.as_str().into()), Value::from_json(v)))
                    .collect(),
            )),
        }
    }

    /// CEL equality (`==`): numbers compare across int, uint and double; lists and maps
    /// element-wise; values of different types are unequal.
    pub fn equals(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::List(a), Value::List(b)) => a.equals(b),
            (Value::Map(a), Value::Map(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.get(k).is_some_and(|other| v.equals(other)))
            }
            (Value::Duration(a), Value::Duration(b)) => a == b,
            (Value::Timestamp(a), Value::Timestamp(b)) => a == b,
            (Value::Type(a), Value::Type(b)) => a == b,
            (Value::Optional(a), Value::Optional(b)) => match (a, b) {
                (None, None) => true,
                (Some(a), Some(b)) => a.equals(b),
                _ => false,
            },
            (Value::Quantity(a), Value::Quantity(b)) => a == b,
            (Value::Ip(a), Value::Ip(b)) => a == b,
            (Value::Cidr(a), Value::Cidr(b)) => a == b,
            (Value::Url(a), Value::Url(b)) => a.text == b.text,
            (Value::Format(a), Value::Format(b)) => a == b,
            (a, b) => match numeric_cmp(a, b) {
                Some(ordering) => ordering == Ordering::Equal,
                None => false,
            },
        }
    }
}

/// The order of two numbers of any numeric types, `None` when either is not a number or
/// one is NaN.
pub fn numeric_cmp(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
        (Value::Uint(a), Value::Uint(b)) => Some(a.cmp(b)),
        (Value::Double(a), Value::Double(b)) => a.partial_cmp(b),
        (Value::Int(a), Value::Uint(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
        (Value::Uint(a), Value::Int(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
        (Value::Int(a), Value::Double(b)) => (*a as f64).partial_cmp(b),
        (Value::Double(a), Value::Int(b)) => a.partial_cmp(&(*b as f64)),
        (Value::Uint(a), Value::Double(b)) => (*a as f64).partial_cmp(b),
        (Value::Double(a), Value::Uint(b)) => a.partial_cmp(&(*b as f64)),
        _ => None,
    }
}

impl fmt::Display for Value {
    /// As a result shows in tests and messages: strings quoted, lists and maps in CEL syntax.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => write!(f, "null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Uint(u) => write!(f, "{u}u"),
            Value::Double(d) => write!(f, "{d:?}"),
            Value::String(s) => write!(f, "{s:?}"),
            Value::Bytes(b) => write!(f, "b{:?}", String::from_utf8_lossy(b)),
            Value::List(items) => {
                write!(f, "[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{item}")?;
                }
                write!(f, "]")
            }
            Value::Map(map) => {
                write!(f, "{{")?;
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}: {v}", k.to_value())?;
                }
                write!(f, "}}")
            }
            Value::Duration(d) => write!(
                f,
                "duration({:?})",
                kubemock_apimachinery::duration::format_duration(*d)
            ),
            Value::Timestamp(t) => write!(
                f,
                "timestamp({:?})",
                kubemock_apimachinery::gotime::format(*t, false)
            ),
            Value::Type(t) => write!(f, "{t}"),
            Value::Optional(None) => write!(f, "optional.none()"),
            Value::Optional(Some(v)) => write!(f, "optional.of({v})"),
            Value::Quantity(q) => write!(f, "quantity({:?})", q.to_string()),
            Value::Ip(ip) => write!(f, "ip({:?})", ip.to_string()),
            Value::Cidr(c) => write!(f, "cidr(\"{}/{}\")", c.addr, c.prefix),
            Value::Url(u) => write!(f, "url({:?})", u.text),
            Value::Format(n) => write!(f, "format.{n}()"),
            Value::Authz(a) => write!(f, "{a:?}"),
        }
    }
}
