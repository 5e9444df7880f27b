//! Entry points for the fuzz targets in `fuzz/` (docs/development.md#fuzzing), and for nothing else.
//!
//! The code under fuzzing (selectors, the patch engines, server-side apply, the body decoders)
//! is crate-private. These are thin wrappers that call exactly what the request handlers call,
//! in the handlers' order, so that a target exercises the server's own path and picks up any
//! limit or check added to it. No logic of their own: a property a target asserts lives in the
//! target. Hidden from the documentation and not an API: they change with the targets.

use std::fmt;
use std::sync::{Arc, LazyLock};

use axum::http::{HeaderMap, HeaderValue, header};
use bytes::Bytes;
use kubemock_storage::{Config, SledStore};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::handlers::patch::Patch;
use crate::handlers::resource::{Call, Origin};
use crate::managedfields::{self, Writer};
use crate::negotiate::{Encoding, Negotiated};
use crate::query::Query;
use crate::target::Target;
use crate::{ApiError, AppState, Resource, ServerConfig, admission, object, selector};

/// An object as JSON (`object::Object`).
pub type Object = serde_json::Map<String, Value>;

/// The state a [`Call`] carries: an ephemeral store nothing here reads or writes (the
/// functions below never reach the store), opened once per process.
static STATE: LazyLock<AppState> = LazyLock::new(|| {
    let store = SledStore::open(Config::ephemeral().compaction_interval(None))
        .expect("an ephemeral store opens");
    AppState::new(
        Arc::new(store),
        ServerConfig::default(),
        CancellationToken::new(),
    )
});

/// A request on an item of `resource` with this `Content-Type`, body and query string, as the
/// router would hand it to a handler (JSON answers).
fn call(resource: &Arc<Resource>, content_type: &str, body: &[u8], query: &str) -> Call {
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(content_type) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    Call {
        state: STATE.clone(),
        target: Arc::new(Target {
            resource: Arc::clone(resource),
            namespace: None,
            name: Some("fuzz".to_owned()),
            subresource: None,
            legacy_watch: false,
        }),
        query: Query::parse(Some(query)),
        headers,
        body: Bytes::copy_from_slice(body),
        user: crate::identity::UserInfo::open_mode(),
        negotiated: Negotiated {
            encoding: Encoding::Json,
            conversion: None,
            pretty: false,
        },
    }
}

/// A parsed label selector (`selector::LabelSelector`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSelector(selector::LabelSelector);

impl LabelSelector {
    /// `labelSelector=` text parsed as list and watch parse it.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        selector::LabelSelector::parse(text)
            .map(LabelSelector)
            .map_err(ApiError::bad_request)
    }

    /// Whether `object`'s labels match.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.matches_object(object)
    }
}

/// apimachinery's `Selector.String()` form.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A parsed field selector of one resource (`selector::FieldSelector`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSelector(selector::FieldSelector);

impl FieldSelector {
    /// `fieldSelector=` text parsed for `resource` as list and watch parse it.
    pub fn parse(text: &str, resource: &Resource) -> Result<Self, ApiError> {
        selector::FieldSelector::parse(text, resource).map(FieldSelector)
    }

    /// Whether `object` matches.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.matches(object)
    }

    /// The name the selector requires (`RequiresExactMatch("metadata.name")`).
    pub fn exact_name(&self) -> Option<&str> {
        self.0.exact_name()
    }
}

/// A PATCH of `current` (an object of `resource` as stored) with `body` of `content_type`
/// (JSON, merge or strategic merge patch), up to what an update then does with the result: the
/// handler's `Patch::parse` and `Patch::apply`, the typed-object check and field validation
/// (`field_validation`: the `fieldValidation` parameter).
pub fn patch(
    resource: &Arc<Resource>,
    content_type: &str,
    body: &[u8],
    current: Object,
    field_validation: &str,
) -> Result<Object, ApiError> {
    let call = call(
        resource,
        content_type,
        body,
        &format!("fieldValidation={field_validation}"),
    );
    let patch = Patch::parse(&call)?;
    let patched = patch.apply(
        Value::Object(current),
        &resource.group_version(),
        &resource.kind,
    )?;
    let mut body = object::typed_object(patched, resource)?;
    let origin = match &patch {
        Patch::Json(_, unknown) => Origin::Patched(unknown),
        Patch::Strategic(patch) => Origin::Strategic(patch),
        Patch::Merge(_) | Patch::Apply(_) => Origin::Patched(&[]),
    };
    call.decode_object(&mut body, origin)?;
    Ok(body)
}

/// A server-side apply of the YAML (or JSON) configuration `body` by `manager` (`force`: the
/// `force` parameter) over `live` (`None`: the object does not exist yet): the handler's
/// `Patch::parse`, the checks of the configuration, `Call::decode_object`, then
/// `managedfields::apply`.
/// Returns the object to write, or the error the handler answers (the 409 of conflicts
/// included).
pub fn apply(
    resource: &Arc<Resource>,
    manager: &str,
    live: Option<&Object>,
    body: &[u8],
    force: bool,
) -> Result<Object, ApiError> {
    let call = call(resource, "application/apply-patch+yaml", body, "");
    let Patch::Apply(config) = Patch::parse(&call)? else {
        return Err(ApiError::internal(
            "an apply body parsed as another kind of patch",
        ));
    };
    // The handler's `apply` refuses these two first (a copy of its conditions: they are
    // inline there).
    let named = |field: &str| {
        config
            .get(field)
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
    };
    if !named("apiVersion") || !named("kind") {
        return Err(ApiError::bad_request(
            "error decoding patch: Object 'Kind' is missing",
        ));
    }
    let mut config = object::typed_object(config, resource)?;
    if config
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|f| !f.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    call.decode_object(&mut config, Origin::Applied)?;
    let writer = Writer::of_request(Some(manager), None, resource, None, "PatchOptions")?;
    managedfields::apply(resource, &writer, live, &config, force)
}

/// A create or update body of `content_type` (JSON, YAML or protobuf) decoded as an object of
/// `resource`, as create and update decode it: `object::decode_body`, then
/// `Call::decode_object` (`field_validation`: the `fieldValidation` parameter). Returns the object and its warnings.
pub fn decode_body(
    resource: &Arc<Resource>,
    content_type: &str,
    body: &[u8],
    field_validation: &str,
) -> Result<(Object, Vec<String>), ApiError> {
    let call = call(
        resource,
        content_type,
        body,
        &format!("fieldValidation={field_validation}"),
    );
    let mut object = object::decode_body(&call.headers, &call.body, resource)?;
    let warnings = call.decode_object(&mut object, Origin::Body)?;
    Ok((object, warnings))
}

/// The stored bytes of `object` (without a resourceVersion), as create and update write them.
pub fn to_stored(resource: &Resource, object: &Object) -> Result<Bytes, ApiError> {
    object::to_stored(&admission::to_storage(resource, object))
}

/// The object in stored bytes, as reads load it (without a resourceVersion).
pub fn from_stored(resource: &Resource, bytes: &[u8]) -> Result<Object, ApiError> {
    object::parse_stored(bytes).map(|object| admission::from_storage(resource, object))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Registry;

    #[test]
    fn a_float_reads_back_from_the_stored_form_unchanged() {
        // Found by the `decode` fuzz target: a YAML body's 5555…5 (58 digits) read as
        // 5.555555555555555e57, stored as that text, and loaded as 5.5555555555555556e57
        // (serde_json's default float parsing is not exact; `float_roundtrip` makes it so).
        let resource = Registry::builtin()
            .lookup("", "v1", "configmaps")
            .expect("configmaps");
        for number in [5.555555555555555e57, 5.555555555555555e51, 0.1, 1e-300] {
            let Value::Object(object) = json!({"kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"name": "c"}, "x": number})
            else {
                unreachable!("an object")
            };
            let stored = to_stored(&resource, &object).expect("stored");
            let loaded = from_stored(&resource, &stored).expect("loaded");
            assert_eq!(loaded["x"].as_f64(), Some(number), "{number:e}");
        }
    }
}
