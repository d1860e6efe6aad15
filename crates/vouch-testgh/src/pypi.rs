//! A package index double on 127.0.0.1, as `vouch audit --pypi` sees PyPI: the JSON simple API
//! (PEP 691; `GET /simple/<normalized-name>/` with `Accept: application/vnd.pypi.simple.v1+json`,
//! per-file `url`, `hashes.sha256`, `size`, `yanked` and, from API 1.3 on, `provenance`), the
//! files (`GET /files/<filename>`) and the integrity API (`GET
//! /integrity/<project>/<version>/<filename>/provenance`: the provenance object with
//! `application/vnd.pypi.integrity.v1+json`, or 404 `{"message": "No provenance available for
//! <file>"}` as PyPI answers). Shapes follow PyPI's responses for `pypi-attestations` 0.0.19.
//!
//! A file may be served with other bytes than the sha256 the page publishes (a tampered
//! mirror), or without provenance; an old index (API 1.1) lists no `provenance` key and may
//! answer 404 on the integrity API for every file, as a mirror that does not proxy it does.
//! Every request is recorded.

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

const SIMPLE_JSON: &str = "application/vnd.pypi.simple.v1+json";
const INTEGRITY_JSON: &str = "application/vnd.pypi.integrity.v1+json";

/// One file of a release on the double.
#[derive(Clone, Debug)]
pub struct PypiFile {
    pub filename: String,
    /// The release the file belongs to (the integrity API's `<version>`).
    pub version: String,
    /// What `GET /files/<filename>` serves.
    pub bytes: Vec<u8>,
    /// The sha256 (hex) and size the page publishes: the bytes' own, unless [`Self::tampered`].
    pub published_sha256: String,
    pub published_size: u64,
    /// The provenance object the integrity API serves; `None` answers 404.
    pub provenance: Option<Value>,
    pub yanked: bool,
}

impl PypiFile {
    pub fn new(filename: &str, version: &str, bytes: Vec<u8>) -> PypiFile {
        PypiFile {
            filename: filename.to_owned(),
            version: version.to_owned(),
            published_sha256: vouch_core::Sha256Digest::of(&bytes).hex(),
            published_size: bytes.len() as u64,
            bytes,
            provenance: None,
            yanked: false,
        }
    }

    pub fn with_provenance(mut self, provenance: Value) -> PypiFile {
        self.provenance = Some(provenance);
        self
    }

    /// Serves `bytes` instead, still publishing the original's sha256 (the size is kept too
    /// when the length matches, so only the digest can tell).
    pub fn tampered(mut self, bytes: Vec<u8>) -> PypiFile {
        self.bytes = bytes;
        self
    }
}

/// PyPI's provenance object for one PEP 740 attestation, as the integrity API serves it.
pub fn provenance_object(attestation: Value, repository: &str, workflow: &str) -> Value {
    json!({
        "version": 1,
        "attestation_bundles": [{
            "publisher": {
                "kind": "GitHub",
                "repository": repository,
                "workflow": workflow,
                "environment": null,
                "claims": {},
            },
            "attestations": [attestation],
        }]
    })
}

/// One request the double answered, in arrival order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub accept: Option<String>,
    pub status: u16,
}

struct Shared {
    project: String,
    api_version: String,
    /// When false, the integrity API answers 404 for every file (a mirror that does not proxy
    /// it), whatever the files hold.
    integrity: bool,
    files: Vec<PypiFile>,
    base: String,
    requests: Mutex<Vec<Request>>,
}

/// Options for [`FakePypi`].
pub struct FakePypiBuilder {
    project: String,
    api_version: String,
    integrity: bool,
    files: Vec<PypiFile>,
}

impl FakePypiBuilder {
    /// `meta.api-version` (default `1.3`); before 1.3 the page lists no `provenance`.
    pub fn api_version(mut self, v: &str) -> Self {
        self.api_version = v.to_owned();
        self
    }

    /// Answer 404 on the integrity API for every file.
    pub fn without_integrity_api(mut self) -> Self {
        self.integrity = false;
        self
    }

    pub fn file(mut self, f: PypiFile) -> Self {
        self.files.push(f);
        self
    }

    /// Serves on a free loopback port, on a thread of its own, until the value is dropped.
    pub fn start(self) -> FakePypi {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let shared = Arc::new(Shared {
            project: self.project,
            api_version: self.api_version,
            integrity: self.integrity,
            files: self.files,
            base: url.clone(),
            requests: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(shared.clone());
        let (tx, thread) = crate::serve_on_thread(listener, app);
        FakePypi {
            url,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }
}

pub struct FakePypi {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakePypi {
    /// An index for `project` (its name as the page spells it; served under its normalized
    /// form).
    pub fn builder(project: &str) -> FakePypiBuilder {
        FakePypiBuilder {
            project: project.to_owned(),
            api_version: "1.3".to_owned(),
            integrity: true,
            files: Vec::new(),
        }
    }

    /// The simple index URL, `http://127.0.0.1:PORT/simple/`.
    pub fn index_url(&self) -> String {
        format!("{}/simple/", self.url)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().expect("not poisoned").clone()
    }
}

impl Drop for FakePypi {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// PEP 503 normalization, as PyPI serves project pages.
fn normalize(name: &str) -> String {
    vouch_core::normalize_dist_name(name)
}

fn api_at_least_1_3(v: &str) -> bool {
    let mut parts = v.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 3)
}

fn typed(status: StatusCode, content_type: &str, body: impl Into<Body>) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(body.into())
        .expect("a valid response")
}

fn not_found(message: &str) -> Response {
    typed(
        StatusCode::NOT_FOUND,
        "application/json",
        json!({ "message": message }).to_string(),
    )
}

fn page(sh: &Shared) -> Response {
    let listed = api_at_least_1_3(&sh.api_version);
    let files: Vec<Value> = sh
        .files
        .iter()
        .map(|f| {
            let mut v = json!({
                "filename": f.filename,
                "url": format!("{}/files/{}", sh.base, f.filename),
                "hashes": { "sha256": f.published_sha256 },
                "requires-python": ">=3.9",
                "size": f.published_size,
                "upload-time": "2024-12-04T23:14:04.599813Z",
                "yanked": f.yanked,
            });
            if listed {
                v["provenance"] = match (&f.provenance, sh.integrity) {
                    (Some(_), true) => json!(format!(
                        "{}/integrity/{}/{}/{}/provenance",
                        sh.base,
                        normalize(&sh.project),
                        f.version,
                        f.filename
                    )),
                    _ => Value::Null,
                };
            }
            v
        })
        .collect();
    let mut versions: Vec<&str> = sh.files.iter().map(|f| f.version.as_str()).collect();
    versions.dedup();
    let body = json!({
        "meta": { "api-version": sh.api_version, "_last-serial": 1 },
        "name": normalize(&sh.project),
        "versions": versions,
        "files": files,
    });
    typed(StatusCode::OK, SIMPLE_JSON, body.to_string())
}

fn route(sh: &Shared, method: &Method, path: &str, accept: Option<&str>) -> Response {
    if method != Method::GET {
        return typed(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "");
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["simple", project, ""] if *project == normalize(&sh.project) => {
            // PyPI answers HTML unless the client asks for JSON.
            if accept.is_some_and(|a| a.contains(SIMPLE_JSON)) {
                page(sh)
            } else {
                typed(
                    StatusCode::OK,
                    "text/html",
                    "<!DOCTYPE html><html><body></body></html>",
                )
            }
        }
        ["files", name] => match sh.files.iter().find(|f| f.filename == *name) {
            Some(f) => typed(StatusCode::OK, "application/octet-stream", f.bytes.clone()),
            None => not_found("Not Found"),
        },
        ["integrity", project, version, name, "provenance"] => {
            let file = sh.files.iter().find(|f| {
                normalize(project) == normalize(&sh.project)
                    && f.version == *version
                    && f.filename == *name
            });
            match file.and_then(|f| f.provenance.as_ref()) {
                Some(p) if sh.integrity => typed(StatusCode::OK, INTEGRITY_JSON, p.to_string()),
                _ => not_found(&format!("No provenance available for {name}")),
            }
        }
        _ => not_found("Not Found"),
    }
}

async fn answer(
    State(sh): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let accept = headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let resp = route(&sh, &method, uri.path(), accept.as_deref()).into_response();
    sh.requests.lock().expect("not poisoned").push(Request {
        method: method.to_string(),
        target: uri
            .path_and_query()
            .map_or_else(|| uri.path().to_owned(), |p| p.to_string()),
        accept,
        status: resp.status().as_u16(),
    });
    resp
}
