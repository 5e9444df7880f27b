//! Request building, kept pure (parameters in, a [`Request`] out) so that every URL, query and
//! body the client sends can be tested without a server.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::selector::{FieldSelector, METADATA_NAME};

/// Content type of JSON bodies.
pub const JSON: &str = "application/json";

/// An HTTP request to send: method, path with query, and an optional body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// HTTP method.
    pub method: reqwest::Method,
    /// Path and query (`/api/v1/namespaces/ns/pods?limit=500`).
    pub path: String,
    /// Body and its content type.
    pub body: Option<(Vec<u8>, &'static str)>,
    /// The `Accept` header: `application/json` unless set (a metadata-only list or watch asks
    /// for [`METADATA_LIST`] or [`METADATA_WATCH`]).
    pub accept: Option<&'static str>,
}

/// `Accept` of a metadata-only list: `PartialObjectMetadataList` (client-go's metadata client,
/// `k8s.io/client-go/metadata/metadata.go`).
pub const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/// `Accept` of a metadata-only watch: events of `PartialObjectMetadata`.
pub const METADATA_WATCH: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

impl Request {
    fn new(method: reqwest::Method, path: String) -> Self {
        Request {
            method,
            path,
            body: None,
            accept: None,
        }
    }

    fn with_body(mut self, body: Vec<u8>, content_type: &'static str) -> Self {
        self.body = Some((body, content_type));
        self
    }

    /// Whether repeating this request is harmless (GET, PUT, DELETE; not POST or PATCH), so that
    /// a connection error may be retried.
    pub fn is_idempotent(&self) -> bool {
        matches!(
            self.method,
            reqwest::Method::GET
                | reqwest::Method::HEAD
                | reqwest::Method::PUT
                | reqwest::Method::DELETE
        )
    }
}

/// Query parameters, in the order given, percent-encoded.
#[derive(Debug, Default)]
struct Query(String);

impl Query {
    fn push(&mut self, key: &str, value: &str) {
        self.0.push(if self.0.is_empty() { '?' } else { '&' });
        self.0.push_str(key);
        self.0.push('=');
        encode_into(&mut self.0, value);
    }
    fn push_opt(&mut self, key: &str, value: Option<&str>) {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            self.push(key, v);
        }
    }
}

/// Percent-encodes a query value (everything but unreserved characters).
fn encode_into(out: &mut String, value: &str) {
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(byte));
            }
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('%');
                out.push(char::from(HEX[usize::from(byte >> 4)]));
                out.push(char::from(HEX[usize::from(byte & 15)]));
            }
        }
    }
}

/// How a list's `resourceVersion` is to be matched (docs/api-behaviour.md#resourceversion-on-reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionMatch {
    /// At least as new as the given resourceVersion.
    NotOlderThan,
    /// Exactly the given resourceVersion.
    Exact,
}

/// Parameters of a list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListParams {
    /// Label selector (`app=web,tier!=db`).
    pub label_selector: Option<String>,
    /// Field selector (`metadata.name=x`); checked before a request is built (see
    /// [`RequestBuilder::list`]).
    pub field_selector: Option<String>,
    /// Page size.
    pub limit: Option<u32>,
    /// Continue token of the previous page.
    pub continue_token: Option<String>,
    /// `resourceVersion` to read at (`"0"`: any, from cache).
    pub resource_version: Option<String>,
    /// How to match `resource_version`.
    pub version_match: Option<VersionMatch>,
}

impl ListParams {
    /// Sets the label selector.
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }
    /// Sets the field selector: text (`status.phase!=Failed`) or a [`FieldSelector`]. Text that
    /// is not a field selector makes the request fail before it is sent.
    #[must_use]
    pub fn fields(mut self, selector: impl fmt::Display) -> Self {
        self.field_selector = Some(selector.to_string());
        self
    }
    /// Restricts to the object named `name` (`metadata.name=<name>`, the name escaped, as
    /// client-go writes `fields.OneTermEqualSelector("metadata.name", name)`).
    #[must_use]
    pub fn named(self, name: &str) -> Self {
        self.fields(FieldSelector::one_term_equal(METADATA_NAME, name))
    }
    /// Sets the page size.
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }
    /// Sets the resourceVersion (and its match rule).
    #[must_use]
    pub fn at(mut self, resource_version: &str, version_match: Option<VersionMatch>) -> Self {
        self.resource_version = Some(resource_version.to_owned());
        self.version_match = version_match;
        self
    }

    fn push_selectors(&self, query: &mut Query) -> Result<()> {
        query.push_opt("labelSelector", self.label_selector.as_deref());
        push_field_selector(query, self.field_selector.as_deref())
    }
}

/// Adds `fieldSelector` to `query` if it is set, after checking that it parses: the server
/// would refuse it with the same message (`kubemock_apimachinery::fields`, upstream's
/// `fields.ParseSelector`), so the client refuses it without a round trip. Which fields a kind
/// supports is the server's to say.
fn push_field_selector(query: &mut Query, selector: Option<&str>) -> Result<()> {
    if let Some(selector) = selector {
        FieldSelector::parse(selector).map_err(|error| Error::InvalidRequest(error.to_string()))?;
    }
    query.push_opt("fieldSelector", selector);
    Ok(())
}

/// Parameters of a watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchParams {
    /// Label selector.
    pub label_selector: Option<String>,
    /// Field selector; checked before a request is built (see [`RequestBuilder::watch`]).
    pub field_selector: Option<String>,
    /// Ask for BOOKMARK events (docs/api-behaviour.md#bookmarks).
    pub bookmarks: bool,
    /// Server-side lifetime of the watch (docs/api-behaviour.md#watch-lifetime).
    pub timeout: Option<Duration>,
    /// Streaming list: ADDED for every object, then a bookmark marking the end (docs/api-behaviour.md#streaming-lists).
    pub send_initial_events: bool,
}

/// Parameters of create and replace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostParams {
    /// Validate and answer without persisting.
    pub dry_run: bool,
    /// The field manager to record.
    pub field_manager: Option<String>,
}

/// A patch body and its type (docs/api-behaviour.md#patch-types).
#[derive(Debug, Clone, PartialEq)]
pub enum Patch {
    /// RFC 6902 JSON patch: a list of operations.
    Json(serde_json::Value),
    /// RFC 7386 JSON merge patch.
    Merge(serde_json::Value),
    /// Strategic merge patch (built-in kinds).
    Strategic(serde_json::Value),
    /// Server-side apply of a (partial) object; needs a field manager.
    Apply(serde_json::Value),
}

impl Patch {
    fn content_type(&self) -> &'static str {
        match self {
            Patch::Json(_) => "application/json-patch+json",
            Patch::Merge(_) => "application/merge-patch+json",
            Patch::Strategic(_) => "application/strategic-merge-patch+json",
            Patch::Apply(_) => "application/apply-patch+yaml",
        }
    }
    fn body(&self) -> &serde_json::Value {
        match self {
            Patch::Json(v) | Patch::Merge(v) | Patch::Strategic(v) | Patch::Apply(v) => v,
        }
    }
}

/// Parameters of a patch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchParams {
    /// Validate and answer without persisting.
    pub dry_run: bool,
    /// The field manager (required for apply).
    pub field_manager: Option<String>,
    /// Apply: take ownership of conflicting fields.
    pub force: bool,
}

impl PatchParams {
    /// Parameters for server-side apply as `manager`.
    pub fn apply(manager: &str) -> Self {
        PatchParams {
            field_manager: Some(manager.to_owned()),
            ..PatchParams::default()
        }
    }
    /// Forces an apply.
    #[must_use]
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }
}

/// What happens to dependents of a deleted object (docs/api-behaviour.md#propagation-policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PropagationPolicy {
    /// Dependents are orphaned.
    Orphan,
    /// Dependents are deleted in the background.
    Background,
    /// The owner waits for its dependents.
    Foreground,
}

/// Conditions a delete must meet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Preconditions {
    /// The object's resourceVersion must be this.
    #[serde(rename = "resourceVersion", skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// The object's uid must be this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// Parameters of a delete (sent as a `DeleteOptions` body).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteParams {
    /// Validate and answer without deleting.
    pub dry_run: bool,
    /// Grace period in seconds (pods).
    pub grace_period_seconds: Option<u32>,
    /// Propagation of the deletion to dependents.
    pub propagation_policy: Option<PropagationPolicy>,
    /// Preconditions.
    pub preconditions: Option<Preconditions>,
}

impl DeleteParams {
    /// Deletion in the background (the default for most kinds).
    pub fn background() -> Self {
        DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        }
    }
    /// Foreground deletion.
    pub fn foreground() -> Self {
        DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            ..DeleteParams::default()
        }
    }
    /// Orphan the dependents.
    pub fn orphan() -> Self {
        DeleteParams {
            propagation_policy: Some(PropagationPolicy::Orphan),
            ..DeleteParams::default()
        }
    }

    fn body(&self) -> Result<Vec<u8>> {
        let mut body = serde_json::Map::new();
        body.insert("kind".into(), "DeleteOptions".into());
        body.insert("apiVersion".into(), "v1".into());
        if self.dry_run {
            body.insert("dryRun".into(), serde_json::json!(["All"]));
        }
        if let Some(grace) = self.grace_period_seconds {
            body.insert("gracePeriodSeconds".into(), grace.into());
        }
        if let Some(policy) = self.propagation_policy {
            body.insert(
                "propagationPolicy".into(),
                serde_json::to_value(policy).map_err(Error::Encode)?,
            );
        }
        if let Some(pre) = &self.preconditions {
            body.insert(
                "preconditions".into(),
                serde_json::to_value(pre).map_err(Error::Encode)?,
            );
        }
        serde_json::to_vec(&body).map_err(Error::Encode)
    }
}

/// Builds the requests of one resource collection (a path such as
/// `/api/v1/namespaces/ns/configmaps`).
#[derive(Debug, Clone)]
pub struct RequestBuilder {
    collection: String,
    /// Lists and watches ask for the objects' metadata alone ([`RequestBuilder::metadata_only`]).
    metadata_only: bool,
}

impl RequestBuilder {
    /// Requests against the collection at `collection`.
    pub fn new(collection: String) -> Self {
        RequestBuilder {
            collection,
            metadata_only: false,
        }
    }

    /// Lists and watches ask for `PartialObjectMetadataList` and `PartialObjectMetadata`
    /// ([`METADATA_LIST`], [`METADATA_WATCH`]): each object's `metadata` alone.
    #[must_use]
    pub fn metadata_only(mut self) -> Self {
        self.metadata_only = true;
        self
    }

    fn item(&self, name: &str, subresource: Option<&str>) -> Result<String> {
        if name.is_empty() {
            return Err(Error::InvalidRequest("an object name is required".into()));
        }
        let mut path = format!("{}/{name}", self.collection);
        if let Some(sub) = subresource {
            path.push('/');
            path.push_str(sub);
        }
        Ok(path)
    }

    /// GET an item (or its subresource).
    pub fn get(&self, name: &str, subresource: Option<&str>) -> Result<Request> {
        Ok(Request::new(
            reqwest::Method::GET,
            self.item(name, subresource)?,
        ))
    }

    /// GET the collection. A field selector that does not parse is an
    /// [`Error::InvalidRequest`] with the server's message.
    pub fn list(&self, params: &ListParams) -> Result<Request> {
        let mut query = Query::default();
        params.push_selectors(&mut query)?;
        if let Some(limit) = params.limit {
            query.push("limit", &limit.to_string());
        }
        query.push_opt("continue", params.continue_token.as_deref());
        if params.continue_token.is_none() {
            query.push_opt("resourceVersion", params.resource_version.as_deref());
            if params
                .resource_version
                .as_deref()
                .is_some_and(|rv| !rv.is_empty())
            {
                match params.version_match {
                    Some(VersionMatch::Exact) => query.push("resourceVersionMatch", "Exact"),
                    Some(VersionMatch::NotOlderThan) => {
                        query.push("resourceVersionMatch", "NotOlderThan");
                    }
                    None => {}
                }
            }
        }
        let mut request = Request::new(
            reqwest::Method::GET,
            format!("{}{}", self.collection, query.0),
        );
        request.accept = self.metadata_only.then_some(METADATA_LIST);
        Ok(request)
    }

    /// GET the collection as a watch from `resource_version` (`""` or `"0"` for the start). A
    /// field selector that does not parse is an [`Error::InvalidRequest`].
    pub fn watch(&self, params: &WatchParams, resource_version: &str) -> Result<Request> {
        let mut query = Query::default();
        query.push("watch", "true");
        query.push_opt("labelSelector", params.label_selector.as_deref());
        push_field_selector(&mut query, params.field_selector.as_deref())?;
        if params.bookmarks || params.send_initial_events {
            query.push("allowWatchBookmarks", "true");
        }
        if let Some(timeout) = params.timeout {
            query.push("timeoutSeconds", &timeout.as_secs().max(1).to_string());
        }
        if params.send_initial_events {
            query.push("sendInitialEvents", "true");
            query.push("resourceVersionMatch", "NotOlderThan");
        }
        query.push_opt("resourceVersion", Some(resource_version));
        let mut request = Request::new(
            reqwest::Method::GET,
            format!("{}{}", self.collection, query.0),
        );
        request.accept = self.metadata_only.then_some(METADATA_WATCH);
        Ok(request)
    }

    /// POST a new object.
    pub fn create(&self, params: &PostParams, body: Vec<u8>) -> Request {
        let query = post_query(params);
        Request::new(
            reqwest::Method::POST,
            format!("{}{}", self.collection, query.0),
        )
        .with_body(body, JSON)
    }

    /// PUT an object (or its subresource).
    pub fn replace(
        &self,
        name: &str,
        subresource: Option<&str>,
        params: &PostParams,
        body: Vec<u8>,
    ) -> Result<Request> {
        let query = post_query(params);
        Ok(Request::new(
            reqwest::Method::PUT,
            format!("{}{}", self.item(name, subresource)?, query.0),
        )
        .with_body(body, JSON))
    }

    /// PATCH an object (or its subresource).
    pub fn patch(
        &self,
        name: &str,
        subresource: Option<&str>,
        params: &PatchParams,
        patch: &Patch,
    ) -> Result<Request> {
        if matches!(patch, Patch::Apply(_)) && params.field_manager.is_none() {
            return Err(Error::InvalidRequest(
                "server-side apply needs a field manager".into(),
            ));
        }
        if params.force && !matches!(patch, Patch::Apply(_)) {
            return Err(Error::InvalidRequest(
                "force is only for apply patches".into(),
            ));
        }
        let mut query = Query::default();
        if params.dry_run {
            query.push("dryRun", "All");
        }
        query.push_opt("fieldManager", params.field_manager.as_deref());
        if params.force {
            query.push("force", "true");
        }
        let body = serde_json::to_vec(patch.body()).map_err(Error::Encode)?;
        Ok(Request::new(
            reqwest::Method::PATCH,
            format!("{}{}", self.item(name, subresource)?, query.0),
        )
        .with_body(body, patch.content_type()))
    }

    /// DELETE an object.
    pub fn delete(&self, name: &str, params: &DeleteParams) -> Result<Request> {
        Ok(
            Request::new(reqwest::Method::DELETE, self.item(name, None)?)
                .with_body(params.body()?, JSON),
        )
    }

    /// DELETE the collection (objects matching the list's selectors).
    pub fn delete_collection(&self, delete: &DeleteParams, list: &ListParams) -> Result<Request> {
        let mut query = Query::default();
        list.push_selectors(&mut query)?;
        Ok(Request::new(
            reqwest::Method::DELETE,
            format!("{}{}", self.collection, query.0),
        )
        .with_body(delete.body()?, JSON))
    }
}

fn post_query(params: &PostParams) -> Query {
    let mut query = Query::default();
    if params.dry_run {
        query.push("dryRun", "All");
    }
    query.push_opt("fieldManager", params.field_manager.as_deref());
    query
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> RequestBuilder {
        RequestBuilder::new("/api/v1/namespaces/ns/pods".into())
    }

    #[test]
    fn list_queries_carry_selectors_paging_and_version() {
        let params = ListParams::default()
            .labels("app=web,tier in (a,b)")
            .limit(500)
            .at("0", None);
        assert_eq!(
            pods().list(&params).expect("builds").path,
            "/api/v1/namespaces/ns/pods?labelSelector=app%3Dweb%2Ctier%20in%20%28a%2Cb%29&limit=500&resourceVersion=0"
        );
        let next = ListParams {
            continue_token: Some("abc=".into()),
            resource_version: Some("5".into()),
            version_match: Some(VersionMatch::Exact),
            ..ListParams::default()
        };
        // docs/api-behaviour.md#resourceversion-on-reads: resourceVersion is not allowed together with continue.
        assert_eq!(
            pods().list(&next).expect("builds").path,
            "/api/v1/namespaces/ns/pods?continue=abc%3D"
        );
        let exact = ListParams::default().at("5", Some(VersionMatch::NotOlderThan));
        assert_eq!(
            pods().list(&exact).expect("builds").path,
            "/api/v1/namespaces/ns/pods?resourceVersion=5&resourceVersionMatch=NotOlderThan"
        );
    }

    #[test]
    fn metadata_only_lists_and_watches_ask_for_partial_object_metadata() {
        let params = ListParams::default();
        let watch = WatchParams::default();
        assert_eq!(pods().list(&params).expect("builds").accept, None);
        assert_eq!(pods().watch(&watch, "5").expect("builds").accept, None);
        let metadata = pods().metadata_only();
        assert_eq!(
            metadata.list(&params).expect("builds").accept,
            Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
        );
        assert_eq!(
            metadata.watch(&watch, "5").expect("builds").accept,
            Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
        );
        // The other verbs read and write whole objects.
        assert_eq!(metadata.get("p", None).expect("builds").accept, None);
        assert_eq!(
            metadata
                .create(&PostParams::default(), b"{}".to_vec())
                .accept,
            None
        );
    }

    #[test]
    fn field_selectors_name_one_object_with_its_name_escaped() {
        let named = ListParams::default().named(r"a,b=c\d");
        assert_eq!(
            named.field_selector.as_deref(),
            Some(r"metadata.name=a\,b\=c\\d")
        );
        assert_eq!(
            pods().list(&named).expect("builds").path,
            "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Da%5C%2Cb%5C%3Dc%5C%5Cd"
        );
        let selector = FieldSelector::parse(named.field_selector.as_deref().unwrap_or_default())
            .expect("parses");
        assert_eq!(
            selector.requires_exact_match("metadata.name"),
            Some(r"a,b=c\d")
        );
        let typed = ListParams::default().fields(FieldSelector::and([
            FieldSelector::one_term_equal("spec.nodeName", "n1"),
            FieldSelector::one_term_not_equal("status.phase", "Failed"),
        ]));
        assert_eq!(
            typed.field_selector.as_deref(),
            Some("spec.nodeName=n1,status.phase!=Failed")
        );
    }

    #[test]
    fn a_field_selector_that_does_not_parse_is_refused_before_sending() {
        let cases = [
            (
                "metadata.name=a,b",
                "invalid selector: 'metadata.name=a,b'; can't understand 'b'",
            ),
            (
                "metadata.name=a=b",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                r"metadata.name=a\x",
                r"invalid field selector: invalid escape sequence: \x",
            ),
        ];
        for (text, message) in cases {
            let list = ListParams::default().fields(text);
            let watch = WatchParams {
                field_selector: Some(text.to_owned()),
                ..WatchParams::default()
            };
            let errors = [
                pods().list(&list).map(|r| r.path),
                pods().watch(&watch, "").map(|r| r.path),
                pods()
                    .delete_collection(&DeleteParams::default(), &list)
                    .map(|r| r.path),
            ];
            for error in errors {
                match error {
                    Err(Error::InvalidRequest(got)) => assert_eq!(got, message, "{text}"),
                    other => panic!("{text}: {other:?}"),
                }
            }
        }
        // Which fields a kind supports is the server's to say; empty text is no selector.
        for text in ["spec.anything=x", ""] {
            assert!(
                pods().list(&ListParams::default().fields(text)).is_ok(),
                "{text}"
            );
        }
    }

    #[test]
    fn watch_queries_ask_for_bookmarks_and_streaming_lists() {
        let params = WatchParams {
            bookmarks: true,
            timeout: Some(Duration::from_secs(290)),
            ..WatchParams::default()
        };
        assert_eq!(
            pods().watch(&params, "42").expect("builds").path,
            "/api/v1/namespaces/ns/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=290&resourceVersion=42"
        );
        let streaming = WatchParams {
            send_initial_events: true,
            ..WatchParams::default()
        };
        assert_eq!(
            pods().watch(&streaming, "").expect("builds").path,
            "/api/v1/namespaces/ns/pods?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        );
    }

    #[test]
    fn patches_carry_their_content_type_and_apply_needs_a_manager() {
        let merge = pods()
            .patch(
                "p",
                Some("status"),
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({})),
            )
            .expect("builds");
        assert_eq!(merge.path, "/api/v1/namespaces/ns/pods/p/status");
        assert_eq!(
            merge.body.map(|b| b.1),
            Some("application/merge-patch+json")
        );
        let apply = Patch::Apply(serde_json::json!({"metadata":{"name":"p"}}));
        assert!(
            pods()
                .patch("p", None, &PatchParams::default(), &apply)
                .is_err()
        );
        let request = pods()
            .patch("p", None, &PatchParams::apply("me").force(), &apply)
            .expect("builds");
        assert_eq!(
            request.path,
            "/api/v1/namespaces/ns/pods/p?fieldManager=me&force=true"
        );
        assert!(!request.is_idempotent());
    }

    #[test]
    fn deletes_send_delete_options() {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                resource_version: Some("7".into()),
                uid: None,
            }),
            ..DeleteParams::foreground()
        };
        let request = pods().delete("p", &params).expect("builds");
        let body: serde_json::Value =
            serde_json::from_slice(&request.body.expect("has a body").0).expect("json");
        assert_eq!(body["propagationPolicy"], "Foreground");
        assert_eq!(body["gracePeriodSeconds"], 0);
        assert_eq!(body["preconditions"]["resourceVersion"], "7");
        assert!(pods().delete("", &params).is_err());
    }
}
