//! The server's own selectors, from `kubemock-apimachinery`, so that the client reads and writes
//! them exactly as the server does. Label selectors ([`Selector`], upstream's
//! `k8s.io/apimachinery/pkg/labels`) are evaluated client-side, so that listers answer "objects
//! with these labels" from the cache with the server's semantics (docs/api-behaviour.md#label-selectors). Field selectors
//! ([`FieldSelector`], upstream's `pkg/fields`) are written with their values escaped
//! ([`ListParams::named`](crate::ListParams::named)) and checked before a request is sent; which
//! fields a kind supports is the server's to say (docs/api-behaviour.md#field-selectors).
//!
//! ```
//! use std::collections::BTreeMap;
//! let selector: kubemock_client::Selector = "app=web,tier notin (db)".parse().unwrap();
//! let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
//! assert!(selector.matches(&labels));
//! ```

pub use kubemock_apimachinery::fields::Selector as FieldSelector;
pub use kubemock_apimachinery::labels::{Labels, Selector};

/// The field every kind can be selected by, and the one a watch of a single object uses.
pub(crate) const METADATA_NAME: &str = "metadata.name";

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

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
