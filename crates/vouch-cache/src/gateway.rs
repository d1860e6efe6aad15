//! The loopback gateway sccache (WebDAV) and ccache (HTTP remote storage) talk to. GET/HEAD
//! fall through the policy's read scopes in order; PUT goes to the write scope only; anything
//! else is refused.
//!
//! The path below the secret is the store key itself, so each client lives in its own
//! namespace inside a scope: `sccache/…`, `ccache/…`, and `kv/<key>`, the plain key/value
//! endpoint for anything that is neither (CuPy's kernel cache,
//! `pyproject-templates/cupy/kernel_cache/`). A kv key therefore lands at
//! `<scope>/@/kv/<key>` and can never read or overwrite a compiler cache's entry, whatever the
//! key is. Every namespace gets the same scopes, key rule ([`check_key`]), size cap and
//! counters, because it is the same handler: there is no per-namespace code to drift apart.
//!
//! Every entry is signed ([`crate::entry`]): a PUT is signed with the build's [`EntrySigner`]
//! (refused without one), and a read serves only an entry whose signature verifies with the
//! build's [`EntryVerifier`]; every other stored entry is a miss, counted as
//! `unauthenticated`, never an error.
//!
//! Loopback is not a fence on a shared host: any local user can connect. So every URL the
//! gateway hands out starts with a random per-run secret path segment, and a request without
//! it is refused before it reaches the store.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::entry::{self, EntryKeys};
use crate::store::{AnyStore, CacheStore, StoreError, check_key};
use crate::{Scope, ScopePolicy};

/// Entries larger than this are refused (413): a cache is not a file store.
pub const DEFAULT_MAX_ENTRY: usize = 256 << 20;

/// The per-run secret: the first path segment of every request the gateway serves.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// 128 random bits, as 32 lowercase hex digits.
    pub fn random() -> Result<Secret, GatewayError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(GatewayError::Random)?;
        Ok(Secret(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Compares without an early exit, so response timing says nothing about how much of a
    /// guess was right.
    fn matches(&self, candidate: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), candidate.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    /// The rest of `path` (empty or starting with `/`) when its first segment is the secret.
    fn strip<'p>(&self, path: &'p str) -> Option<&'p str> {
        let rest = path.strip_prefix('/')?;
        let (first, rest) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        self.matches(first).then_some(rest)
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

#[derive(Default)]
struct Layer {
    hits: AtomicU64,
    bytes: AtomicU64,
}

/// Counters, per read layer and overall.
pub struct Counters {
    scopes: Vec<Scope>,
    layers: Vec<Layer>,
    misses: AtomicU64,
    unauthenticated: AtomicU64,
    writes: AtomicU64,
    bytes_written: AtomicU64,
    refused_writes: AtomicU64,
    refused_other: AtomicU64,
    /// Requests without the secret.
    unauthorized: AtomicU64,
    too_large: AtomicU64,
    errors: AtomicU64,
}

#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct LayerStats {
    pub scope: String,
    pub hits: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct GatewayStats {
    pub store: String,
    pub write_scope: Option<String>,
    pub layers: Vec<LayerStats>,
    pub hits: u64,
    pub misses: u64,
    /// Entries found but not served: no valid tag for this build (planted, replayed, written
    /// without the key, or by an older vouch). Each one is also a miss, or a hit lower down.
    #[serde(default)]
    pub unauthenticated: u64,
    pub writes: u64,
    pub bytes_written: u64,
    pub refused_writes: u64,
    pub refused_other: u64,
    /// Requests refused for a missing or wrong secret (another local user, or a stale URL).
    #[serde(default)]
    pub unauthorized: u64,
    pub too_large: u64,
    pub errors: u64,
}

impl GatewayStats {
    pub fn hit_rate(&self) -> Option<f64> {
        let total = self.hits + self.misses;
        (total > 0).then(|| self.hits as f64 / total as f64)
    }
}

struct Gateway<S> {
    store: S,
    policy: ScopePolicy,
    keys: EntryKeys,
    secret: Secret,
    counters: Counters,
    max_entry: usize,
}

impl<S: CacheStore> Gateway<S> {
    fn new(
        store: S,
        policy: ScopePolicy,
        keys: EntryKeys,
        max_entry: usize,
        secret: Secret,
    ) -> Self {
        let counters = Counters {
            layers: policy.read.iter().map(|_| Layer::default()).collect(),
            scopes: policy.read.clone(),
            misses: AtomicU64::new(0),
            unauthenticated: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
            refused_writes: AtomicU64::new(0),
            refused_other: AtomicU64::new(0),
            unauthorized: AtomicU64::new(0),
            too_large: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        };
        Gateway {
            store,
            policy,
            keys,
            secret,
            counters,
            max_entry,
        }
    }

    fn stats(&self) -> GatewayStats {
        let c = &self.counters;
        let layers: Vec<LayerStats> = c
            .scopes
            .iter()
            .zip(&c.layers)
            .map(|(s, l)| LayerStats {
                scope: s.to_string(),
                hits: l.hits.load(Ordering::Relaxed),
                bytes: l.bytes.load(Ordering::Relaxed),
            })
            .collect();
        GatewayStats {
            store: self.store.describe(),
            write_scope: self.policy.write.as_ref().map(|s| s.to_string()),
            hits: layers.iter().map(|l| l.hits).sum(),
            layers,
            misses: c.misses.load(Ordering::Relaxed),
            unauthenticated: c.unauthenticated.load(Ordering::Relaxed),
            writes: c.writes.load(Ordering::Relaxed),
            bytes_written: c.bytes_written.load(Ordering::Relaxed),
            refused_writes: c.refused_writes.load(Ordering::Relaxed),
            refused_other: c.refused_other.load(Ordering::Relaxed),
            unauthorized: c.unauthorized.load(Ordering::Relaxed),
            too_large: c.too_large.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
        }
    }

    fn store_error(&self, e: StoreError) -> Response {
        self.counters.errors.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(error = %e, "cache store error");
        (StatusCode::BAD_GATEWAY, "cache store error").into_response()
    }

    async fn handle(&self, method: Method, uri: Uri, body: Body) -> Response {
        // First, before any store access: reads would leak entries (and whether a key
        // exists), writes would poison them.
        let Some(path) = self.secret.strip(uri.path()) else {
            self.counters.unauthorized.fetch_add(1, Ordering::Relaxed);
            tracing::info!(%method, "refused a request without the gateway's secret");
            return (StatusCode::FORBIDDEN, "missing or wrong gateway secret").into_response();
        };
        // Behind the secret too: the counters name the store and the scopes, and their
        // changes show another user what this build compiles.
        if path == "/_vouch/stats" && method == Method::GET {
            return axum::Json(self.stats()).into_response();
        }
        let key = path.trim_start_matches('/');
        if method == Method::GET || method == Method::HEAD {
            if check_key(key).is_err() {
                return StatusCode::NOT_FOUND.into_response();
            }
            match self.lookup(key).await {
                Ok(Some((i, data))) => {
                    let layer = &self.counters.layers[i];
                    layer.hits.fetch_add(1, Ordering::Relaxed);
                    layer.bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
                    tracing::debug!(scope = %self.policy.read[i], key, "hit");
                    return (StatusCode::OK, data).into_response();
                }
                Ok(None) => {}
                Err(e) => return self.store_error(e),
            }
            self.counters.misses.fetch_add(1, Ordering::Relaxed);
            return StatusCode::NOT_FOUND.into_response();
        }
        let writable = self.policy.write.as_ref();
        if method == Method::PUT {
            let Some(scope) = writable else {
                self.counters.refused_writes.fetch_add(1, Ordering::Relaxed);
                tracing::info!(key, "refused write: this build may not write the cache");
                return (StatusCode::FORBIDDEN, "this build's scope is read-only").into_response();
            };
            if check_key(key).is_err() {
                self.counters.refused_other.fetch_add(1, Ordering::Relaxed);
                return (StatusCode::BAD_REQUEST, "bad key").into_response();
            }
            let data = match axum::body::to_bytes(body, self.max_entry).await {
                Ok(d) => d,
                Err(_) => {
                    self.counters.too_large.fetch_add(1, Ordering::Relaxed);
                    return StatusCode::PAYLOAD_TOO_LARGE.into_response();
                }
            };
            let Some(signer) = &self.keys.signer else {
                // Unsigned, it would never be served: a build without the key writes nothing.
                self.counters.refused_writes.fetch_add(1, Ordering::Relaxed);
                return (
                    StatusCode::FORBIDDEN,
                    "this build cannot sign cache entries",
                )
                    .into_response();
            };
            let len = data.len() as u64;
            let data = entry::frame(signer, scope, key, &data);
            return match self.store.put(scope, key, data).await {
                Ok(()) => {
                    self.counters.writes.fetch_add(1, Ordering::Relaxed);
                    self.counters
                        .bytes_written
                        .fetch_add(len, Ordering::Relaxed);
                    tracing::debug!(%scope, key, len, "write");
                    StatusCode::CREATED.into_response()
                }
                Err(e) => self.store_error(e),
            };
        }
        // WebDAV clients create parent collections before a PUT; ours are virtual.
        if method.as_str() == "MKCOL" && writable.is_some() {
            return StatusCode::CREATED.into_response();
        }
        // sccache's WebDAV client stats the endpoint (and entries) before it trusts it.
        if method.as_str() == "PROPFIND" {
            return self.propfind(uri.path(), key).await;
        }
        self.counters.refused_other.fetch_add(1, Ordering::Relaxed);
        tracing::info!(%method, path, "refused request");
        StatusCode::METHOD_NOT_ALLOWED.into_response()
    }
}

fn multistatus(href: &str, prop: &str) -> Response {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\"><D:response><D:href>{href}</D:href><D:propstat><D:prop>{prop}<D:getlastmodified>Mon, 01 Jan 2024 00:00:00 GMT</D:getlastmodified></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response></D:multistatus>"
    );
    (
        StatusCode::MULTI_STATUS,
        [("content-type", "application/xml; charset=utf-8")],
        body,
    )
        .into_response()
}

impl<S: CacheStore> Gateway<S> {
    /// Depth-0 PROPFIND: collections always exist (they are virtual); an entry exists when a
    /// read scope has it.
    async fn propfind(&self, path: &str, key: &str) -> Response {
        if path.ends_with('/') {
            return multistatus(path, "<D:resourcetype><D:collection/></D:resourcetype>");
        }
        if check_key(key).is_err() {
            return StatusCode::NOT_FOUND.into_response();
        }
        match self.lookup(key).await {
            Ok(Some((_, data))) => multistatus(
                path,
                &format!(
                    "<D:resourcetype/><D:getcontentlength>{}</D:getcontentlength>",
                    data.len()
                ),
            ),
            Ok(None) => StatusCode::NOT_FOUND.into_response(),
            Err(e) => self.store_error(e),
        }
    }

    /// The first entry under `key` in the read scopes, in order, that this build may use, with
    /// its layer. An entry this build may not use (see [`entry::open`]) is counted and passed
    /// over, so a planted entry in an upper layer cannot hide a good one below it. A read, not
    /// a stat, even for HEAD: whether an entry exists says nothing about whether it verifies.
    async fn lookup(&self, key: &str) -> Result<Option<(usize, bytes::Bytes)>, StoreError> {
        for (i, scope) in self.policy.read.iter().enumerate() {
            let Some(stored) = self.store.get(scope, key).await? else {
                continue;
            };
            match entry::open(self.keys.verifier.as_ref(), scope, key, stored) {
                Ok(data) => return Ok(Some((i, data))),
                Err(why) => {
                    self.counters
                        .unauthenticated
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(%scope, key, ?why, "passed over a cache entry this build cannot authenticate");
                }
            }
        }
        Ok(None)
    }
}

async fn handler<S: CacheStore>(
    State(g): State<Arc<Gateway<S>>>,
    method: Method,
    uri: Uri,
    body: Body,
) -> Response {
    g.handle(method, uri, body).await
}

/// The gateway as a router: it serves only paths under `/<secret>/`.
pub fn router<S: CacheStore>(
    store: S,
    policy: ScopePolicy,
    keys: EntryKeys,
    max_entry: usize,
    secret: Secret,
) -> (
    axum::Router,
    impl Fn() -> GatewayStats + Send + Sync + 'static,
) {
    let g = Arc::new(Gateway::new(store, policy, keys, max_entry, secret));
    let stats_g = g.clone();
    let router = axum::Router::new().fallback(handler::<S>).with_state(g);
    (router, move || stats_g.stats())
}

/// A gateway running on its own thread (for `vouch build --cache`): stops when dropped.
pub struct RunningGateway {
    /// `http://127.0.0.1:<port>/<secret>`: the only URL it serves. Hand it to the compiler
    /// cache's environment, never to a log or a command line.
    pub url: String,
    stats: Box<dyn Fn() -> GatewayStats + Send + Sync>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(
        "listen address {addr} is not loopback; the gateway listens on 127.0.0.0/8 or [::1] only"
    )]
    NotLoopback { addr: String },
    #[error("cannot listen on {addr}")]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the cache store")]
    Store(#[from] StoreError),
    #[error("cannot start the gateway runtime")]
    Runtime(#[source] std::io::Error),
    #[error("cannot draw the gateway's random secret")]
    Random(#[source] getrandom::Error),
}

impl RunningGateway {
    pub fn start(
        store_spec: &crate::StoreSpec,
        policy: ScopePolicy,
        keys: EntryKeys,
        listen: SocketAddr,
        max_entry: usize,
    ) -> Result<RunningGateway, GatewayError> {
        // Anything else would serve the cache (and its write scope) to the network.
        if !listen.ip().is_loopback() {
            return Err(GatewayError::NotLoopback {
                addr: listen.to_string(),
            });
        }
        let secret = Secret::random()?;
        let listener =
            std::net::TcpListener::bind(listen).map_err(|source| GatewayError::Listen {
                addr: listen.to_string(),
                source,
            })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| GatewayError::Listen {
                addr: listen.to_string(),
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| GatewayError::Listen {
                addr: listen.to_string(),
                source,
            })?;
        // One thread: requests are tiny and latency-bound, and cross-thread wake-ups cost
        // more than they save on a machine whose cores are busy compiling.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(GatewayError::Runtime)?;
        let store = rt.block_on(AnyStore::open(store_spec))?;
        let url = format!("http://{addr}/{}", secret.as_str());
        let (router, stats) = router(store, policy, keys, max_entry, secret);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            rt.block_on(async move {
                use axum::serve::ListenerExt as _;
                // Every compile waits on small request/response pairs: no Nagle delay.
                let listener = tokio::net::TcpListener::from_std(listener)
                    .expect("listener from a bound socket")
                    .tap_io(|tcp| {
                        let _ = tcp.set_nodelay(true);
                    });
                let _ = axum::serve(listener, router)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
            });
        });
        Ok(RunningGateway {
            url,
            stats: Box::new(stats),
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    pub fn stats(&self) -> GatewayStats {
        (self.stats)()
    }
}

impl Drop for RunningGateway {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Trigger;

    /// Entries in memory under `<scope>/<key>`: exactly the keys the gateway asked for.
    #[derive(Default)]
    struct MemStore(std::sync::Mutex<std::collections::BTreeMap<String, bytes::Bytes>>);

    impl MemStore {
        fn keys(&self) -> Vec<String> {
            self.0.lock().unwrap().keys().cloned().collect()
        }
    }

    impl CacheStore for MemStore {
        async fn get(&self, scope: &Scope, key: &str) -> Result<Option<bytes::Bytes>, StoreError> {
            Ok(self
                .0
                .lock()
                .unwrap()
                .get(&format!("{scope}/{key}"))
                .cloned())
        }

        async fn put(
            &self,
            scope: &Scope,
            key: &str,
            data: bytes::Bytes,
        ) -> Result<(), StoreError> {
            self.0
                .lock()
                .unwrap()
                .insert(format!("{scope}/{key}"), data);
            Ok(())
        }

        fn describe(&self) -> String {
            "memory".into()
        }
    }

    fn policy(event: &str, git_ref: &str, pr: Option<u64>) -> ScopePolicy {
        ScopePolicy::for_trigger(&Trigger {
            event: event.into(),
            git_ref: git_ref.into(),
            pr,
            base_ref: pr.map(|_| "main".into()),
            default_branch: "main".into(),
            from_fork: false,
        })
        .unwrap()
    }

    fn pr7() -> ScopePolicy {
        policy("pull_request", "refs/pull/7/merge", Some(7))
    }

    fn trusted() -> ScopePolicy {
        policy("push", "refs/heads/main", None)
    }

    fn seal(b: u8) -> vouch_fs::seal::SealKey {
        vouch_fs::seal::SealKey::new(&[b; 32]).unwrap()
    }

    fn signer(b: u8) -> entry::EntrySigner {
        entry::EntrySigner::from_seal_key(&seal(b))
    }

    /// Trusted builds hold the signer (seal key 1); pull-request builds only its public half.
    fn gateway(policy: ScopePolicy, store: MemStore, max_entry: usize) -> Gateway<MemStore> {
        let keys = if policy.write.is_some() {
            EntryKeys::signing(&seal(1), None).unwrap()
        } else {
            EntryKeys::verifying(signer(1).verifier())
        };
        Gateway::new(store, policy, keys, max_entry, Secret("ab12".into()))
    }

    /// A stored entry as a gateway holding seal key `k` writes it.
    fn framed(k: u8, scope: &str, key: &str, payload: &str) -> bytes::Bytes {
        entry::frame(&signer(k), &scope.parse().unwrap(), key, payload.as_bytes())
    }

    async fn call(
        g: &Gateway<MemStore>,
        method: Method,
        path: &str,
        body: &str,
    ) -> (u16, bytes::Bytes) {
        let r = g
            .handle(method, path.parse().unwrap(), Body::from(body.to_owned()))
            .await;
        let status = r.status().as_u16();
        (
            status,
            axum::body::to_bytes(r.into_body(), usize::MAX)
                .await
                .unwrap(),
        )
    }

    const KERNEL: &str = "kv/cupy-kernels/0f1e/linux-64/CUDA_13_0/3a7b.cubin";

    #[tokio::test]
    async fn kv_put_lands_in_the_write_scope_under_kv() {
        let g = gateway(trusted(), MemStore::default(), 1024);
        let path = format!("/ab12/{KERNEL}");
        assert_eq!(call(&g, Method::PUT, &path, "cubin").await.0, 201);
        assert_eq!(g.store.keys(), [format!("branch/main/{KERNEL}")]);
        assert_eq!(
            call(&g, Method::GET, &path, "").await,
            (200, "cubin".into())
        );
        assert_eq!(call(&g, Method::HEAD, &path, "").await.0, 200);
        // Writing a key again is not an error (the first entry stays; reads check it).
        assert_eq!(call(&g, Method::PUT, &path, "cubin").await.0, 201);
        let st = g.stats();
        assert_eq!((st.writes, st.bytes_written, st.hits), (2, 10, 2));
        assert_eq!(st.layers[0].scope, "branch/main");
    }

    #[tokio::test]
    async fn issue31_a_pr_build_never_reads_a_pr_scope_and_writes_nothing() {
        let mem = MemStore::default();
        {
            let mut m = mem.0.lock().unwrap();
            // What any run of PR 7 (or a holder of a leaked PR credential) could plant: even
            // an entry signed with the trusted key (copied from elsewhere) is not read here.
            m.insert("pr/7/kv/k.cubin".into(), "planted".into());
            m.insert(
                "pr/7/kv/pr-only.cubin".into(),
                framed(1, "pr/7", "kv/pr-only.cubin", "planted"),
            );
            m.insert(
                "branch/main/kv/k.cubin".into(),
                framed(1, "branch/main", "kv/k.cubin", "main's"),
            );
        }
        let pr = gateway(pr7(), mem, 1024);
        let get = |key: &'static str| {
            let pr = &pr;
            async move { call(pr, Method::GET, &format!("/ab12/kv/{key}"), "").await }
        };
        assert_eq!(get("k.cubin").await, (200, "main's".into()));
        assert_eq!(get("pr-only.cubin").await.0, 404);
        assert_eq!(
            call(&pr, Method::HEAD, "/ab12/kv/pr-only.cubin", "")
                .await
                .0,
            404
        );
        assert_eq!(
            call(&pr, Method::PUT, "/ab12/kv/new.cubin", "x").await.0,
            403
        );
        let st = pr.stats();
        let layers: Vec<&str> = st.layers.iter().map(|l| l.scope.as_str()).collect();
        assert_eq!(layers, ["branch/main"]);
        assert_eq!((st.hits, st.misses, st.refused_writes), (1, 2, 1));
    }

    /// What the PR's build (verifier only) and a trusted build (signer) serve from the default
    /// branch's scope when anything but the trusted signer wrote there.
    #[tokio::test]
    async fn issue31_reads_serve_only_entries_signed_by_the_trusted_key() {
        let mem = || {
            let m = MemStore::default();
            {
                let mut e = m.0.lock().unwrap();
                let main = "branch/main";
                // Planted raw; signed by another key; a good entry replayed under another key;
                // a good entry of another scope copied here; the one good entry.
                e.insert(format!("{main}/kv/raw"), "evil".into());
                e.insert(
                    format!("{main}/kv/other-key"),
                    framed(2, main, "kv/other-key", "evil"),
                );
                e.insert(
                    format!("{main}/kv/replayed"),
                    framed(1, main, "kv/good", "good"),
                );
                e.insert(
                    format!("{main}/kv/copied"),
                    framed(1, "branch/v13", "kv/copied", "good"),
                );
                e.insert(
                    format!("{main}/kv/good"),
                    framed(1, main, "kv/good", "good"),
                );
            }
            m
        };
        for g in [gateway(trusted(), mem(), 1024), gateway(pr7(), mem(), 1024)] {
            for (name, want) in [
                ("raw", 404),
                ("other-key", 404),
                ("replayed", 404),
                ("copied", 404),
                ("good", 200),
            ] {
                let got = call(&g, Method::GET, &format!("/ab12/kv/{name}"), "").await;
                assert_eq!(got.0, want, "{}: {name}", g.policy.reason);
                let head = call(&g, Method::HEAD, &format!("/ab12/kv/{name}"), "").await;
                assert_eq!(head.0, want, "{}: HEAD {name}", g.policy.reason);
            }
            let st = g.stats();
            assert_eq!((st.hits, st.misses, st.unauthenticated), (2, 8, 8));
        }

        // Without a verifier nothing is served at all.
        let none = Gateway::new(
            mem(),
            trusted(),
            EntryKeys::default(),
            1024,
            Secret("ab12".into()),
        );
        assert_eq!(call(&none, Method::GET, "/ab12/kv/good", "").await.0, 404);
        assert_eq!(call(&none, Method::PUT, "/ab12/kv/new", "x").await.0, 403);
        assert_eq!(none.stats().unauthenticated, 1);
    }

    #[tokio::test]
    async fn kv_refuses_read_only_scopes_oversized_entries_and_bad_keys() {
        let ro = gateway(
            policy("pull_request_target", "refs/heads/main", Some(7)),
            MemStore::default(),
            1024,
        );
        assert_eq!(call(&ro, Method::PUT, "/ab12/kv/k.cubin", "x").await.0, 403);
        assert_eq!(ro.stats().refused_writes, 1);
        assert!(ro.store.keys().is_empty());

        let g = gateway(trusted(), MemStore::default(), 4);
        assert_eq!(
            call(&g, Method::PUT, "/ab12/kv/k.cubin", "12345").await.0,
            413
        );
        assert_eq!(
            call(&g, Method::PUT, "/ab12/kv/k.cubin", "1234").await.0,
            201
        );
        for bad in [
            "/ab12/kv/",
            "/ab12/kv//k",
            "/ab12/kv/a/../../branch/main/kv/k",
            "/ab12/kv/a/./k",
            "/ab12/kv/a%2Fk",
        ] {
            let put = call(&g, Method::PUT, bad, "x").await.0;
            let get = call(&g, Method::GET, bad, "").await.0;
            assert_eq!((put, get), (400, 404), "{bad}");
        }
        assert_eq!(call(&g, Method::PUT, "/ab13/kv/k.cubin", "x").await.0, 403);
        assert_eq!(
            call(&g, Method::DELETE, "/ab12/kv/k.cubin", "").await.0,
            405
        );
        let st = g.stats();
        assert_eq!(
            (st.too_large, st.refused_other, st.unauthorized, st.writes),
            (1, 6, 1, 1)
        );
        assert_eq!(g.store.keys(), ["branch/main/kv/k.cubin"]);
    }

    #[test]
    fn secret_is_the_first_segment_exactly() {
        let s = Secret("ab12".into());
        assert_eq!(s.strip("/ab12/ccache/x"), Some("/ccache/x"));
        assert_eq!(s.strip("/ab12"), Some(""));
        for bad in [
            "/",
            "",
            "/ab1",
            "/ab123/x",
            "/AB12/x",
            "ab12/x",
            "//ab12/x",
            "/x/ab12/x",
        ] {
            assert_eq!(s.strip(bad), None, "{bad}");
        }
        let r = Secret::random().unwrap();
        assert_eq!(r.as_str().len(), 32);
        assert!(r.as_str().bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(r.as_str(), Secret::random().unwrap().as_str());
        assert_eq!(format!("{r:?}"), "Secret(…)");
    }

    #[test]
    fn issue12_start_refuses_non_loopback_and_hands_out_a_secret_url() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            crate::StoreSpec::parse(&dir.path().join("store").display().to_string()).unwrap();
        for addr in [
            "0.0.0.0:0",
            "[::]:0",
            "192.168.1.10:0",
            "[::ffff:127.0.0.1]:0",
        ] {
            let r = RunningGateway::start(
                &store,
                ScopePolicy::none("test"),
                EntryKeys::default(),
                addr.parse().unwrap(),
                1024,
            );
            assert!(
                matches!(r, Err(GatewayError::NotLoopback { .. })),
                "{addr} was not refused"
            );
        }
        let gw = RunningGateway::start(
            &store,
            ScopePolicy::none("test"),
            EntryKeys::default(),
            "127.0.0.1:0".parse().unwrap(),
            1024,
        )
        .unwrap();
        let (_, secret) = gw.url.rsplit_once('/').unwrap();
        assert!(gw.url.starts_with("http://127.0.0.1:"), "{}", gw.url);
        assert_eq!(secret.len(), 32, "{}", gw.url);
        crate::GatewayUrl::parse(&gw.url).unwrap();
    }
}
