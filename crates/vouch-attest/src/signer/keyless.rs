//! `sigstore`: keyless signing. An OIDC token (given, or GitHub Actions' ambient one) gets a
//! Fulcio certificate for an ephemeral key; the signature goes into Rekor as a `dsse` entry.

use sigstore_oidc::IdentityToken;
use sigstore_types::Bundle;

use super::{
    SignError, SignFuture, Signer, SignerError, SignerInputs, SignerKind, statement_bytes,
};
use crate::Statement;

pub const PRODUCTION_FULCIO_URL: &str = "https://fulcio.sigstore.dev";
pub const PRODUCTION_REKOR_URL: &str = "https://rekor.sigstore.dev";

pub const KIND: SignerKind = SignerKind {
    name: "sigstore",
    arg: None,
    keyless: true,
    build,
};

fn build(_: Option<&str>, inputs: SignerInputs) -> Result<Box<dyn Signer>, SignerError> {
    Ok(Box::new(KeylessSigner {
        services: KeylessServices {
            fulcio_url: inputs
                .fulcio_url
                .unwrap_or_else(|| PRODUCTION_FULCIO_URL.into()),
            rekor_url: inputs
                .rekor_url
                .unwrap_or_else(|| PRODUCTION_REKOR_URL.into()),
        },
        token: inputs.oidc_token,
    }))
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

/// Signs keyless; without a token it asks for the ambient one when signing.
pub struct KeylessSigner {
    pub services: KeylessServices,
    pub token: Option<IdentityToken>,
}

impl Signer for KeylessSigner {
    fn sign<'a>(&'a self, statement: &'a Statement) -> SignFuture<'a> {
        Box::pin(async move {
            let token = match &self.token {
                Some(t) => t.clone(),
                None => ambient_token().await?,
            };
            sign_keyless(statement, token, &self.services).await
        })
    }
}

/// Parses a raw JWT into a token. The value stays inside a secret wrapper.
pub fn token_from_jwt(jwt: &str) -> Result<IdentityToken, SignError> {
    IdentityToken::from_jwt(jwt.trim()).map_err(SignError::Token)
}

/// The token's `job_workflow_ref` claim (GitHub Actions), read without verifying the token:
/// it only describes the build in the statement, and Fulcio certifies the same claim as the
/// certificate's Build Signer URI, which is what a verifier holds it to.
pub fn job_workflow_ref(token: &IdentityToken) -> Option<String> {
    use base64::Engine as _;
    let payload = token.expose_secret().split('.').nth(1)?;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&raw).ok()?;
    claims["job_workflow_ref"].as_str().map(str::to_owned)
}

/// The ambient GitHub Actions token (audience `sigstore`).
pub async fn ambient_token() -> Result<IdentityToken, SignError> {
    IdentityToken::detect_ambient()
        .await
        .map_err(SignError::Token)?
        .ok_or(SignError::NoAmbientToken)
}

/// Keyless signing: an ephemeral key, a Fulcio certificate for the token's identity, a Rekor
/// `dsse` entry with inclusion proof.
pub async fn sign_keyless(
    statement: &Statement,
    token: IdentityToken,
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
