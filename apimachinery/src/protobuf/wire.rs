//! The protobuf wire format itself (varints, keys, length-delimited fields), apart from any
//! schema: a bounds-checked [`Reader`] that never panics on hostile input, and a [`Writer`]
//! that writes nested messages in one forward pass (a one-byte length placeholder, widened in
//! place when the message turns out longer than 127 bytes).

/// Protobuf wire types (groups, 3 and 4, are absent from Kubernetes schemas).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// 0: int32, int64, bool.
    Varint,
    /// 1: double.
    Fixed64,
    /// 2: strings, bytes, messages, packed repeated scalars.
    Len,
    /// 5: float.
    Fixed32,
}

impl Wire {
    /// The wire type's number in a field key.
    #[inline]
    pub fn number(self) -> u32 {
        match self {
            Wire::Varint => 0,
            Wire::Fixed64 => 1,
            Wire::Len => 2,
            Wire::Fixed32 => 5,
        }
    }
}

/// A cursor over protobuf bytes.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    /// True at the end of the bytes.
    pub fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    /// A base-128 varint.
    #[inline]
    pub fn varint(&mut self) -> Result<u64, String> {
        // The common case: one byte.
        if let Some(&byte) = self.bytes.get(self.at)
            && byte < 0x80
        {
            self.at += 1;
            return Ok(u64::from(byte));
        }
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            let byte = *self.bytes.get(self.at).ok_or("truncated protobuf varint")?;
            self.at += 1;
            if shift < 64 {
                value |= u64::from(byte & 0x7f) << shift;
            }
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("protobuf varint too long".to_owned())
    }

    /// The next field key, or `None` at the end.
    #[inline]
    pub fn key(&mut self) -> Result<Option<(u32, Wire)>, String> {
        if self.done() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| "protobuf field number too large")?;
        let wire = match key & 7 {
            0 => Wire::Varint,
            1 => Wire::Fixed64,
            2 => Wire::Len,
            5 => Wire::Fixed32,
            other => return Err(format!("unsupported protobuf wire type {other}")),
        };
        Ok(Some((number, wire)))
    }

    /// The next `len` bytes.
    #[inline]
    pub fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(len)
            .filter(|end| *end <= self.bytes.len())
            .ok_or("truncated protobuf field")?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    /// A length-delimited field's bytes.
    #[inline]
    pub fn bytes(&mut self) -> Result<&'a [u8], String> {
        let len = usize::try_from(self.varint()?).map_err(|_| "protobuf length too large")?;
        self.take(len)
    }

    /// A length-delimited field's bytes, or an error naming `what` for another wire type.
    pub fn expect_len(&mut self, wire: Wire, what: &str) -> Result<&'a [u8], String> {
        if wire != Wire::Len {
            return Err(format!("{what}: expected a length-delimited field"));
        }
        self.bytes()
    }

    /// A string field's text.
    #[inline]
    pub fn string(&mut self) -> Result<String, String> {
        self.str().map(str::to_owned)
    }

    /// A string field's text, borrowed.
    #[inline]
    pub fn str(&mut self) -> Result<&'a str, String> {
        std::str::from_utf8(self.bytes()?)
            .map_err(|_| "invalid UTF-8 in a protobuf string".to_owned())
    }

    /// Skips a field of wire type `wire`.
    pub fn skip(&mut self, wire: Wire) -> Result<(), String> {
        match wire {
            Wire::Varint => self.varint().map(drop),
            Wire::Fixed64 => self.take(8).map(drop),
            Wire::Fixed32 => self.take(4).map(drop),
            Wire::Len => self.bytes().map(drop),
        }
    }

    /// 8 little-endian bytes.
    pub fn fixed64(&mut self) -> Result<[u8; 8], String> {
        let bytes = self.take(8)?;
        bytes
            .try_into()
            .map_err(|_| "truncated protobuf fixed64".to_owned())
    }

    /// 4 little-endian bytes.
    pub fn fixed32(&mut self) -> Result<[u8; 4], String> {
        let bytes = self.take(4)?;
        bytes
            .try_into()
            .map_err(|_| "truncated protobuf fixed32".to_owned())
    }
}

/// Protobuf output, written front to back.
#[derive(Debug, Default)]
pub struct Writer {
    /// The bytes written so far.
    pub buf: Vec<u8>,
}

impl Writer {
    /// A writer with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Writer {
            buf: Vec::with_capacity(capacity),
        }
    }

    /// A base-128 varint.
    #[inline]
    pub fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    /// A field key (one byte for fields 1 to 15).
    #[inline(always)]
    pub fn key(&mut self, number: u32, wire: Wire) {
        let key = number << 3 | wire.number();
        if key < 0x80 {
            self.buf.push(key as u8);
        } else {
            self.varint(u64::from(key));
        }
    }

    /// A length-delimited field holding `bytes`.
    #[inline(always)]
    pub fn bytes_field(&mut self, number: u32, bytes: &[u8]) {
        // Room for the key, the length and the bytes at once: the pushes below never grow.
        self.buf.reserve(bytes.len() + 10);
        self.key(number, Wire::Len);
        self.varint(bytes.len() as u64);
        self.buf.extend_from_slice(bytes);
    }

    /// A varint field (negative int32 and int64 values take ten bytes, as Go writes them).
    #[inline(always)]
    pub fn varint_field(&mut self, number: u32, value: u64) {
        self.key(number, Wire::Varint);
        self.varint(value);
    }

    /// Starts a length-delimited field whose content the caller writes next; returns the
    /// position [`Writer::end_len`] needs.
    #[inline]
    pub fn begin_len(&mut self, number: u32) -> usize {
        self.key(number, Wire::Len);
        self.buf.push(0);
        self.buf.len()
    }

    /// Ends the field [`Writer::begin_len`] started: writes its length, moving the content
    /// when the length needs more than the one byte reserved.
    #[inline(always)]
    pub fn end_len(&mut self, start: usize) {
        let len = self.buf.len() - start;
        if len < 0x80 {
            self.buf[start - 1] = len as u8;
        } else {
            self.widen(start, len);
        }
    }

    /// Writes the length of a field longer than 127 bytes, sliding its content right to make
    /// room for the extra prefix bytes.
    #[inline(never)]
    fn widen(&mut self, start: usize, len: usize) {
        let mut prefix = [0u8; 10];
        let mut n = 0;
        let mut value = len as u64;
        while value >= 0x80 {
            prefix[n] = (value as u8) | 0x80;
            value >>= 7;
            n += 1;
        }
        prefix[n] = value as u8;
        n += 1;
        self.buf.resize(self.buf.len() + n - 1, 0);
        self.buf.copy_within(start..start + len, start + n - 1);
        self.buf[start - 1..start - 1 + n].copy_from_slice(&prefix[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_lengths_widen_in_place() {
        for len in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let mut writer = Writer::default();
            writer.varint_field(1, 7);
            let start = writer.begin_len(2);
            writer.buf.extend(std::iter::repeat_n(0xab, len));
            writer.end_len(start);
            writer.varint_field(3, 1);
            let mut expected = Writer::default();
            expected.varint_field(1, 7);
            expected.bytes_field(2, &vec![0xab; len]);
            expected.varint_field(3, 1);
            assert_eq!(writer.buf, expected.buf, "{len}");
            let mut reader = Reader::new(&writer.buf);
            assert_eq!(reader.key(), Ok(Some((1, Wire::Varint))));
            assert_eq!(reader.varint(), Ok(7));
            assert_eq!(reader.key(), Ok(Some((2, Wire::Len))));
            assert_eq!(reader.bytes().map(<[u8]>::len), Ok(len));
        }
    }

    #[test]
    fn varints_round_trip_and_bad_input_is_an_error() {
        for value in [
            0u64,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX),
            u64::MAX,
            -1i64 as u64,
        ] {
            let mut writer = Writer::default();
            writer.varint(value);
            assert_eq!(Reader::new(&writer.buf).varint(), Ok(value));
        }
        let mut writer = Writer::default();
        writer.varint(-1i64 as u64);
        assert_eq!(writer.buf.len(), 10, "negative numbers take ten bytes");
        assert!(Reader::new(&[0x80, 0x80]).varint().is_err());
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
        assert!(Reader::new(&[0x0a, 0x05, b'a']).key().is_ok());
        let mut short = Reader::new(&[0x05, b'a']);
        assert!(short.bytes().is_err());
        assert!(Reader::new(&[0x0b]).key().is_err(), "groups are refused");
    }
}
