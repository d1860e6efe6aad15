//! The twirp side: `POST /twirp/github.actions.results.api.v1.CacheService/<Method>` with a
//! bearer runtime token, the body in `application/json` or `application/protobuf`, answered
//! in the same; errors are twirp's JSON `{"code","msg"}` with its HTTP status, whatever the
//! request's encoding (twirp spec v7). Clients: toolkit
//! `src/internal/shared/cacheTwirpClient.ts` (JSON, retries 5xx, `msg` in its message) and
//! OpenDAL's ghac service (protobuf; 409 -> AlreadyExists, 403 -> PermissionDenied).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;

use super::Shared;
use super::model::Grant;
use super::proto::{
    CreateCacheEntryRequest, CreateCacheEntryResponse, FinalizeCacheEntryUploadRequest,
    FinalizeCacheEntryUploadResponse, FromJson, GetCacheEntryDownloadUrlRequest,
    GetCacheEntryDownloadUrlResponse, ToJson,
};

/// The twirp error codes this service answers with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Code {
    InvalidArgument,
    Malformed,
    Unauthenticated,
    PermissionDenied,
    NotFound,
    BadRoute,
    AlreadyExists,
}

impl Code {
    fn name(self) -> &'static str {
        match self {
            Code::InvalidArgument => "invalid_argument",
            Code::Malformed => "malformed",
            Code::Unauthenticated => "unauthenticated",
            Code::PermissionDenied => "permission_denied",
            Code::NotFound => "not_found",
            Code::BadRoute => "bad_route",
            Code::AlreadyExists => "already_exists",
        }
    }

    fn status(self) -> StatusCode {
        match self {
            Code::InvalidArgument | Code::Malformed => StatusCode::BAD_REQUEST,
            Code::Unauthenticated => StatusCode::UNAUTHORIZED,
            Code::PermissionDenied => StatusCode::FORBIDDEN,
            Code::NotFound | Code::BadRoute => StatusCode::NOT_FOUND,
            Code::AlreadyExists => StatusCode::CONFLICT,
        }
    }
}

/// A twirp error answer.
#[derive(Debug)]
pub(super) struct Refusal {
    pub code: Code,
    pub msg: String,
}

impl Refusal {
    pub fn new(code: Code, msg: String) -> Refusal {
        Refusal { code, msg }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (
            self.code.status(),
            axum::Json(json!({"code": self.code.name(), "msg": self.msg})),
        )
            .into_response()
    }
}

#[derive(Clone, Copy)]
enum Codec {
    Json,
    Protobuf,
}

impl Codec {
    fn of(headers: &HeaderMap) -> Result<Codec, Refusal> {
        let ct = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let essence = ct.split(';').next().unwrap_or("").trim();
        match essence.to_ascii_lowercase().as_str() {
            "application/json" => Ok(Codec::Json),
            "application/protobuf" | "application/x-protobuf" => Ok(Codec::Protobuf),
            _ => Err(Refusal::new(
                Code::BadRoute,
                format!(
                    "unexpected Content-Type {ct:?}; expected application/json or application/protobuf"
                ),
            )),
        }
    }

    fn decode<T: prost::Message + Default + FromJson>(self, body: &[u8]) -> Result<T, Refusal> {
        let malformed = |e: String| {
            Refusal::new(
                Code::Malformed,
                format!("the request body could not be decoded: {e}"),
            )
        };
        match self {
            Codec::Protobuf => T::decode(body).map_err(|e| malformed(e.to_string())),
            Codec::Json => match serde_json::from_slice::<serde_json::Value>(body) {
                Ok(serde_json::Value::Object(o)) => T::from_json(&o).map_err(malformed),
                Ok(v) => Err(malformed(format!("{v} is not a JSON object"))),
                Err(e) => Err(malformed(e.to_string())),
            },
        }
    }

    fn encode<T: prost::Message + ToJson>(self, msg: &T) -> Response {
        match self {
            Codec::Json => axum::Json(msg.to_json()).into_response(),
            Codec::Protobuf => {
                let mut r = msg.encode_to_vec().into_response();
                r.headers_mut().insert(
                    "content-type",
                    HeaderValue::from_static("application/protobuf"),
                );
                r
            }
        }
    }
}

fn grant(sh: &Shared, headers: &HeaderMap) -> Result<Grant, Refusal> {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let Some(token) = token else {
        return Err(Refusal::new(
            Code::Unauthenticated,
            "no Authorization: Bearer <ACTIONS_RUNTIME_TOKEN> header".into(),
        ));
    };
    sh.model.lock().unwrap().grant(token).ok_or_else(|| {
        Refusal::new(
            Code::Unauthenticated,
            "the bearer token is not one this service issued".into(),
        )
    })
}

pub(super) async fn handle(
    State(sh): State<Arc<Shared>>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut key = None;
    let resp =
        answer(&sh, &method, &headers, &body, &mut key).unwrap_or_else(|r| r.into_response());
    sh.record(&method, key, resp)
}

/// The answer to one call; `key` gets the request's key once it is decoded.
fn answer(
    sh: &Shared,
    method: &str,
    headers: &HeaderMap,
    body: &[u8],
    key: &mut Option<String>,
) -> Result<Response, Refusal> {
    const METHODS: [&str; 3] = [
        "CreateCacheEntry",
        "FinalizeCacheEntryUpload",
        "GetCacheEntryDownloadURL",
    ];
    if !METHODS.contains(&method) {
        return Err(Refusal::new(
            Code::BadRoute,
            format!("no method {method:?} in CacheService; expected one of {METHODS:?}"),
        ));
    }
    let grant = grant(sh, headers)?;
    let codec = Codec::of(headers)?;
    match method {
        "CreateCacheEntry" => {
            let req: CreateCacheEntryRequest = codec.decode(body)?;
            *key = Some(req.key.clone());
            let mut model = sh.model.lock().unwrap();
            let e = model.create(&grant, &req.key, &req.version)?;
            Ok(codec.encode(&CreateCacheEntryResponse {
                ok: true,
                signed_upload_url: sh.blob_url(e.blob_id, "cw", &e.upload_sig),
                message: String::new(),
            }))
        }
        "FinalizeCacheEntryUpload" => {
            let req: FinalizeCacheEntryUploadRequest = codec.decode(body)?;
            *key = Some(req.key.clone());
            let entry_id = sh.model.lock().unwrap().finalize(
                &grant,
                &req.key,
                &req.version,
                req.size_bytes,
            )?;
            Ok(codec.encode(&FinalizeCacheEntryUploadResponse {
                ok: true,
                entry_id,
                message: String::new(),
            }))
        }
        _ => {
            let req: GetCacheEntryDownloadUrlRequest = codec.decode(body)?;
            *key = Some(req.key.clone());
            let model = sh.model.lock().unwrap();
            let hit = model.lookup(&grant, &req.key, &req.restore_keys, &req.version)?;
            Ok(codec.encode(&match hit {
                Some(e) => GetCacheEntryDownloadUrlResponse {
                    ok: true,
                    signed_download_url: sh.blob_url(e.blob_id, "r", &e.download_sig),
                    matched_key: e.key.clone(),
                },
                None => GetCacheEntryDownloadUrlResponse::default(),
            }))
        }
    }
}
