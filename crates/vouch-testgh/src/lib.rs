//! The project's own fake GitHub REST API on 127.0.0.1: serves a local artifact store (the
//! layout `vouch publish` writes) with the documented response shapes — pagination with
//! `Link`, 302 to a blob URL on another "host" (path), 410 for expired artifacts, 403/429 with
//! `retry-after`, 5xx — plus fault injection, and records what it saw. [`webhook`] is a
//! second, simpler double: an endpoint that records raw POSTs (FlexCI's webhook, `dispatches`).
//! [`cache`] is a third: the GitHub Actions cache service (v2) with its signed blob URLs.
//!
//! The store: `repository.json` (`GET /repos/{o}/{r}`), `workflows/<file>.json`,
//! `runs/<id>.json`, `artifacts/<id>.json` + `<id>.zip` (listed by name and by run), and
//! `pulls/<n>.json` (`GET pulls/{n}` and `GET pulls?head=owner:branch&state=`),
//! `pull-files/<n>.json` (`GET pulls/{n}/files`; none stored: an empty list) and
//! `permissions/<login>.json` (`GET collaborators/{login}/permission`; none stored: `none`).
//! The attestation store ([`attestations`]) and the comments posted
//! (`POST issues/{n}/comments`, [`FakeGithub::comments`]) and commit statuses
//! (`POST statuses/{sha}`, [`FakeGithub::statuses`]) are kept in memory.

pub mod attestations;
pub mod cache;
pub mod pypi;
pub mod webhook;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Path as AxPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

#[derive(Default)]
pub struct Faults {
    /// Return 500 this many times on the runs endpoint before succeeding.
    pub run_500s: AtomicU32,
    /// Return 429 with `retry-after: 1` once on the runs endpoint.
    pub run_429_once: AtomicBool,
    /// Artifact ids whose download answers 410.
    pub expired: Mutex<Vec<u64>>,
    /// Cut the blob download in the middle.
    pub truncate: AtomicBool,
    /// Artifacts per page of the list endpoint.
    pub page_size: AtomicU32,
    /// List every artifact with this `digest` instead of its own (the zip served is unchanged).
    pub listed_digest: Mutex<Option<String>>,
    /// Send the download's 302 to this base URL instead of the server's own, e.g.
    /// `http://0.0.0.0:PORT`: plain http on a host that is not loopback by name, which still
    /// reaches this server, so a client that fails to refuse it really downloads.
    pub blob_base: Mutex<Option<String>>,
    /// The owner is a user: the organization bulk listing answers 404.
    pub owner_is_user: AtomicBool,
    /// Attestation blob URLs answer 403, as expired SAS URLs do.
    pub blobs_expired: AtomicBool,
}

pub struct FakeGithub {
    pub url: String,
    pub store: PathBuf,
    pub token: String,
    pub faults: Arc<Faults>,
    api_calls: Arc<AtomicU64>,
    blob_saw_auth: Arc<AtomicBool>,
    unauthorized: Arc<AtomicU64>,
    st: St,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Clone)]
struct St {
    store: PathBuf,
    token: String,
    base: String,
    faults: Arc<Faults>,
    api_calls: Arc<AtomicU64>,
    blob_saw_auth: Arc<AtomicBool>,
    unauthorized: Arc<AtomicU64>,
    attestations: Arc<Mutex<Vec<attestations::Recorded>>>,
    attestation_lists: Arc<AtomicU64>,
    attestation_bulks: Arc<AtomicU64>,
    comments: Arc<Mutex<Vec<Comment>>>,
    statuses: Arc<Mutex<Vec<CommitStatus>>>,
}

/// A commit status posted with `POST /repos/{o}/{r}/statuses/{sha}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitStatus {
    pub repo: String,
    pub sha: String,
    /// The request's fields (`state`, `context`, `description`, `target_url`).
    pub fields: Value,
    /// The token it was posted with.
    pub token: String,
}

/// A comment posted with `POST /repos/{o}/{r}/issues/{n}/comments`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    pub repo: String,
    pub issue: u64,
    pub body: String,
}

fn read(st: &St, rel: &str) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(st.store.join(rel)).ok()?).ok()
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(
            json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}),
        ),
    )
        .into_response()
}

/// Counts the call and checks the token; `None` means go on.
fn api_gate(st: &St, headers: &HeaderMap) -> Option<Response> {
    st.api_calls.fetch_add(1, Ordering::Relaxed);
    let ok = headers.get("authorization").and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {}", st.token));
    let versioned = headers.get("x-github-api-version").is_some();
    if !ok || !versioned {
        st.unauthorized.fetch_add(1, Ordering::Relaxed);
        return Some(
            (
                StatusCode::UNAUTHORIZED,
                axum::Json(json!({"message": "Bad credentials"})),
            )
                .into_response(),
        );
    }
    None
}

async fn workflow(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((_o, _r, file)): AxPath<(String, String, String)>,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    read(&st, &format!("workflows/{file}.json"))
        .map_or_else(not_found, |v| axum::Json(v).into_response())
}

/// Every JSON object in the store's directory `dir`, in no order.
fn read_all(st: &St, dir: &str) -> Vec<Value> {
    std::fs::read_dir(st.store.join(dir))
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "json")
                .then(|| serde_json::from_str::<Value>(&std::fs::read_to_string(p).ok()?).ok())?
        })
        .collect()
}

/// The stored artifacts as a listing shows them: expired ones are no longer listed (since
/// 2026-09-24), newest id first, with the faults applied.
fn listed_artifacts(st: &St) -> Vec<Value> {
    let mut all: Vec<Value> = read_all(st, "artifacts")
        .into_iter()
        .filter(|a| a["expired"] != true)
        .map(|mut a| {
            if let Some(d) = st.faults.listed_digest.lock().unwrap().as_ref() {
                a["digest"] = json!(d);
            }
            a
        })
        .collect();
    all.sort_by_key(|a| std::cmp::Reverse(a["id"].as_u64()));
    all
}

/// One page (`?page=`, the fault's page size) of `all` under `key`, with `Link: rel="next"`
/// to `path?<keep>&per_page=..&page=..` when more follow.
fn page_of(
    st: &St,
    all: Vec<Value>,
    key: Option<&str>,
    path: &str,
    keep: &str,
    q: &HashMap<String, String>,
) -> Response {
    let size = st.faults.page_size.load(Ordering::Relaxed).max(1) as usize;
    let page: usize = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
    let chunk: Vec<Value> = all
        .iter()
        .skip((page - 1) * size)
        .take(size)
        .cloned()
        .collect();
    let body = match key {
        Some(k) => json!({"total_count": all.len(), k: chunk}),
        None => Value::Array(chunk),
    };
    let mut resp = axum::Json(body).into_response();
    if page * size < all.len() {
        let link = format!(
            "<{}{path}?{keep}per_page={size}&page={}>; rel=\"next\"",
            st.base,
            page + 1
        );
        resp.headers_mut().insert("link", link.parse().unwrap());
    }
    resp
}

async fn artifacts(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((o, r)): AxPath<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    let all: Vec<Value> = listed_artifacts(&st)
        .into_iter()
        .filter(|a| q.get("name").is_none_or(|n| a["name"] == n.as_str()))
        .collect();
    let keep = q
        .get("name")
        .map(|n| format!("name={n}&"))
        .unwrap_or_default();
    page_of(
        &st,
        all,
        Some("artifacts"),
        &format!("/repos/{o}/{r}/actions/artifacts"),
        &keep,
        &q,
    )
}

async fn run_artifacts(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((o, r, id)): AxPath<(String, String, u64)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    if !st.store.join(format!("runs/{id}.json")).is_file() {
        return not_found();
    }
    let all: Vec<Value> = listed_artifacts(&st)
        .into_iter()
        .filter(|a| a["workflow_run"]["id"].as_u64() == Some(id))
        .collect();
    page_of(
        &st,
        all,
        Some("artifacts"),
        &format!("/repos/{o}/{r}/actions/runs/{id}/artifacts"),
        "",
        &q,
    )
}

async fn repository(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((_o, _r)): AxPath<(String, String)>,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    read(&st, "repository.json").map_or_else(not_found, |v| axum::Json(v).into_response())
}

async fn pull(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((_o, _r, n)): AxPath<(String, String, u64)>,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    read(&st, &format!("pulls/{n}.json")).map_or_else(not_found, |v| axum::Json(v).into_response())
}

/// `GET pulls?head=owner:branch&state=open|closed|all`, as documented: `head` is the head's
/// owner login and branch name; `state` defaults to `open`.
async fn pulls(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((o, r)): AxPath<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    let state = q.get("state").map_or("open", String::as_str);
    let mut all: Vec<Value> = read_all(&st, "pulls")
        .into_iter()
        .filter(|p| state == "all" || p["state"] == state)
        .filter(|p| {
            q.get("head").is_none_or(|h| {
                let head = &p["head"];
                let label = format!(
                    "{}:{}",
                    head["repo"]["owner"]["login"].as_str().unwrap_or(""),
                    head["ref"].as_str().unwrap_or("")
                );
                label == *h
            })
        })
        .collect();
    all.sort_by_key(|p| std::cmp::Reverse(p["number"].as_u64()));
    let mut keep = format!("state={state}&");
    if let Some(h) = q.get("head") {
        keep.push_str(&format!("head={h}&"));
    }
    page_of(&st, all, None, &format!("/repos/{o}/{r}/pulls"), &keep, &q)
}

/// `GET actions/workflows/{id}/runs?event=&head_sha=&status=`: the store's runs of that
/// workflow id, filtered as documented (`status=success` means completed and succeeded).
async fn workflow_runs(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((o, r, id)): AxPath<(String, String, u64)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    let mut all: Vec<Value> = read_all(&st, "runs")
        .into_iter()
        .filter(|run| run["workflow_id"].as_u64() == Some(id))
        .filter(|run| q.get("event").is_none_or(|e| run["event"] == e.as_str()))
        .filter(|run| {
            q.get("head_sha")
                .is_none_or(|h| run["head_sha"] == h.as_str())
        })
        .filter(|run| match q.get("status").map(String::as_str) {
            Some("success") => run["status"] == "completed" && run["conclusion"] == "success",
            Some(other) => run["status"] == other || run["conclusion"] == other,
            None => true,
        })
        .collect();
    all.sort_by_key(|run| std::cmp::Reverse(run["id"].as_u64()));
    let mut keep = String::new();
    for k in ["event", "head_sha", "status"] {
        if let Some(v) = q.get(k) {
            keep.push_str(&format!("{k}={v}&"));
        }
    }
    page_of(
        &st,
        all,
        Some("workflow_runs"),
        &format!("/repos/{o}/{r}/actions/workflows/{id}/runs"),
        &keep,
        &q,
    )
}

async fn run(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((_o, _r, id)): AxPath<(String, String, u64)>,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    if st.faults.run_500s.load(Ordering::Relaxed) > 0 {
        st.faults.run_500s.fetch_sub(1, Ordering::Relaxed);
        return (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response();
    }
    if st.faults.run_429_once.swap(false, Ordering::Relaxed) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            axum::Json(json!({"message": "rate limited"})),
        )
            .into_response();
    }
    read(&st, &format!("runs/{id}.json")).map_or_else(not_found, |v| axum::Json(v).into_response())
}

/// `GET pulls/{n}/files`: `pull-files/<n>.json` (an array), paginated; empty when not stored.
async fn pull_files(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((o, r, n)): AxPath<(String, String, u64)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    let all = read(&st, &format!("pull-files/{n}.json"))
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default();
    page_of(
        &st,
        all,
        None,
        &format!("/repos/{o}/{r}/pulls/{n}/files"),
        "",
        &q,
    )
}

/// `GET collaborators/{user}/permission`: `permissions/<user>.json`, else `none` (what GitHub
/// answers for a user who is no collaborator, however they are associated).
async fn permission(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((_o, _r, user)): AxPath<(String, String, String)>,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    let v = read(&st, &format!("permissions/{user}.json")).unwrap_or_else(
        || json!({"permission": "none", "role_name": "none", "user": {"login": user}}),
    );
    axum::Json(v).into_response()
}

/// `POST issues/{n}/comments` with `{"body": ...}`: kept, answered 201 as documented.
async fn create_comment(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((o, r, n)): AxPath<(String, String, u64)>,
    body: axum::body::Bytes,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    let Some(text) = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["body"].as_str().map(str::to_owned))
    else {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            axum::Json(json!({"message": "Invalid request: body is required"})),
        )
            .into_response();
    };
    let mut comments = st.comments.lock().unwrap();
    comments.push(Comment {
        repo: format!("{o}/{r}"),
        issue: n,
        body: text.clone(),
    });
    let id = 10_000 + comments.len() as u64;
    (
        StatusCode::CREATED,
        axum::Json(json!({"id": id, "body": text})),
    )
        .into_response()
}

/// `POST statuses/{sha}`: kept with the token that posted it, answered 201. Any bearer token
/// is accepted here (a GitHub App's installation token is not the double's API token).
async fn create_status(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((o, r, sha)): AxPath<(String, String, String)>,
    body: axum::body::Bytes,
) -> Response {
    st.api_calls.fetch_add(1, Ordering::Relaxed);
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_owned();
    let Ok(fields) = serde_json::from_slice::<Value>(&body) else {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            axum::Json(json!({"message": "Invalid request"})),
        )
            .into_response();
    };
    st.statuses.lock().unwrap().push(CommitStatus {
        repo: format!("{o}/{r}"),
        sha,
        fields: fields.clone(),
        token,
    });
    (StatusCode::CREATED, axum::Json(fields)).into_response()
}

async fn download(
    State(st): State<St>,
    headers: HeaderMap,
    AxPath((_o, _r, id, _fmt)): AxPath<(String, String, u64, String)>,
) -> Response {
    if let Some(r) = api_gate(&st, &headers) {
        return r;
    }
    if st.faults.expired.lock().unwrap().contains(&id) {
        return (
            StatusCode::GONE,
            axum::Json(json!({"message": "Artifact has expired"})),
        )
            .into_response();
    }
    if !st.store.join(format!("artifacts/{id}.zip")).is_file() {
        return not_found();
    }
    let base = st
        .faults
        .blob_base
        .lock()
        .unwrap()
        .clone()
        .unwrap_or_else(|| st.base.clone());
    (
        StatusCode::FOUND,
        [(
            "location",
            format!("{base}/blob/{id}?sig=blob-signature-secret&se=2099"),
        )],
    )
        .into_response()
}

async fn blob(State(st): State<St>, headers: HeaderMap, AxPath(id): AxPath<u64>) -> Response {
    if let Some(auth) = headers.get("authorization") {
        // The echo a hostile blob host would do: the test fails if it ever gets here.
        st.blob_saw_auth.store(true, Ordering::Relaxed);
        return (
            StatusCode::BAD_REQUEST,
            format!("echo: {}", auth.to_str().unwrap_or("")),
        )
            .into_response();
    }
    let Ok(data) = std::fs::read(st.store.join(format!("artifacts/{id}.zip"))) else {
        return not_found();
    };
    if st.faults.truncate.load(Ordering::Relaxed) {
        let half = bytes::Bytes::from(data[..data.len() / 2].to_vec());
        let stream = futures_util::stream::iter(vec![
            Ok::<_, std::io::Error>(half),
            Err(std::io::Error::other("connection reset")),
        ]);
        return (
            StatusCode::OK,
            [("content-length", data.len().to_string())],
            Body::from_stream(stream),
        )
            .into_response();
    }
    (StatusCode::OK, data).into_response()
}

impl FakeGithub {
    pub fn start(store: PathBuf, token: &str) -> FakeGithub {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let faults = Arc::new(Faults {
            page_size: AtomicU32::new(30),
            ..Default::default()
        });
        let st = St {
            store: store.clone(),
            token: token.to_owned(),
            base: url.clone(),
            faults: faults.clone(),
            api_calls: Arc::new(AtomicU64::new(0)),
            blob_saw_auth: Arc::new(AtomicBool::new(false)),
            unauthorized: Arc::new(AtomicU64::new(0)),
            attestations: Arc::default(),
            attestation_lists: Arc::default(),
            attestation_bulks: Arc::default(),
            comments: Arc::default(),
            statuses: Arc::default(),
        };
        let (api_calls, blob_saw_auth, unauthorized) = (
            st.api_calls.clone(),
            st.blob_saw_auth.clone(),
            st.unauthorized.clone(),
        );
        let app = axum::Router::new()
            .route("/repos/{o}/{r}", get(repository))
            .route("/repos/{o}/{r}/pulls", get(pulls))
            .route("/repos/{o}/{r}/pulls/{n}", get(pull))
            .route("/repos/{o}/{r}/pulls/{n}/files", get(pull_files))
            .route(
                "/repos/{o}/{r}/collaborators/{user}/permission",
                get(permission),
            )
            .route(
                "/repos/{o}/{r}/issues/{n}/comments",
                axum::routing::post(create_comment),
            )
            .route(
                "/repos/{o}/{r}/statuses/{sha}",
                axum::routing::post(create_status),
            )
            .route(
                "/repos/{o}/{r}/actions/runs/{id}/artifacts",
                get(run_artifacts),
            )
            .route("/repos/{o}/{r}/actions/workflows/{file}", get(workflow))
            .route(
                "/repos/{o}/{r}/actions/workflows/{id}/runs",
                get(workflow_runs),
            )
            .route("/repos/{o}/{r}/actions/artifacts", get(artifacts))
            .route("/repos/{o}/{r}/actions/runs/{id}", get(run))
            .route("/repos/{o}/{r}/actions/artifacts/{id}/{fmt}", get(download))
            .route("/blob/{id}", get(blob))
            .route(
                "/repos/{o}/{r}/attestations",
                axum::routing::post(attestations::create),
            )
            .route(
                "/repos/{o}/{r}/attestations/{digest}",
                get(attestations::list),
            )
            .route(
                "/{kind}/{owner}/attestations/bulk-list",
                axum::routing::post(attestations::bulk),
            )
            .route("/attestation-blobs/{name}", get(attestations::blob))
            .with_state(st.clone());
        let (tx, thread) = serve_on_thread(listener, app);
        FakeGithub {
            url,
            store,
            token: token.to_owned(),
            faults,
            api_calls,
            blob_saw_auth,
            unauthorized,
            st,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    pub fn api_calls(&self) -> u64 {
        self.api_calls.load(Ordering::Relaxed)
    }

    pub fn blob_saw_auth(&self) -> bool {
        self.blob_saw_auth.load(Ordering::Relaxed)
    }

    pub fn unauthorized(&self) -> u64 {
        self.unauthorized.load(Ordering::Relaxed)
    }

    /// Records `bundle` in `repo`'s attestation store as a POST would (another repository's
    /// attestation, a decoy); its id.
    pub fn record_attestation(&self, repo: &str, bundle: Value) -> u64 {
        attestations::record(&self.st, repo, bundle).expect("a bundle with a DSSE statement")
    }

    /// Every attestation recorded so far, by POST or by [`Self::record_attestation`].
    pub fn attestations(&self) -> Vec<attestations::Recorded> {
        self.st.attestations.lock().unwrap().clone()
    }

    /// Every comment posted so far, oldest first.
    pub fn comments(&self) -> Vec<Comment> {
        self.st.comments.lock().unwrap().clone()
    }

    /// Every commit status posted so far, oldest first.
    pub fn statuses(&self) -> Vec<CommitStatus> {
        self.st.statuses.lock().unwrap().clone()
    }

    /// Per-digest listings and bulk listings answered so far.
    pub fn attestation_lookups(&self) -> (u64, u64) {
        (
            self.st.attestation_lists.load(Ordering::Relaxed),
            self.st.attestation_bulks.load(Ordering::Relaxed),
        )
    }
}

impl Drop for FakeGithub {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves `app` on `listener` from a thread of its own until the sender is used or dropped:
/// every double here runs this way, so a test's own runtime never has to host it.
pub(crate) fn serve_on_thread(
    listener: std::net::TcpListener,
    app: axum::Router,
) -> (
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(l, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await
                .unwrap();
        });
    });
    (tx, thread)
}
