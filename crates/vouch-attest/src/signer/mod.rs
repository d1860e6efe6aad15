//! Signing a statement into a Sigstore bundle v0.3 with a DSSE envelope. Every signer is a
//! module here implementing [`Signer`]; [`SIGNERS`] lists them, and [`SignerSpec`] picks one
//! from its spelling (`sigstore`, `key:PATH`). Adding a signer: a module, and a line in
//! [`SIGNERS`].

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::str::FromStr;

use sigstore_types::Bundle;

use crate::Statement;

pub mod key;
pub mod keyless;

pub use vouch_core::statement::PAYLOAD_TYPE;

/// A signing in progress.
pub type SignFuture<'a> = Pin<Box<dyn Future<Output = Result<Bundle, SignError>> + Send + 'a>>;

/// Turns a statement into a Sigstore bundle. Async because keyless signing talks to Fulcio
/// and Rekor; the caller owns the runtime.
pub trait Signer: Send + Sync {
    fn sign<'a>(&'a self, statement: &'a Statement) -> SignFuture<'a>;
}

/// What the caller can hand a signer beyond its own argument; each signer takes what it needs.
#[derive(Default)]
pub struct SignerInputs {
    /// Fulcio and Rekor for keyless signing; production when `None`.
    pub fulcio_url: Option<String>,
    pub rekor_url: Option<String>,
    /// An OIDC token given explicitly; keyless signing otherwise asks the ambient provider.
    pub oidc_token: Option<sigstore_oidc::IdentityToken>,
}

/// One kind of signer: how it is spelled and how it is built.
pub struct SignerKind {
    /// The name, or the prefix before `:ARG` when it takes an argument.
    pub name: &'static str,
    /// How the argument reads in messages (`PATH`); `None` when it takes none.
    pub arg: Option<&'static str>,
    /// Whether it signs with Fulcio, Rekor and an OIDC token (so those inputs mean something).
    pub keyless: bool,
    build: BuildFn,
}

/// Builds a signer from its argument (`PATH` in `key:PATH`) and the caller's inputs.
type BuildFn = fn(Option<&str>, SignerInputs) -> Result<Box<dyn Signer>, SignerError>;

/// Every signer, in the order their spellings are listed in messages.
pub const SIGNERS: &[&SignerKind] = &[&keyless::KIND, &key::KIND];

/// A signer as named (`sigstore`, `key:PATH`): which kind, and its argument.
#[derive(Clone)]
pub struct SignerSpec {
    kind: &'static SignerKind,
    arg: Option<String>,
}

impl std::fmt::Debug for SignerSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind.name)?;
        match &self.arg {
            Some(arg) => write!(f, ":{arg}"),
            None => Ok(()),
        }
    }
}

/// A signer spelling that names no signer.
#[derive(Debug, thiserror::Error)]
#[error("{value:?}: expected {}", expected())]
pub struct UnknownSigner {
    pub value: String,
}

fn expected() -> String {
    SIGNERS
        .iter()
        .map(|k| match k.arg {
            Some(arg) => format!("`{}:{arg}`", k.name),
            None => format!("`{}`", k.name),
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

impl FromStr for SignerSpec {
    type Err = UnknownSigner;
    fn from_str(value: &str) -> Result<Self, UnknownSigner> {
        SIGNERS
            .iter()
            .find_map(|&kind| {
                let arg = match kind.arg {
                    None => (value == kind.name).then_some(None)?,
                    Some(_) => Some(value.strip_prefix(kind.name)?.strip_prefix(':')?.to_owned()),
                };
                Some(SignerSpec { kind, arg })
            })
            .ok_or_else(|| UnknownSigner {
                value: value.to_owned(),
            })
    }
}

impl SignerSpec {
    pub fn kind(&self) -> &'static SignerKind {
        self.kind
    }

    /// Builds the signer; a key is read here, before anything is signed.
    pub fn signer(&self, inputs: SignerInputs) -> Result<Box<dyn Signer>, SignerError> {
        (self.kind.build)(self.arg.as_deref(), inputs)
    }
}

/// A signer that could not be set up: its key file unreadable, or the key or token unusable.
#[derive(Debug, thiserror::Error)]
pub enum SignerError {
    #[error("reading key {path:?}")]
    ReadKey {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Sign(#[from] SignError),
}

#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error(
        "key {path:?} is not a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`); convert an `EC PRIVATE KEY` with `openssl pkcs8 -topk8 -nocrypt`"
    )]
    KeyFormat { path: String },
    #[error("key {path:?} is not an ECDSA P-256 key")]
    KeyAlgorithm {
        path: String,
        #[source]
        source: sigstore_crypto::Error,
    },
    #[error("signing failed")]
    Crypto(#[source] sigstore_crypto::Error),
    #[error("the OIDC token is not a JWT")]
    Token(#[source] sigstore_oidc::Error),
    #[error("no OIDC token: not in GitHub Actions with `id-token: write`, and no token was given")]
    NoAmbientToken,
    #[error("keyless signing failed (Fulcio {fulcio}, Rekor {rekor})")]
    Keyless {
        fulcio: String,
        rekor: String,
        #[source]
        source: sigstore_sign::Error,
    },
    #[error("cannot serialize the statement or bundle")]
    Json(#[source] serde_json::Error),
    #[error("cannot generate a key")]
    KeyGen,
}

fn statement_bytes(statement: &Statement) -> Result<Vec<u8>, SignError> {
    serde_json::to_vec(statement).map_err(SignError::Json)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spelling, and the signer's name and argument it names (`None`: no signer).
    type Case<'a> = (&'a str, Option<(&'a str, Option<&'a str>)>);

    #[test]
    fn spellings() {
        let cases: &[Case] = &[
            ("sigstore", Some(("sigstore", None))),
            ("key:k.pem", Some(("key", Some("k.pem")))),
            ("key:", Some(("key", Some("")))),
            ("key:/a:b", Some(("key", Some("/a:b")))),
            ("key", None),
            ("sigstore:x", None),
            ("bogus", None),
            ("", None),
        ];
        for (value, expected) in cases {
            let got = value
                .parse::<SignerSpec>()
                .ok()
                .map(|s| (s.kind().name, s.arg));
            assert_eq!(
                got.as_ref().map(|(n, a)| (*n, a.as_deref())),
                *expected,
                "{value:?}"
            );
        }
        assert_eq!(
            "bogus".parse::<SignerSpec>().unwrap_err().to_string(),
            "\"bogus\": expected `sigstore` or `key:PATH`"
        );
    }
}
