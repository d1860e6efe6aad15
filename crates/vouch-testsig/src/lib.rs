//! A local Sigstore instance for tests, on 127.0.0.1:
//!
//! - a test OIDC issuer that mints GitHub Actions-shaped ES256 tokens;
//! - a Fulcio-compatible CA (`POST /api/v2/signingCert`) that checks the token's signature,
//!   audience and expiry and the proof of possession, then issues a 10-minute certificate
//!   with the GitHub Actions extensions (OIDs 1.3.6.1.4.1.57264.1.8-.22) mapped the way
//!   Fulcio maps them;
//! - a Rekor v1-compatible transparency log (`POST /api/v1/log/entries`, kind `dsse`) that
//!   checks the envelope signature against the certificate, appends to an RFC 6962 Merkle
//!   tree, and returns the entry with a real inclusion proof, a signed checkpoint and a
//!   signed entry timestamp;
//! - the `trusted_root.json` that makes a verifier trust exactly this CA and log.
//!
//! It issues no SCTs (there is no CT log), so its trusted root has no `ctlogs`.

mod merkle;
mod server;
pub mod tuf;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

pub use merkle::{inclusion_path, leaf_hash, root_hash};

/// The issuer GitHub Actions tokens carry; the test issuer uses it too so production
/// policies apply unchanged.
pub const GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// The claims of a GitHub Actions OIDC token that Fulcio turns into certificate extensions.
#[derive(Clone, Debug)]
pub struct GithubClaims {
    pub repository: String,
    pub repository_id: String,
    pub repository_owner: String,
    pub repository_owner_id: String,
    pub repository_visibility: String,
    pub git_ref: String,
    pub sha: String,
    pub event_name: String,
    /// `owner/repo/.github/workflows/x.yml@ref`: the top-level workflow.
    pub workflow_ref: String,
    /// The workflow that runs the job (differs from `workflow_ref` for reusable workflows).
    pub job_workflow_ref: String,
    pub run_id: String,
    pub run_attempt: String,
    pub runner_environment: String,
    /// `aud`: Fulcio requires `sigstore`.
    pub audience: String,
    /// Seconds until expiry (negative for an expired token).
    pub expires_in: i64,
}

impl GithubClaims {
    /// A push to `main` of `owner/repo` running `.github/workflows/ci.yml`.
    pub fn push(repository: &str, sha: &str) -> Self {
        let owner = repository
            .split('/')
            .next()
            .unwrap_or(repository)
            .to_owned();
        let wf = format!("{repository}/.github/workflows/ci.yml@refs/heads/main");
        GithubClaims {
            repository: repository.to_owned(),
            repository_id: "1001".into(),
            repository_owner: owner,
            repository_owner_id: "2002".into(),
            repository_visibility: "public".into(),
            git_ref: "refs/heads/main".into(),
            sha: sha.to_owned(),
            event_name: "push".into(),
            workflow_ref: wf.clone(),
            job_workflow_ref: wf,
            run_id: "6".into(),
            run_attempt: "1".into(),
            runner_environment: "github-hosted".into(),
            audience: "sigstore".into(),
            expires_in: 300,
        }
    }
}

pub(crate) struct State {
    pub base_url: String,
    pub ca_key: rcgen::KeyPair,
    pub ca_params: rcgen::CertificateParams,
    pub ca_der: Vec<u8>,
    pub log_key: sigstore_crypto::KeyPair,
    pub log_spki: Vec<u8>,
    pub log_id: [u8; 32],
    pub origin: String,
    pub leaves: Mutex<Vec<[u8; 32]>>,
    pub oidc_public: Vec<u8>,
    /// Counts, so tests can see the services were really used.
    pub issued_certificates: Mutex<u64>,
}

pub struct LocalSigstore {
    pub url: String,
    state: Arc<State>,
    oidc_key: EcdsaKeyPair,
    _served: Served,
}

/// An axum app served from a thread of its own (so a test's runtime never hosts it), until
/// stopped or dropped. Every server in this crate runs this way.
pub(crate) struct Served {
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    /// Serves `app` on `listener` (a non-blocking std listener).
    pub(crate) fn start(listener: std::net::TcpListener, app: axum::Router) -> Served {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await
                    .expect("serve");
            });
        });
        Served {
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// Stops serving: later requests cannot connect.
    pub(crate) fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop();
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

impl LocalSigstore {
    /// Starts the services on an ephemeral loopback port. They stop when this is dropped.
    pub fn start() -> LocalSigstore {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr: SocketAddr = listener.local_addr().expect("local addr");
        let url = format!("http://{addr}");

        let ca_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        ca_params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "vouch-test");
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "vouch test Fulcio CA");
        ca_params.not_before =
            time::OffsetDateTime::from_unix_timestamp(now() - 3600).expect("time");
        ca_params.not_after =
            time::OffsetDateTime::from_unix_timestamp(now() + 86_400).expect("time");
        let ca_der = ca_params
            .self_signed(&ca_key)
            .expect("CA cert")
            .der()
            .to_vec();

        let log_key = sigstore_crypto::KeyPair::generate_ecdsa_p256().expect("log key");
        let log_spki = log_key
            .public_key_der()
            .expect("log spki")
            .as_bytes()
            .to_vec();
        let log_id: [u8; 32] = <sha2::Sha256 as sha2::Digest>::digest(&log_spki).into();

        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("oidc key");
        let oidc_key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
            .expect("oidc key");

        let state = Arc::new(State {
            base_url: url.clone(),
            ca_key,
            ca_params,
            ca_der,
            log_key,
            log_spki,
            log_id,
            origin: format!("vouch-test-rekor - {}", now()),
            leaves: Mutex::new(Vec::new()),
            oidc_public: oidc_key.public_key().as_ref().to_vec(),
            issued_certificates: Mutex::new(0),
        });
        let served = Served::start(listener, server::router(state.clone()));
        LocalSigstore {
            url,
            state,
            oidc_key,
            _served: served,
        }
    }

    /// A signed GitHub Actions-shaped OIDC token.
    pub fn mint_token(&self, c: &GithubClaims) -> String {
        let header = json!({"alg": "ES256", "typ": "JWT", "kid": "vouch-test"});
        let t = now();
        let claims = json!({
            "iss": GITHUB_ISSUER,
            "aud": c.audience,
            "sub": format!("repo:{}:ref:{}", c.repository, c.git_ref),
            "iat": t,
            "nbf": t - 5,
            "exp": t + c.expires_in,
            "repository": c.repository,
            "repository_id": c.repository_id,
            "repository_owner": c.repository_owner,
            "repository_owner_id": c.repository_owner_id,
            "repository_visibility": c.repository_visibility,
            "ref": c.git_ref,
            "sha": c.sha,
            "event_name": c.event_name,
            "workflow_ref": c.workflow_ref,
            "workflow_sha": c.sha,
            "job_workflow_ref": c.job_workflow_ref,
            "job_workflow_sha": c.sha,
            "run_id": c.run_id,
            "run_attempt": c.run_attempt,
            "runner_environment": c.runner_environment,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self
            .oidc_key
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .expect("sign token");
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    /// The `trusted_root.json` for this instance: its CA and its log key, no CT logs.
    pub fn trusted_root(&self) -> Value {
        let s = &self.state;
        json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [{
                "baseUrl": s.base_url,
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": STANDARD.encode(&s.log_spki),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": { "start": "2020-01-01T00:00:00Z" }
                },
                "logId": { "keyId": STANDARD.encode(s.log_id) }
            }],
            "certificateAuthorities": [{
                "subject": { "organization": "vouch-test", "commonName": "vouch test Fulcio CA" },
                "uri": s.base_url,
                "certChain": { "certificates": [{ "rawBytes": STANDARD.encode(&s.ca_der) }] },
                "validFor": { "start": "2020-01-01T00:00:00Z" }
            }],
            "ctlogs": [],
            "timestampAuthorities": []
        })
    }

    /// How many entries the log holds.
    pub fn log_size(&self) -> usize {
        self.state.leaves.lock().expect("lock").len()
    }

    pub fn issued_certificates(&self) -> u64 {
        *self.state.issued_certificates.lock().expect("lock")
    }
}
