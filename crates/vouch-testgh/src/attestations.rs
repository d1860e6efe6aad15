//! GitHub's attestation store, as the REST description documents it: record
//! (`POST /repos/{o}/{r}/attestations` → 201 `{id}`, 422 on a body without a bundle), list by
//! subject digest (`GET /repos/{o}/{r}/attestations/{digest}`, `per_page` + `after` cursors in
//! `Link`), and the owner's bulk listing (`POST /orgs|users/{owner}/attestations/bulk-list`,
//! `page_info`). Which shape a listing has follows the request's `X-GitHub-Api-Version`:
//! `2026-03-10` and later drop the inline `bundle`, so only `bundle_url` remains; the blob it
//! points to (on another "host", `/attestation-blobs/`) is the bundle as Snappy block data and
//! must be fetched without credentials.
//!
//! A record's subject digests are read from its DSSE payload, as GitHub indexes them. Tests
//! seed records of other repositories with [`super::FakeGithub::record_attestation`].

use std::collections::HashMap;

use axum::extract::{Path as AxPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{St, api_gate};

/// The API version from which listings carry no inline bundle.
const NO_INLINE_BUNDLE: &str = "2026-03-10";

#[derive(Clone, Debug)]
pub struct Recorded {
    pub id: u64,
    /// `owner/name` it was recorded in.
    pub repo: String,
    pub repository_id: u64,
    pub digests: Vec<String>,
    pub predicate_type: String,
    pub bundle: Value,
}

/// The subject digests (`sha256:<hex>`) and predicate type the bundle's DSSE statement names.
fn index_of(bundle: &Value) -> Option<(Vec<String>, String)> {
    use base64::Engine as _;
    let payload = bundle["dsseEnvelope"]["payload"].as_str()?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .ok()?;
    let statement: Value = serde_json::from_slice(&raw).ok()?;
    let digests = statement["subject"]
        .as_array()?
        .iter()
        .filter_map(|s| s["digest"]["sha256"].as_str())
        .map(|h| format!("sha256:{h}"))
        .collect();
    Some((digests, statement["predicateType"].as_str()?.to_owned()))
}

/// Stable ids for repositories: the store's own `repository.json` id for its repository.
pub(crate) fn repository_id(st: &St, repo: &str) -> u64 {
    let own = super::read(st, "repository.json");
    if let Some(own) = own
        && own["full_name"] == repo
        && let Some(id) = own["id"].as_u64()
    {
        return id;
    }
    // Any other repository: a number derived from its name, the same on every call.
    900_000
        + repo
            .bytes()
            .fold(0u64, |a, b| a.wrapping_mul(31).wrapping_add(b as u64))
            % 100_000
}

pub(crate) fn record(st: &St, repo: &str, bundle: Value) -> Result<u64, String> {
    if !bundle["mediaType"].is_string() {
        return Err("bundle.mediaType is missing".into());
    }
    let (digests, predicate_type) =
        index_of(&bundle).ok_or("bundle.dsseEnvelope holds no in-toto statement with subjects")?;
    let mut all = st.attestations.lock().unwrap();
    let id = all.len() as u64 + 1;
    all.push(Recorded {
        id,
        repo: repo.to_owned(),
        repository_id: repository_id(st, repo),
        digests,
        predicate_type,
        bundle,
    });
    Ok(id)
}

pub(crate) async fn create(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((o, r)): AxPath<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    if let Some(resp) = api_gate(&st, &headers) {
        return resp;
    }
    let invalid = |message: String| {
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            axum::Json(json!({
                "message": "Validation Failed",
                "errors": [{"resource": "Attestation", "field": "bundle", "code": "invalid", "message": message}],
                "documentation_url": "https://docs.github.com/rest/repos/attestations#create-an-attestation",
            })),
        )
            .into_response()
    };
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return invalid("the body is not JSON".into());
    };
    let Some(bundle) = body.get("bundle").filter(|b| b.is_object()) else {
        return invalid("bundle is required".into());
    };
    match record(&st, &format!("{o}/{r}"), bundle.clone()) {
        Ok(id) => (StatusCode::CREATED, axum::Json(json!({"id": id}))).into_response(),
        Err(m) => invalid(m),
    }
}

/// An entry as a listing shows it under the request's API version.
fn entry(st: &St, rec: &Recorded, headers: &HeaderMap, with_initiator: bool) -> Value {
    let version = headers
        .get("x-github-api-version")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("2022-11-28");
    let mut e = json!({
        "repository_id": rec.repository_id,
        "bundle_url": format!(
            "{}/attestation-blobs/{}.json.sn?se=2099-01-01T00%3A00%3A00Z&sig=blob-signature-secret&sp=r",
            st.base, rec.id
        ),
    });
    // ISO dates order as strings.
    if version < NO_INLINE_BUNDLE {
        e["bundle"] = rec.bundle.clone();
    }
    if with_initiator {
        e["initiator"] = json!("user");
    }
    e
}

fn matches(rec: &Recorded, digest: &str, predicate_type: Option<&String>) -> bool {
    rec.digests.iter().any(|d| d == digest)
        && predicate_type.is_none_or(|p| match p.as_str() {
            "provenance" => rec
                .predicate_type
                .starts_with("https://slsa.dev/provenance/"),
            other => rec.predicate_type == other,
        })
}

pub(crate) async fn list(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((o, r, digest)): AxPath<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(resp) = api_gate(&st, &headers) {
        return resp;
    }
    let repo = format!("{o}/{r}");
    let all: Vec<Recorded> = st
        .attestations
        .lock()
        .unwrap()
        .iter()
        .filter(|rec| rec.repo == repo && matches(rec, &digest, q.get("predicate_type")))
        .cloned()
        .collect();
    let per_page: usize = q
        .get("per_page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(30)
        .clamp(1, 100)
        .min(
            st.faults
                .page_size
                .load(std::sync::atomic::Ordering::Relaxed)
                .max(1) as usize,
        );
    // The cursor is opaque to clients; here it is the index of the next entry.
    let start: usize = q.get("after").and_then(|a| a.parse().ok()).unwrap_or(0);
    let page: Vec<Value> = all
        .iter()
        .skip(start)
        .take(per_page)
        .map(|rec| entry(&st, rec, &headers, true))
        .collect();
    st.attestation_lists
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut resp = axum::Json(json!({ "attestations": page })).into_response();
    if start + per_page < all.len() {
        let mut keep = String::new();
        if let Some(p) = q.get("predicate_type") {
            keep.push_str(&format!("predicate_type={p}&"));
        }
        let link = format!(
            "<{}/repos/{repo}/attestations/{digest}?{keep}per_page={per_page}&after={}>; rel=\"next\"",
            st.base,
            start + per_page
        );
        resp.headers_mut().insert("link", link.parse().unwrap());
    }
    resp
}

pub(crate) async fn bulk(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((kind, owner)): AxPath<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    if let Some(resp) = api_gate(&st, &headers) {
        return resp;
    }
    let is_user = st
        .faults
        .owner_is_user
        .load(std::sync::atomic::Ordering::Relaxed);
    if (kind == "orgs") == is_user || !["orgs", "users"].contains(&kind.as_str()) {
        return super::not_found();
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::UNPROCESSABLE_ENTITY, "not JSON").into_response();
    };
    let digests: Vec<String> = body["subject_digests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d.as_str().map(str::to_owned))
        .collect();
    if digests.is_empty() || digests.len() > 1024 {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            axum::Json(json!({"message": "subject_digests must hold 1 to 1024 digests"})),
        )
            .into_response();
    }
    st.attestation_bulks
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let predicate_type = body["predicate_type"].as_str().map(str::to_owned);
    let all = st.attestations.lock().unwrap().clone();
    let mut map = serde_json::Map::new();
    for d in &digests {
        let entries: Vec<Value> = all
            .iter()
            .filter(|rec| {
                rec.repo.split('/').next() == Some(owner.as_str())
                    && matches(rec, d, predicate_type.as_ref())
            })
            .map(|rec| entry(&st, rec, &headers, false))
            .collect();
        map.insert(
            d.clone(),
            if entries.is_empty() {
                Value::Null
            } else {
                Value::Array(entries)
            },
        );
    }
    axum::Json(json!({
        "attestations_subject_digests": map,
        "page_info": {"has_next": false, "has_previous": false, "next": "", "previous": ""},
    }))
    .into_response()
}

/// The blob host: no credentials expected (one that arrives is recorded and echoed, as a
/// hostile host would).
pub(crate) async fn blob(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath(name): AxPath<String>,
) -> Response {
    if headers.get("authorization").is_some() {
        st.blob_saw_auth
            .store(true, std::sync::atomic::Ordering::Relaxed);
        return (StatusCode::BAD_REQUEST, "credentials sent to the blob host").into_response();
    }
    let Some(id) = name
        .strip_suffix(".json.sn")
        .and_then(|i| i.parse::<u64>().ok())
    else {
        return super::not_found();
    };
    let Some(rec) = st
        .attestations
        .lock()
        .unwrap()
        .iter()
        .find(|r| r.id == id)
        .cloned()
    else {
        return super::not_found();
    };
    if st
        .faults
        .blobs_expired
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        // What Azure answers once a SAS URL's `se` has passed.
        return (
            StatusCode::FORBIDDEN,
            "AuthenticationFailed: Signed expiry time has passed",
        )
            .into_response();
    }
    let raw = serde_json::to_vec(&rec.bundle).unwrap();
    let block = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
    (
        StatusCode::OK,
        [("content-type", "application/octet-stream")],
        block,
    )
        .into_response()
}
