//! The loopback gateway sccache (WebDAV) and ccache (HTTP remote storage) talk to. GET/HEAD
//! fall through the policy's read scopes in order; PUT goes to the write scope only; anything
//! else is refused.
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
    secret: Secret,
    counters: Counters,
    max_entry: usize,
}

impl<S: CacheStore> Gateway<S> {
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
            for (i, scope) in self.policy.read.iter().enumerate() {
                let found = if method == Method::HEAD {
                    self.store
                        .exists(scope, key)
                        .await
                        .map(|e| e.then(bytes::Bytes::new))
                } else {
                    self.store.get(scope, key).await
                };
                match found {
                    Ok(Some(data)) => {
                        let layer = &self.counters.layers[i];
                        layer.hits.fetch_add(1, Ordering::Relaxed);
                        layer.bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
                        tracing::debug!(%scope, key, "hit");
                        return (StatusCode::OK, data).into_response();
                    }
                    Ok(None) => {}
                    Err(e) => return self.store_error(e),
                }
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
            let len = data.len() as u64;
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
        for scope in &self.policy.read {
            match self.store.get(scope, key).await {
                Ok(Some(data)) => {
                    return multistatus(
                        path,
                        &format!(
                            "<D:resourcetype/><D:getcontentlength>{}</D:getcontentlength>",
                            data.len()
                        ),
                    );
                }
                Ok(None) => {}
                Err(e) => return self.store_error(e),
            }
        }
        StatusCode::NOT_FOUND.into_response()
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
    max_entry: usize,
    secret: Secret,
) -> (
    axum::Router,
    impl Fn() -> GatewayStats + Send + Sync + 'static,
) {
    let counters = Counters {
        layers: policy.read.iter().map(|_| Layer::default()).collect(),
        scopes: policy.read.clone(),
        misses: AtomicU64::new(0),
        writes: AtomicU64::new(0),
        bytes_written: AtomicU64::new(0),
        refused_writes: AtomicU64::new(0),
        refused_other: AtomicU64::new(0),
        unauthorized: AtomicU64::new(0),
        too_large: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    };
    let g = Arc::new(Gateway {
        store,
        policy,
        secret,
        counters,
        max_entry,
    });
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
        let (router, stats) = router(store, policy, max_entry, secret);
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
