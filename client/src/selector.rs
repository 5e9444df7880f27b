//! Label selectors evaluated client-side, so that listers answer "objects with these labels"
//! from the cache with the server's semantics (§7.4): the server's own selector, from
//! `kubemock-apimachinery` (upstream's `k8s.io/apimachinery/pkg/labels`), parsed, printed and
//! matched alike on both sides.
//!
//! ```
//! use std::collections::BTreeMap;
//! let selector: kubemock_client::Selector = "app=web,tier notin (db)".parse().unwrap();
//! let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
//! assert!(selector.matches(&labels));
//! ```

pub use kubemock_apimachinery::labels::{Labels, Selector};

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
