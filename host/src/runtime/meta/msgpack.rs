//! A minimal MessagePack reader: enough for the AMDGPU code object metadata
//! note (maps, arrays, strings, integers, booleans, floats).

/// A decoded MessagePack value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `nil`.
    Nil,
    /// `true` / `false`.
    Bool(bool),
    /// Any integer.
    Int(i128),
    /// `float32` / `float64`.
    Float(f64),
    /// A string (invalid UTF-8 replaced).
    Str(String),
    /// Binary data.
    Bin(Vec<u8>),
    /// An array.
    Array(Vec<Value>),
    /// A map, in encoded order.
    Map(Vec<(Value, Value)>),
    /// An extension value (type, data).
    Ext(i8, Vec<u8>),
}

impl Value {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    /// The integer as u64, if this is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }
    /// The array's elements, if this is one.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(v) => Some(v),
            _ => None,
        }
    }
    /// Looks up a string key in a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(m) => m
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Decodes one value from the start of `data` (trailing bytes are ignored).
pub fn decode(data: &[u8]) -> Result<Value, String> {
    let mut r = Reader {
        data,
        pos: 0,
        depth: 0,
    };
    r.value()
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    depth: u32,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| {
                format!(
                    "msgpack: truncated at byte {} (need {n} more, have {})",
                    self.pos,
                    self.data.len() - self.pos
                )
            })?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn be(&mut self, n: usize) -> Result<u64, String> {
        Ok(self.take(n)?.iter().fold(0u64, |a, &b| (a << 8) | b as u64))
    }
    fn str(&mut self, n: usize) -> Result<Value, String> {
        Ok(Value::Str(
            String::from_utf8_lossy(self.take(n)?).into_owned(),
        ))
    }
    fn array(&mut self, n: usize) -> Result<Value, String> {
        let mut v = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            v.push(self.value()?);
        }
        Ok(Value::Array(v))
    }
    fn map(&mut self, n: usize) -> Result<Value, String> {
        let mut v = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let k = self.value()?;
            let x = self.value()?;
            v.push((k, x));
        }
        Ok(Value::Map(v))
    }
    fn ext(&mut self, n: usize) -> Result<Value, String> {
        let t = self.u8()? as i8;
        Ok(Value::Ext(t, self.take(n)?.to_vec()))
    }
    fn value(&mut self) -> Result<Value, String> {
        self.depth += 1;
        if self.depth > 64 {
            return Err("msgpack: nesting deeper than 64".into());
        }
        let b = self.u8()?;
        let v = match b {
            0x00..=0x7f => Value::Int(b as i128),
            0x80..=0x8f => self.map((b & 0x0f) as usize)?,
            0x90..=0x9f => self.array((b & 0x0f) as usize)?,
            0xa0..=0xbf => self.str((b & 0x1f) as usize)?,
            0xc0 => Value::Nil,
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4..=0xc6 => {
                let n = self.be(1 << (b - 0xc4))? as usize;
                Value::Bin(self.take(n)?.to_vec())
            }
            0xc7..=0xc9 => {
                let n = self.be(1 << (b - 0xc7))? as usize;
                self.ext(n)?
            }
            0xca => Value::Float(f32::from_bits(self.be(4)? as u32) as f64),
            0xcb => Value::Float(f64::from_bits(self.be(8)?)),
            0xcc..=0xcf => Value::Int(self.be(1 << (b - 0xcc))? as i128),
            0xd0 => Value::Int(self.be(1)? as u8 as i8 as i128),
            0xd1 => Value::Int(self.be(2)? as u16 as i16 as i128),
            0xd2 => Value::Int(self.be(4)? as u32 as i32 as i128),
            0xd3 => Value::Int(self.be(8)? as i64 as i128),
            0xd4..=0xd8 => self.ext(1 << (b - 0xd4))?,
            0xd9..=0xdb => {
                let n = self.be(1 << (b - 0xd9))? as usize;
                self.str(n)?
            }
            0xdc | 0xdd => {
                let n = self.be(if b == 0xdc { 2 } else { 4 })? as usize;
                self.array(n)?
            }
            0xde | 0xdf => {
                let n = self.be(if b == 0xde { 2 } else { 4 })? as usize;
                self.map(n)?
            }
            0xe0..=0xff => Value::Int(b as i8 as i128),
            0xc1 => return Err(format!("msgpack: reserved byte 0xc1 at {}", self.pos - 1)),
        };
        self.depth -= 1;
        Ok(v)
    }
}

/// A MessagePack writer for tests and tools (the inverse of [`decode`] for the
/// types it produces).
pub fn encode(v: &Value, out: &mut Vec<u8>) {
    fn len_prefix(out: &mut Vec<u8>, n: usize, fix: u8, fix_max: usize, b16: u8, b32: u8) {
        if n <= fix_max {
            out.push(fix | n as u8);
        } else if n <= u16::MAX as usize {
            out.push(b16);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            out.push(b32);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
    match v {
        Value::Nil => out.push(0xc0),
        Value::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Int(i) => {
            let i = *i;
            if (0..=0x7f).contains(&i) {
                out.push(i as u8);
            } else if (-32..0).contains(&i) {
                out.push(i as i8 as u8);
            } else if i >= 0 {
                out.push(0xcf);
                out.extend_from_slice(&(i as u64).to_be_bytes());
            } else {
                out.push(0xd3);
                out.extend_from_slice(&(i as i64).to_be_bytes());
            }
        }
        Value::Float(f) => {
            out.push(0xcb);
            out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
        Value::Str(s) => {
            if s.len() <= 31 {
                out.push(0xa0 | s.len() as u8);
            } else if s.len() <= u8::MAX as usize {
                out.push(0xd9);
                out.push(s.len() as u8);
            } else {
                len_prefix(out, s.len(), 0, 0, 0xda, 0xdb);
            }
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bin(b) => {
            out.push(0xc6);
            out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            out.extend_from_slice(b);
        }
        Value::Array(a) => {
            len_prefix(out, a.len(), 0x90, 15, 0xdc, 0xdd);
            for x in a {
                encode(x, out);
            }
        }
        Value::Map(m) => {
            len_prefix(out, m.len(), 0x80, 15, 0xde, 0xdf);
            for (k, x) in m {
                encode(k, out);
                encode(x, out);
            }
        }
        Value::Ext(t, d) => {
            out.push(0xc9);
            out.extend_from_slice(&(d.len() as u32).to_be_bytes());
            out.push(*t as u8);
            out.extend_from_slice(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let v = Value::Map(vec![
            (
                Value::Str("amdhsa.version".into()),
                Value::Array(vec![Value::Int(1), Value::Int(2)]),
            ),
            (Value::Str("x".repeat(40)), Value::Int(-5)),
            (Value::Str("big".into()), Value::Int(1 << 40)),
            (Value::Str("neg".into()), Value::Int(-100_000)),
            (Value::Str("f".into()), Value::Float(1.5)),
            (Value::Str("b".into()), Value::Bool(true)),
            (Value::Str("n".into()), Value::Nil),
            (
                Value::Str("long".into()),
                Value::Array((0..20).map(Value::Int).collect()),
            ),
        ]);
        let mut buf = Vec::new();
        encode(&v, &mut buf);
        assert_eq!(decode(&buf).unwrap(), v);
    }

    #[test]
    fn compact_forms() {
        // uint8 200, int8 -100, uint16 300, str8, fixmap
        assert_eq!(decode(&[0xcc, 200]).unwrap(), Value::Int(200));
        assert_eq!(decode(&[0xd0, 0x9c]).unwrap(), Value::Int(-100));
        assert_eq!(decode(&[0xcd, 0x01, 0x2c]).unwrap(), Value::Int(300));
        assert_eq!(
            decode(&[0xd9, 2, b'h', b'i']).unwrap(),
            Value::Str("hi".into())
        );
        assert_eq!(
            decode(&[0xca, 0x3f, 0x80, 0, 0]).unwrap(),
            Value::Float(1.0)
        );
        assert!(decode(&[0x92, 0x01]).unwrap_err().contains("truncated"));
    }
}
