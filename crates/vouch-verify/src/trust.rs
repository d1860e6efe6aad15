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
                // The built repository (or at least its owner) must be named; a signer workflow
                // alone names only where a reusable workflow lives.
                if policy.repository.is_none() && policy.owner.is_none() {
                    return Err(VerifyError::new(
                        ErrorKind::Policy,
                        "no expected identity: the policy names no source repository (nor its \
                         owner) for the certificate to be held to",
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

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as B64;
    use serde_json::json;
    use sigstore_crypto::KeyPair;
    use vouch_core::statement::{PAYLOAD_TYPE, PREDICATE_SLSA_V1, STATEMENT_TYPE};

    use super::*;

    /// A key-signed bundle (no log entry) over a statement for `digest`, and the key's PEM.
    fn key_signed(key: &KeyPair, digest: &Sha256Digest) -> Evidence {
        let payload = serde_json::to_vec(&json!({
            "_type": STATEMENT_TYPE,
            "subject": [{ "name": "f.whl", "digest": { "sha256": digest.hex() } }],
            "predicateType": PREDICATE_SLSA_V1,
            "predicate": {},
        }))
        .unwrap();
        let sig = key
            .sign(&sigstore_types::pae(PAYLOAD_TYPE, &payload))
            .unwrap();
        let bundle = json!({
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": { "publicKey": { "hint": "k" } },
            "dsseEnvelope": {
                "payload": B64.encode(&payload),
                "payloadType": PAYLOAD_TYPE,
                "signatures": [{ "sig": B64.encode(sig.as_bytes()), "keyid": "k" }],
            },
        });
        crate::parse_evidence(&bundle.to_string(), "test")
            .unwrap()
            .remove(0)
    }

    fn pem(key: &KeyPair) -> String {
        key.public_key_der().unwrap().to_pem()
    }

    /// What is trusted, the policy, and `signed_with` or the refusal's kind and words.
    type Case<'a> = (Accept, &'a Policy, Result<&'a str, (ErrorKind, &'a str)>);

    /// Every way of trusting, against a key-signed bundle: which verify, and how the others
    /// refuse.
    #[test]
    fn key_or_keyless_is_decided_here() {
        let key = KeyPair::generate_ecdsa_p256().unwrap();
        let other = KeyPair::generate_ecdsa_p256().unwrap();
        let digest = Sha256Digest::of(b"wheel");
        let evidence = key_signed(&key, &digest);
        let anyone = Policy {
            runner: None,
            ..Policy::default()
        };
        let named = Policy {
            repository: Some("o/r".into()),
            ..anyone.clone()
        };
        let cases: &[Case] = &[
            (Accept::Key(pem(&key)), &anyone, Ok("public-key")),
            (Accept::Each(Some(pem(&key))), &anyone, Ok("public-key")),
            (
                Accept::Key(pem(&other)),
                &anyone,
                Err((ErrorKind::Signature, "does not verify with the given key")),
            ),
            (
                Accept::Each(None),
                &anyone,
                Err((ErrorKind::TrustRoot, "no public key to verify it with")),
            ),
            (
                Accept::Keyless,
                &anyone,
                Err((ErrorKind::Policy, "no expected identity")),
            ),
            (
                Accept::Keyless,
                &named,
                Err((
                    ErrorKind::Bundle,
                    "carries no certificate (it is key-signed)",
                )),
            ),
        ];
        for (accept, policy, expected) in cases {
            let trust = TrustSpec {
                root: TrustRootSource::Production,
                accept: accept.clone(),
            }
            .load()
            .unwrap();
            match (trust.verify(&digest, &evidence, policy), expected) {
                (Ok(v), Ok(with)) => assert_eq!(v.signed_with, *with, "{accept:?}"),
                (Err(e), Err((kind, words))) => {
                    assert_eq!(e.kind, *kind, "{accept:?}: {e}");
                    assert!(e.message.contains(words), "{accept:?}: {e}");
                }
                (got, _) => panic!("{accept:?}: {got:?}"),
            }
        }
    }

    #[test]
    fn a_bad_key_is_refused_when_loaded() {
        for (pem, words) in [
            ("junk", "not a PEM public key"),
            (
                "-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n",
                "holds a private key",
            ),
        ] {
            let Err(e) = (TrustSpec {
                root: TrustRootSource::Production,
                accept: Accept::Key(pem.into()),
            })
            .load() else {
                panic!("{pem} was accepted")
            };
            assert_eq!(e.kind, ErrorKind::TrustRoot);
            assert!(
                e.message.contains(words) && !e.message.contains("--key"),
                "{e}"
            );
        }
    }

    #[test]
    fn root_choice() {
        let file = std::path::PathBuf::from("root.json");
        for (given, staging, expected) in [
            (
                Some(file.clone()),
                false,
                TrustRootSource::File(file.clone()),
            ),
            (
                Some(file.clone()),
                true,
                TrustRootSource::File(file.clone()),
            ),
            (None, true, TrustRootSource::Staging),
            (None, false, TrustRootSource::Production),
        ] {
            assert_eq!(TrustRootSource::choose(given, staging), expected);
        }
    }
}
