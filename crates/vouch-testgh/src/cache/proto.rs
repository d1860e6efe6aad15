//! The messages of `github.actions.results.api.v1.CacheService`, with the field numbers of
//! toolkit `src/generated/results/api/v1/cache.ts` and `results/entities/v1/cachemetadata.ts`,
//! in both encodings twirp allows: protobuf (what OpenDAL and sccache send) and the proto3
//! JSON mapping (what the toolkit sends: proto field names, int64 as a string). Reading JSON
//! also takes lowerCamelCase names and int64 as a number, as protobuf-ts' `fromJson` does.
//! Public so tests can speak protobuf to the double.

use serde_json::{Map, Value, json};

#[derive(Clone, PartialEq, prost::Message)]
pub struct CacheScope {
    #[prost(string, tag = "1")]
    pub scope: String,
    #[prost(int64, tag = "2")]
    pub permission: i64,
}

/// Sent by no client we know; the service takes the scope from the token instead.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CacheMetadata {
    #[prost(int64, tag = "1")]
    pub repository_id: i64,
    #[prost(message, repeated, tag = "2")]
    pub scope: Vec<CacheScope>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CreateCacheEntryRequest {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<CacheMetadata>,
    #[prost(string, tag = "2")]
    pub key: String,
    #[prost(string, tag = "3")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CreateCacheEntryResponse {
    #[prost(bool, tag = "1")]
    pub ok: bool,
    #[prost(string, tag = "2")]
    pub signed_upload_url: String,
    #[prost(string, tag = "3")]
    pub message: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FinalizeCacheEntryUploadRequest {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<CacheMetadata>,
    #[prost(string, tag = "2")]
    pub key: String,
    #[prost(int64, tag = "3")]
    pub size_bytes: i64,
    #[prost(string, tag = "4")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FinalizeCacheEntryUploadResponse {
    #[prost(bool, tag = "1")]
    pub ok: bool,
    #[prost(int64, tag = "2")]
    pub entry_id: i64,
    #[prost(string, tag = "3")]
    pub message: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetCacheEntryDownloadUrlRequest {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<CacheMetadata>,
    #[prost(string, tag = "2")]
    pub key: String,
    #[prost(string, repeated, tag = "3")]
    pub restore_keys: Vec<String>,
    #[prost(string, tag = "4")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetCacheEntryDownloadUrlResponse {
    #[prost(bool, tag = "1")]
    pub ok: bool,
    #[prost(string, tag = "2")]
    pub signed_download_url: String,
    #[prost(string, tag = "3")]
    pub matched_key: String,
}

/// A request as read from a JSON body; the error says which field is wrong and how.
pub(super) trait FromJson: Sized {
    fn from_json(v: &Map<String, Value>) -> Result<Self, String>;
}

pub(super) trait ToJson {
    fn to_json(&self) -> Value;
}

/// The value under the proto name or, failing that, its lowerCamelCase JSON name; `null`
/// counts as absent (proto3 JSON).
fn field<'a>(obj: &'a Map<String, Value>, proto: &str) -> Option<&'a Value> {
    let mut camel = String::with_capacity(proto.len());
    let mut upper = false;
    for c in proto.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                camel.extend(c.to_uppercase());
                upper = false;
            }
            c => camel.push(c),
        }
    }
    obj.get(proto)
        .or_else(|| obj.get(&camel))
        .filter(|v| !v.is_null())
}

fn string(obj: &Map<String, Value>, name: &str) -> Result<String, String> {
    match field(obj, name) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(format!("field {name} is {v}; expected a string")),
    }
}

fn int64(obj: &Map<String, Value>, name: &str) -> Result<i64, String> {
    let bad = |v: &Value| format!("field {name} is {v}; expected an int64 (a string or a number)");
    match field(obj, name) {
        None => Ok(0),
        Some(Value::String(s)) => s.parse().map_err(|_| bad(&json!(s))),
        Some(v @ Value::Number(n)) => n.as_i64().ok_or_else(|| bad(v)),
        Some(v) => Err(bad(v)),
    }
}

fn strings(obj: &Map<String, Value>, name: &str) -> Result<Vec<String>, String> {
    let bad = |v: &Value| format!("field {name} is {v}; expected an array of strings");
    match field(obj, name) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned).ok_or_else(|| bad(i)))
            .collect(),
        Some(v) => Err(bad(v)),
    }
}

impl FromJson for CreateCacheEntryRequest {
    fn from_json(v: &Map<String, Value>) -> Result<Self, String> {
        Ok(Self {
            metadata: None,
            key: string(v, "key")?,
            version: string(v, "version")?,
        })
    }
}

impl FromJson for FinalizeCacheEntryUploadRequest {
    fn from_json(v: &Map<String, Value>) -> Result<Self, String> {
        Ok(Self {
            metadata: None,
            key: string(v, "key")?,
            size_bytes: int64(v, "size_bytes")?,
            version: string(v, "version")?,
        })
    }
}

impl FromJson for GetCacheEntryDownloadUrlRequest {
    fn from_json(v: &Map<String, Value>) -> Result<Self, String> {
        Ok(Self {
            metadata: None,
            key: string(v, "key")?,
            restore_keys: strings(v, "restore_keys")?,
            version: string(v, "version")?,
        })
    }
}

impl ToJson for CreateCacheEntryResponse {
    fn to_json(&self) -> Value {
        json!({"ok": self.ok, "signed_upload_url": self.signed_upload_url, "message": self.message})
    }
}

impl ToJson for FinalizeCacheEntryUploadResponse {
    fn to_json(&self) -> Value {
        json!({"ok": self.ok, "entry_id": self.entry_id.to_string(), "message": self.message})
    }
}

impl ToJson for GetCacheEntryDownloadUrlResponse {
    fn to_json(&self) -> Value {
        json!({
            "ok": self.ok,
            "signed_download_url": self.signed_download_url,
            "matched_key": self.matched_key,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn json_takes_proto_and_camel_names_and_int64_either_way() {
        let a = FinalizeCacheEntryUploadRequest::from_json(&obj(
            json!({"key": "k", "size_bytes": "12", "version": "v"}),
        ))
        .unwrap();
        let b = FinalizeCacheEntryUploadRequest::from_json(&obj(
            json!({"key": "k", "sizeBytes": 12, "version": "v", "metadata": null}),
        ))
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.size_bytes, 12);
        let r = GetCacheEntryDownloadUrlRequest::from_json(&obj(
            json!({"key": "k", "restoreKeys": ["a", "b"], "version": "v"}),
        ))
        .unwrap();
        assert_eq!(r.restore_keys, ["a", "b"]);
        let e = FinalizeCacheEntryUploadRequest::from_json(&obj(json!({"size_bytes": "x"})))
            .unwrap_err();
        assert!(e.contains("size_bytes"), "{e}");
    }
}
