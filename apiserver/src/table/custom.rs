//! The Table of a custom resource (docs/api-behaviour.md#tables, #serving-custom-resources): a Name column, then the definition's
//! `additionalPrinterColumns` (the real server's `tableconvertor`): each cell is the value at
//! the column's simple JSONPath, `date` columns as an age, `string` columns as printed text,
//! missing values `null`.

use serde_json::{Value, json};

use super::docs;
use super::duration::since;
use crate::registry::PrinterColumn;

/// The column definitions.
pub(super) fn definitions(columns: &[PrinterColumn]) -> Vec<Value> {
    let mut out = vec![json!({
        "name": "Name", "type": "string", "format": "name",
        "description": docs::NAME, "priority": 0,
    })];
    out.extend(columns.iter().map(|c| {
        json!({
            "name": c.name, "type": c.kind, "format": c.format,
            "description": c.description, "priority": c.priority,
        })
    }));
    out
}

/// One object's cells, ages measured at `now` (Unix nanoseconds).
pub(super) fn cells(columns: &[PrinterColumn], object: &Value, now: i128) -> Vec<Value> {
    let name = object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .cloned()
        .unwrap_or_else(|| json!(""));
    let mut cells = vec![name];
    for column in columns {
        let cell = match lookup(object, &column.json_path) {
            None | Some(Value::Null) => Value::Null,
            Some(value) => match column.kind.as_str() {
                "date" => match value.as_str() {
                    Some(time) => json!(since(Some(time), now)),
                    None => Value::Null,
                },
                "string" => json!(text(value)),
                "integer" => value
                    .as_i64()
                    .map(|n| json!(n))
                    .or_else(|| value.as_f64().map(|f| json!(f as i64)))
                    .unwrap_or(Value::Null),
                "number" => value.as_f64().map_or(Value::Null, |n| json!(n)),
                "boolean" => value.as_bool().map_or(Value::Null, |b| json!(b)),
                _ => value.clone(),
            },
        };
        cells.push(cell);
    }
    cells
}

/// How JSONPath prints a value: strings bare, everything else as JSON.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The value at a simple JSONPath (`.spec.size`, `.status.conditions[0].type`,
/// `.metadata.labels['app.kubernetes.io/name']`, with or without `{}`).
pub(crate) fn lookup<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut current = object;
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let (key, tail) = after.split_at(end);
            if !key.is_empty() {
                current = current.get(key)?;
            }
            rest = tail;
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let (inside, tail) = after.split_at(end);
            rest = &tail[1..];
            let inside = inside.trim();
            let quoted = inside
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .or_else(|| inside.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
            current = match quoted {
                Some(key) => current.get(key)?,
                None => current.get(inside.parse::<usize>().ok()?)?,
            };
        } else {
            return None;
        }
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, kind: &str, path: &str) -> PrinterColumn {
        PrinterColumn {
            name: name.to_owned(),
            kind: kind.to_owned(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: path.to_owned(),
        }
    }

    #[test]
    fn cells_follow_the_column_types() {
        let object = json!({"metadata": {"name": "w", "labels": {"a.b/c": "x"},
            "creationTimestamp": "2024-05-01T12:00:00Z"},
            "spec": {"size": 3, "tags": ["t1"], "on": true}});
        let columns = [
            column("Size", "integer", ".spec.size"),
            column("Tag", "string", ".spec.tags[0]"),
            column("Label", "string", ".metadata.labels['a.b/c']"),
            column("Missing", "string", ".spec.nothing"),
            column("On", "boolean", ".spec.on"),
            column("Age", "date", ".metadata.creationTimestamp"),
        ];
        let now = 1_714_564_800_000_000_000 + 300 * 1_000_000_000; // 5 minutes later
        let cells = cells(&columns, &object, now);
        assert_eq!(
            cells,
            vec![
                json!("w"),
                json!(3),
                json!("t1"),
                json!("x"),
                Value::Null,
                json!(true),
                json!("5m")
            ]
        );
        assert_eq!(definitions(&columns).len(), 7);
    }
}
