//! JSON documents of the v4 protocol (`docs/protocols/wz-v4.md`, "Encodings"; RFC 8259),
//! read with `serde_json` into a [`Node`] tree through a depth-counting visitor.
//!
//! The visitor refuses a level deeper than [`MAX_DEPTH`] before entering it and a string or key
//! longer than [`MAX_STRING`] before copying it; unescaped strings are borrowed from the body.
//! [`write`] and [`write_object`] append [`Value`]s as JSON text in the seed's layout. Which
//! document is a valid request is decided in the parent module, not here.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::{DecodeError, Node, Value, MAX_DEPTH, MAX_STRING};

/// Parses a JSON object that fills `body` (surrounding whitespace allowed).
pub fn parse(body: &[u8]) -> Result<Node<'_>, DecodeError> {
    let fault = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(body);
    let node = NodeSeed {
        depth: 0,
        fault: &fault,
    }
    .deserialize(&mut de)
    .and_then(|node| de.end().map(|()| node));
    match node {
        Ok(node @ Node::Doc(_)) => Ok(node),
        Ok(_) => Err(DecodeError::BadJson),
        Err(_) => Err(fault.get().unwrap_or(DecodeError::BadJson)),
    }
}

#[derive(Clone, Copy)]
struct NodeSeed<'c> {
    depth: usize,
    fault: &'c Cell<Option<DecodeError>>,
}

impl NodeSeed<'_> {
    fn fail<E: de::Error>(&self, error: DecodeError) -> E {
        self.fault.set(Some(error));
        E::custom(error)
    }

    fn text<'de, E: de::Error>(&self, s: Cow<'de, str>) -> Result<Cow<'de, str>, E> {
        if s.len() > MAX_STRING {
            Err(self.fail(DecodeError::TooLong))
        } else {
            Ok(s)
        }
    }

    fn deeper<E: de::Error>(&self) -> Result<NodeSeed<'_>, E> {
        if self.depth >= MAX_DEPTH {
            Err(self.fail(DecodeError::TooDeep))
        } else {
            Ok(NodeSeed {
                depth: self.depth + 1,
                fault: self.fault,
            })
        }
    }
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Node<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Node<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_> {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node<'de>, E> {
        Ok(Node::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node<'de>, E> {
        // Above i64::MAX the value is no valid id or count; keep it as a number.
        Ok(i64::try_from(v).map_or(Node::Double(v as f64), Node::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node<'de>, E> {
        Ok(Node::Double(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Node<'de>, E> {
        self.text(Cow::Borrowed(v)).map(Node::Str)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node<'de>, E> {
        // Length first: never copy a string that is about to be refused.
        self.text(Cow::Borrowed(v))
            .map(|s| Node::Str(Cow::Owned(s.into_owned())))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let inner = self.deeper()?;
        let mut fields = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed(inner))? {
            let value = map.next_value_seed(inner)?;
            fields.push((key, value));
        }
        Ok(Node::Doc(fields))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let inner = self.deeper()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }
}

struct KeySeed<'c>(NodeSeed<'c>);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Cow<'de, str>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        self.0.text(Cow::Borrowed(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
        self.0
            .text(Cow::Borrowed(v))
            .map(|s| Cow::Owned(s.into_owned()))
    }
}

/// Appends `value` as JSON text.
pub fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Value::String(s) => string(s, out),
        Value::Object(fields) => write_object(fields.iter().map(|(k, v)| (k.as_ref(), v)), out),
        Value::Array(items) => {
            out.push(b'[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.extend_from_slice(b", ");
                }
                write(item, out);
            }
            out.push(b']');
        }
    }
}

/// Appends an object, in the seed's `{"key": value, ...}` layout.
pub fn write_object<'v>(fields: impl Iterator<Item = (&'v str, &'v Value)>, out: &mut Vec<u8>) {
    out.push(b'{');
    for (n, (key, value)) in fields.enumerate() {
        if n > 0 {
            out.extend_from_slice(b", ");
        }
        string(key, out);
        out.extend_from_slice(b": ");
        write(value, out);
    }
    out.push(b'}');
}

fn string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if u32::from(c) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", u32::from(c)).as_bytes())
            }
            c => {
                let mut utf8 = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::super::tests::error_of;
    use super::super::{decode, DecodeError, Encoding, Response, Value, MAX_DEPTH, OK};

    #[test]
    fn construct_response_json() {
        let mut out = vec![0xa5];
        let welcome = "Welcome to Warzone! Your game is now listed in the lobby server";
        Response::text(OK, welcome, Some(1)).encode(Encoding::Json, &mut out);
        let text = format!(r#"{{"status": 0, "result": "{welcome}", "id": 1}}"#);
        let mut golden = vec![0xa5];
        golden.extend_from_slice(&(text.len() as u32).to_be_bytes());
        golden.extend_from_slice(text.as_bytes());
        assert_eq!(out, golden);

        let mut out = Vec::new();
        let result = Value::Object(vec![
            ("userid".into(), Value::Int(2)),
            ("sessionid".into(), Value::String("ab\"\\\n\u{1}é".into())),
        ]);
        Response {
            status: OK,
            result,
            id: None,
        }
        .encode(Encoding::Json, &mut out);
        assert_eq!(
            &out[4..],
            r#"{"status": 0, "result": {"userid": 2, "sessionid": "ab\"\\\n\u0001é"}, "id": null}"#
                .as_bytes()
        );
    }

    #[test]
    fn deep_nesting() {
        let ok = format!(
            r#"{{"method": "list", "x": {}1{}}}"#,
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1)
        );
        assert!(decode(ok.as_bytes()).is_ok());
        let deep = format!(
            r#"{{"method": "list", "x": {}1{}}}"#,
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        assert_eq!(error_of(deep.as_bytes()), DecodeError::TooDeep);
        let very_deep = format!("{{\"a\": {}", "[".repeat(100_000));
        assert_eq!(error_of(very_deep.as_bytes()), DecodeError::TooDeep);
    }
}
