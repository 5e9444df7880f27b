//! Table output (docs/api-behaviour.md#tables): when a client's `Accept` asks for
//! `application/json;as=Table;v=v1;g=meta.k8s.io` (kubectl's `get`, list, single object and
//! `-w`), the server answers a `meta.k8s.io` Table of pre-rendered rows instead of the objects,
//! and kubectl prints the server's columns. `negotiate` decides when; this module reads
//! `includeObject` and builds the Table as `handlers/response.go` (`asTable`) and the printers'
//! table generator do; which columns a resource has is the registry's [`Printer`], rendered by
//! `printers`.
//!
//! Watches (docs/api-behaviour.md#tables) render each event's object as a one-row Table; only the first event's
//! carries `columnDefinitions` (later ones have `null`, as the real watch encoder sets
//! `NoHeaders` after its first object). ERROR events keep their Status.

mod custom;
mod docs;
mod duration;
pub(crate) use custom::lookup;
mod printers;

/// The description of a creation timestamp column.
pub(crate) const CREATION_TIMESTAMP_DOC: &str = docs::CREATION_TIMESTAMP;

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};

use crate::meta;
use crate::partial::{self, META_GROUP};
use crate::query::Query;
use crate::registry::{Printer, Resource};
use crate::status::{ApiError, ApiResult};

/// What `includeObject` asks each row to carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IncludeObject {
    /// Nothing (`object: null`).
    None,
    /// The object's metadata as a `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

/// A request answered with a Table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableRequest {
    /// `v1` or `v1beta1`: the `meta.k8s.io` version of the Table, as asked for.
    version: &'static str,
    include: IncludeObject,
}

impl TableRequest {
    /// A Table of `meta.k8s.io/{version}` (negotiated from `Accept`: [`crate::negotiate`]),
    /// with the rows `includeObject` asks for; 400 when that is not a value the real server
    /// knows.
    pub(crate) fn new(version: &'static str, query: &Query) -> ApiResult<TableRequest> {
        let include = match query.get("includeObject").unwrap_or("") {
            "" | "Metadata" => IncludeObject::Metadata,
            "Object" => IncludeObject::Object,
            "None" => IncludeObject::None,
            other => {
                return Err(ApiError::bad_request(format!(
                    "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
                    serde_json::to_string(other).unwrap_or_default()
                )));
            }
        };
        Ok(TableRequest { version, include })
    }
}

/// The printer for `resource`, or for its `subresource` when that prints differently
/// (`scale`).
pub(crate) fn printer_for(resource: &Resource, subresource: Option<&str>) -> Printer {
    subresource
        .and_then(|name| resource.subresource(name))
        .and_then(|sub| sub.printer.clone())
        .unwrap_or_else(|| resource.printer.clone())
}

impl TableRequest {
    /// The one-row Table of a single object (GET of an item).
    pub(crate) fn object(&self, printer: &Printer, object: Value) -> Value {
        let metadata = object_list_meta(&object);
        self.table(printer, vec![object], metadata, true)
    }

    /// The Table of a list's items, with the list's metadata (resourceVersion, continue,
    /// remainingItemCount).
    pub(crate) fn list(
        &self,
        printer: &Printer,
        items: Vec<Value>,
        metadata: Map<String, Value>,
    ) -> Value {
        self.table(printer, items, metadata, true)
    }

    /// The watch-side renderer: one Table per event, column definitions on the first only.
    pub(crate) fn for_watch(self, printer: Printer) -> WatchTables {
        WatchTables {
            request: self,
            printer,
            headers_sent: AtomicBool::new(false),
        }
    }

    fn table(
        &self,
        printer: &Printer,
        objects: Vec<Value>,
        metadata: Map<String, Value>,
        headers: bool,
    ) -> Value {
        let now = meta::now_unix_nanos();
        let column_definitions = match printer {
            _ if !headers => Value::Null,
            Printer::Columns(columns) => Value::Array(custom::definitions(columns)),
            printer => Value::Array(printers::columns(printer).iter().map(column).collect()),
        };
        let rows: Vec<Value> = objects
            .into_iter()
            .map(|object| self.row(printer, object, now))
            .collect();
        // The default convertor starts from no rows at all, so an empty list is `null` there;
        // the printers start from an empty slice.
        let rows = if rows.is_empty() && *printer == Printer::Default {
            Value::Null
        } else {
            Value::Array(rows)
        };
        json!({
            "kind": "Table",
            "apiVersion": format!("{META_GROUP}/{}", self.version),
            "metadata": metadata,
            "columnDefinitions": column_definitions,
            "rows": rows,
        })
    }

    fn row(&self, printer: &Printer, object: Value, now: i128) -> Value {
        let printed = match printer {
            Printer::Columns(columns) => printers::Row::plain(custom::cells(columns, &object, now)),
            printer => printers::row(printer, &object, now),
        };
        let mut row = Map::new();
        row.insert("cells".to_owned(), Value::Array(printed.cells));
        if !printed.conditions.is_empty() {
            row.insert("conditions".to_owned(), Value::Array(printed.conditions));
        }
        let object = match self.include {
            IncludeObject::None => Value::Null,
            IncludeObject::Object => object,
            IncludeObject::Metadata => partial::object(self.version, &object),
        };
        row.insert("object".to_owned(), object);
        Value::Object(row)
    }
}

/// The list metadata of a single object's Table: its resourceVersion.
fn object_list_meta(object: &Value) -> Map<String, Value> {
    let mut metadata = Map::new();
    if let Some(rv) = object
        .get("metadata")
        .and_then(|m| m.get("resourceVersion"))
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
    {
        metadata.insert("resourceVersion".to_owned(), json!(rv));
    }
    metadata
}

/// A column definition as JSON (every field present, as upstream serialises it).
fn column(column: &printers::Column) -> Value {
    json!({
        "name": column.name,
        "type": column.kind,
        "format": column.format,
        "description": column.description,
        "priority": column.priority,
    })
}

/// Renders a watch's event objects as Tables (docs/api-behaviour.md#tables).
#[derive(Debug)]
pub(crate) struct WatchTables {
    request: TableRequest,
    printer: Printer,
    /// Set once the first event went out: later Tables omit the column definitions. Atomic
    /// only because the watch task shares its feed by reference across awaits.
    headers_sent: AtomicBool,
}

impl WatchTables {
    /// The object an event of `kind` carries: a one-row Table of `object`, or for ERROR
    /// events the Status itself. Bookmarks are converted too, as the real server does.
    pub(crate) fn event_object(&self, kind: &str, object: Value) -> Value {
        let first = !self.headers_sent.swap(true, Ordering::Relaxed);
        if kind == "ERROR" {
            return object;
        }
        let metadata = object_list_meta(&object);
        self.request
            .table(&self.printer, vec![object], metadata, first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    /// The Table request of `version` with `query`.
    fn request(version: &'static str, query: &str) -> ApiResult<TableRequest> {
        TableRequest::new(version, &Query::parse(Some(query)))
    }

    #[test]
    fn include_object_defaults_to_metadata_and_rejects_unknown_values() {
        let table = request("v1", "").unwrap();
        assert_eq!(table.include, IncludeObject::Metadata);
        assert_eq!(table.version, "v1");
        for (query, include) in [
            ("includeObject=Object", IncludeObject::Object),
            ("includeObject=None", IncludeObject::None),
            ("includeObject=Metadata", IncludeObject::Metadata),
        ] {
            assert_eq!(request("v1", query).unwrap().include, include);
        }
        let err = request("v1", "includeObject=All").unwrap_err();
        assert_eq!(err.code.as_u16(), 400);
        assert_eq!(
            err.message,
            "Unable to convert to Table as requested: includeObject: Invalid value: \"All\": must be 'Metadata', 'Object', 'None', or empty"
        );
    }

    fn configmap() -> Value {
        json!({
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"name": "c1", "namespace": "default", "resourceVersion": "12",
                         "creationTimestamp": "2024-05-01T12:00:00Z", "labels": {"app": "x"}},
            "data": {"a": "1"},
        })
    }

    #[test]
    fn a_single_object_is_a_one_row_table_with_partial_metadata() {
        let table = request("v1", "").unwrap();
        let body = table.object(&Printer::ConfigMap, configmap());
        assert_eq!(body["kind"], "Table");
        assert_eq!(body["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(body["metadata"], json!({"resourceVersion": "12"}));
        let names: Vec<&str> = body["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Name", "Data", "Age"]);
        assert_eq!(
            body["columnDefinitions"][0],
            json!({"name": "Name", "type": "string", "format": "name",
                   "description": docs::NAME, "priority": 0})
        );
        let rows = body["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["cells"], json!(["c1", 1, rows[0]["cells"][2]]));
        assert_eq!(
            rows[0]["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": configmap()["metadata"]})
        );
        let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "kind",
                "apiVersion",
                "metadata",
                "columnDefinitions",
                "rows"
            ]
        );
    }

    #[test]
    fn include_object_chooses_what_rows_carry() {
        let whole = request("v1", "includeObject=Object").unwrap();
        assert_eq!(
            whole.object(&Printer::ConfigMap, configmap())["rows"][0]["object"],
            configmap()
        );
        let none = request("v1", "includeObject=None").unwrap();
        let row = &none.object(&Printer::ConfigMap, configmap())["rows"][0];
        assert_eq!(row["object"], Value::Null);
        let beta = request("v1beta1", "").unwrap();
        let body = beta.object(&Printer::ConfigMap, configmap());
        assert_eq!(body["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(
            body["rows"][0]["object"]["apiVersion"],
            "meta.k8s.io/v1beta1"
        );
    }

    #[test]
    fn empty_lists_have_no_rows_and_the_default_convertor_null_rows() {
        let table = request("v1", "").unwrap();
        let mut metadata = Map::new();
        metadata.insert("resourceVersion".to_owned(), json!("7"));
        let printed = table.list(&Printer::ConfigMap, Vec::new(), metadata.clone());
        assert_eq!(printed["rows"], json!([]));
        assert_eq!(printed["metadata"], json!({"resourceVersion": "7"}));
        let default = table.list(&Printer::Default, Vec::new(), metadata);
        assert_eq!(default["rows"], Value::Null);
    }

    #[test]
    fn watch_tables_carry_columns_once_and_leave_errors_alone() {
        let watch = request("v1", "").unwrap().for_watch(Printer::ConfigMap);
        let first = watch.event_object("ADDED", configmap());
        assert!(first["columnDefinitions"].is_array());
        assert_eq!(first["rows"][0]["cells"][0], "c1");
        let second = watch.event_object("MODIFIED", configmap());
        assert_eq!(second["columnDefinitions"], Value::Null);
        assert_eq!(second["metadata"]["resourceVersion"], "12");
        let status = json!({"kind": "Status", "apiVersion": "v1", "code": 410});
        assert_eq!(watch.event_object("ERROR", status.clone()), status);
    }

    #[test]
    fn the_scale_subresource_prints_as_a_scale() {
        let registry = Registry::builtin();
        let deployments = registry.lookup("apps", "v1", "deployments").unwrap();
        assert_eq!(printer_for(&deployments, None), Printer::Deployment);
        assert_eq!(
            printer_for(&deployments, Some("status")),
            Printer::Deployment
        );
        assert_eq!(printer_for(&deployments, Some("scale")), Printer::Scale);
    }
}
