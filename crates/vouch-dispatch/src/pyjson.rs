//! JSON as Python's standard library reads and writes it: `json.load` of a recorded event,
//! then `json.dumps(payload)` with its defaults. FlexCI checks the HMAC of the bytes CuPy's
//! dispatcher sends, which are that re-serialisation and not the file's own bytes, so vouch
//! must produce the very same bytes:
//!
//! - objects keep the file's key order (a `dict`); a repeated key keeps its first position and
//!   takes its last value;
//! - separators `", "` and `": "`, no indentation, no sorting;
//! - `ensure_ascii`: only `' '..='~'` is written as is; `"` `\` and `\n \r \t \b \f` get their
//!   short escapes; every other character is `\u` + four lowercase hex digits, astral ones as
//!   a UTF-16 surrogate pair (DEL included: it is outside the printable range);
//! - integers keep their digits.
//!
//! Floats are refused rather than imitated: Python writes them with `repr` (`1e+16`), GitHub's
//! payloads carry none, and a port that guessed would sign different bytes. So are integers
//! beyond 64 bits and `-0`, which serde_json only hands over as floats.

use std::fmt::Write as _;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A parsed JSON value with Python's `dict` order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PyValue {
    Null,
    Bool(bool),
    /// Wide enough for every `i64` and every `u64`.
    Int(i128),
    Str(String),
    Array(Vec<PyValue>),
    Object(Vec<(String, PyValue)>),
}

impl PyValue {
    /// Parses JSON bytes as `json.load` of a file opened in binary mode does: a leading UTF-8
    /// byte order mark is accepted.
    pub fn parse(bytes: &[u8]) -> Result<PyValue, serde_json::Error> {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        serde_json::from_slice(bytes)
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&PyValue> {
        match self {
            PyValue::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at `path` (object keys), if every step exists.
    pub fn at(&self, path: &[&str]) -> Option<&PyValue> {
        path.iter().try_fold(self, |v, key| v.get(key))
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            PyValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// What kind of value this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            PyValue::Null => "null",
            PyValue::Bool(_) => "a boolean",
            PyValue::Int(_) => "an integer",
            PyValue::Str(_) => "a string",
            PyValue::Array(_) => "an array",
            PyValue::Object(_) => "an object",
        }
    }

    /// `json.dumps(self)` with Python's defaults, as text (pure ASCII).
    pub fn dumps(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            PyValue::Null => out.push_str("null"),
            PyValue::Bool(true) => out.push_str("true"),
            PyValue::Bool(false) => out.push_str("false"),
            PyValue::Int(n) => {
                let _ = write!(out, "{n}");
            }
            PyValue::Str(s) => write_str(s, out),
            PyValue::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            PyValue::Object(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_str(key, out);
                    out.push_str(": ");
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// A string as `json.encoder.encode_basestring_ascii` writes it.
fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

impl<'de> Deserialize<'de> for PyValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PyVisitor)
    }
}

struct PyVisitor;

impl<'de> Visitor<'de> for PyVisitor {
    type Value = PyValue;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<PyValue, E> {
        Ok(PyValue::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<PyValue, E> {
        Ok(PyValue::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<PyValue, E> {
        Ok(PyValue::Int(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<PyValue, E> {
        Ok(PyValue::Int(v.into()))
    }

    // serde_json hands over fractions, exponents, integers beyond 64 bits and `-0` (which
    // Python reads as the integer 0, but which serde_json cannot tell from `-0.0`) as f64.
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<PyValue, E> {
        Err(E::custom(format!(
            "the number {v} is not a 64-bit integer (a float, -0 or a huge integer); Python's \
             json.dumps would re-serialise it in its own form, which vouch does not imitate \
             (GitHub's payloads carry only integers)"
        )))
    }

    fn visit_str<E>(self, v: &str) -> Result<PyValue, E> {
        Ok(PyValue::Str(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<PyValue, E> {
        Ok(PyValue::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PyValue, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(PyValue::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PyValue, A::Error> {
        let mut entries: Vec<(String, PyValue)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, PyValue>()? {
            // A dict assignment: a repeated key keeps its place and takes the new value.
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => entries.push((key, value)),
            }
        }
        Ok(PyValue::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, what json.dumps(json.loads(input)) gives), the right column checked with
    /// CPython 3.11.
    #[test]
    fn dumps_matches_python() {
        let cases: &[(&str, &str)] = &[
            (r#"{"b":1,"a":2}"#, r#"{"b": 1, "a": 2}"#),
            (r#"{"a":1,"b":2,"a":3}"#, r#"{"a": 3, "b": 2}"#),
            (
                "[1,[],{},null,true,false]",
                "[1, [], {}, null, true, false]",
            ),
            ("18446744073709551615", "18446744073709551615"),
            ("-9223372036854775808", "-9223372036854775808"),
            (r#""/\u007f""#, r#""/\u007f""#),
            (r#""\u0000\u001f\b\f\n\r\t""#, r#""\u0000\u001f\b\f\n\r\t""#),
            (r#""\"\\""#, r#""\"\\""#),
            ("\"é😀\u{2028}\"", r#""\u00e9\ud83d\ude00\u2028""#),
            (r#""\uD83D\uDE00""#, r#""\ud83d\ude00""#),
            ("\"\u{ffff}\u{10000}\"", r#""\uffff\ud800\udc00""#),
            ("  {\"k\" :\n [ 1 ,2 ] }  ", r#"{"k": [1, 2]}"#),
            // The UTF-8 byte order mark, which `json.loads` of bytes skips.
            ("\u{feff}{}", "{}"),
        ];
        for (input, want) in cases {
            let parsed =
                PyValue::parse(input.as_bytes()).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(parsed.dumps(), *want, "{input:?}");
        }
    }

    #[test]
    fn floats_and_huge_integers_are_refused_with_their_place() {
        for (input, place) in [
            ("{\"a\": [1,\n 2.5]}", "line 2"),
            ("{\"a\": 1e3}", "line 1"),
            ("{\"a\": 18446744073709551616}", "line 1"),
            ("{\"a\": -9223372036854775809}", "line 1"),
            ("{\"a\": -0}", "line 1"),
        ] {
            let err = PyValue::parse(input.as_bytes()).unwrap_err().to_string();
            assert!(err.contains("is not a 64-bit integer"), "{err}");
            assert!(err.contains(place), "{input:?}: {err}");
        }
    }

    #[test]
    fn malformed_json_is_an_error() {
        for input in [
            "",
            "{",
            "{\"a\":1}x",
            "[1,]",
            "\"\\ud800\"",
            "NaN",
            "{'a':1}",
        ] {
            assert!(PyValue::parse(input.as_bytes()).is_err(), "{input:?}");
        }
    }

    #[test]
    fn paths_reach_nested_members() {
        let v = PyValue::parse(br#"{"comment":{"body":"/test x","n":1}}"#).unwrap();
        assert_eq!(
            v.at(&["comment", "body"]).and_then(PyValue::as_str),
            Some("/test x")
        );
        assert_eq!(
            v.at(&["comment", "n"]).map(PyValue::kind),
            Some("an integer")
        );
        assert_eq!(v.at(&["comment", "missing"]), None);
        assert_eq!(v.at(&["comment", "body", "deeper"]), None);
    }
}
