//! The signed blob URLs the cache service hands out, speaking the subset of the Azure Blob
//! REST API that cache clients use: Put Blob, Put Block, Put Block List and Get Blob (ranged).
//! The toolkit uploads with `BlockBlobClient.uploadFile` (`src/internal/uploadUtils.ts`:
//! one Put Blob up to 128 MiB, else 64 MiB blocks and a block list); OpenDAL's ghac writer
//! drives its azblob writer the same way and stats with `Range: bytes=0-0`, reading the size
//! from `Content-Range` (so a 416 must carry `Content-Range: bytes */SIZE` too).
//! A URL's `sig` is its whole authority, as a SAS is: the upload one works until the entry
//! is finalized, the download one only after.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};

use super::Shared;

/// The one container the service's URLs name.
pub(super) const CONTAINER: &str = "actions-cache";
const X_MS_VERSION: &str = "2022-11-02";

static ETAGS: AtomicU64 = AtomicU64::new(0x8DC_0000_0000);

/// One blob: its committed content and the blocks staged for the next block list.
#[derive(Default)]
pub(super) struct Blob {
    staged: HashMap<String, Bytes>,
    /// The committed block list, as ranges of `content`, for `<Committed>` in a later list.
    committed_blocks: Vec<(String, std::ops::Range<usize>)>,
    /// `None` until the first Put Blob or Put Block List.
    content: Option<Bytes>,
    etag: String,
    last_modified: Option<jiff::Timestamp>,
}

/// Which list a `<BlockList>` item is looked up in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Pick {
    Latest,
    Committed,
    Uncommitted,
}

impl Blob {
    /// The committed size; `None` before anything was committed.
    pub fn size(&self) -> Option<u64> {
        self.content.as_ref().map(|c| c.len() as u64)
    }

    fn committed(&mut self, content: Bytes, blocks: Vec<(String, std::ops::Range<usize>)>) {
        self.content = Some(content);
        self.committed_blocks = blocks;
        // Committing discards what was staged and not used, as Azure does.
        self.staged.clear();
        self.etag = format!("\"0x{:X}\"", ETAGS.fetch_add(1, Ordering::Relaxed));
        self.last_modified = Some(jiff::Timestamp::now());
    }

    pub fn put_blob(&mut self, data: Bytes) {
        self.committed(data, Vec::new());
    }

    fn put_block(&mut self, id: String, data: Bytes) {
        self.staged.insert(id, data);
    }

    /// Commits the listed blocks in order; a block is named by its base64 id as staged.
    fn put_block_list(&mut self, list: &[(Pick, String)]) -> Result<(), String> {
        let old = self.content.clone().unwrap_or_default();
        let mut content = BytesMut::new();
        let mut blocks = Vec::with_capacity(list.len());
        for (pick, id) in list {
            let staged = || self.staged.get(id).cloned();
            let committed = || {
                self.committed_blocks
                    .iter()
                    .find(|(c, _)| c == id)
                    .map(|(_, r)| old.slice(r.clone()))
            };
            let data = match pick {
                Pick::Latest => staged().or_else(committed),
                Pick::Uncommitted => staged(),
                Pick::Committed => committed(),
            }
            .ok_or_else(|| format!("block {id:?} ({pick:?}) was never uploaded to this blob"))?;
            let start = content.len();
            content.extend_from_slice(&data);
            blocks.push((id.clone(), start..content.len()));
        }
        self.committed(content.freeze(), blocks);
        Ok(())
    }
}

/// The items of a Put Block List body, in order.
fn parse_block_list(xml: &str) -> Result<Vec<(Pick, String)>, String> {
    static ITEM: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"<(Latest|Committed|Uncommitted)>\s*([^<]*?)\s*</(\w+)>")
            .expect("a valid regex")
    });
    if !xml.contains("<BlockList>") {
        return Err(format!(
            "body {:?} is not a <BlockList> document",
            xml.chars().take(80).collect::<String>()
        ));
    }
    ITEM.captures_iter(xml)
        .map(|c| {
            let (open, id, close) = (&c[1], &c[2], &c[3]);
            if open != close {
                return Err(format!("<{open}> closed by </{close}>"));
            }
            let pick = match open {
                "Latest" => Pick::Latest,
                "Committed" => Pick::Committed,
                _ => Pick::Uncommitted,
            };
            Ok((pick, id.to_owned()))
        })
        .collect()
}

/// The decoded query pairs. A literal `+` stays a `+`: block ids are base64, and the query of
/// an Azure URL is percent-encoded, not form-encoded.
fn query(raw: Option<&str>) -> HashMap<String, String> {
    let raw = raw.unwrap_or("").replace('+', "%2B");
    url::form_urlencoded::parse(raw.as_bytes())
        .into_owned()
        .collect()
}

enum Span {
    Whole,
    Part(u64, u64),
    Unsatisfiable,
}

/// A single `bytes=` range against a blob of `size` bytes (RFC 9110 §14.1.2: a last position
/// past the end is clamped; a first position at or past it cannot be satisfied).
fn span(header: Option<&str>, size: u64) -> Result<Span, String> {
    let Some(h) = header else {
        return Ok(Span::Whole);
    };
    let bad = || format!("range {h:?} is not of the form bytes=FIRST-[LAST] or bytes=-SUFFIX");
    let spec = h.trim().strip_prefix("bytes=").ok_or_else(bad)?;
    let (first, last) = spec.split_once('-').ok_or_else(bad)?;
    let num = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
    let (first, last) = match (first.trim().is_empty(), last.trim().is_empty()) {
        (true, false) => {
            let n = num(last)?;
            if n == 0 || size == 0 {
                return Ok(Span::Unsatisfiable);
            }
            (size.saturating_sub(n), size - 1)
        }
        (false, true) => (num(first)?, u64::MAX),
        (false, false) => (num(first)?, num(last)?),
        (true, true) => return Err(bad()),
    };
    if first >= size || last < first {
        return Ok(Span::Unsatisfiable);
    }
    Ok(Span::Part(first, last.min(size - 1)))
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Headers every Azure response has.
fn service_headers(h: &mut HeaderMap) {
    let request_id = super::model::random_hex(16);
    h.insert(
        "x-ms-request-id",
        HeaderValue::from_str(&request_id).unwrap(),
    );
    h.insert("x-ms-version", HeaderValue::from_static(X_MS_VERSION));
    let date = jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&jiff::Timestamp::now())
        .expect("now is printable");
    h.insert("date", HeaderValue::from_str(&date).unwrap());
}

/// An Azure storage error: the code in `x-ms-error-code` and in the XML body.
fn azure_error(status: StatusCode, code: &str, msg: &str) -> Response {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code><Message>{}</Message></Error>",
        xml_escape(msg)
    );
    let mut r = (status, body).into_response();
    let h = r.headers_mut();
    service_headers(h);
    h.insert("content-type", HeaderValue::from_static("application/xml"));
    h.insert("x-ms-error-code", HeaderValue::from_str(code).unwrap());
    r
}

fn blob_headers(h: &mut HeaderMap, blob: &Blob) {
    service_headers(h);
    if !blob.etag.is_empty() {
        h.insert("etag", HeaderValue::from_str(&blob.etag).unwrap());
    }
    if let Some(t) = blob.last_modified {
        let lm = jiff::fmt::rfc2822::DateTimePrinter::new()
            .timestamp_to_rfc9110_string(&t)
            .expect("a recent time is printable");
        h.insert("last-modified", HeaderValue::from_str(&lm).unwrap());
    }
}

fn created(blob: Option<&Blob>) -> Response {
    let mut r = StatusCode::CREATED.into_response();
    let h = r.headers_mut();
    match blob {
        Some(b) => blob_headers(h, b),
        None => service_headers(h),
    }
    h.insert(
        "x-ms-request-server-encrypted",
        HeaderValue::from_static("true"),
    );
    h.insert("content-length", HeaderValue::from_static("0"));
    r
}

fn not_found(what: &str) -> Response {
    azure_error(
        StatusCode::NOT_FOUND,
        "BlobNotFound",
        &format!("The specified blob {what:?} does not exist."),
    )
}

fn bad_signature(sent: Option<&String>) -> Response {
    let why = match sent {
        None => "the URL has no sig parameter".to_owned(),
        Some(_) => "the sig parameter is not this URL's signature".to_owned(),
    };
    azure_error(
        StatusCode::FORBIDDEN,
        "AuthenticationFailed",
        &format!("Server failed to authenticate the request: {why}."),
    )
}

/// Parses the blob id of `/blob/{container}/{id}`.
fn blob_id(container: &str, id: &str) -> Option<u64> {
    (container == CONTAINER).then(|| id.parse().ok())?
}

pub(super) async fn put(
    State(sh): State<Arc<Shared>>,
    Path((container, id)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let q = query(raw.as_deref());
    let op = match q.get("comp").map(String::as_str) {
        None => "PutBlob",
        Some("block") => "PutBlock",
        Some("blocklist") => "PutBlockList",
        Some(_) => "PutUnsupported",
    };
    let mut model = sh.model.lock().unwrap();
    let Some(entry) = blob_id(&container, &id).and_then(|b| model.entry_by_blob(b)) else {
        drop(model);
        return sh.record(op, None, not_found(&format!("{container}/{id}")));
    };
    let key = Some(entry.key.clone());
    let resp = if q.get("sig") != Some(&entry.upload_sig) {
        bad_signature(q.get("sig"))
    } else if entry.entry_id.is_some() {
        azure_error(
            StatusCode::FORBIDDEN,
            "AuthenticationFailed",
            "The signed upload URL has expired: the cache entry was finalized, and entries are immutable.",
        )
    } else {
        match op {
            "PutBlob" => {
                let blob_type = headers.get("x-ms-blob-type").and_then(|v| v.to_str().ok());
                if blob_type == Some("BlockBlob") {
                    entry.blob.put_blob(body);
                    created(Some(&entry.blob))
                } else {
                    azure_error(
                        StatusCode::BAD_REQUEST,
                        "MissingRequiredHeader",
                        &format!(
                            "x-ms-blob-type is {blob_type:?}; Put Blob needs x-ms-blob-type: BlockBlob"
                        ),
                    )
                }
            }
            "PutBlock" => match q.get("blockid").filter(|b| !b.is_empty()) {
                Some(b) => {
                    entry.blob.put_block(b.clone(), body);
                    created(None)
                }
                None => azure_error(
                    StatusCode::BAD_REQUEST,
                    "MissingRequiredQueryParameter",
                    "Put Block needs a blockid query parameter",
                ),
            },
            "PutBlockList" => match std::str::from_utf8(&body)
                .map_err(|e| format!("the block list is not UTF-8: {e}"))
                .and_then(parse_block_list)
                .and_then(|list| entry.blob.put_block_list(&list))
            {
                Ok(()) => created(Some(&entry.blob)),
                Err(msg) => azure_error(StatusCode::BAD_REQUEST, "InvalidBlockList", &msg),
            },
            _ => azure_error(
                StatusCode::BAD_REQUEST,
                "UnsupportedQueryParameter",
                &format!(
                    "comp={:?} is not supported here; expected none, block or blocklist",
                    q.get("comp").map(String::as_str).unwrap_or("")
                ),
            ),
        }
    };
    drop(model);
    sh.record(op, key, resp)
}

pub(super) async fn get(
    State(sh): State<Arc<Shared>>,
    Path((container, id)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Response {
    let q = query(raw.as_deref());
    let mut model = sh.model.lock().unwrap();
    let Some(entry) = blob_id(&container, &id).and_then(|b| model.entry_by_blob(b)) else {
        drop(model);
        return sh.record("GetBlob", None, not_found(&format!("{container}/{id}")));
    };
    let key = Some(entry.key.clone());
    let resp = match (&entry.blob.content, entry.entry_id) {
        _ if q.get("sig") != Some(&entry.download_sig) => bad_signature(q.get("sig")),
        (Some(content), Some(_)) => read(&entry.blob, content.clone(), &headers),
        _ => not_found(&format!("{container}/{id}")),
    };
    drop(model);
    sh.record("GetBlob", key, resp)
}

fn read(blob: &Blob, content: Bytes, headers: &HeaderMap) -> Response {
    let size = content.len() as u64;
    // Azure takes x-ms-range over Range when both are sent.
    let range = ["x-ms-range", "range"]
        .iter()
        .find_map(|n| headers.get(*n))
        .map(|v| v.to_str().unwrap_or("\u{fffd}"));
    let (status, body, content_range) = match span(range, size) {
        Err(msg) => return azure_error(StatusCode::BAD_REQUEST, "InvalidHeaderValue", &msg),
        Ok(Span::Unsatisfiable) => {
            let mut r = azure_error(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "InvalidRange",
                &format!(
                    "The range specified is invalid for the current size of the resource ({size} bytes)."
                ),
            );
            let h = r.headers_mut();
            h.insert(
                "content-range",
                HeaderValue::from_str(&format!("bytes */{size}")).unwrap(),
            );
            return r;
        }
        Ok(Span::Whole) => (StatusCode::OK, content, None),
        Ok(Span::Part(a, b)) => (
            StatusCode::PARTIAL_CONTENT,
            content.slice(a as usize..=b as usize),
            Some(format!("bytes {a}-{b}/{size}")),
        ),
    };
    let len = body.len();
    let mut r = (status, body).into_response();
    let h = r.headers_mut();
    blob_headers(h, blob);
    h.insert(
        "content-type",
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert("content-length", HeaderValue::from(len));
    h.insert("accept-ranges", HeaderValue::from_static("bytes"));
    h.insert("x-ms-blob-type", HeaderValue::from_static("BlockBlob"));
    h.insert("x-ms-server-encrypted", HeaderValue::from_static("true"));
    if let Some(cr) = content_range {
        h.insert("content-range", HeaderValue::from_str(&cr).unwrap());
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(h: &str, size: u64) -> Option<(u64, u64)> {
        match span(Some(h), size).unwrap() {
            Span::Part(a, b) => Some((a, b)),
            Span::Whole => panic!("a range header gave the whole blob"),
            Span::Unsatisfiable => None,
        }
    }

    #[test]
    fn ranges_clamp_the_end_and_refuse_a_start_past_it() {
        assert_eq!(spans("bytes=0-0", 10), Some((0, 0)));
        assert_eq!(spans("bytes=2-99", 10), Some((2, 9)));
        assert_eq!(spans("bytes=4-", 10), Some((4, 9)));
        assert_eq!(spans("bytes=-3", 10), Some((7, 9)));
        assert_eq!(spans("bytes=10-", 10), None);
        assert_eq!(spans("bytes=0-0", 0), None);
        assert_eq!(spans("bytes=5-2", 10), None);
        assert!(span(Some("items=0-1"), 10).is_err());
        assert!(span(Some("bytes=a-b"), 10).is_err());
    }

    #[test]
    fn a_block_list_mixes_staged_and_committed_blocks() {
        let mut b = Blob::default();
        b.put_block("QQ==".into(), Bytes::from_static(b"aa"));
        b.put_block("Qg==".into(), Bytes::from_static(b"bb"));
        let list = parse_block_list(
            "<?xml version=\"1.0\"?><BlockList><Latest>Qg==</Latest><Uncommitted>QQ==</Uncommitted></BlockList>",
        )
        .unwrap();
        b.put_block_list(&list).unwrap();
        assert_eq!(b.content.as_deref(), Some(&b"bbaa"[..]));
        b.put_block("Qw==".into(), Bytes::from_static(b"cc"));
        let list = parse_block_list(
            "<BlockList><Committed>QQ==</Committed><Latest>Qw==</Latest></BlockList>",
        )
        .unwrap();
        b.put_block_list(&list).unwrap();
        assert_eq!(b.content.as_deref(), Some(&b"aacc"[..]));
        // Committing dropped the staged blocks that were not listed.
        let list =
            parse_block_list("<BlockList><Uncommitted>Qg==</Uncommitted></BlockList>").unwrap();
        assert!(b.put_block_list(&list).unwrap_err().contains("Qg=="));
        assert!(parse_block_list("<Foo/>").is_err());
    }

    #[test]
    fn a_plus_in_the_query_stays_a_plus() {
        let q = query(Some("comp=block&blockid=ab%2Bc+d%3D%3D&sig=x"));
        assert_eq!(q["blockid"], "ab+c+d==");
    }
}
