//! Protobuf messages to the JSON values upstream marshals them to, walking the compiled
//! schemas (`table`): fields by number, JSON names and Go's struct order, inlined
//! embedded structs, and the special forms of `Form`.
//!
//! Absent and zero follow kubemock's JSON, where absent means "Go's zero value": Go writes
//! value fields even when empty, so an empty singular string, a zero `Time`, and a zero number
//! or `false` in a Go value field with `omitempty` decode as absent; other numbers and
//! booleans are kept (`replicas: 0` must stay). A built-in list's `items` is `[]` even when
//! empty, as the real server's JSON has it.

use std::cell::RefCell;

use base64::Engine;
use serde_json::{Map, Value, json};

use super::table::{Form, Message, Table, Ty};
use super::wire::{Reader, Wire};
use crate::duration::format_duration;
use crate::time;

/// How deep messages may nest: as deep as a stored object's JSON may (each message is at least
/// one JSON level, a map entry's value included), so every object the server stores encodes,
/// and hostile input stops there.
pub(crate) const MAX_DEPTH: usize = crate::json::MAX_DEPTH;

/// The largest stack kept for reuse between decodings (entries): enough for any real object.
const MAX_SPARE: usize = 4096;

/// Decodes messages of one table.
pub(crate) struct Decoder<'t> {
    /// The compiled schemas.
    table: &'t Table,
    /// Decodes an embedded enveloped object (`RawExtension` holding protobuf).
    embedded: fn(&[u8]) -> Option<Value>,
    /// The fields read of the messages being decoded (field index, value), a stack shared by
    /// the nested calls: one allocation per decoding, and work for the fields present only.
    read: Vec<(u16, Value)>,
}

thread_local! {
    /// An empty stack with room, kept for the next decoding on this thread.
    static SPARE: RefCell<Vec<(u16, Value)>> = const { RefCell::new(Vec::new()) };
}

impl Drop for Decoder<'_> {
    fn drop(&mut self) {
        let mut read = std::mem::take(&mut self.read);
        read.clear();
        if read.capacity() <= MAX_SPARE {
            let _ = SPARE.try_with(|spare| {
                if let Ok(mut spare) = spare.try_borrow_mut()
                    && spare.capacity() < read.capacity()
                {
                    *spare = read;
                }
            });
        }
    }
}

impl<'t> Decoder<'t> {
    /// A decoder of `table`'s messages; `embedded` decodes enveloped objects inside them.
    pub(crate) fn new(table: &'t Table, embedded: fn(&[u8]) -> Option<Value>) -> Self {
        // The thread's stack from the last decoding, if it is free (not decoding an embedded
        // object inside another): a fresh multi-kilobyte allocation per request costs more
        // than the decoding of a small object.
        let read = SPARE
            .with(|spare| {
                spare
                    .try_borrow_mut()
                    .map(|mut spare| std::mem::take(&mut *spare))
            })
            .unwrap_or_default();
        Decoder {
            table,
            embedded,
            read,
        }
    }

    /// Message `index` in `bytes` as JSON; `Null` for a value JSON leaves out (a zero `Time`).
    pub(crate) fn message(
        &mut self,
        index: u32,
        bytes: &[u8],
        depth: usize,
    ) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(crate::json::too_deep_message());
        }
        let message = self.table.get(index);
        match message.form {
            Form::Time | Form::MicroTime => time(message.form, bytes),
            Form::Duration => {
                let nanos = single_varint(bytes, 1)?.unwrap_or(0) as i64;
                Ok(Value::String(format_duration(nanos)))
            }
            Form::Quantity => {
                Ok(single_string(bytes, 1)?.map_or_else(|| json!("0"), Value::String))
            }
            Form::IntOrString => int_or_string(bytes),
            Form::Embedded => {
                let mut reader = Reader::new(bytes);
                let mut raw = None;
                while let Some((number, wire)) = reader.key()? {
                    match (number, wire) {
                        (1, Wire::Len) => raw = Some(reader.bytes()?),
                        _ => reader.skip(wire)?,
                    }
                }
                Ok(raw
                    .and_then(|raw| self.embedded_object(raw))
                    .unwrap_or(Value::Null))
            }
            Form::Object
            | Form::PropsOrArray
            | Form::PropsOrBool
            | Form::PropsOrStringArray
            | Form::NamedSlice => {
                let object = self.object(message, bytes, depth)?;
                Ok(shaped(message, object))
            }
        }
    }

    /// The fields of `message` as a JSON object, in declaration order.
    fn object(
        &mut self,
        message: &Message,
        bytes: &[u8],
        depth: usize,
    ) -> Result<Map<String, Value>, String> {
        let base = self.read.len();
        if let Err(err) = self.read_fields(message, bytes, base, depth) {
            self.read.truncate(base);
            return Err(err);
        }
        let read = &mut self.read[base..];
        // gogo writes fields by number, and Go's order is mostly that one.
        if !read.is_sorted_by_key(|(index, _)| *index) {
            read.sort_by_key(|(index, _)| *index);
        }
        let list_items = message
            .list_items
            .filter(|items| !read.iter().any(|(index, _)| index == items));
        let mut object = Map::with_capacity(read.len() + usize::from(list_items.is_some()));
        for (index, value) in self.read.drain(base..) {
            let field = &message.fields[usize::from(index)];
            match value {
                Value::Null => {}
                Value::String(s) if s.is_empty() && !field.repeated => {}
                Value::Bool(false) if field.omit_zero => {}
                Value::Number(n) if field.omit_zero && n.as_i64() == Some(0) => {}
                Value::Object(inlined) if field.inline => object.extend(inlined),
                value => {
                    object.insert(field.json.clone(), value);
                }
            }
        }
        if let Some(items) = list_items {
            // `items` is a list's last field.
            let field = &message.fields[usize::from(items)];
            object.insert(field.json.clone(), Value::Array(Vec::new()));
        }
        Ok(object)
    }

    /// Reads the fields of `message` onto `self.read` (above `base`, this message's part).
    fn read_fields(
        &mut self,
        message: &Message,
        bytes: &[u8],
        base: usize,
        depth: usize,
    ) -> Result<(), String> {
        let mut reader = Reader::new(bytes);
        while let Some((number, wire)) = reader.key()? {
            let Some(index) = message.by_number(number) else {
                reader.skip(wire)?;
                continue;
            };
            let field = &message.fields[index];
            let index = index as u16;
            match &field.ty {
                Ty::Map(key_type, value_type) => {
                    let entry = reader.expect_len(wire, &field.json)?;
                    let (key, value) = self.map_entry(key_type, value_type, entry, depth)?;
                    if let Value::Object(map) = self.collection(base, index, || Map::new().into()) {
                        map.insert(key, value);
                    }
                }
                ty if field.repeated => {
                    if wire == Wire::Len && ty.packable() {
                        let mut packed = Reader::new(reader.bytes()?);
                        while !packed.done() {
                            let item = scalar(&mut packed, ty, ty.wire())?;
                            push(
                                self.collection(base, index, || Value::Array(Vec::new())),
                                item,
                            );
                        }
                    } else {
                        let item = self.value(ty, &mut reader, wire, depth)?;
                        push(
                            self.collection(base, index, || Value::Array(Vec::new())),
                            item,
                        );
                    }
                }
                ty => {
                    let value = self.value(ty, &mut reader, wire, depth)?;
                    self.read.push((index, value));
                }
            }
        }
        Ok(())
    }

    /// The map or array read so far for repeated field `index` (gogo writes a field's entries
    /// one after the other, so it is nearly always the last one read), or a new `empty` one.
    fn collection(&mut self, base: usize, index: u16, empty: impl FnOnce() -> Value) -> &mut Value {
        let at = self.read[base..]
            .iter()
            .rposition(|(i, _)| *i == index)
            .map(|at| base + at);
        let at = match at {
            Some(at) => at,
            None => {
                self.read.push((index, empty()));
                self.read.len() - 1
            }
        };
        &mut self.read[at].1
    }

    fn value(
        &mut self,
        ty: &Ty,
        reader: &mut Reader<'_>,
        wire: Wire,
        depth: usize,
    ) -> Result<Value, String> {
        match ty {
            Ty::Message(index) => {
                let bytes = reader.expect_len(wire, &self.table.get(*index).name)?;
                self.message(*index, bytes, depth + 1)
            }
            scalar_type => scalar(reader, scalar_type, wire),
        }
    }

    fn map_entry(
        &mut self,
        key_type: &Ty,
        value_type: &Ty,
        entry: &[u8],
        depth: usize,
    ) -> Result<(String, Value), String> {
        let mut key = String::new();
        let mut value = None;
        let mut reader = Reader::new(entry);
        while let Some((number, wire)) = reader.key()? {
            match number {
                1 => {
                    key = match scalar(&mut reader, key_type, wire)? {
                        Value::String(s) => s,
                        other => other.to_string(),
                    }
                }
                2 => value = Some(self.value(value_type, &mut reader, wire, depth)?),
                _ => reader.skip(wire)?,
            }
        }
        let value = match value {
            Some(value) => value,
            // An absent value is the type's zero value.
            None => match value_type {
                Ty::String | Ty::Bytes => json!(""),
                Ty::Bool => json!(false),
                Ty::Message(index) => self.message(*index, &[], depth + 1)?,
                Ty::Map(..) => json!({}),
                Ty::Int32 | Ty::Int64 | Ty::Double | Ty::Float => json!(0),
            },
        };
        Ok((key, value))
    }

    /// Embedded bytes: JSON, or an enveloped protobuf object.
    fn embedded_object(&self, raw: &[u8]) -> Option<Value> {
        if raw.starts_with(super::MAGIC) {
            (self.embedded)(raw)
        } else {
            serde_json::from_slice(raw).ok()
        }
    }
}

/// Appends `item` to the array `items`.
fn push(items: &mut Value, item: Value) {
    if let Value::Array(items) = items {
        items.push(item);
    }
}

/// The JSON of the object-like forms.
fn shaped(message: &Message, mut object: Map<String, Value>) -> Value {
    match message.form {
        Form::PropsOrArray => object
            .shift_remove("schema")
            .or_else(|| object.shift_remove("jSONSchemas"))
            .unwrap_or(Value::Null),
        Form::PropsOrBool => object
            .shift_remove("schema")
            .or_else(|| object.shift_remove("allows"))
            .unwrap_or(Value::Bool(false)),
        Form::PropsOrStringArray => object
            .shift_remove("schema")
            .or_else(|| object.shift_remove("property"))
            .unwrap_or(Value::Null),
        Form::NamedSlice => object
            .shift_remove("items")
            .unwrap_or(Value::Array(Vec::new())),
        _ => Value::Object(object),
    }
}

/// `Time` and `MicroTime`: seconds (1) and nanoseconds (2). As upstream's `Unmarshal`
/// (`staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/time_proto.go`,
/// `micro_time_proto.go`): an empty message is the zero time (`Null`), any other is that instant,
/// the Unix epoch included (which encodes as both fields written, zero); a `Time` drops the
/// nanoseconds.
fn time(form: Form, bytes: &[u8]) -> Result<Value, String> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    let mut reader = Reader::new(bytes);
    let (mut seconds, mut nanos) = (0i64, 0i64);
    while let Some((number, wire)) = reader.key()? {
        match (number, wire) {
            (1, Wire::Varint) => seconds = reader.varint()? as i64,
            (2, Wire::Varint) => nanos = i64::from(reader.varint()? as i32),
            _ => reader.skip(wire)?,
        }
    }
    Ok(Value::String(if form == Form::MicroTime {
        time::rfc3339_micro(seconds, u32::try_from(nanos).unwrap_or(0))
    } else {
        time::rfc3339(seconds)
    }))
}

/// `IntOrString`: type (1), intVal (2), strVal (3).
fn int_or_string(bytes: &[u8]) -> Result<Value, String> {
    let mut reader = Reader::new(bytes);
    let (mut kind, mut int, mut string) = (0u64, 0i64, None);
    while let Some((number, wire)) = reader.key()? {
        match (number, wire) {
            (1, Wire::Varint) => kind = reader.varint()?,
            (2, Wire::Varint) => int = i64::from(reader.varint()? as i32),
            (3, Wire::Len) => string = Some(reader.string()?),
            _ => reader.skip(wire)?,
        }
    }
    Ok(if kind == 1 {
        Value::String(string.unwrap_or_default())
    } else {
        json!(int)
    })
}

/// The varint field `number` of a small message (the last one wins, as in protobuf).
fn single_varint(bytes: &[u8], number: u32) -> Result<Option<u64>, String> {
    let mut reader = Reader::new(bytes);
    let mut found = None;
    while let Some((n, wire)) = reader.key()? {
        match wire {
            Wire::Varint if n == number => found = Some(reader.varint()?),
            _ => reader.skip(wire)?,
        }
    }
    Ok(found)
}

/// The string field `number` of a small message.
fn single_string(bytes: &[u8], number: u32) -> Result<Option<String>, String> {
    let mut reader = Reader::new(bytes);
    let mut found = None;
    while let Some((n, wire)) = reader.key()? {
        match wire {
            Wire::Len if n == number => found = Some(reader.string()?),
            _ => reader.skip(wire)?,
        }
    }
    Ok(found)
}

/// One scalar value of type `ty` sent as `wire`.
fn scalar(reader: &mut Reader<'_>, ty: &Ty, wire: Wire) -> Result<Value, String> {
    Ok(match (ty, wire) {
        (Ty::String, Wire::Len) => Value::String(reader.string()?),
        (Ty::Bytes, Wire::Len) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(reader.bytes()?))
        }
        (Ty::Bool, Wire::Varint) => Value::Bool(reader.varint()? != 0),
        // int32 is sign-extended to 64 bits on the wire.
        (Ty::Int32, Wire::Varint) => json!(reader.varint()? as i64 as i32),
        (Ty::Int64, Wire::Varint) => json!(reader.varint()? as i64),
        (Ty::Double, Wire::Fixed64) => json!(f64::from_le_bytes(reader.fixed64()?)),
        (Ty::Float, Wire::Fixed32) => json!(f32::from_le_bytes(reader.fixed32()?)),
        _ => return Err(format!("protobuf wire type {wire:?} does not fit {ty:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(format_duration(0), "0s");
        assert_eq!(format_duration(1_500_000_000), "1.5s");
        assert_eq!(format_duration(300_000_000), "300ms");
        assert_eq!(format_duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(format_duration(3_723_000_000_000), "1h2m3s");
        assert_eq!(format_duration(90_000_000_000), "1m30s");
        assert_eq!(format_duration(-2_000), "-2µs");
        assert_eq!(format_duration(1_234), "1.234µs");
    }

    /// `time_proto.go`'s `Unmarshal`: empty is the zero time, anything else an instant (the
    /// epoch too), a `Time` without its nanoseconds; unknown fields skipped. (Found by the
    /// protobuf fuzz target: a non-empty message of zero seconds decoded as the epoch once and
    /// as nothing after a round trip.)
    #[test]
    fn times_are_zero_only_when_the_message_is_empty() {
        assert_eq!(time(Form::Time, &[]).ok(), Some(Value::Null));
        let epoch = Value::String("1970-01-01T00:00:00Z".to_owned());
        assert_eq!(
            time(Form::Time, &[0x08, 0x00, 0x10, 0x00]).ok(),
            Some(epoch.clone())
        );
        assert_eq!(
            time(Form::Time, &[0x48, 0x01, 0x10, 0x41]).ok(),
            Some(epoch)
        );
        assert_eq!(
            time(Form::MicroTime, &[0x10, 0xe8, 0x07]).ok(),
            Some(Value::String("1970-01-01T00:00:00.000001Z".to_owned()))
        );
    }
}
