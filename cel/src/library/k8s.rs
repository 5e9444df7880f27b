//! Kubernetes' quantity, URL and format libraries
//! (`staging/src/k8s.io/apiserver/pkg/cel/library/quantity.go`, `urls.go`, `format.go`),
//! over the one Quantity of `kubemock-apimachinery` and its name rules.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubemock_apimachinery::quantity::Quantity;
use kubemock_apimachinery::validation;

use super::{Library, err, no_such_overload};
use crate::error::EvalError;
use crate::types::Type;
use crate::value::{Key, Url, Value};

type R = Result<Value, EvalError>;

/// The type name of quantities.
pub(crate) const QUANTITY: &str = "kubernetes.Quantity";
/// The type name of URLs.
pub(crate) const URL: &str = "kubernetes.URL";
/// The type name of named formats.
pub(crate) const FORMAT: &str = "kubernetes.NamedFormat";

fn q(v: &Value) -> Result<&Quantity, EvalError> {
    match v {
        Value::Quantity(q) => Ok(q),
        _ => Err(no_such_overload()),
    }
}

fn text(v: &Value) -> Result<&str, EvalError> {
    match v {
        Value::String(s) => Ok(s),
        _ => Err(no_such_overload()),
    }
}

fn quantity(a: &[Value]) -> R {
    Quantity::parse(text(&a[0])?)
        .map(|q| Value::Quantity(Arc::new(q)))
        .map_err(|e| err(e.to_string()))
}

fn other_quantity(v: &Value) -> Result<Quantity, EvalError> {
    match v {
        Value::Quantity(q) => Ok(q.as_ref().clone()),
        Value::Int(i) => Ok(Quantity::new(
            *i,
            kubemock_apimachinery::quantity::Format::DecimalSI,
        )),
        _ => Err(no_such_overload()),
    }
}

fn register_quantity(lib: &mut Library) {
    let qt = || Type::Opaque(QUANTITY);
    lib.global("quantity", vec![Type::String], qt(), quantity);
    lib.global("isQuantity", vec![Type::String], Type::Bool, |a| {
        Ok(Value::Bool(Quantity::parse(text(&a[0])?).is_ok()))
    });
    lib.member("sign", vec![qt()], Type::Int, |a| {
        Ok(Value::Int(i64::from(q(&a[0])?.sign())))
    });
    lib.member("isInteger", vec![qt()], Type::Bool, |a| {
        Ok(Value::Bool(q(&a[0])?.as_i64().is_some()))
    });
    lib.member("asInteger", vec![qt()], Type::Int, |a| {
        q(&a[0])?
            .as_i64()
            .map(Value::Int)
            .ok_or_else(|| err("cannot convert value to integer"))
    });
    lib.member("asApproximateFloat", vec![qt()], Type::Double, |a| {
        Ok(Value::Double(q(&a[0])?.as_approximate_f64()))
    });
    for other in [qt(), Type::Int] {
        lib.member("add", vec![qt(), other.clone()], qt(), |a| {
            let mut sum = q(&a[0])?.clone();
            sum.add(&other_quantity(&a[1])?);
            Ok(Value::Quantity(Arc::new(sum)))
        });
        lib.member("sub", vec![qt(), other], qt(), |a| {
            let mut diff = q(&a[0])?.clone();
            diff.sub(&other_quantity(&a[1])?);
            Ok(Value::Quantity(Arc::new(diff)))
        });
    }
    lib.member("isLessThan", vec![qt(), qt()], Type::Bool, |a| {
        Ok(Value::Bool(q(&a[0])? < q(&a[1])?))
    });
    lib.member("isGreaterThan", vec![qt(), qt()], Type::Bool, |a| {
        Ok(Value::Bool(q(&a[0])? > q(&a[1])?))
    });
    lib.member("compareTo", vec![qt(), qt()], Type::Int, |a| {
        Ok(Value::Int(q(&a[0])?.cmp(q(&a[1])?) as i64))
    });
}

// --- URLs ---

/// Go's `url.ParseRequestURI` as the url library uses it: an absolute URL or an absolute
/// path; the fragment is not split off.
pub(crate) fn parse_url(raw: &str) -> Result<Url, String> {
    let checked = parse_request_uri(raw)?;
    // Upstream checks with Go's `url.ParseRequestURI`, then parses again with `url.Parse`,
    // which first cuts the fragment off (`staging/src/k8s.io/apiserver/pkg/cel/library/
    // urls.go`, `stringToUrl`).
    match raw.split_once('#') {
        Some((before, _)) => Ok(parse_request_uri(before)
            .map(|u| Url {
                text: raw.to_string(),
                ..u
            })
            .unwrap_or(checked)),
        None => Ok(checked),
    }
}

/// Go's `url.ParseRequestURI` (`net/url/url.go`): an absolute URL or an absolute path, no
/// fragment.
fn parse_request_uri(raw: &str) -> Result<Url, String> {
    let invalid = || format!("parse {raw:?}: invalid URI for request");
    if raw.is_empty() {
        return Err(format!("parse {raw:?}: empty url"));
    }
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(format!(
            "parse {raw:?}: net/url: invalid control character in URL"
        ));
    }
    let (before_query, raw_query) = match raw.split_once('?') {
        Some((b, q)) => (b, q.to_string()),
        None => (raw, String::new()),
    };
    let (scheme, rest) = match before_query.find(':') {
        Some(i)
            if i > 0
                && before_query.as_bytes()[0].is_ascii_alphabetic()
                && before_query[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')) =>
        {
            (
                before_query[..i].to_ascii_lowercase(),
                &before_query[i + 1..],
            )
        }
        Some(0) => return Err(format!("parse {raw:?}: missing protocol scheme")),
        _ => (String::new(), before_query),
    };
    let (host, path) = if let Some(after) = rest.strip_prefix("//") {
        match after.find('/') {
            Some(i) => (after[..i].to_string(), after[i..].to_string()),
            None => (after.to_string(), String::new()),
        }
    } else {
        if !rest.starts_with('/') {
            // A rootless path after a scheme is opaque (`mailto:x`, `https:://x`).
            if !scheme.is_empty() {
                return Ok(Url {
                    text: raw.to_string(),
                    scheme,
                    host: String::new(),
                    path: String::new(),
                    raw_query,
                });
            }
            return Err(invalid());
        }
        (String::new(), rest.to_string())
    };
    let host = host
        .rsplit_once('@')
        .map_or(host.clone(), |(_, h)| h.to_string());
    // Go's `parseHost`: what follows the last colon (after a bracketed IPv6 address) must be
    // a port.
    let after_address = match host.strip_prefix('[') {
        Some(bracketed) => match bracketed.find(']') {
            Some(end) => &bracketed[end + 1..],
            None => return Err(format!("parse {raw:?}: missing ']' in host")),
        },
        None => host.rfind(':').map_or("", |i| &host[i..]),
    };
    let port_ok = after_address.is_empty()
        || (after_address.starts_with(':')
            && after_address[1..].bytes().all(|b| b.is_ascii_digit()));
    if !port_ok {
        return Err(format!(
            "parse {raw:?}: invalid port {after_address:?} after host"
        ));
    }
    let path = percent_decode(&path).ok_or_else(|| format!("parse {raw:?}: invalid URL escape"))?;
    Ok(Url {
        text: raw.to_string(),
        scheme,
        host,
        path,
        raw_query,
    })
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn query_unescape(s: &str) -> String {
    percent_decode(&s.replace('+', " ")).unwrap_or_else(|| s.to_string())
}

/// Go's `url.PathEscape`-style escaping of a path (what `EscapedPath` returns).
fn escape_path(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'_'
                    | b'.'
                    | b'~'
                    | b'/'
                    | b'$'
                    | b'&'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
                    | b'!'
                    | b'*'
                    | b'\''
                    | b'('
                    | b')'
            )
        {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn url_of(v: &Value) -> Result<&Url, EvalError> {
    match v {
        Value::Url(u) => Ok(u),
        _ => Err(no_such_overload()),
    }
}

fn hostname(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

fn port(host: &str) -> &str {
    let after = match host.rfind(']') {
        Some(i) => &host[i + 1..],
        None => host,
    };
    after.rsplit_once(':').map_or("", |(_, p)| p)
}

fn register_urls(lib: &mut Library) {
    let ut = || Type::Opaque(URL);
    lib.add(
        "url",
        false,
        vec![Type::String],
        ut(),
        |a| {
            parse_url(text(&a[0])?)
                .map(|u| Value::Url(Arc::new(u)))
                .map_err(|e| {
                    err(format!(
                        "URL parse error during conversion from string: {e}"
                    ))
                })
        },
        // Upstream's `CostEstimator.CallCost`: 0.1 per byte, rounded up.
        |a| (a.first().map_or(0, super::size_of) as f64 * 0.1).ceil() as u64,
    );
    lib.global("isURL", vec![Type::String], Type::Bool, |a| {
        Ok(Value::Bool(parse_url(text(&a[0])?).is_ok()))
    });
    lib.member("getScheme", vec![ut()], Type::String, |a| {
        Ok(Value::string(url_of(&a[0])?.scheme.as_str()))
    });
    lib.member("getHost", vec![ut()], Type::String, |a| {
        Ok(Value::string(url_of(&a[0])?.host.as_str()))
    });
    lib.member("getHostname", vec![ut()], Type::String, |a| {
        Ok(Value::string(hostname(&url_of(&a[0])?.host)))
    });
    lib.member("getPort", vec![ut()], Type::String, |a| {
        Ok(Value::string(port(&url_of(&a[0])?.host)))
    });
    lib.member("getEscapedPath", vec![ut()], Type::String, |a| {
        Ok(Value::string(escape_path(&url_of(&a[0])?.path)))
    });
    lib.member(
        "getQuery",
        vec![ut()],
        Type::map(Type::String, Type::list(Type::String)),
        |a| {
            let mut found: BTreeMap<String, Vec<Value>> = BTreeMap::new();
            for pair in url_of(&a[0])?
                .raw_query
                .split('&')
                .filter(|p| !p.is_empty())
            {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                found
                    .entry(query_unescape(k))
                    .or_default()
                    .push(Value::string(query_unescape(v)));
            }
            Ok(Value::Map(Arc::new(
                found
                    .into_iter()
                    .map(|(k, v)| (Key::String(k.into()), Value::list(v)))
                    .collect(),
            )))
        },
    );
}

// --- formats ---

/// Upstream's `maskTrailingDash`: a prefix may end in a dash (a generated name follows).
fn mask_trailing_dash(name: &str, prefix: bool) -> String {
    if prefix && name.len() > 1 && name.ends_with('-') {
        format!("{}a", &name[..name.len() - 1])
    } else {
        name.to_string()
    }
}

/// The named formats of format.go and their validators (upstream's messages).
pub(crate) fn validate_format(name: &str, value: &str) -> Option<Vec<String>> {
    Some(match name {
        "dns1123Label" => validation::is_dns1123_label(value),
        "dns1123Subdomain" => validation::is_dns1123_subdomain(value),
        "dns1035Label" => validation::is_dns1035_label(value),
        "qualifiedName" => validation::is_qualified_name(value),
        "dns1123LabelPrefix" => validation::is_dns1123_label(&mask_trailing_dash(value, true)),
        "dns1123SubdomainPrefix" => {
            validation::is_dns1123_subdomain(&mask_trailing_dash(value, true))
        }
        "dns1035LabelPrefix" => validation::is_dns1035_label(&mask_trailing_dash(value, true)),
        "labelValue" => validation::is_valid_label_value(value),
        "uri" => match parse_url(value) {
            Ok(_) => Vec::new(),
            Err(e) => vec![e],
        },
        "uuid" => {
            if crate::formats::is_uuid(value) {
                Vec::new()
            } else {
                vec!["does not match the UUID format".into()]
            }
        }
        "byte" => {
            if crate::formats::is_base64(value) {
                Vec::new()
            } else {
                vec!["invalid base64".into()]
            }
        }
        "date" => {
            if crate::formats::is_date(value) {
                Vec::new()
            } else {
                vec!["invalid date".into()]
            }
        }
        "datetime" => {
            if crate::formats::is_datetime(value) {
                Vec::new()
            } else {
                vec!["invalid datetime".into()]
            }
        }
        _ => return None,
    })
}

/// The names format.go declares as `format.<name>()`.
pub(crate) const FORMAT_NAMES: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

fn register_formats(lib: &mut Library) {
    let ft = || Type::Opaque(FORMAT);
    // One global per name: `format.dns1123Label()`, ... (the name is recovered from the
    // table of the call at run time by the interpreter, see eval.rs `format.` calls).
    for name in FORMAT_NAMES {
        let full: &'static str = Box::leak(format!("format.{name}").into_boxed_str());
        lib.global(full, vec![], ft(), |_| {
            Err(err("format constant called without name"))
        });
    }
    lib.global(
        "format.named",
        vec![Type::String],
        Type::optional(ft()),
        |a| {
            let name = text(&a[0])?;
            Ok(Value::Optional(
                FORMAT_NAMES
                    .contains(&name)
                    .then(|| Arc::new(Value::Format(name.into()))),
            ))
        },
    );
    lib.member(
        "validate",
        vec![ft(), Type::String],
        Type::optional(Type::list(Type::String)),
        |a| {
            let Value::Format(name) = &a[0] else {
                return Err(no_such_overload());
            };
            let found = validate_format(name, text(&a[1])?).ok_or_else(no_such_overload)?;
            Ok(Value::Optional(if found.is_empty() {
                None
            } else {
                Some(Arc::new(Value::list(
                    found.into_iter().map(Value::string).collect(),
                )))
            }))
        },
    );
}

pub(super) fn register(lib: &mut Library) {
    register_quantity(lib);
    register_urls(lib);
    register_formats(lib);
}
