//! A GitHub Actions cache service (v2) double on 127.0.0.1: what `ACTIONS_RESULTS_URL`
//! points at in a workflow run, for clients that set `ACTIONS_CACHE_SERVICE_V2`. No public
//! emulator exists; this follows the client side in actions/toolkit `packages/cache`:
//! `src/generated/results/api/v1/cache.ts` (messages), `src/internal/shared/cacheTwirpClient.ts`
//! (transport), `src/cache.ts` `restoreCacheV2`/`saveCacheV2` (the call sequence) and
//! `src/internal/uploadUtils.ts` (the blob upload), plus GitHub's docs "Restrictions for
//! accessing a cache", "Matching a cache key" and "Usage limits", and OpenDAL's ghac service
//! (what sccache runs). Parts: `twirp` (wire) and [`proto`] (messages) for the service,
//! `model` for what it decides, `blob` for the signed Azure-style blob URLs.
//!
//! The sequence a save makes: `CreateCacheEntry{key, version}` reserves (scope, key, version)
//! in the token's write ref and answers a signed upload URL; the client uploads to it (Put
//! Blob, or Put Block + Put Block List); `FinalizeCacheEntryUpload{key, size_bytes, version}`
//! commits it. A restore: `GetCacheEntryDownloadURL{key, restore_keys, version}` answers a
//! signed download URL (or `ok: false`), then a ranged GET.
//!
//! For scripts, `GET /_double/entries` lists [`GhaCache::entries`] and `GET /_double/requests`
//! [`GhaCache::calls`], as JSON.
//!
//! Departures from the service, on purpose: reservations never expire (a failed upload
//! blocks its key until the double stops), entries are never evicted for age (only for the
//! quota, oldest committed first), and blobs live in memory.

mod blob;
mod model;
pub mod proto;
mod twirp;

use std::sync::{Arc, Mutex};

use axum::extract::{DefaultBodyLimit, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde_json::{Value, json};

/// GitHub's per-repository cache limit.
pub const DEFAULT_QUOTA: u64 = 10 << 30;

/// One committed (visible) cache entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    /// The ref the entry was saved from, e.g. `refs/pull/7/merge`.
    pub scope_ref: String,
    pub key: String,
    pub version: String,
    pub size: u64,
    /// What Finalize answered; increases with each commit.
    pub entry_id: i64,
}

impl EntryInfo {
    fn to_json(&self) -> Value {
        json!({
            "scope_ref": self.scope_ref,
            "key": self.key,
            "version": self.version,
            "size": self.size,
            "entry_id": self.entry_id,
        })
    }
}

/// One request the double answered, in arrival order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// A twirp method (`CreateCacheEntry`, `FinalizeCacheEntryUpload`,
    /// `GetCacheEntryDownloadURL`, or whatever unknown name was called) or a blob operation
    /// (`PutBlob`, `PutBlock`, `PutBlockList`, `GetBlob`).
    pub method: String,
    /// The HTTP status answered.
    pub status: u16,
    /// The cache key the call was about, once known.
    pub key: Option<String>,
}

/// What the handlers share.
struct Shared {
    model: Mutex<model::Model>,
    calls: Mutex<Vec<Call>>,
    /// `http://127.0.0.1:P/`.
    base: String,
}

impl Shared {
    fn record(&self, method: &str, key: Option<String>, resp: Response) -> Response {
        self.calls.lock().unwrap().push(Call {
            method: method.to_owned(),
            status: resp.status().as_u16(),
            key,
        });
        resp
    }

    /// A signed URL of blob `id` with SAS-like query parameters, `sig` last; OpenDAL needs
    /// the shape `scheme://authority/<container>/<blob>?<query>`.
    fn blob_url(&self, id: u64, permissions: &str, sig: &str) -> String {
        format!(
            "{}blob/{}/{id}?sv=2022-11-02&se=2099-01-01&sr=b&sp={permissions}&sig={sig}",
            self.base,
            blob::CONTAINER
        )
    }
}

async fn double_entries(State(sh): State<Arc<Shared>>) -> Response {
    let all: Vec<Value> = sh
        .model
        .lock()
        .unwrap()
        .entries()
        .iter()
        .map(EntryInfo::to_json)
        .collect();
    axum::Json(all).into_response()
}

async fn double_requests(State(sh): State<Arc<Shared>>) -> Response {
    let all: Vec<Value> = sh
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|c| json!({"method": c.method, "status": c.status, "key": c.key}))
        .collect();
    axum::Json(all).into_response()
}

/// Options for [`GhaCache`].
#[derive(Clone, Debug)]
pub struct GhaCacheBuilder {
    quota: u64,
}

impl Default for GhaCacheBuilder {
    fn default() -> Self {
        GhaCacheBuilder {
            quota: DEFAULT_QUOTA,
        }
    }
}

impl GhaCacheBuilder {
    /// The repository-wide size cap in bytes ([`DEFAULT_QUOTA`] unless set).
    pub fn quota(mut self, bytes: u64) -> Self {
        self.quota = bytes;
        self
    }

    /// Serves on a free loopback port, on a thread of its own, until the value is dropped.
    pub fn start(self) -> GhaCache {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let shared = Arc::new(Shared {
            model: Mutex::new(model::Model::new(self.quota)),
            calls: Mutex::new(Vec::new()),
            base: url.clone(),
        });
        let app = axum::Router::new()
            .route(
                "/twirp/github.actions.results.api.v1.CacheService/{method}",
                post(twirp::handle),
            )
            .route("/blob/{container}/{id}", put(blob::put).get(blob::get))
            .route("/_double/entries", get(double_entries))
            .route("/_double/requests", get(double_requests))
            // Uploads are as large as the client makes them (toolkit: 128 MiB in one Put Blob).
            .layer(DefaultBodyLimit::disable())
            .with_state(shared.clone());
        let (tx, thread) = crate::serve_on_thread(listener, app);
        GhaCache {
            url,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }
}

/// The running double. See the module docs.
pub struct GhaCache {
    url: String,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl GhaCache {
    /// Starts a double with the default quota.
    pub fn start() -> GhaCache {
        GhaCacheBuilder::default().start()
    }

    pub fn builder() -> GhaCacheBuilder {
        GhaCacheBuilder::default()
    }

    /// `http://127.0.0.1:P/`, the value for `ACTIONS_RESULTS_URL` (with the trailing slash
    /// OpenDAL needs: it appends `twirp/...` to it).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Mints a runtime token that writes `write` (a ref such as `refs/pull/7/merge`, or
    /// nothing) and reads `read` in that order: GitHub's is the run's own ref, then the PR's
    /// base branch, then the default branch. Give the write ref among `read` to restore what
    /// the token saved.
    pub fn token(&self, write: Option<&str>, read: &[&str]) -> String {
        self.shared.model.lock().unwrap().mint(model::Grant {
            write: write.map(str::to_owned),
            read: read.iter().map(|r| (*r).to_owned()).collect(),
        })
    }

    /// Saves `data` under `key` through the service's own API (create, Put Blob, finalize),
    /// with `token`, as any job holding that token could, whatever client it runs: how a test
    /// plants an entry that no vouch gateway wrote.
    pub fn plant(&self, token: &str, key: &str, version: &str, data: &[u8]) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let c = reqwest::Client::new();
            let twirp = |method: &str, body: Value| {
                c.post(format!(
                    "{}twirp/github.actions.results.api.v1.CacheService/{method}",
                    self.url
                ))
                .bearer_auth(token)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
            };
            let created: Value = twirp(
                "CreateCacheEntry",
                serde_json::json!({"key": key, "version": version}),
            )
            .await
            .unwrap()
            .error_for_status()
            .unwrap()
            .json()
            .await
            .unwrap();
            let url = created["signed_upload_url"].as_str().unwrap().to_owned();
            c.put(url)
                .header("x-ms-blob-type", "BlockBlob")
                .body(data.to_vec())
                .send()
                .await
                .unwrap()
                .error_for_status()
                .unwrap();
            twirp(
                "FinalizeCacheEntryUpload",
                serde_json::json!({"key": key, "version": version, "size_bytes": data.len()}),
            )
            .await
            .unwrap()
            .error_for_status()
            .unwrap();
        });
    }

    /// The committed entries, oldest first.
    pub fn entries(&self) -> Vec<EntryInfo> {
        self.shared.model.lock().unwrap().entries()
    }

    /// Every request answered so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.shared.calls.lock().unwrap().clone()
    }

    /// How many requests of `method` (see [`Call::method`]) were answered.
    pub fn count(&self, method: &str) -> usize {
        self.shared
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.method == method)
            .count()
    }
}

impl Drop for GhaCache {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
