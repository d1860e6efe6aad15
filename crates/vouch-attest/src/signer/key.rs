//! `key:PATH`: a local ECDSA P-256 key (PKCS#8 PEM). The bundle has no certificate and no
//! transparency-log entry; a verifier needs the public key.

use std::path::Path;

use sigstore_bundle::{BundleV03, VerificationMaterialV03};
use sigstore_crypto::KeyPair;
use sigstore_types::{Bundle, DsseEnvelope, DsseSignature, KeyId, PayloadBytes, SignatureContent};

use super::{
    PAYLOAD_TYPE, SignError, SignFuture, Signer, SignerError, SignerInputs, SignerKind,
    statement_bytes,
};
use crate::Statement;

pub const KIND: SignerKind = SignerKind {
    name: "key",
    arg: Some("PATH"),
    keyless: false,
    build,
};

fn build(arg: Option<&str>, _: SignerInputs) -> Result<Box<dyn Signer>, SignerError> {
    let path = arg.unwrap_or_default();
    let pem = std::fs::read_to_string(path).map_err(|source| SignerError::ReadKey {
        path: Path::new(path).to_owned(),
        source,
    })?;
    Ok(Box::new(KeySigner(load_key(&pem, path)?)))
}

/// Signs with a local key.
pub struct KeySigner(pub KeyPair);

impl Signer for KeySigner {
    fn sign<'a>(&'a self, statement: &'a Statement) -> SignFuture<'a> {
        Box::pin(async move { sign_with_key(statement, &self.0) })
    }
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
