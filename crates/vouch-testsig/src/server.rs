//! The HTTP side: Fulcio's `signingCert` and Rekor v1's `log/entries`.

use std::sync::Arc;

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
use axum::Json;
use axum::extract::State as AxState;
use axum::http::StatusCode;
use axum::routing::post;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::merkle::{inclusion_path, leaf_hash, root_hash};
use crate::{GITHUB_ISSUER, State, now};

type Reply = Result<Json<Value>, (StatusCode, String)>;

fn bad(code: StatusCode, msg: impl Into<String>) -> (StatusCode, String) {
    (code, msg.into())
}

pub(crate) fn router(state: Arc<State>) -> axum::Router {
    axum::Router::new()
        .route("/api/v2/signingCert", post(signing_cert))
        .route("/api/v1/log/entries", post(create_entry))
        .with_state(state)
}

/// Checks an ES256 JWT from the test issuer and returns its claims.
fn verify_token(state: &State, token: &str) -> Result<Value, (StatusCode, String)> {
    let unauthorized = |m: &str| bad(StatusCode::UNAUTHORIZED, m.to_owned());
    let parts: Vec<&str> = token.split('.').collect();
    let [h, p, s] = parts.as_slice() else {
        return Err(unauthorized("token is not a JWT"));
    };
    let sig = URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| unauthorized("token signature is not base64url"))?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &state.oidc_public)
        .verify(format!("{h}.{p}").as_bytes(), &sig)
        .map_err(|_| unauthorized("token signature does not verify"))?;
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(p)
            .map_err(|_| unauthorized("token payload"))?,
    )
    .map_err(|_| unauthorized("token payload is not JSON"))?;
    if claims["iss"] != GITHUB_ISSUER {
        return Err(unauthorized("unknown issuer"));
    }
    if claims["aud"] != "sigstore" {
        return Err(unauthorized("audience is not sigstore"));
    }
    if claims["exp"].as_i64().is_none_or(|e| e <= now()) {
        return Err(unauthorized("token expired"));
    }
    Ok(claims)
}

/// DER UTF8String, the encoding Fulcio uses for extensions .1.8 onwards.
fn der_utf8(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = vec![0x0c];
    match b.len() {
        n if n < 0x80 => out.push(n as u8),
        n if n < 0x100 => out.extend([0x81, n as u8]),
        n => out.extend([0x82, (n >> 8) as u8, n as u8]),
    }
    out.extend_from_slice(b);
    out
}

async fn signing_cert(AxState(state): AxState<Arc<State>>, Json(req): Json<Value>) -> Reply {
    let token = req["credentials"]["oidcIdentityToken"]
        .as_str()
        .ok_or_else(|| bad(StatusCode::BAD_REQUEST, "no credentials.oidcIdentityToken"))?;
    let claims = verify_token(&state, token)?;
    let pem = req["publicKeyRequest"]["publicKey"]["content"]
        .as_str()
        .ok_or_else(|| {
            bad(
                StatusCode::BAD_REQUEST,
                "no publicKeyRequest.publicKey.content",
            )
        })?;
    let public_key = sigstore_types::DerPublicKey::from_pem(pem)
        .map_err(|e| bad(StatusCode::BAD_REQUEST, e.to_string()))?;
    let pop: sigstore_types::SignatureBytes =
        serde_json::from_value(req["publicKeyRequest"]["proofOfPossession"].clone())
            .map_err(|e| bad(StatusCode::BAD_REQUEST, format!("proofOfPossession: {e}")))?;
    let subject = claims["email"]
        .as_str()
        .or_else(|| claims["sub"].as_str())
        .unwrap_or_default();
    sigstore_crypto::VerificationKey::from_spki(&public_key)
        .and_then(|k| k.verify(subject.as_bytes(), &pop))
        .map_err(|_| {
            bad(
                StatusCode::BAD_REQUEST,
                "proof of possession does not verify",
            )
        })?;

    let c = |k: &str| claims[k].as_str().unwrap_or_default().to_owned();
    let gh = "https://github.com";
    let repo = c("repository");
    let extensions: Vec<(u64, String)> = vec![
        (8, GITHUB_ISSUER.to_owned()),
        (9, format!("{gh}/{}", c("job_workflow_ref"))),
        (10, c("job_workflow_sha")),
        (11, c("runner_environment")),
        (12, format!("{gh}/{repo}")),
        (13, c("sha")),
        (14, c("ref")),
        (15, c("repository_id")),
        (16, format!("{gh}/{}", c("repository_owner"))),
        (17, c("repository_owner_id")),
        (18, format!("{gh}/{}", c("workflow_ref"))),
        (19, c("workflow_sha")),
        (20, c("event_name")),
        (
            21,
            format!(
                "{gh}/{repo}/actions/runs/{}/attempts/{}",
                c("run_id"),
                c("run_attempt")
            ),
        ),
        (22, c("repository_visibility")),
    ];
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())
        .map_err(|e| bad(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    params.not_before = time::OffsetDateTime::from_unix_timestamp(now() - 60).expect("time");
    params.not_after = time::OffsetDateTime::from_unix_timestamp(now() + 600).expect("time");
    let san = format!("{gh}/{}", c("job_workflow_ref"));
    params.subject_alt_names = vec![rcgen::SanType::URI(
        san.try_into()
            .map_err(|_| bad(StatusCode::BAD_REQUEST, "bad SAN"))?,
    )];
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
    params.use_authority_key_identifier_extension = true;
    for (n, v) in &extensions {
        params
            .custom_extensions
            .push(rcgen::CustomExtension::from_oid_content(
                &[1, 3, 6, 1, 4, 1, 57264, 1, *n],
                der_utf8(v),
            ));
    }
    let spki = rcgen::SubjectPublicKeyInfo::from_der(public_key.as_bytes())
        .map_err(|e| bad(StatusCode::BAD_REQUEST, e.to_string()))?;
    let issuer = rcgen::Issuer::from_params(&state.ca_params, &state.ca_key);
    let leaf = params
        .signed_by(&spki, &issuer)
        .map_err(|e| bad(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let ca_pem = sigstore_types::DerCertificate::from(state.ca_der.clone()).to_pem();
    *state.issued_certificates.lock().expect("lock") += 1;
    Ok(Json(json!({
        "signedCertificateEmbeddedSct": { "chain": { "certificates": [leaf.pem(), ca_pem] } }
    })))
}

/// Keys in lexicographic order, no whitespace: the canonical form Rekor signs.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::from(k.as_str()), canonical(&m[*k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

async fn create_entry(AxState(state): AxState<Arc<State>>, Json(req): Json<Value>) -> Reply {
    if req["kind"] != "dsse" || req["apiVersion"] != "0.0.1" {
        return Err(bad(
            StatusCode::BAD_REQUEST,
            "only dsse 0.0.1 entries are supported",
        ));
    }
    let envelope_json = req["spec"]["proposedContent"]["envelope"]
        .as_str()
        .ok_or_else(|| bad(StatusCode::BAD_REQUEST, "no spec.proposedContent.envelope"))?;
    let verifier_b64 = req["spec"]["proposedContent"]["verifiers"][0]
        .as_str()
        .ok_or_else(|| bad(StatusCode::BAD_REQUEST, "no verifier"))?;
    let envelope: Value = serde_json::from_str(envelope_json)
        .map_err(|e| bad(StatusCode::BAD_REQUEST, e.to_string()))?;
    let payload = STANDARD
        .decode(envelope["payload"].as_str().unwrap_or_default())
        .map_err(|_| bad(StatusCode::BAD_REQUEST, "payload is not base64"))?;
    let payload_type = envelope["payloadType"].as_str().unwrap_or_default();
    let sig_b64 = envelope["signatures"][0]["sig"]
        .as_str()
        .unwrap_or_default();
    let sig: sigstore_types::SignatureBytes = serde_json::from_value(json!(sig_b64))
        .map_err(|e| bad(StatusCode::BAD_REQUEST, e.to_string()))?;
    let cert_pem = String::from_utf8(
        STANDARD
            .decode(verifier_b64)
            .map_err(|_| bad(StatusCode::BAD_REQUEST, "verifier"))?,
    )
    .map_err(|_| bad(StatusCode::BAD_REQUEST, "verifier is not PEM"))?;
    let cert = sigstore_types::DerCertificate::from_pem(&cert_pem)
        .map_err(|e| bad(StatusCode::BAD_REQUEST, e.to_string()))?;
    let info = sigstore_crypto::parse_certificate_info(&cert)
        .map_err(|e| bad(StatusCode::BAD_REQUEST, e.to_string()))?;
    // A real Rekor refuses entries whose signature does not verify.
    sigstore_crypto::VerificationKey::from_spki(&info.public_key)
        .and_then(|k| k.verify(sigstore_types::pae(payload_type, &payload), &sig))
        .map_err(|_| {
            bad(
                StatusCode::BAD_REQUEST,
                "envelope signature does not verify with the verifier",
            )
        })?;

    let body = json!({
        "apiVersion": "0.0.1",
        "kind": "dsse",
        "spec": {
            "envelopeHash": { "algorithm": "sha256", "value": hex::encode(Sha256::digest(envelope_json.as_bytes())) },
            "payloadHash": { "algorithm": "sha256", "value": hex::encode(Sha256::digest(&payload)) },
            "signatures": [{ "signature": sig_b64, "verifier": verifier_b64 }]
        }
    });
    let body = canonical(&body);
    let integrated_time = now();
    let (index, size, root, path) = {
        let mut leaves = state.leaves.lock().expect("lock");
        leaves.push(leaf_hash(body.as_bytes()));
        let index = leaves.len() - 1;
        (
            index,
            leaves.len(),
            root_hash(&leaves),
            inclusion_path(index, &leaves),
        )
    };
    let body_b64 = STANDARD.encode(&body);
    let log_id_hex = hex::encode(state.log_id);
    let set_payload = canonical(&json!({
        "body": body_b64,
        "integratedTime": integrated_time,
        "logID": log_id_hex,
        "logIndex": index,
    }));
    let sign = |data: &[u8]| {
        state
            .log_key
            .sign(data)
            .map_err(|e| bad(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
    };
    let set = sign(set_payload.as_bytes())?;
    let note = format!("{}\n{size}\n{}\n", state.origin, STANDARD.encode(root));
    let mut hinted = state.log_id[..4].to_vec();
    hinted.extend_from_slice(sign(note.as_bytes())?.as_bytes());
    // The signature line names the key (the log's host name), not the whole origin.
    let key_name = state.origin.split(' ').next().unwrap_or_default();
    let checkpoint = format!("{note}\n\u{2014} {key_name} {}\n", STANDARD.encode(hinted));
    let uuid = hex::encode(leaf_hash(body.as_bytes()));
    Ok(Json(json!({
        uuid: {
            "body": body_b64,
            "integratedTime": integrated_time,
            "logID": log_id_hex,
            "logIndex": index,
            "verification": {
                "inclusionProof": {
                    "checkpoint": checkpoint,
                    "hashes": path.iter().map(hex::encode).collect::<Vec<_>>(),
                    "logIndex": index,
                    "rootHash": hex::encode(root),
                    "treeSize": size,
                },
                "signedEntryTimestamp": STANDARD.encode(set.as_bytes()),
            }
        }
    })))
}
