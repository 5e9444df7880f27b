//! Field paths and field sets, the vocabulary of server-side apply (docs/api-behaviour.md#server-side-apply): which fields a
//! manager owns is a set of paths into the object, serialised in `metadata.managedFields` as
//! `FieldsV1` (`f:<field>`, `k:{json}` for a keyed list element, `v:<json>` for a set
//! element, `i:<n>` for a positional one, `.` for the node itself). The set is a trie like
//! upstream's structured-merge-diff `fieldpath.Set`, with the same element order, so what we
//! write reads like what the real server writes.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{Map, Value};

/// One step into a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathElement {
    /// A field of a struct or a key of a map.
    Field(String),
    /// The element of a keyed (`listType=map`) list with these key fields, sorted by name.
    Key(Vec<(String, Value)>),
    /// The element of a set (`listType=set`) with this value.
    Value(Value),
    /// The element at this position (lists that have neither keys nor set semantics).
    Index(usize),
}

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The `FieldsV1` key of this element.
    fn serialize(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let object: Map<String, Value> = fields.iter().cloned().collect();
                format!("k:{}", Value::Object(object))
            }
            PathElement::Value(value) => format!("v:{value}"),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// Parses a `FieldsV1` key; `None` for a kind of element this server does not know
    /// (upstream drops those too).
    fn deserialize(text: &str) -> Option<PathElement> {
        let (kind, rest) = text.split_once(':')?;
        match kind {
            "f" => Some(PathElement::Field(rest.to_owned())),
            "k" => match serde_json::from_str::<Value>(rest).ok()? {
                Value::Object(object) => {
                    let mut fields: Vec<(String, Value)> = object.into_iter().collect();
                    fields.sort_by(|a, b| a.0.cmp(&b.0));
                    Some(PathElement::Key(fields))
                }
                _ => None,
            },
            "v" => serde_json::from_str(rest).ok().map(PathElement::Value),
            "i" => rest.parse().ok().map(PathElement::Index),
            _ => None,
        }
    }
}

impl std::fmt::Display for PathElement {
    /// The human form used in conflict messages: `.spec`, `[name="c"]`, `[="x"]`, `[0]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(value) => write!(f, "[={value}]"),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// Upstream's value order: numbers, strings, booleans, lists, maps, null.
fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .map(|(a, b)| compare_values(a, b))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        _ => rank(a)
            .cmp(&rank(b))
            .then_with(|| a.to_string().cmp(&b.to_string())),
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => a
                .iter()
                .zip(b)
                .map(|((ka, va), (kb, vb))| ka.cmp(kb).then_with(|| compare_values(va, vb)))
                .find(|o| o.is_ne())
                .unwrap_or_else(|| a.len().cmp(&b.len())),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A path from the root of an object.
pub type Path = Vec<PathElement>;

/// The human form of a path: `.spec.template.spec.containers[name="c"].image`.
pub fn path_string(path: &[PathElement]) -> String {
    let mut out = String::new();
    for element in path {
        let _ = write!(out, "{element}");
    }
    out
}

/// A set of paths, as a trie: `members` are the paths that end at this node's children,
/// `children` the subtrees below them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    /// The empty set.
    pub fn new() -> Set {
        Set::default()
    }

    /// Whether nothing is in the set.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(Set::is_empty)
    }

    /// Adds `path` (the empty path is not a member of anything and is ignored).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is a member.
    #[cfg(test)]
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Whether some member lies strictly below `path`.
    pub fn has_below(&self, path: &[PathElement]) -> bool {
        match path {
            [] => !self.is_empty(),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has_below(rest)),
        }
    }

    /// The subtree below `element`, if any.
    pub fn child(&self, element: &PathElement) -> Option<&Set> {
        self.children.get(element)
    }

    /// Whether `element` is a member at this level.
    pub fn has_member(&self, element: &PathElement) -> bool {
        self.members.contains(element)
    }

    /// Every path in `self` or `other`.
    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            let merged = match out.children.get(element) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(element.clone(), merged);
        }
        out
    }

    /// Adds every path of `other` (the union, without copying either side).
    pub fn absorb(&mut self, other: Set) {
        if self.members.is_empty() && self.children.is_empty() {
            *self = other;
            return;
        }
        self.members.extend(other.members);
        for (element, child) in other.children {
            match self.children.get_mut(&element) {
                Some(mine) => mine.absorb(child),
                None => {
                    self.children.insert(element, child);
                }
            }
        }
    }

    /// Removes every path of `other` (the difference, in place).
    pub fn subtract(&mut self, other: &Set) {
        for member in &other.members {
            self.members.remove(member);
        }
        self.children.retain(|element, child| {
            if let Some(theirs) = other.children.get(element) {
                child.subtract(theirs);
            }
            !child.is_empty()
        });
    }

    /// Every path in both.
    pub fn intersection(&self, other: &Set) -> Set {
        let mut out = Set::new();
        out.members = self.members.intersection(&other.members).cloned().collect();
        for (element, child) in &self.children {
            if let Some(theirs) = other.children.get(element) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    out.children.insert(element.clone(), both);
                }
            }
        }
        out
    }

    /// Every path of `self` that is not in `other` (member by member: a member of `other`
    /// does not remove what lies below it in `self`).
    pub fn difference(&self, other: &Set) -> Set {
        let mut out = Set::new();
        out.members = self.members.difference(&other.members).cloned().collect();
        for (element, child) in &self.children {
            let rest = match other.children.get(element) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(element.clone(), rest);
            }
        }
        out
    }

    /// Removes `path` and everything below it.
    pub fn remove_subtree(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.remove(last);
                self.children.remove(last);
            }
            [first, rest @ ..] => {
                if let Some(child) = self.children.get_mut(first) {
                    child.remove_subtree(rest);
                    if child.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    /// Every member path, in order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        // Members and children interleaved in element order, a member before its subtree.
        let mut elements: BTreeSet<&PathElement> = self.members.iter().collect();
        elements.extend(self.children.keys());
        for element in elements {
            prefix.push(element.clone());
            if self.members.contains(element) {
                out.push(prefix.clone());
            }
            if let Some(child) = self.children.get(element) {
                child.collect(prefix, out);
            }
            prefix.pop();
        }
    }

    /// The `FieldsV1` JSON of the set.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.emit(false))
    }

    fn emit(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        // The real server's output puts `.` first.
        if include_self {
            out.insert(".".to_owned(), Value::Object(Map::new()));
        }
        let mut elements: BTreeSet<&PathElement> = self.members.iter().collect();
        elements.extend(self.children.keys());
        for element in elements {
            let value = match self.children.get(element) {
                Some(child) => child.emit(self.members.contains(element)),
                None => Map::new(),
            };
            out.insert(element.serialize(), Value::Object(value));
        }
        out
    }

    /// Reads a `FieldsV1` JSON object (unknown element kinds are dropped, as upstream does).
    pub fn from_fields_v1(value: &Value) -> Option<Set> {
        let Value::Object(object) = value else {
            return None;
        };
        let mut set = Set::new();
        for (key, child) in object {
            if key == "." {
                continue;
            }
            let Some(element) = PathElement::deserialize(key) else {
                continue;
            };
            let Value::Object(grandchildren) = child else {
                return None;
            };
            let is_member = grandchildren.is_empty() || grandchildren.contains_key(".");
            if is_member {
                set.members.insert(element.clone());
            }
            let subtree = Set::from_fields_v1(child)?;
            if !subtree.is_empty() {
                set.children.insert(element, subtree);
            }
        }
        Some(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    #[test]
    fn fields_v1_round_trips_with_the_real_servers_layout() {
        // A kubectl-create Deployment entry as the real server writes it (docs/api-behaviour.md#server-side-apply).
        let text = json!({"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}}}}}}});
        let set = Set::from_fields_v1(&text).expect("valid FieldsV1");
        assert!(set.has(&[f("metadata"), f("labels")]));
        assert!(set.has(&[f("metadata"), f("labels"), f("app")]));
        assert!(!set.has(&[f("metadata")]));
        let key = PathElement::Key(vec![("name".to_owned(), json!("nginx"))]);
        let image = [
            f("spec"),
            f("template"),
            f("spec"),
            f("containers"),
            key.clone(),
            f("image"),
        ];
        assert!(set.has(&image));
        assert_eq!(
            path_string(&image),
            ".spec.template.spec.containers[name=\"nginx\"].image"
        );
        assert_eq!(set.to_fields_v1().to_string(), text.to_string());
    }

    #[test]
    fn set_algebra_is_member_wise() {
        let mut a = Set::new();
        a.insert(&[f("data"), f("x")]);
        a.insert(&[f("data"), f("y")]);
        let mut b = Set::new();
        b.insert(&[f("data"), f("y")]);
        b.insert(&[f("data")]);
        assert_eq!(a.intersection(&b).paths(), vec![vec![f("data"), f("y")]]);
        assert_eq!(a.difference(&b).paths(), vec![vec![f("data"), f("x")]]);
        let union = a.union(&b);
        assert_eq!(union.paths().len(), 3);
        assert!(union.has_below(&[f("data")]));
        assert!(!union.has_below(&[f("data"), f("x")]));
        let mut without = union.clone();
        without.remove_subtree(&[f("data")]);
        assert!(without.is_empty());

        // The in-place forms give the same sets, and leave no empty subtrees behind.
        let mut absorbed = a.clone();
        absorbed.absorb(b.clone());
        assert_eq!(absorbed, union);
        let mut into_empty = Set::new();
        into_empty.absorb(a.clone());
        assert_eq!(into_empty, a);
        let mut subtracted = a.clone();
        subtracted.subtract(&b);
        assert_eq!(subtracted, a.difference(&b));
        let mut emptied = a.clone();
        emptied.subtract(&a);
        assert_eq!(emptied, Set::new());
    }

    #[test]
    fn elements_order_fields_before_keys_before_values() {
        let mut elements = [
            PathElement::Index(0),
            PathElement::Value(json!("b")),
            PathElement::Key(vec![("name".to_owned(), json!("a"))]),
            f("z"),
            PathElement::Value(json!(3)),
        ];
        elements.sort();
        let serialized: Vec<String> = elements.iter().map(PathElement::serialize).collect();
        assert_eq!(
            serialized,
            ["f:z", "k:{\"name\":\"a\"}", "v:3", "v:\"b\"", "i:0"]
        );
        assert_eq!(
            PathElement::deserialize("v:\"b\""),
            Some(PathElement::Value(json!("b")))
        );
        assert_eq!(PathElement::deserialize("x:1"), None);
    }
}
