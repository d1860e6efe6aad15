//! Signing a statement into a Sigstore bundle v0.3 with a DSSE envelope: keyless (OIDC token
//! -> Fulcio certificate -> Rekor `dsse` entry) or with a local ECDSA P-256 key.

use sigstore_bundle::{BundleV03, VerificationMaterialV03};
use sigstore_crypto::KeyPair;
use sigstore_types::{Bundle, DsseEnvelope, DsseSignature, KeyId, PayloadBytes, SignatureContent};

use crate::Statement;

pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
pub const PRODUCTION_FULCIO_URL: &str = "https://fulcio.sigstore.dev";
pub const PRODUCTION_REKOR_URL: &str = "https://rekor.sigstore.dev";

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
    #[error(
        "no OIDC token: not in GitHub Actions with `id-token: write`, and no --oidc-token-file"
    )]
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

/// Loads a PKCS#8 PEM ECDSA P-256 private key.
pub fn load_key(pem_text: &str, path: &str) -> Result<KeyPair, SignError> {
    let parsed = pem::parse(pem_text).map_err(|_| SignError::KeyFormat {
        path: path.to_owned(),
    })?;
    if parsed.tag() != "PRIVATE KEY" {
        return Err(SignError::KeyFormat {
            path: path.to_owned(),
        });
    }
    KeyPair::from_pkcs8_der(parsed.contents()).map_err(|source| SignError::KeyAlgorithm {
        path: path.to_owned(),
        source,
    })
}

/// A fresh P-256 key: (PKCS#8 private key PEM, SPKI public key PEM).
pub fn generate_key() -> Result<(String, String), SignError> {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(
        &ECDSA_P256_SHA256_ASN1_SIGNING,
        &aws_lc_rs::rand::SystemRandom::new(),
    )
    .map_err(|_| SignError::KeyGen)?;
    let private = pem::encode(&pem::Pem::new("PRIVATE KEY", pkcs8.as_ref().to_vec()));
    let key = KeyPair::from_pkcs8_der(pkcs8.as_ref()).map_err(SignError::Crypto)?;
    let public = key.public_key_der().map_err(SignError::Crypto)?.to_pem();
    Ok((private, public))
}

/// Signs with a local key. The bundle names the key by a hint (the sha256 of its public key),
/// in the verification material and, as the bundle spec requires, as the DSSE signature's
/// `keyid`; it has no certificate and no transparency-log entry.
pub fn sign_with_key(statement: &Statement, key: &KeyPair) -> Result<Bundle, SignError> {
    let payload = statement_bytes(statement)?;
    let sig = key
        .sign(&sigstore_types::pae(PAYLOAD_TYPE, &payload))
        .map_err(SignError::Crypto)?;
    let public = key.public_key_der().map_err(SignError::Crypto)?;
    let hint = sigstore_crypto::sha256(public.as_bytes()).to_hex();
    let envelope = DsseEnvelope::new(
        PAYLOAD_TYPE.to_owned(),
        PayloadBytes::from_bytes(&payload),
        DsseSignature::new(sig, KeyId::new(hint.clone())),
    );
    Ok(BundleV03::new(
        VerificationMaterialV03::PublicKey { hint },
        SignatureContent::DsseEnvelope(envelope),
    )
    .into_bundle())
}

/// Where keyless signing goes.
#[derive(Clone, Debug)]
pub struct KeylessServices {
    pub fulcio_url: String,
    pub rekor_url: String,
}

impl Default for KeylessServices {
    fn default() -> Self {
        KeylessServices {
            fulcio_url: PRODUCTION_FULCIO_URL.into(),
            rekor_url: PRODUCTION_REKOR_URL.into(),
        }
    }
}

/// Parses a raw JWT into a token. The value stays inside a secret wrapper.
pub fn token_from_jwt(jwt: &str) -> Result<sigstore_oidc::IdentityToken, SignError> {
    sigstore_oidc::IdentityToken::from_jwt(jwt.trim()).map_err(SignError::Token)
}

/// The ambient GitHub Actions token (audience `sigstore`).
pub async fn ambient_token() -> Result<sigstore_oidc::IdentityToken, SignError> {
    sigstore_oidc::IdentityToken::detect_ambient()
        .await
        .map_err(SignError::Token)?
        .ok_or(SignError::NoAmbientToken)
}

/// Keyless signing: an ephemeral key, a Fulcio certificate for the token's identity, a Rekor
/// `dsse` entry with inclusion proof.
pub async fn sign_keyless(
    statement: &Statement,
    token: sigstore_oidc::IdentityToken,
    services: &KeylessServices,
) -> Result<Bundle, SignError> {
    let payload = statement_bytes(statement)?;
    let context = sigstore_sign::SigningContext::new(sigstore_sign::SigningServices::new(
        services.fulcio_url.clone(),
        services.rekor_url.clone(),
    ));
    tracing::info!(fulcio = %services.fulcio_url, rekor = %services.rekor_url, "signing keyless");
    context
        .signer(token)
        .sign_raw_statement(&payload)
        .await
        .map_err(|source| SignError::Keyless {
            fulcio: services.fulcio_url.clone(),
            rekor: services.rekor_url.clone(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue12_key_signed_bundle_names_the_key_twice_the_same_way() {
        let (private, _) = generate_key().unwrap();
        let key = load_key(&private, "k.pem").unwrap();
        let statement = crate::statement_for(
            &crate::RunContext {
                repository: "o/r".into(),
                sha: "0123456789abcdef0123456789abcdef01234567".into(),
                ..Default::default()
            },
            vec![],
            &crate::VouchClaims::default(),
        );
        let bundle: serde_json::Value =
            serde_json::from_str(&sign_with_key(&statement, &key).unwrap().to_json().unwrap())
                .unwrap();
        let hint = &bundle["verificationMaterial"]["publicKey"]["hint"];
        assert!(hint.as_str().is_some_and(|h| h.len() == 64), "{bundle}");
        assert_eq!(&bundle["dsseEnvelope"]["signatures"][0]["keyid"], hint);
    }
}
