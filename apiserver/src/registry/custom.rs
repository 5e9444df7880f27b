//! What a CustomResourceDefinition adds to a custom resource's registry entry: its schema
//! (validation, pruning, defaults, field ownership), printer columns, scale paths and the
//! definition's state. Built by `crd` from the definition object.

use std::sync::Arc;

use serde_json::Value;

use kubemock_apimachinery::managedfields::types::Types;

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Column name.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean`, `date`.
    pub kind: String,
    /// OpenAPI format (`int64`, ...), possibly empty.
    pub format: String,
    /// Description, possibly empty.
    pub description: String,
    /// 0 shown by default, more only with `-o wide`.
    pub priority: i64,
    /// The simple JSONPath of the value (`.spec.size`).
    pub json_path: String,
}

impl PrinterColumn {
    /// A column of kubemock's own kinds (no format): `name`, of `kind`, read at `json_path`,
    /// shown by default at priority 0.
    pub(crate) fn new(
        name: &str,
        kind: &str,
        json_path: &str,
        priority: i64,
        description: &str,
    ) -> PrinterColumn {
        PrinterColumn {
            name: name.to_owned(),
            kind: kind.to_owned(),
            format: String::new(),
            description: description.to_owned(),
            priority,
            json_path: json_path.to_owned(),
        }
    }
}

/// `subresources.scale`: where the replicas and selector live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// `.spec.replicas`.
    pub spec_replicas: String,
    /// `.status.replicas`.
    pub status_replicas: String,
    /// `.status.selector`, if any.
    pub label_selector: Option<String>,
}

/// The custom part of a custom resource's entry.
pub struct Custom {
    /// The definition's name (`widgets.example.com`).
    pub crd_name: String,
    /// The version's `openAPIV3Schema`, if it has one.
    pub schema: Option<Value>,
    /// Its compiled `x-kubernetes-validations`, when it has any.
    pub(crate) rules: Option<Arc<crate::cel_rules::Rules>>,
    /// The schema as server-side apply reads it.
    pub(crate) types: Arc<Types>,
    /// `subresources.scale`.
    pub scale: Option<ScalePaths>,
    /// `selectableFields` (JSON paths without the leading dot).
    pub selectable_fields: Vec<String>,
    /// The definition is being deleted: no new objects.
    pub terminating: bool,
    /// The storage version (`versions[].storage`).
    pub storage_version: String,
    /// `spec.conversion` when its strategy is `Webhook` (read by `admission::conversion`).
    pub conversion: Option<Value>,
}

impl std::fmt::Debug for Custom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Custom")
            .field("crd_name", &self.crd_name)
            .field("scale", &self.scale)
            .field("selectable_fields", &self.selectable_fields)
            .field("terminating", &self.terminating)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Custom {
    fn eq(&self, other: &Self) -> bool {
        self.crd_name == other.crd_name
            && self.schema == other.schema
            && self.scale == other.scale
            && self.selectable_fields == other.selectable_fields
            && self.terminating == other.terminating
            && self.storage_version == other.storage_version
            && self.conversion == other.conversion
    }
}

impl Eq for Custom {}
