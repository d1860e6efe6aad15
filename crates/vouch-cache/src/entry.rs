//! Signed cache entries: reads follow trust.
//!
//! No scope name is a fence by itself. On the GitHub cache a `pull_request` run writes any key
//! it likes into its own ref's scope, and GitHub serves that scope to every later run of the
//! PR *first*, before the base branch's, whatever the key says: an unvouched run of PR N can
//! plant `branch/main/@/<key>` where the vouched run of PR N will read it. The default branch's
//! scope is written by every workflow that runs in its context (schedule, `workflow_dispatch`,
//! `issue_comment`, a compromised third-party action in any of them); a shared store by
//! whoever got a credential for it. Entries are first-writer-wins, and a compiler cache's keys
//! are hashes of inputs an attacker can compute from public sources, so a planted entry would
//! be linked into a wheel that is then signed.
//!
//! So every entry is signed (Ed25519) over (scope, key, bytes) by [`EntrySigner`], a key that
//! only the trusted build job can derive (from `VOUCH_SEAL_KEY`), and every read is checked
//! with [`EntryVerifier`], its public half, which is not a secret: a fork's pull-request build
//! gets it from the profile and checks exactly what a trusted build checks. An entry that does
//! not verify is a miss, counted, never an error. Signing the scope and the key stops a valid
//! entry from being replayed under another key or from another scope. Pull-request builds hold
//! no signer, so they write nothing: nothing would accept it.

use std::fmt;

use aws_lc_rs::signature::{ED25519, Ed25519KeyPair, KeyPair as _, UnparsedPublicKey};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use vouch_fs::seal::SealKey;

use crate::Scope;

/// The private half: signs what a trusted build writes. Derived from the seal key, so the
/// trusted environment holds one secret for both.
pub struct EntrySigner(Ed25519KeyPair);

/// The public half: checks every entry a build reads. Shown as `ed25519:<base64>`.
#[derive(Clone, PartialEq, Eq)]
pub struct EntryVerifier([u8; PUBLIC_LEN]);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EntryKeyError {
    #[error(
        "cache public key {0:?} is not `ed25519:<base64 of 32 bytes>` (`vouch cache public-key` prints it)"
    )]
    Malformed(String),
    #[error(
        "the cache public key given ({given}) is not the one the seal key signs with ({derived}): the profile's key and the trusted environment's VOUCH_SEAL_KEY disagree"
    )]
    Mismatch { given: String, derived: String },
}

const PREFIX: &str = "ed25519:";
const PUBLIC_LEN: usize = 32;
const SIG_LEN: usize = 64;
const MAGIC: &[u8; 8] = b"vouchce2";
const HEADER: usize = MAGIC.len() + SIG_LEN;

impl EntrySigner {
    pub fn from_seal_key(seal: &SealKey) -> EntrySigner {
        let seed = seal.tag(&[b"vouch cache entry signing key v1"]);
        EntrySigner(
            Ed25519KeyPair::from_seed_unchecked(&seed).expect("32 bytes are an Ed25519 seed"),
        )
    }

    pub fn verifier(&self) -> EntryVerifier {
        let mut public = [0u8; PUBLIC_LEN];
        public.copy_from_slice(self.0.public_key().as_ref());
        EntryVerifier(public)
    }

    /// The verifier a build uses: this signer's own, after checking that one given (from the
    /// profile) is the same, so a misconfigured key fails loudly instead of missing forever.
    pub fn verifier_matching(
        &self,
        given: Option<&EntryVerifier>,
    ) -> Result<EntryVerifier, EntryKeyError> {
        let derived = self.verifier();
        match given {
            Some(g) if *g != derived => Err(EntryKeyError::Mismatch {
                given: g.to_string(),
                derived: derived.to_string(),
            }),
            _ => Ok(derived),
        }
    }
}

impl fmt::Debug for EntrySigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EntrySigner(***)")
    }
}

impl fmt::Display for EntryVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{}", STANDARD.encode(self.0))
    }
}

impl fmt::Debug for EntryVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EntryVerifier({self})")
    }
}

impl std::str::FromStr for EntryVerifier {
    type Err = EntryKeyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || EntryKeyError::Malformed(s.to_owned());
        let b64 = s.trim().strip_prefix(PREFIX).ok_or_else(bad)?;
        let bytes = STANDARD.decode(b64).map_err(|_| bad())?;
        Ok(EntryVerifier(bytes.try_into().map_err(|_| bad())?))
    }
}

/// The keys a gateway holds: the verifier every read needs, the signer every write needs.
#[derive(Debug, Default)]
pub struct EntryKeys {
    pub signer: Option<EntrySigner>,
    pub verifier: Option<EntryVerifier>,
}

impl EntryKeys {
    /// A build with the seal key (trusted): signs, and verifies with its own public half,
    /// which must equal `given` (the profile's) when one is given.
    pub fn signing(
        seal: &SealKey,
        given: Option<&EntryVerifier>,
    ) -> Result<EntryKeys, EntryKeyError> {
        let signer = EntrySigner::from_seal_key(seal);
        let verifier = signer.verifier_matching(given)?;
        Ok(EntryKeys {
            signer: Some(signer),
            verifier: Some(verifier),
        })
    }

    /// A build without the seal key (a pull request's): verifies only.
    pub fn verifying(verifier: EntryVerifier) -> EntryKeys {
        EntryKeys {
            signer: None,
            verifier: Some(verifier),
        }
    }
}

/// What is signed: each part length-prefixed, so no two (scope, key, bytes) share a message.
fn message(scope: &Scope, key: &str, payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(payload.len() + 64);
    for p in [scope.as_str().as_bytes(), key.as_bytes(), payload] {
        m.extend_from_slice(&(p.len() as u64).to_be_bytes());
        m.extend_from_slice(p);
    }
    m
}

/// What a write stores: the magic, the signature, the payload.
pub(crate) fn frame(signer: &EntrySigner, scope: &Scope, key: &str, payload: &[u8]) -> Bytes {
    let sig = signer.0.sign(&message(scope, key, payload));
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(sig.as_ref());
    out.extend_from_slice(payload);
    out.into()
}

/// Why a stored entry was not served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not written by vouch's gateway (planted raw, or an older vouch's format).
    Unframed,
    /// The signature does not verify (planted, replayed under another key or scope, or signed
    /// by another key).
    BadSignature,
    /// This build has no verifier: nothing can be checked, so nothing is served.
    NoKey,
}

/// The payload of a stored entry, if it verifies.
pub(crate) fn open(
    verifier: Option<&EntryVerifier>,
    scope: &Scope,
    key: &str,
    stored: Bytes,
) -> Result<Bytes, Refused> {
    if stored.len() < HEADER || &stored[..MAGIC.len()] != MAGIC {
        return Err(Refused::Unframed);
    }
    let verifier = verifier.ok_or(Refused::NoKey)?;
    let payload = stored.slice(HEADER..);
    UnparsedPublicKey::new(&ED25519, &verifier.0)
        .verify(&message(scope, key, &payload), &stored[MAGIC.len()..HEADER])
        .map_err(|_| Refused::BadSignature)?;
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn signer(b: u8) -> EntrySigner {
        EntrySigner::from_seal_key(&SealKey::new(&[b; 32]).unwrap())
    }

    #[test]
    fn only_entries_signed_for_this_scope_and_key_verify() {
        let main = Scope::branch("main").unwrap();
        let k = signer(1);
        let v = k.verifier();
        let stored = frame(&k, &main, "ccache/ab/cd", b"object");
        assert_eq!(
            open(Some(&v), &main, "ccache/ab/cd", stored.clone()).unwrap(),
            &b"object"[..]
        );
        // Another key, another entry name, another scope, raw bytes, a flipped payload bit.
        let other = signer(2).verifier();
        assert_eq!(
            open(Some(&other), &main, "ccache/ab/cd", stored.clone()),
            Err(Refused::BadSignature)
        );
        assert_eq!(
            open(Some(&v), &main, "ccache/ab/ce", stored.clone()),
            Err(Refused::BadSignature)
        );
        let v13 = Scope::branch("v13").unwrap();
        assert_eq!(
            open(Some(&v), &v13, "ccache/ab/cd", stored.clone()),
            Err(Refused::BadSignature)
        );
        let mut flipped = stored.to_vec();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(
            open(Some(&v), &main, "ccache/ab/cd", flipped.into()),
            Err(Refused::BadSignature)
        );
        assert_eq!(
            open(
                Some(&v),
                &main,
                "ccache/ab/cd",
                Bytes::from_static(b"object")
            ),
            Err(Refused::Unframed)
        );
        assert_eq!(
            open(None, &main, "ccache/ab/cd", stored),
            Err(Refused::NoKey)
        );
    }

    #[test]
    fn the_public_key_round_trips_and_must_match_the_seal_key() {
        let v = signer(1).verifier();
        let shown = v.to_string();
        assert!(shown.starts_with("ed25519:"), "{shown}");
        assert_eq!(shown.parse::<EntryVerifier>().unwrap(), v);
        for bad in ["", "ed25519:", "ed25519:AAAA", "rsa:AAAA", &shown[8..]] {
            assert!(bad.parse::<EntryVerifier>().is_err(), "{bad:?}");
        }
        assert_eq!(signer(1).verifier_matching(Some(&v)).unwrap(), v);
        assert_eq!(signer(1).verifier_matching(None).unwrap(), v);
        assert!(matches!(
            signer(2).verifier_matching(Some(&v)),
            Err(EntryKeyError::Mismatch { .. })
        ));
    }
}
