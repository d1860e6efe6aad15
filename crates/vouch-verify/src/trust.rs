//! What a consumer trusts, and the one `verify()` that every command goes through. Key or
//! keyless is decided here, and only here.

use vouch_core::Sha256Digest;

use crate::verify::{Verifier, parse_public_key, verify_with_key};
use crate::{ErrorKind, Evidence, Policy, TrustRootSource, Verified, VerifyError};

/// Which signatures are accepted, as given (a key as PEM text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Accept {
    /// Certificates from the trust root's Fulcio CA, their identity held to the policy; a
    /// key-signed bundle is refused.
    Keyless,
    /// Bundles signed by this public key only (their log entries, if any, checked against the
    /// trust root); a certificate is refused.
    Key(String),
    /// Each bundle by what it carries: certificates keyless, key-signed bundles with the key
    /// when there is one. For a directory of releases signed in different ways.
    Each(Option<String>),
}

/// A trust root and what is accepted under it, before anything is loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustSpec {
    pub root: TrustRootSource,
    pub accept: Accept,
}

impl TrustSpec {
    /// Loads the root and parses the key: the expensive part, done once for many files.
    pub fn load(&self) -> Result<Trust, VerifyError> {
        let key = |pem: &str| parse_public_key(pem).map(|_| pem.to_owned());
        let accept = match &self.accept {
            Accept::Keyless => Loaded::Keyless,
            Accept::Key(pem) => Loaded::Key(key(pem)?),
            Accept::Each(pem) => Loaded::Each(pem.as_deref().map(key).transpose()?),
        };
        Ok(Trust {
            verifier: Verifier::new(self.root.clone())?,
            accept,
        })
    }
}

enum Loaded {
    Keyless,
    Key(String),
    Each(Option<String>),
}

/// A loaded [`TrustSpec`].
pub struct Trust {
    verifier: Verifier,
    accept: Loaded,
}

impl Trust {
    /// Verifies `evidence` for a file with `digest` under `policy`.
    pub fn verify(
        &self,
        digest: &Sha256Digest,
        evidence: &Evidence,
        policy: &Policy,
    ) -> Result<Verified, VerifyError> {
        let root = Some(self.verifier.trust_root());
        match &self.accept {
            Loaded::Key(pem) => verify_with_key(digest, evidence, pem, policy, root),
            Loaded::Each(Some(pem)) if evidence.key_signed() => {
                verify_with_key(digest, evidence, pem, policy, root)
            }
            Loaded::Each(None) if evidence.key_signed() => Err(VerifyError::new(
                ErrorKind::TrustRoot,
                "key-signed bundle, and no public key to verify it with",
            )),
            Loaded::Keyless | Loaded::Each(_) => {
                // The built repository must be named; a signer workflow alone names only where
                // a reusable workflow lives.
                if policy.repository.is_none() {
                    return Err(VerifyError::new(
                        ErrorKind::Policy,
                        "no expected identity: the policy names no source repository for the \
                         certificate to be held to",
                    ));
                }
                self.verifier.verify(digest, evidence, policy)
            }
        }
    }
}

/// Checks that `pem` is a usable PEM public key, so a wrong file is refused before any work is
/// done with it.
pub fn check_public_key(pem: &str) -> Result<(), VerifyError> {
    parse_public_key(pem).map(drop)
}
