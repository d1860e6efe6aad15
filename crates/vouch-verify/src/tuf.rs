//! A Sigstore trust root refreshed through TUF and kept in vouch's cache.
//!
//! `vouch trust update` is the only network step: it runs the TUF workflow (root rotation,
//! timestamp, snapshot, targets) from a pinned bootstrap root and writes the verified metadata
//! through to the cache. Everything that verifies reads the cache offline, re-verifying the
//! whole metadata chain from the same bootstrap root, so a writable cache is never trusted as
//! bytes.
//!
//! Expiry trade-off: Sigstore's `timestamp.json` expires within days, so validating the cache
//! against the current time would make an offline `verify` a week after the last update fail.
//! The cache is therefore validated as of `refreshed_at`, vouch's own record of when the last
//! successful update ran. That gives up TUF's freeze-attack protection for the time since
//! then (someone able to rewrite the cache can replay an older, once-valid repository state
//! with a matching `refreshed_at`), which is why a stale cache is reported (see
//! [`STALE_AFTER`]) and why only `trust update` advances it, checked against the real clock.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use sigstore_trust_root::{SigstoreInstance, TrustedRoot};
use sigstore_tuf::{FileStore, HttpRepository, StoreRepository, Updater};

/// The target that holds Sigstore's `trusted_root.json`.
pub const TRUSTED_ROOT_TARGET: &str = "trusted_root.json";

/// vouch's own record next to the TUF metadata: when the last update succeeded.
const STATE_FILE: &str = "vouch-refreshed.json";

/// A cache older than this is still used, with a warning: it may miss a key rotation.
pub const STALE_AFTER: jiff::SignedDuration = jiff::SignedDuration::from_hours(30 * 24);

#[derive(Debug, thiserror::Error)]
pub enum TufError {
    /// The repository could not be reached or did not answer as a repository does.
    #[error("cannot reach the TUF repository {url}")]
    Network {
        url: String,
        #[source]
        source: sigstore_tuf::Error,
    },
    /// Metadata or a target failed TUF verification: signatures, rollback, expiry, hashes.
    #[error("TUF metadata from {url} failed verification")]
    Metadata {
        url: String,
        #[source]
        source: sigstore_tuf::Error,
    },
    /// The cache holds no successful update for this repository.
    #[error("no refreshed trust root in {dir} (run `vouch trust update`)")]
    NoCache { dir: PathBuf },
    /// The cached metadata no longer verifies offline: tampered, truncated or inconsistent.
    #[error("the cached TUF metadata in {dir} does not verify")]
    Cache {
        dir: PathBuf,
        #[source]
        source: sigstore_tuf::Error,
    },
    /// The verified `trusted_root.json` target is not a Sigstore trusted root.
    #[error("the TUF target {TRUSTED_ROOT_TARGET} is not a usable Sigstore trusted root")]
    Target(#[source] sigstore_trust_root::Error),
    /// vouch's `refreshed_at` record is unreadable.
    #[error("cannot read {path}: {reason}")]
    State { path: PathBuf, reason: String },
    #[error("writing {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One TUF repository and the root that trust in it starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TufRepo {
    pub url: String,
    /// The bootstrap `root.json`: embedded for Sigstore's repository, never read from the cache.
    pub bootstrap: Vec<u8>,
    /// This repository's directory in the cache.
    pub dir: PathBuf,
}

/// A trust root that verified offline from the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedRoot {
    pub dir: PathBuf,
    pub url: String,
    /// The TUF root metadata version the chain ended at.
    pub root_version: u64,
    pub refreshed_at: jiff::Timestamp,
    /// The verified `trusted_root.json`.
    pub json: String,
}

impl CachedRoot {
    /// Whether the last update is older than [`STALE_AFTER`] at `now`.
    pub fn stale_at(&self, now: jiff::Timestamp) -> bool {
        now.duration_since(self.refreshed_at) > STALE_AFTER
    }

    pub fn describe(&self) -> String {
        format!(
            "Sigstore root from the TUF cache {} (root v{}, refreshed {})",
            self.dir.display(),
            self.root_version,
            self.refreshed_at
        )
    }
}

/// What an update found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct UpdateReport {
    pub url: String,
    pub dir: PathBuf,
    pub root_version: u64,
    pub timestamp_version: u64,
    pub refreshed_at: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct State {
    url: String,
    refreshed_at: String,
}

impl TufRepo {
    /// Sigstore's production repository, bootstrapped from the embedded root.
    pub fn production(cache_root: &Path) -> Self {
        let instance = SigstoreInstance::PublicGood;
        Self::custom(instance.tuf_url(), instance.tuf_root().to_vec(), cache_root)
    }

    /// Sigstore's staging repository, bootstrapped from its embedded root (`--staging`).
    pub fn staging(cache_root: &Path) -> Self {
        let instance = SigstoreInstance::Staging;
        Self::custom(instance.tuf_url(), instance.tuf_root().to_vec(), cache_root)
    }

    /// Another repository; its directory is keyed by URL so repositories never share state.
    pub fn custom(url: &str, bootstrap: Vec<u8>, cache_root: &Path) -> Self {
        let url = url.trim_end_matches('/').to_owned();
        let dir = cache_root.join("trust-root").join(dir_name(&url));
        TufRepo {
            url,
            bootstrap,
            dir,
        }
    }

    /// Runs the TUF workflow against the repository as of `now`, writing verified metadata
    /// through to the cache; on success records `now` as `refreshed_at`. A failure leaves the
    /// cache as it was: sigstore-tuf writes each file only after it verified.
    pub async fn update(&self, now: jiff::Timestamp) -> Result<UpdateReport, TufError> {
        let net = |source| TufError::Network {
            url: self.url.clone(),
            source,
        };
        let classify = |source: sigstore_tuf::Error| {
            if is_transport(&source) {
                net(source)
            } else {
                TufError::Metadata {
                    url: self.url.clone(),
                    source,
                }
            }
        };
        std::fs::create_dir_all(&self.dir).map_err(|source| TufError::Io {
            path: self.dir.clone(),
            source,
        })?;
        let repo = HttpRepository::new(&self.url).map_err(net)?;
        let store = FileStore::new(&self.dir);
        // The cached timestamp and snapshot seed the updater, so a repository serving an
        // older version than the last update is a rollback, across runs.
        let mut updater = Updater::new(repo, &self.bootstrap)
            .map_err(classify)?
            .with_store(store);
        updater.refresh(now).await.map_err(classify)?;
        let bytes = updater
            .get_target(TRUSTED_ROOT_TARGET, now)
            .await
            .map_err(classify)?;
        parse_root(&bytes)?;
        let trusted = updater.trusted();
        let report = UpdateReport {
            url: self.url.clone(),
            dir: self.dir.clone(),
            root_version: trusted.root().version,
            timestamp_version: trusted.timestamp().map_or(0, |t| t.version),
            refreshed_at: now.to_string(),
        };
        let state = State {
            url: self.url.clone(),
            refreshed_at: report.refreshed_at.clone(),
        };
        let path = self.dir.join(STATE_FILE);
        let text = serde_json::to_vec_pretty(&state).expect("state serializes");
        write_replacing(&path, &text).map_err(|source| TufError::Io { path, source })?;
        tracing::info!(url = %self.url, root_version = report.root_version, "trust root refreshed");
        Ok(report)
    }

    /// The root from the last update, re-verified from the cache with no network, as of that
    /// update's time (see the module's note on expiry).
    pub fn load_cached(&self) -> Result<CachedRoot, TufError> {
        let state_path = self.dir.join(STATE_FILE);
        let text = match std::fs::read(&state_path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(TufError::NoCache {
                    dir: self.dir.clone(),
                });
            }
            Err(e) => {
                return Err(TufError::State {
                    path: state_path,
                    reason: e.to_string(),
                });
            }
        };
        let bad_state = |reason: String| TufError::State {
            path: state_path.clone(),
            reason,
        };
        let state: State = serde_json::from_slice(&text).map_err(|e| bad_state(e.to_string()))?;
        if state.url != self.url {
            return Err(bad_state(format!(
                "it records {} instead of {}",
                state.url, self.url
            )));
        }
        let at: jiff::Timestamp = state
            .refreshed_at
            .parse()
            .map_err(|e: jiff::Error| bad_state(e.to_string()))?;
        let cache_err = |source| TufError::Cache {
            dir: self.dir.clone(),
            source,
        };
        let store = FileStore::new(&self.dir);
        let (version, bytes) = block_on_ready(async {
            let mut updater = Updater::new(StoreRepository::new(store.clone()), &self.bootstrap)?
                .with_store(store);
            updater.refresh(at).await?;
            let bytes = updater.get_target(TRUSTED_ROOT_TARGET, at).await?;
            Ok::<_, sigstore_tuf::Error>((updater.trusted().root().version, bytes))
        })
        .map_err(cache_err)?;
        parse_root(&bytes)?;
        Ok(CachedRoot {
            dir: self.dir.clone(),
            url: self.url.clone(),
            root_version: version,
            refreshed_at: at,
            json: String::from_utf8(bytes).expect("parse_root checked UTF-8"),
        })
    }
}

fn parse_root(bytes: &[u8]) -> Result<TrustedRoot, TufError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        TufError::Target(sigstore_trust_root::Error::Tuf(format!("not UTF-8: {e}")))
    })?;
    TrustedRoot::from_json(text).map_err(TufError::Target)
}

/// Network failures are retryable and say nothing about the repository's keys; everything
/// else sigstore-tuf reports is a verdict on the metadata.
fn is_transport(e: &sigstore_tuf::Error) -> bool {
    matches!(e, sigstore_tuf::Error::Transport { .. })
}

/// The offline refresh runs over [`StoreRepository`], whose futures are ready at once; polling
/// here keeps a sync caller free of an async runtime (and of nesting one inside another).
fn block_on_ready<T>(
    fut: impl Future<Output = Result<T, sigstore_tuf::Error>>,
) -> Result<T, sigstore_tuf::Error> {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(r) => r,
        Poll::Pending => Err(sigstore_tuf::Error::transport(
            "offline TUF verification waited on I/O",
        )),
    }
}

fn write_replacing(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path)
}

/// A filesystem-safe, readable name for a repository URL.
fn dir_name(url: &str) -> String {
    url.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("_{b:02x}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_get_distinct_directories() {
        let root = Path::new("/c");
        let a = TufRepo::custom("http://127.0.0.1:1/", vec![], root);
        let b = TufRepo::custom("http://127.0.0.1:1", vec![], root);
        let c = TufRepo::custom("http://127.0.0.1:2", vec![], root);
        assert_eq!(a.dir, b.dir);
        assert_ne!(a.dir, c.dir);
        assert!(!a.dir.file_name().unwrap().to_string_lossy().contains('/'));
    }

    #[test]
    fn no_update_is_no_cache() {
        let dir = tempfile::tempdir().unwrap();
        let repo = TufRepo::production(dir.path());
        assert!(matches!(repo.load_cached(), Err(TufError::NoCache { .. })));
    }
}
