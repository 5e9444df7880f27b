//! Label selectors evaluated client-side, so that listers answer "objects with these labels"
//! from the cache with the server's semantics (§7.4).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::error::{Error, Result};

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    Greater(String, i64),
    Less(String, i64),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.contains(l)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
            Requirement::Greater(k, n) => labels
                .get(k)
                .and_then(|l| l.parse::<i64>().ok())
                .is_some_and(|l| l > *n),
            Requirement::Less(k, n) => labels
                .get(k)
                .and_then(|l| l.parse::<i64>().ok())
                .is_some_and(|l| l < *n),
        }
    }
}

/// A parsed label selector: the AND of its requirements; empty selects everything.
///
/// ```
/// use std::collections::BTreeMap;
/// let selector: kubemock_client::Selector = "app=web,tier notin (db)".parse().unwrap();
/// let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
/// assert!(selector.matches(&labels));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that selects everything.
    pub fn everything() -> Self {
        Selector::default()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// The selector of a `metav1.LabelSelector` (matchLabels and matchExpressions).
    pub fn from_label_selector(selector: &LabelSelector) -> Result<Self> {
        let mut requirements = Vec::new();
        for (k, v) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::Equals(k.clone(), v.clone()));
        }
        for expr in selector.match_expressions.iter().flatten() {
            let values = expr.values.clone().unwrap_or_default();
            let key = expr.key.clone();
            requirements.push(match expr.operator.as_str() {
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                other => {
                    return Err(Error::InvalidRequest(format!(
                        "unknown label selector operator {other:?}"
                    )));
                }
            });
        }
        Ok(Selector { requirements })
    }
}

impl std::str::FromStr for Selector {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let mut requirements = Vec::new();
        for term in split_terms(text) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            requirements.push(parse_term(term)?);
        }
        Ok(Selector { requirements })
    }
}

/// Splits on commas outside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms
}

fn parse_term(term: &str) -> Result<Requirement> {
    let invalid = || Error::InvalidRequest(format!("invalid label selector term {term:?}"));
    let set = |rest: &str| -> Result<Vec<String>> {
        let rest = rest.trim();
        let inner = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(invalid)?;
        Ok(inner.split(',').map(|v| v.trim().to_owned()).collect())
    };
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(key.trim().to_owned()));
    }
    if let Some((key, value)) = term.split_once("!=") {
        return Ok(Requirement::NotEquals(
            key.trim().into(),
            value.trim().into(),
        ));
    }
    if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Ok(Requirement::Equals(key.trim().into(), value.trim().into()));
    }
    if let Some((key, value)) = term.split_once('>') {
        let n = value.trim().parse().map_err(|_| invalid())?;
        return Ok(Requirement::Greater(key.trim().into(), n));
    }
    if let Some((key, value)) = term.split_once('<') {
        let n = value.trim().parse().map_err(|_| invalid())?;
        return Ok(Requirement::Less(key.trim().into(), n));
    }
    let mut words = term.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or("").trim();
    let rest = words.next().unwrap_or("").trim();
    if rest.is_empty() {
        return Ok(Requirement::Exists(key.into()));
    }
    if let Some(values) = rest.strip_prefix("notin") {
        return Ok(Requirement::NotIn(key.into(), set(values)?));
    }
    if let Some(values) = rest.strip_prefix("in") {
        return Ok(Requirement::In(key.into(), set(values)?));
    }
    Err(invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn selectors_follow_the_server_semantics() {
        let web = labels(&[("app", "web"), ("n", "7")]);
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app!=db", true),
            ("app in (db, web)", true),
            ("app notin (web)", false),
            ("missing notin (web)", true),
            ("app", true),
            ("!app", false),
            ("n>5", true),
            ("n<5", false),
            ("app=web,n>9", false),
        ];
        for (text, expected) in cases {
            let selector: Selector = text.parse().expect(text);
            assert_eq!(selector.matches(&web), expected, "{text}");
        }
        assert!("app in web".parse::<Selector>().is_err());
    }
}
