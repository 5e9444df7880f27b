//! `Accept` headers read as the real server reads them, so that clients asking for a
//! conversion (aggregated discovery, Tables) get one exactly when kube-apiserver would answer
//! with it. The real server parses with goautoneg: comma-separated media ranges, `;`-separated
//! parameters (`q` taken apart as the quality, a malformed `q` counting as 0), and the ranges
//! sorted by quality and then specificity before the first acceptable one wins
//! (`k8s.io/apiserver/pkg/endpoints/handlers/negotiation`).

use axum::http::{HeaderMap, header};

/// One media range of an `Accept` header.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MediaRange {
    /// The type (`application`, or `*`); compared case-sensitively, as goautoneg does.
    pub(crate) kind: String,
    /// The subtype (`json`, or `*`).
    pub(crate) subtype: String,
    /// The quality, 1 unless given.
    pub(crate) quality: f64,
    /// The parameters other than `q`, in order; a repeated name keeps its last value.
    params: Vec<(String, String)>,
}

impl MediaRange {
    /// The value of parameter `name`.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// True if the range accepts `application/json` (`application/json`, `application/*`,
    /// `*/*`): the serializer a conversion is answered in.
    pub(crate) fn accepts_json(&self) -> bool {
        matches!(
            (self.kind.as_str(), self.subtype.as_str()),
            ("application", "json" | "*") | ("*", "*")
        )
    }

    /// True if the range names a serializer the real server has besides JSON (YAML, protobuf,
    /// CBOR): it would answer in it, and kubemock answers plain JSON instead.
    pub(crate) fn names_other_serializer(&self) -> bool {
        self.kind == "application"
            && matches!(
                self.subtype.as_str(),
                "yaml" | "vnd.kubernetes.protobuf" | "cbor"
            )
    }

    /// Goautoneg's ordering: "before" if of higher quality, or if more specific.
    fn sorts_before(&self, other: &MediaRange) -> bool {
        self.quality > other.quality
            || (self.kind != "*" && other.kind == "*")
            || (self.subtype != "*" && other.subtype == "*")
    }
}

/// A conversion a media range asks for (`as`, `g` and `v` parameters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conversion {
    /// The group (`g`).
    pub(crate) group: String,
    /// The kind (`as`).
    pub(crate) kind: String,
    /// The version (`v`).
    pub(crate) version: String,
}

/// The conversion the request's `Accept` asks for, or `None` for the plain response: ranges
/// are tried preferred first and the first the server can answer wins, as in
/// `negotiation.NegotiateMediaTypeOptions`. A range the server answers is a JSON one (JSON,
/// `application/*`, `*/*`) without conversion parameters (plain), or with a conversion
/// `allowed` says the endpoint offers; or one naming another serializer the real server has,
/// which kubemock answers in plain JSON. Other ranges (a conversion not offered, a stream
/// schema other than `watch`, a media type not served) are passed over; when none is left the
/// response is plain too (where the real server would say 406).
pub(crate) fn conversion(
    headers: &HeaderMap,
    allowed: impl Fn(&Conversion) -> bool,
) -> Option<Conversion> {
    for range in media_ranges(headers) {
        if !range.accepts_json() {
            if range.names_other_serializer() {
                return None;
            }
            continue;
        }
        if range
            .param("stream")
            .is_some_and(|s| !s.is_empty() && s != "watch")
        {
            continue;
        }
        let (kind, group, version) = (range.param("as"), range.param("g"), range.param("v"));
        if kind.is_none() && group.is_none() && version.is_none() {
            return None;
        }
        let asked = Conversion {
            group: group.unwrap_or("").to_owned(),
            kind: kind.unwrap_or("").to_owned(),
            version: version.unwrap_or("").to_owned(),
        };
        if allowed(&asked) {
            return Some(asked);
        }
    }
    None
}

/// The media ranges of the request's `Accept` header (the first one, as Go's `Header.Get`
/// reads it), preferred first; empty when there is none.
pub(crate) fn media_ranges(headers: &HeaderMap) -> Vec<MediaRange> {
    headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .map(parse)
        .unwrap_or_default()
}

/// Parses an `Accept` header value into its media ranges, preferred first.
pub(crate) fn parse(header: &str) -> Vec<MediaRange> {
    let mut ranges = Vec::new();
    for part in header.split(',') {
        let mut pieces = part.split(';');
        let media_range = pieces.next().unwrap_or("");
        let types: Vec<&str> = media_range.split('/').collect();
        let first = types[0].trim_matches(' ');
        let (kind, subtype) = match types.as_slice() {
            [_] if first == "*" => ("*", "*"),
            [_, subtype] => (first, subtype.trim_matches(' ')),
            _ => continue,
        };
        let mut range = MediaRange {
            kind: kind.to_owned(),
            subtype: subtype.to_owned(),
            quality: 1.0,
            params: Vec::new(),
        };
        for param in pieces {
            let Some((name, value)) = param.split_once('=') else {
                continue;
            };
            let name = name.trim_matches(' ');
            if name == "q" {
                // Go's strconv.ParseFloat on the untrimmed value; a failure leaves 0.
                range.quality = value.parse().unwrap_or(0.0);
            } else {
                let value = value.trim_matches(' ').to_owned();
                match range.params.iter_mut().find(|(key, _)| key == name) {
                    Some(existing) => existing.1 = value,
                    None => range.params.push((name.to_owned(), value)),
                }
            }
        }
        ranges.push(range);
    }
    sort(&mut ranges);
    ranges
}

/// Goautoneg sorts with `sort.Sort` and a comparison that is not a strict order; Go sorts
/// such short slices (up to 12 elements, more than any real header has) by insertion sort,
/// reproduced here so that ties and odd mixes come out as on the real server.
fn sort(ranges: &mut [MediaRange]) {
    for i in 1..ranges.len() {
        let mut j = i;
        while j > 0 && ranges[j].sorts_before(&ranges[j - 1]) {
            ranges.swap(j, j - 1);
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(header: &str) -> Vec<String> {
        parse(header)
            .iter()
            .map(|r| {
                let params: Vec<String> =
                    r.params.iter().map(|(k, v)| format!(";{k}={v}")).collect();
                format!(
                    "{}/{}{} q={}",
                    r.kind,
                    r.subtype,
                    params.concat(),
                    r.quality
                )
            })
            .collect()
    }

    #[test]
    fn kubectl_table_header_keeps_its_order() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            summary(kubectl),
            [
                "application/json;as=Table;v=v1;g=meta.k8s.io q=1",
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io q=1",
                "application/json q=1",
            ]
        );
        let first = &parse(kubectl)[0];
        assert_eq!(first.param("as"), Some("Table"));
        assert_eq!(first.param("missing"), None);
        assert!(first.accepts_json());
    }

    #[test]
    fn quality_and_specificity_order_the_ranges() {
        assert_eq!(
            summary("*/*;q=0.5, application/json;q=0.8, text/html, application/*"),
            [
                "text/html q=1",
                "application/* q=1",
                "application/json q=0.8",
                "*/* q=0.5"
            ]
        );
        assert_eq!(
            summary("*/*, application/json"),
            ["application/json q=1", "*/* q=1"]
        );
    }

    #[test]
    fn malformed_parts_are_skipped_or_tolerated_like_goautoneg() {
        // No slash (other than `*`), too many slashes: skipped. A parameter without `=`:
        // ignored. A malformed or spaced quality: 0. Spaces around names and values: trimmed.
        assert_eq!(
            summary("json, a/b/c, *, application/json ; as = Table ;bare; q=x, text/plain;q= 1"),
            ["application/json;as=Table q=0", "text/plain q=0", "*/* q=1"],
            "goautoneg puts the more specific range first even at a lower quality"
        );
        assert!(parse("").is_empty());
        let repeated = &parse("application/json;v=v1;v=v2")[0];
        assert_eq!(repeated.param("v"), Some("v2"));
    }

    fn headers(accept: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, accept.parse().unwrap());
        headers
    }

    /// Offers `Thing` of `example.com` in v1.
    fn thing(asked: &Conversion) -> bool {
        asked.group == "example.com" && asked.kind == "Thing" && asked.version == "v1"
    }

    #[test]
    fn the_first_answerable_range_decides_the_conversion() {
        let convert = |accept: &str| conversion(&headers(accept), thing).map(|c| c.kind);
        assert_eq!(
            convert("application/json;as=Thing;v=v1;g=example.com"),
            Some("Thing".to_owned())
        );
        assert_eq!(
            convert("application/*;as=Thing;v=v1;g=example.com"),
            Some("Thing".to_owned())
        );
        for passed_over in [
            "application/json;as=Thing;v=v2;g=example.com",
            "application/json;as=Thing;g=example.com",
            "application/json;as=Thing;v=v1;g=example.com;stream=other",
            "text/html;as=Thing;v=v1;g=example.com",
        ] {
            let accept = format!("{passed_over},application/json;as=Thing;v=v1;g=example.com");
            assert_eq!(convert(&accept), Some("Thing".to_owned()), "{passed_over}");
        }
        for plain in [
            "application/json,application/json;as=Thing;v=v1;g=example.com",
            "application/vnd.kubernetes.protobuf,application/json;as=Thing;v=v1;g=example.com",
            "*/*",
            "text/html",
            "",
        ] {
            assert_eq!(convert(plain), None, "{plain}");
        }
        assert_eq!(conversion(&HeaderMap::new(), thing), None);
        assert_eq!(
            convert("application/json;q=0.5,application/json;as=Thing;v=v1;g=example.com"),
            Some("Thing".to_owned()),
            "quality orders the ranges"
        );
    }

    #[test]
    fn which_ranges_accept_json_or_name_another_serializer() {
        let json: Vec<bool> = [
            "application/json",
            "application/*",
            "*/*",
            "text/*",
            "application/yaml",
        ]
        .into_iter()
        .map(|header| parse(header)[0].accepts_json())
        .collect();
        assert_eq!(json, [true, true, true, false, false]);
        assert!(parse("application/vnd.kubernetes.protobuf")[0].names_other_serializer());
        assert!(!parse("application/json")[0].names_other_serializer());
    }
}
