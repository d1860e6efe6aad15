//! A TUF repository for tests, served on loopback: Sigstore's layout (consistent snapshots,
//! `N.root.json`, `N.snapshot.json`, `N.targets.json`, `targets/<sha256>.trusted_root.json`),
//! ECDSA P-256 keys, metadata signed over sigstore-tuf's canonical JSON, so the client under
//! test verifies exactly what it would from Sigstore's CDN. Tests drive it through rotation,
//! rollback and expiry.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::State as AxState;
use axum::http::{StatusCode, Uri};
use serde_json::{Value, json};
use sigstore_crypto::KeyPair;

pub const FAR_FUTURE: &str = "2999-01-01T00:00:00Z";
pub const IN_THE_PAST: &str = "2001-01-01T00:00:00Z";

type Files = Arc<Mutex<HashMap<String, Vec<u8>>>>;

struct Signer {
    kp: KeyPair,
    id: String,
    key: Value,
}

impl Signer {
    fn new() -> Self {
        let kp = KeyPair::generate_ecdsa_p256().expect("key");
        let pem = kp.public_key_der().expect("spki").to_pem();
        let key = json!({
            "keytype": "ecdsa",
            "scheme": "ecdsa-sha2-nistp256",
            "keyval": { "public": pem },
        });
        let parsed: sigstore_tuf::Key = serde_json::from_value(key.clone()).expect("tuf key");
        let id = parsed.key_id().expect("key id");
        Signer { kp, id, key }
    }

    fn sign(&self, signed: &Value) -> Value {
        let canonical = sigstore_tuf::canonical_json::to_canonical_bytes(signed).expect("canon");
        let sig = self.kp.sign(&canonical).expect("sign");
        json!({ "keyid": self.id, "sig": hex::encode(sig.as_bytes()) })
    }
}

fn envelope(signed: &Value, by: &[&Signer]) -> Vec<u8> {
    let sigs: Vec<Value> = by.iter().map(|s| s.sign(signed)).collect();
    serde_json::to_vec(&json!({ "signed": signed, "signatures": sigs })).expect("json")
}

fn metafile(bytes: &[u8], version: u64) -> Value {
    json!({
        "version": version,
        "length": bytes.len(),
        "hashes": { "sha256": sigstore_crypto::sha256(bytes).to_hex() },
    })
}

struct Repo {
    root: Signer,
    online: Signer,
    root_version: u64,
    targets_version: u64,
    snapshot_version: u64,
    timestamp_version: u64,
    /// Every `timestamp.json` published, oldest first, to replay one in a rollback.
    timestamps: Vec<Vec<u8>>,
    target: Vec<u8>,
    root_json: Vec<Vec<u8>>,
}

/// A signed TUF repository serving one target, `trusted_root.json`. Stops when dropped.
pub struct TufServer {
    pub url: String,
    files: Files,
    repo: Mutex<Repo>,
    served: crate::Served,
}

impl TufServer {
    /// Root v1 (one root key, one online key for timestamp, snapshot and targets) and version 1
    /// of everything else, with `trusted_root` as the target.
    pub fn start(trusted_root: &Value) -> TufServer {
        let files: Files = Arc::default();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr: SocketAddr = listener.local_addr().expect("local addr");
        let app = axum::Router::new()
            .fallback(serve)
            .with_state(files.clone());
        let served = crate::Served::start(listener, app);
        let server = TufServer {
            url: format!("http://{addr}"),
            files,
            repo: Mutex::new(Repo {
                root: Signer::new(),
                online: Signer::new(),
                root_version: 0,
                targets_version: 0,
                snapshot_version: 0,
                timestamp_version: 0,
                timestamps: Vec::new(),
                target: trusted_root.to_string().into_bytes(),
                root_json: Vec::new(),
            }),
            served,
        };
        {
            let mut repo = server.repo.lock().unwrap();
            let root = Signer::new();
            server.publish_root(&mut repo, root, Signer::new());
            server.publish_rest(&mut repo, FAR_FUTURE);
        }
        server
    }

    /// The `1.root.json` a client bootstraps from.
    pub fn initial_root(&self) -> Vec<u8> {
        self.repo.lock().unwrap().root_json[0].clone()
    }

    /// Publishes root v(N+1) with a new root key and a new online key, signed by the old and
    /// the new root key, then new targets, snapshot and timestamp under the new online key.
    pub fn rotate(&self) {
        let mut repo = self.repo.lock().unwrap();
        self.publish_root(&mut repo, Signer::new(), Signer::new());
        self.publish_rest(&mut repo, FAR_FUTURE);
    }

    /// New targets, snapshot and a timestamp that expires at `expires`.
    pub fn republish(&self, timestamp_expires: &str) {
        let mut repo = self.repo.lock().unwrap();
        self.publish_rest(&mut repo, timestamp_expires);
    }

    /// Serves the `index`-th timestamp ever published (0 = first) again: a rollback.
    pub fn replay_timestamp(&self, index: usize) {
        let repo = self.repo.lock().unwrap();
        self.put("timestamp.json", repo.timestamps[index].clone());
    }

    pub fn root_version(&self) -> u64 {
        self.repo.lock().unwrap().root_version
    }

    pub fn timestamp_version(&self) -> u64 {
        self.repo.lock().unwrap().timestamp_version
    }

    fn put(&self, name: &str, bytes: Vec<u8>) {
        self.files.lock().unwrap().insert(name.to_owned(), bytes);
    }

    fn publish_root(&self, repo: &mut Repo, root: Signer, online: Signer) {
        repo.root_version += 1;
        let roles = |s: &Signer| json!({ "keyids": [s.id.clone()], "threshold": 1 });
        let signed = json!({
            "_type": "root",
            "spec_version": "1.0.0",
            "version": repo.root_version,
            "expires": FAR_FUTURE,
            "consistent_snapshot": true,
            "keys": { root.id.clone(): root.key.clone(), online.id.clone(): online.key.clone() },
            "roles": {
                "root": roles(&root),
                "timestamp": roles(&online),
                "snapshot": roles(&online),
                "targets": roles(&online),
            },
        });
        // A new root must satisfy the old root's threshold and its own.
        let bytes = if repo.root_version == 1 {
            envelope(&signed, &[&root])
        } else {
            envelope(&signed, &[&repo.root, &root])
        };
        self.put(&format!("{}.root.json", repo.root_version), bytes.clone());
        repo.root_json.push(bytes);
        repo.root = root;
        repo.online = online;
    }

    fn publish_rest(&self, repo: &mut Repo, timestamp_expires: &str) {
        let sha = sigstore_crypto::sha256(&repo.target).to_hex();
        self.put(
            &format!("targets/{sha}.trusted_root.json"),
            repo.target.clone(),
        );

        repo.targets_version += 1;
        let targets = json!({
            "_type": "targets",
            "spec_version": "1.0.0",
            "version": repo.targets_version,
            "expires": FAR_FUTURE,
            "targets": {
                "trusted_root.json": {
                    "length": repo.target.len(),
                    "hashes": { "sha256": sha },
                }
            },
        });
        let targets = envelope(&targets, &[&repo.online]);
        self.put(
            &format!("{}.targets.json", repo.targets_version),
            targets.clone(),
        );

        repo.snapshot_version += 1;
        let snapshot = json!({
            "_type": "snapshot",
            "spec_version": "1.0.0",
            "version": repo.snapshot_version,
            "expires": FAR_FUTURE,
            "meta": { "targets.json": metafile(&targets, repo.targets_version) },
        });
        let snapshot = envelope(&snapshot, &[&repo.online]);
        self.put(
            &format!("{}.snapshot.json", repo.snapshot_version),
            snapshot.clone(),
        );

        repo.timestamp_version += 1;
        let timestamp = json!({
            "_type": "timestamp",
            "spec_version": "1.0.0",
            "version": repo.timestamp_version,
            "expires": timestamp_expires,
            "meta": { "snapshot.json": metafile(&snapshot, repo.snapshot_version) },
        });
        let timestamp = envelope(&timestamp, &[&repo.online]);
        self.put("timestamp.json", timestamp.clone());
        repo.timestamps.push(timestamp);
    }

    /// Stops serving: later requests cannot connect.
    pub fn stop(&mut self) {
        self.served.stop();
    }
}

async fn serve(AxState(files): AxState<Files>, uri: Uri) -> (StatusCode, Vec<u8>) {
    let name = uri.path().trim_start_matches('/');
    match files.lock().unwrap().get(name) {
        Some(bytes) => (StatusCode::OK, bytes.clone()),
        None => (StatusCode::NOT_FOUND, Vec::new()),
    }
}
