//! GitHub's attestation store: record a Sigstore bundle (`POST /repos/{o}/{r}/attestations`,
//! what `actions/attest-build-provenance` does) and find bundles by subject digest
//! (`GET /repos/{o}/{r}/attestations/sha256:<hex>`, the bulk listing of an owner).
//!
//! What the store answers is a lookup, never a verdict: anyone who can write to some repository
//! can record a bundle for any digest, and the org and bulk listings mix repositories. Callers
//! verify every bundle returned, exactly as a bundle found in an artifact.
//!
//! The API is versioned: with `X-GitHub-Api-Version: 2026-03-10` the listings no longer carry
//! the inline `bundle`, only `bundle_url`, a short-lived signed blob URL on another host whose
//! body is the bundle as Snappy *block* (not framed) data. Both shapes are read; the blob is
//! fetched without credentials, size-capped before and after decompression.

use std::sync::atomic::Ordering;

use secrecy::ExposeSecret as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use vouch_http::redact;

use crate::{GithubClient, GithubError, MAX_PAGES, parse};

/// A bundle blob larger than this is not read (real ones are a few KiB).
const MAX_BLOB_BYTES: usize = 4 << 20;
/// Nor is one that would decompress to more than this.
const MAX_BUNDLE_BYTES: usize = 16 << 20;
/// Digests per bulk request, as documented.
pub const BULK_MAX_DIGESTS: usize = 1024;

/// Where a stored bundle came from in the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BundleOrigin {
    /// The listing's own `bundle` member (API versions before 2026-03-10).
    Inline,
    /// Fetched from `bundle_url`.
    BundleUrl,
}

/// One entry of an attestation listing, with its bundle resolved (or why it could not be).
#[derive(Clone, Debug, Serialize)]
pub struct StoredAttestation {
    /// Its position in the listing, for reports.
    pub index: usize,
    pub repository_id: Option<u64>,
    /// Who recorded it (`user` for an upload with a token); reported, never trusted.
    pub initiator: Option<String>,
    pub origin: Option<BundleOrigin>,
    /// The Sigstore bundle JSON; `Err` says why this entry has none (the others still count).
    #[serde(skip)]
    pub bundle: Result<Value, String>,
}

/// One page of an attestation listing.
#[derive(Clone, Debug)]
pub struct AttestationPage {
    pub entries: Vec<StoredAttestation>,
    /// The next page, for [`GithubClient::attestation_page`]; `None` on the last.
    pub next: Option<String>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    bundle: Option<Value>,
    #[serde(default)]
    bundle_url: Option<String>,
    #[serde(default)]
    repository_id: Option<u64>,
    #[serde(default)]
    initiator: Option<String>,
}

/// `sha256:<64 lowercase hex>`, the only subject digest vouch looks up.
pub fn check_digest(digest: &str) -> Result<(), GithubError> {
    let ok = digest.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if ok {
        Ok(())
    } else {
        Err(GithubError::Protocol {
            url: "attestations".into(),
            reason: format!("subject digest {digest:?} is not sha256:<64 lowercase hex>"),
        })
    }
}

/// The JSON `Value` of a bundle as the blob holds it: Snappy block data, decompressed within
/// the caps. Framed Snappy (`sNaPpY` stream identifier) is not what GitHub serves and is refused.
pub fn decode_blob(bytes: &[u8]) -> Result<Value, String> {
    if bytes.len() > MAX_BLOB_BYTES {
        return Err(format!(
            "the blob is {} bytes, over the {MAX_BLOB_BYTES}-byte cap",
            bytes.len()
        ));
    }
    let len =
        snap::raw::decompress_len(bytes).map_err(|e| format!("not Snappy block data: {e}"))?;
    if len > MAX_BUNDLE_BYTES {
        return Err(format!(
            "the blob would decompress to {len} bytes, over the {MAX_BUNDLE_BYTES}-byte cap"
        ));
    }
    let raw = snap::raw::Decoder::new()
        .decompress_vec(bytes)
        .map_err(|e| format!("not Snappy block data: {e}"))?;
    serde_json::from_slice(&raw).map_err(|e| format!("the decompressed blob is not JSON: {e}"))
}

impl GithubClient {
    /// A request to the API host with the token, retried as GETs are on 5xx and rate limits.
    /// Recording an attestation twice is harmless (two records of one bundle); failing to
    /// record it on a transient error is not.
    pub(crate) async fn api_post(
        &self,
        url: &str,
        body: &Value,
    ) -> Result<reqwest::Response, GithubError> {
        Ok(self
            .http
            .get_with(url, |c| {
                self.calls.fetch_add(1, Ordering::Relaxed);
                let mut req = c
                    .post(url)
                    .header("Accept", "application/vnd.github+json")
                    .header("X-GitHub-Api-Version", self.api_version)
                    .json(body);
                if let Some(t) = &self.token {
                    req = req.bearer_auth(t.expose_secret());
                }
                req
            })
            .await?)
    }

    /// `POST /repos/{repo}/attestations` with `{"bundle": bundle}`: the id GitHub gave it.
    pub async fn create_attestation(&self, repo: &str, bundle: &Value) -> Result<u64, GithubError> {
        let url = format!("{}/repos/{repo}/attestations", self.api);
        let resp = self
            .api_post(&url, &serde_json::json!({ "bundle": bundle }))
            .await?;
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if status != 201 && status != 200 {
            return Err(GithubError::Status {
                url: redact(&url),
                status,
                detail: error_detail(&body),
            });
        }
        body["id"].as_u64().ok_or_else(|| GithubError::Protocol {
            url: redact(&url),
            reason: "the answer names no attestation id".into(),
        })
    }

    /// Every attestation `repo` holds for `digest` (`sha256:<hex>`), following pages (at most
    /// [`MAX_PAGES`]). None recorded (an empty list or 404) is an empty result, not an error.
    pub async fn attestations(
        &self,
        repo: &str,
        digest: &str,
        predicate_type: Option<&str>,
    ) -> Result<Vec<StoredAttestation>, GithubError> {
        let mut out: Vec<StoredAttestation> = Vec::new();
        let mut next = None;
        for _ in 0..MAX_PAGES {
            let page = self
                .attestation_page(repo, digest, predicate_type, next.as_deref(), out.len())
                .await?;
            out.extend(page.entries);
            match page.next {
                Some(n) => next = Some(n),
                None => break,
            }
        }
        Ok(out)
    }

    /// One page of what `repo` holds for `digest` (`sha256:<hex>`): the first with `next`
    /// `None`, else the page `next` (an [`AttestationPage::next`]) names. `predicate_type` is
    /// sent as the API's `predicate_type` filter, so entries of other types (a flood of them)
    /// take no room in the pages; it is a filter, not a check, and callers still verify the
    /// type. Entries are numbered from `first_index`. None recorded (an empty list or 404) is
    /// an empty last page.
    pub async fn attestation_page(
        &self,
        repo: &str,
        digest: &str,
        predicate_type: Option<&str>,
        next: Option<&str>,
        first_index: usize,
    ) -> Result<AttestationPage, GithubError> {
        check_digest(digest)?;
        let url = match next {
            Some(n) => n.to_owned(),
            None => {
                let mut url = format!(
                    "{}/repos/{repo}/attestations/{digest}?per_page=100",
                    self.api
                );
                if let Some(p) = predicate_type {
                    url.push_str(&format!("&predicate_type={}", crate::urlencode(p)));
                }
                url
            }
        };
        let (entries, next) = match self.page(&url, Some("attestations")).await {
            Ok(page) => page,
            Err(GithubError::Status { status: 404, .. }) => (Vec::new(), None),
            Err(e) => return Err(e),
        };
        let mut out = Vec::with_capacity(entries.len());
        for (n, entry) in entries.into_iter().enumerate() {
            let entry: Entry = parse(entry, || redact(&url))?;
            out.push(self.resolve(first_index + n, entry).await);
        }
        Ok(AttestationPage { entries: out, next })
    }

    /// The attestations of every digest in `digests` across the repositories of `owner` that
    /// the token may read (`POST /orgs/{owner}/attestations/bulk-list`, or the `users` route
    /// when `owner` is a user), in requests of at most [`BULK_MAX_DIGESTS`] digests.
    pub async fn attestations_bulk(
        &self,
        owner: &str,
        digests: &[String],
        predicate_type: Option<&str>,
    ) -> Result<Vec<(String, Vec<StoredAttestation>)>, GithubError> {
        for d in digests {
            check_digest(d)?;
        }
        let mut out: Vec<(String, Vec<StoredAttestation>)> =
            digests.iter().map(|d| (d.clone(), Vec::new())).collect();
        let mut route = "orgs";
        for chunk in digests.chunks(BULK_MAX_DIGESTS) {
            let mut body = serde_json::json!({ "subject_digests": chunk });
            if let Some(p) = predicate_type {
                body["predicate_type"] = Value::from(p);
            }
            let mut after: Option<String> = None;
            for _ in 0..MAX_PAGES {
                let mut url = format!(
                    "{}/{route}/{owner}/attestations/bulk-list?per_page=100",
                    self.api
                );
                if let Some(a) = &after {
                    url.push_str(&format!("&after={}", crate::urlencode(a)));
                }
                let resp = self.api_post(&url, &body).await?;
                let status = resp.status().as_u16();
                // An owner that is a user, not an organization, has the same listing under
                // `users`: try it once.
                if status == 404 && route == "orgs" && after.is_none() {
                    route = "users";
                    continue;
                }
                let answer: Value = resp.json().await.unwrap_or(Value::Null);
                if !(200..300).contains(&status) {
                    return Err(GithubError::Status {
                        url: redact(&url),
                        status,
                        detail: error_detail(&answer),
                    });
                }
                let Some(map) = digest_map(&answer["attestations_subject_digests"]) else {
                    return Err(GithubError::Protocol {
                        url: redact(&url),
                        reason: "the answer holds no attestations_subject_digests object".into(),
                    });
                };
                for (digest, entries) in map {
                    let Some(slot) = out.iter_mut().find(|(d, _)| d == digest) else {
                        // Never asked for: not evidence for anything here.
                        continue;
                    };
                    for entry in entries.as_array().into_iter().flatten() {
                        let entry: Entry = parse(entry.clone(), || url.clone())?;
                        let index = slot.1.len();
                        slot.1.push(self.resolve(index, entry).await);
                    }
                }
                let info = &answer["page_info"];
                match info["next"].as_str().filter(|n| !n.is_empty()) {
                    Some(n) if info["has_next"] == true => after = Some(n.to_owned()),
                    _ => break,
                }
            }
        }
        Ok(out)
    }

    /// The entry's bundle: inline when the answer carries one, else from `bundle_url`.
    async fn resolve(&self, index: usize, e: Entry) -> StoredAttestation {
        let (origin, bundle) = match (e.bundle.filter(|b| !b.is_null()), e.bundle_url) {
            (Some(b), _) => (Some(BundleOrigin::Inline), Ok(b)),
            (None, Some(u)) if !u.is_empty() => {
                (Some(BundleOrigin::BundleUrl), self.fetch_blob(&u).await)
            }
            _ => (
                None,
                Err("the entry has neither bundle nor bundle_url".into()),
            ),
        };
        StoredAttestation {
            index,
            repository_id: e.repository_id,
            initiator: e.initiator,
            origin,
            bundle,
        }
    }

    /// Reads a `bundle_url` blob. No Authorization: the blob store is another host and the
    /// URL carries its own signature (which is why it is redacted in every message).
    async fn fetch_blob(&self, url: &str) -> Result<Value, String> {
        let target =
            url::Url::parse(url).map_err(|_| format!("bundle_url {} is not a URL", redact(url)))?;
        if target.scheme() != "https"
            && !(self.allow_http_loopback && vouch_http::is_loopback(&target))
        {
            return Err(format!("refusing a non-https bundle_url {}", redact(url)));
        }
        let resp = self
            .http
            .get(url)
            .await
            .map_err(|e| format!("bundle_url: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!(
                "GET {} failed with HTTP {} (blob URLs expire; list again for a fresh one)",
                redact(url),
                resp.status().as_u16()
            ));
        }
        if resp
            .content_length()
            .is_some_and(|n| n > MAX_BLOB_BYTES as u64)
        {
            return Err(format!(
                "the blob at {} is over the {MAX_BLOB_BYTES}-byte cap",
                redact(url)
            ));
        }
        let bytes = resp
            .bytes()
            .await
            .map_err(|_| format!("GET {}: the download broke off", redact(url)))?;
        decode_blob(&bytes).map_err(|e| format!("{}: {e}", redact(url)))
    }
}

/// The bulk answer's digest → entries map. The schema says one object; GitHub's own example
/// wraps it in an array of objects, so both are read.
fn digest_map(v: &Value) -> Option<Vec<(&String, &Value)>> {
    match v {
        Value::Object(m) => Some(m.iter().collect()),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_object().map(|m| m.iter().collect::<Vec<_>>()))
            .collect::<Option<Vec<_>>>()
            .map(|v| v.into_iter().flatten().collect()),
        _ => None,
    }
}

/// GitHub's `message` and, for a 422, each validation error's, for the user to read.
pub(crate) fn error_detail(body: &Value) -> String {
    let mut s = body["message"]
        .as_str()
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    for e in body["errors"].as_array().into_iter().flatten() {
        if let Some(m) = e["message"].as_str().or(e.as_str()) {
            s.push_str(&format!("; {m}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_snappy_block_data_within_caps() {
        let bundle =
            serde_json::json!({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"});
        let raw = serde_json::to_vec(&bundle).unwrap();
        let block = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
        assert_eq!(decode_blob(&block).unwrap(), bundle);
        // The framed format is another thing: its stream identifier is not a block.
        let mut framed = Vec::new();
        {
            use std::io::Write as _;
            let mut w = snap::write::FrameEncoder::new(&mut framed);
            w.write_all(&raw).unwrap();
        }
        assert!(decode_blob(&framed).is_err());
        // A block that claims a huge output is refused before anything is allocated.
        let mut bomb = Vec::new();
        let mut n = (MAX_BUNDLE_BYTES + 1) as u64;
        while n >= 0x80 {
            bomb.push((n as u8) | 0x80);
            n >>= 7;
        }
        bomb.push(n as u8);
        let err = decode_blob(&bomb).unwrap_err();
        assert!(err.contains("over the"), "{err}");
        assert!(decode_blob(b"not snappy at all").is_err());
    }

    #[test]
    fn digests_are_sha256_hex() {
        assert!(check_digest(&format!("sha256:{}", "a".repeat(64))).is_ok());
        for bad in [
            "sha256:abc",
            &format!("sha512:{}", "a".repeat(64)),
            &format!("sha256:{}", "A".repeat(64)),
            &format!("sha256:{}/../x", "a".repeat(60)),
        ] {
            assert!(check_digest(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn github_example_listings_parse() {
        // GitHub's own response examples (see tests/data/SOURCES.md).
        let list: Value =
            serde_json::from_str(include_str!("../tests/data/list-attestations.200.json")).unwrap();
        for e in list["attestations"].as_array().unwrap() {
            let e: Entry = serde_json::from_value(e.clone()).unwrap();
            assert!(e.bundle.is_none() && e.bundle_url.is_some() && e.repository_id == Some(1));
            assert_eq!(e.initiator.as_deref(), Some("user"));
        }
        let bulk: Value = serde_json::from_str(include_str!(
            "../tests/data/list-attestations-bulk.200.json"
        ))
        .unwrap();
        let map = digest_map(&bulk["attestations_subject_digests"]).unwrap();
        assert_eq!(map.len(), 1);
        assert_eq!(map[0].0, "sha256:abc");
        for e in map[0].1.as_array().unwrap() {
            let e: Entry = serde_json::from_value(e.clone()).unwrap();
            assert!(e.bundle.is_some_and(|b| b["mediaType"].is_string()));
        }
    }
}
