//! JSON objects to protobuf messages, the inverse of `decode`, written as gogo-protobuf
//! writes Kubernetes' `generated.pb.go` types: fields in field-number order; maps sorted by key,
//! each entry a nested message of key (1) and value (2), both always written; repeated
//! scalars unpacked (proto2); `int32` sign-extended; the special forms (`Time` as seconds and
//! nanoseconds and nothing when zero, `Quantity` as its string, `IntOrString` as type, intVal
//! and strVal, `RawExtension` and `FieldsV1` as the JSON bytes, byte fields from base64).
//!
//! What is written is what the JSON holds: a field absent or `null` is left out, except Go
//! value fields (`table::GO_VALUES`), which Go always writes and which are written with
//! their zero value. JSON properties the message does not have are ignored, as Go's decoder
//! ignores them.

use base64::Engine;
use serde_json::{Map, Value};

use super::decode::MAX_DEPTH;
use super::table::{Field, Form, Message, Table, Ty};
use super::wire::{Wire, Writer};
use crate::duration::parse_duration;
use crate::time;

/// How many fields past the last one found the encoder compares before hashing a name.
const LOOK_AHEAD: usize = 8;

/// The Unix seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z), which Go does not write.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// Encodes JSON values as messages of one table, into one buffer.
pub(crate) struct Encoder<'t, 'v> {
    table: &'t Table,
    /// The output.
    pub(crate) out: Writer,
    /// Per field of the messages being written, its JSON value: a stack shared by the nested
    /// calls (one allocation per encoding, not one per message).
    slots: Vec<Option<&'v Value>>,
}

impl<'t, 'v> Encoder<'t, 'v> {
    /// An encoder writing into `out`.
    pub(crate) fn new(table: &'t Table, out: Writer) -> Self {
        Encoder {
            table,
            out,
            slots: Vec::with_capacity(128),
        }
    }

    /// Writes the body of message `index` for `value` (`None`: Go's zero value).
    #[inline(never)]
    pub(crate) fn message(
        &mut self,
        index: u32,
        value: Option<&'v Value>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("object nested too deeply for protobuf".to_owned());
        }
        let table = self.table;
        let message = table.get(index);
        let value = value.filter(|v| !v.is_null());
        match message.form {
            Form::Object => {
                let object = match value {
                    None => None,
                    Some(Value::Object(object)) => Some(object),
                    Some(other) => return Err(mismatch(&message.name, "an object", other)),
                };
                self.fields(index, object, depth)
            }
            Form::Time | Form::MicroTime => self.time(value),
            Form::Duration => {
                let nanos = match value {
                    None => 0,
                    Some(Value::String(text)) => {
                        parse_duration(text).map_err(|_| format!("invalid duration {text:?}"))?
                    }
                    Some(other) => return Err(mismatch(&message.name, "a duration", other)),
                };
                self.out.varint_field(1, nanos as u64);
                Ok(())
            }
            Form::Quantity => {
                match value {
                    None => self.out.bytes_field(1, b"0"),
                    Some(Value::String(text)) => self.out.bytes_field(1, text.as_bytes()),
                    Some(Value::Number(n)) => self.out.bytes_field(1, n.to_string().as_bytes()),
                    Some(other) => return Err(mismatch(&message.name, "a quantity", other)),
                }
                Ok(())
            }
            Form::IntOrString => {
                let (kind, int, string) = match value {
                    None => (0, 0, ""),
                    Some(Value::String(text)) => (1, 0, text.as_str()),
                    Some(number @ Value::Number(_)) => (0, integer(number, &message.name)?, ""),
                    Some(other) => {
                        return Err(mismatch(&message.name, "an integer or a string", other));
                    }
                };
                self.out.varint_field(1, kind);
                self.out.varint_field(2, i64::from(int as i32) as u64);
                self.out.bytes_field(3, string.as_bytes());
                Ok(())
            }
            Form::Embedded => {
                if let Some(value) = value {
                    let raw = serde_json::to_vec(value).map_err(|err| err.to_string())?;
                    self.out.bytes_field(1, &raw);
                }
                Ok(())
            }
            Form::PropsOrArray | Form::PropsOrStringArray => {
                let schema = field_type(table, index, 1)?;
                let items = field_type(table, index, 2)?;
                match value {
                    None => Ok(()),
                    Some(object @ Value::Object(_)) => self.single(1, &schema, Some(object), depth),
                    Some(Value::Array(array)) => {
                        for item in array {
                            self.single(2, &items, Some(item), depth)?;
                        }
                        Ok(())
                    }
                    Some(other) => Err(mismatch(&message.name, "an object or an array", other)),
                }
            }
            Form::PropsOrBool => {
                let schema = field_type(table, index, 2)?;
                match value {
                    None => self.out.varint_field(1, 0),
                    Some(Value::Bool(allows)) => self.out.varint_field(1, u64::from(*allows)),
                    Some(object @ Value::Object(_)) => {
                        self.out.varint_field(1, 1);
                        self.single(2, &schema, Some(object), depth)?;
                    }
                    Some(other) => {
                        return Err(mismatch(&message.name, "an object or a boolean", other));
                    }
                }
                Ok(())
            }
            Form::NamedSlice => {
                let Some(field) = message.fields.first() else {
                    return Ok(());
                };
                match value {
                    None => Ok(()),
                    Some(Value::Array(array)) => {
                        for item in array {
                            self.single(field.number, &field.ty, Some(item), depth)?;
                        }
                        Ok(())
                    }
                    Some(other) => Err(mismatch(&message.name, "an array", other)),
                }
            }
        }
    }

    /// The fields of an object-form message, in field-number order.
    fn fields(
        &mut self,
        index: u32,
        object: Option<&'v Map<String, Value>>,
        depth: usize,
    ) -> Result<(), String> {
        let message = self.table.get(index);
        let Some(object) = object.filter(|_| message.numbered_in_order) else {
            return self.fields_by_number(message, object, depth);
        };
        let mark = self.out.buf.len();
        if self.fields_in_order(message, object, depth)? {
            return Ok(());
        }
        self.out.buf.truncate(mark);
        self.fields_by_number(message, Some(object), depth)
    }

    /// The fields of `object` written as they come, for an object whose keys follow the field
    /// numbers (as Go's struct order mostly does): no collecting and sorting. `false`, with
    /// part of the message written, when a key comes out of order.
    fn fields_in_order(
        &mut self,
        message: &'t Message,
        object: &'v Map<String, Value>,
        depth: usize,
    ) -> Result<bool, String> {
        let mut next = 0;
        let mut last = 0;
        let mut always = message.always.iter().peekable();
        for (key, value) in object {
            if value.is_null() {
                continue;
            }
            let Some(i) = message.find(next, LOOK_AHEAD, key) else {
                continue;
            };
            next = i + 1;
            let field = &message.fields[i];
            if field.number <= last {
                return Ok(false);
            }
            // The always-written fields before this one (or this one itself).
            while let Some(&a) =
                always.next_if(|a| message.fields[usize::from(**a)].number <= field.number)
            {
                let always_field = &message.fields[usize::from(a)];
                if always_field.number < field.number {
                    self.always_field(always_field, object, depth)?;
                }
            }
            self.field(field, Some(value), depth)?;
            last = field.number;
        }
        for &a in always {
            self.always_field(&message.fields[usize::from(a)], object, depth)?;
        }
        Ok(true)
    }

    /// A field written whatever the JSON holds and absent from it: an inlined struct (from
    /// the parent's object) or a Go value's zero.
    fn always_field(
        &mut self,
        field: &Field,
        parent: &'v Map<String, Value>,
        depth: usize,
    ) -> Result<(), String> {
        if field.inline {
            self.inlined(field, Some(parent), depth)
        } else {
            self.field(field, None, depth)
        }
    }

    /// The fields of `object` in field-number order whatever the order of its keys: each
    /// value put in its field's slot (one per field of the message, on a stack shared by the
    /// nested calls), then the slots written by number, with the always-written fields absent
    /// from the JSON.
    fn fields_by_number(
        &mut self,
        message: &'t Message,
        object: Option<&'v Map<String, Value>>,
        depth: usize,
    ) -> Result<(), String> {
        let base = self.slots.len();
        self.slots.resize(base + message.fields.len(), None);
        if let Some(object) = object {
            let mut next = 0;
            for (key, value) in object {
                if value.is_null() {
                    continue;
                }
                if let Some(i) = message.find(next, LOOK_AHEAD, key) {
                    next = i + 1;
                    self.slots[base + i] = Some(value);
                }
            }
        }
        let mut result = Ok(());
        for &i in &message.by_number_order {
            let i = usize::from(i);
            let field = &message.fields[i];
            result = match self.slots[base + i] {
                Some(value) => self.field(field, Some(value), depth),
                None if field.inline => self.inlined(field, object, depth),
                None if field.go_value => self.field(field, None, depth),
                None => Ok(()),
            };
            if result.is_err() {
                break;
            }
        }
        self.slots.truncate(base);
        result
    }

    /// An inlined embedded struct: its fields come from the parent's object; Go writes it
    /// always (a value).
    fn inlined(
        &mut self,
        field: &Field,
        parent: Option<&'v Map<String, Value>>,
        depth: usize,
    ) -> Result<(), String> {
        let Ty::Message(index) = field.ty else {
            return Err(format!("inlined field {} is not a message", field.json));
        };
        let start = self.out.begin_len(field.number);
        self.fields(index, parent, depth + 1)?;
        self.out.end_len(start);
        Ok(())
    }

    /// One field with its value (`None`: Go's zero value). Inlined into the loops over a
    /// message's fields, with [`Encoder::single`]: a call per value was a fifth of the cost.
    #[inline(always)]
    fn field(
        &mut self,
        field: &Field,
        value: Option<&'v Value>,
        depth: usize,
    ) -> Result<(), String> {
        if field.repeated {
            return self.repeated(field, value, depth);
        }
        if let Ty::Map(key_type, value_type) = &field.ty {
            return self.map(field, key_type, value_type, value, depth);
        }
        self.single(field.number, &field.ty, value, depth)
    }

    /// A repeated field: each item as the field (`None`: nothing).
    #[inline(never)]
    fn repeated(
        &mut self,
        field: &Field,
        value: Option<&'v Value>,
        depth: usize,
    ) -> Result<(), String> {
        match value {
            Some(Value::Array(items)) => {
                for item in items {
                    self.single(field.number, &field.ty, Some(item), depth)?;
                }
                Ok(())
            }
            None => Ok(()),
            Some(other) => Err(mismatch(&field.json, "an array", other)),
        }
    }

    /// A map field: its entries sorted by key, as Go writes maps (and as Go's JSON already has
    /// them).
    #[inline(never)]
    fn map(
        &mut self,
        field: &Field,
        key_type: &Ty,
        value_type: &Ty,
        value: Option<&'v Value>,
        depth: usize,
    ) -> Result<(), String> {
        let map = match value {
            Some(Value::Object(map)) => map,
            None => return Ok(()),
            Some(other) => return Err(mismatch(&field.json, "an object", other)),
        };
        if map.keys().is_sorted() {
            for (key, value) in map {
                self.map_entry(field.number, key_type, value_type, key, value, depth)?;
            }
        } else {
            let mut entries: Vec<(&'v String, &'v Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (key, value) in entries {
                self.map_entry(field.number, key_type, value_type, key, value, depth)?;
            }
        }
        Ok(())
    }

    /// One map entry: a nested message of key (1) and value (2).
    fn map_entry(
        &mut self,
        number: u32,
        key_type: &Ty,
        value_type: &Ty,
        key: &str,
        value: &'v Value,
        depth: usize,
    ) -> Result<(), String> {
        let start = self.out.begin_len(number);
        self.map_key(key_type, key)?;
        self.single(2, value_type, Some(value), depth)?;
        self.out.end_len(start);
        Ok(())
    }

    /// A map entry's key (field 1).
    fn map_key(&mut self, ty: &Ty, key: &str) -> Result<(), String> {
        match ty {
            Ty::String => self.out.bytes_field(1, key.as_bytes()),
            Ty::Int32 | Ty::Int64 => {
                let n: i64 = key
                    .parse()
                    .map_err(|_| format!("map key {key:?} is not an integer"))?;
                self.out.varint_field(1, n as u64);
            }
            Ty::Bool => self.out.varint_field(1, u64::from(key == "true")),
            other => return Err(format!("unsupported map key type {other:?}")),
        }
        Ok(())
    }

    /// One value of type `ty` as field `number` (`None` or `null`: Go's zero value).
    #[inline(always)]
    fn single(
        &mut self,
        number: u32,
        ty: &Ty,
        value: Option<&'v Value>,
        depth: usize,
    ) -> Result<(), String> {
        let value = value.filter(|v| !v.is_null());
        match ty {
            Ty::String => match value {
                None => self.out.bytes_field(number, b""),
                Some(Value::String(s)) => self.out.bytes_field(number, s.as_bytes()),
                Some(other) => return Err(mismatch("a string field", "a string", other)),
            },
            Ty::Bytes => match value {
                None => self.out.bytes_field(number, b""),
                Some(Value::String(s)) => {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(s)
                        .map_err(|err| format!("invalid base64 in a byte field: {err}"))?;
                    self.out.bytes_field(number, &bytes);
                }
                Some(other) => return Err(mismatch("a byte field", "a base64 string", other)),
            },
            Ty::Bool => match value {
                None => self.out.varint_field(number, 0),
                Some(Value::Bool(b)) => self.out.varint_field(number, u64::from(*b)),
                Some(other) => return Err(mismatch("a boolean field", "a boolean", other)),
            },
            Ty::Int32 => {
                let n = value.map_or(Ok(0), |v| integer(v, "an int32 field"))?;
                let n = i32::try_from(n).map_err(|_| format!("{n} does not fit an int32"))?;
                self.out.varint_field(number, i64::from(n) as u64);
            }
            Ty::Int64 => {
                let n = value.map_or(Ok(0), |v| integer(v, "an int64 field"))?;
                self.out.varint_field(number, n as u64);
            }
            Ty::Double => {
                let x = value.map_or(Ok(0.0), |v| float(v, "a double field"))?;
                self.out.key(number, Wire::Fixed64);
                self.out.buf.extend_from_slice(&x.to_le_bytes());
            }
            Ty::Float => {
                let x = value.map_or(Ok(0.0), |v| float(v, "a float field"))?;
                self.out.key(number, Wire::Fixed32);
                self.out.buf.extend_from_slice(&(x as f32).to_le_bytes());
            }
            Ty::Message(index) => {
                let start = self.out.begin_len(number);
                self.message(*index, value, depth + 1)?;
                self.out.end_len(start);
            }
            Ty::Map(..) => return Err("a map cannot be a map's value".to_owned()),
        }
        Ok(())
    }

    /// `Time` and `MicroTime`: seconds (1) and nanoseconds (2), both written; nothing for the
    /// zero time (Go's `Time.MarshalToSizedBuffer`).
    fn time(&mut self, value: Option<&Value>) -> Result<(), String> {
        let text = match value {
            None => return Ok(()),
            Some(Value::String(text)) if text.is_empty() => return Ok(()),
            Some(Value::String(text)) => text,
            Some(other) => return Err(mismatch("a time", "an RFC 3339 string", other)),
        };
        // Any year: the decoder writes the years beyond 0000–9999 a protobuf time can hold.
        let nanos =
            time::parse_rfc3339_any_year(text).ok_or_else(|| format!("invalid time {text:?}"))?;
        let seconds = i64::try_from(nanos.div_euclid(1_000_000_000))
            .map_err(|_| format!("time out of range {text:?}"))?;
        let nanos = nanos.rem_euclid(1_000_000_000) as i64;
        if seconds == GO_ZERO_TIME_SECONDS && nanos == 0 {
            return Ok(());
        }
        self.out.varint_field(1, seconds as u64);
        self.out.varint_field(2, nanos as u64);
        Ok(())
    }
}

/// The type of field `number` of message `index`.
fn field_type(table: &Table, index: u32, number: u32) -> Result<Ty, String> {
    let message = table.get(index);
    message
        .by_number(number)
        .map(|i| message.fields[i].ty.clone())
        .ok_or_else(|| format!("{} has no field {number}", message.name))
}

fn mismatch(what: &str, expected: &str, found: &Value) -> String {
    let found = match found {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!("{what}: expected {expected}, found {found}")
}

/// A JSON number as an integer (`3.0` too, as YAML and some clients write them).
fn integer(value: &Value, what: &str) -> Result<i64, String> {
    if let Some(n) = value.as_i64() {
        return Ok(n);
    }
    match value.as_f64() {
        Some(x) if x.fract() == 0.0 && x.abs() < 9.2e18 => Ok(x as i64),
        _ => Err(mismatch(what, "an integer", value)),
    }
}

fn float(value: &Value, what: &str) -> Result<f64, String> {
    value
        .as_f64()
        .ok_or_else(|| mismatch(what, "a number", value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::duration::format_duration;

    #[test]
    fn go_durations_parse_back() {
        for nanos in [
            0,
            1_500_000_000,
            300_000_000,
            3_600_000_000_000,
            3_723_000_000_000,
            90_000_000_000,
            -2_000,
            1_234,
        ] {
            assert_eq!(
                parse_duration(&format_duration(nanos)).ok(),
                Some(nanos),
                "{nanos}"
            );
        }
        assert_eq!(parse_duration("1m30s").ok(), Some(90_000_000_000));
        assert_eq!(parse_duration("2us").ok(), Some(2_000));
        for bad in ["", "-", "5", "1x", "s", "1.2.3s"] {
            assert_eq!(parse_duration(bad).ok(), None, "{bad}");
        }
    }
}
