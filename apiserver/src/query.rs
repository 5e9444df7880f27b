//! Query strings as the real server reads them (docs/api-behaviour.md#query-parameters): form decoding (`+` is a space, `%XX`
//! escapes), empty pairs ignored (kube-rs sends `?&watch=true`), unknown parameters ignored,
//! and booleans true unless `0` or `false` in any letter case (the Python client sends `True`).

/// A parsed query string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses a raw query string (without the `?`).
    pub(crate) fn parse(raw: Option<&str>) -> Self {
        let pairs = raw
            .unwrap_or("")
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (decode(key), decode(value))
            })
            .collect();
        Query { pairs }
    }

    /// The first value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `key`, in order.
    pub(crate) fn all(&self, key: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// A boolean parameter: absent is false; `0` and `false` (any case) are false; anything
    /// else, the empty string included, is true.
    pub(crate) fn flag(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
    }
}

/// Decodes one form-encoded component; invalid escapes are kept as they are.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(high << 4 | low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_follow_the_real_server() {
        let q = Query::parse(Some("&watch=True&a=0&b=FALSE&c=&d=1&&"));
        assert!(q.flag("watch"));
        assert!(!q.flag("a"));
        assert!(!q.flag("b"));
        assert!(q.flag("c"), "the empty string is true");
        assert!(q.flag("d"));
        assert!(!q.flag("absent"));
    }

    #[test]
    fn form_decoding_handles_plus_and_escapes() {
        let q = Query::parse(Some("labelSelector=env+in+%28a%2Cb%29&x=%zz&y=%4"));
        assert_eq!(q.get("labelSelector"), Some("env in (a,b)"));
        assert_eq!(q.get("x"), Some("%zz"));
        assert_eq!(q.get("y"), Some("%4"));
        assert_eq!(Query::parse(None).get("x"), None);
        let q = Query::parse(Some("dryRun=All&dryRun=All"));
        assert_eq!(q.all("dryRun"), ["All", "All"]);
    }
}
