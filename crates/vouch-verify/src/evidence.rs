//! The forms evidence arrives in, all turned into Sigstore bundles: a bundle itself
//! (`.sigstore.json`), a PEP 740 attestation (`.publish.attestation`), or a PyPI provenance
//! object (the integrity API's `attestation_bundles`).

use serde_json::{Value, json};
use sigstore_types::Bundle;

use crate::{ErrorKind, VerifyError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvidenceFormat {
    SigstoreBundle,
    Pep740Attestation,
    PypiProvenance,
}

/// One bundle to verify, with where it came from (for messages).
#[derive(Debug)]
pub struct Evidence {
    pub format: EvidenceFormat,
    pub bundle: Bundle,
    /// For PyPI provenance: the publisher object PyPI recorded next to the attestation.
    pub publisher: Option<Value>,
}

fn bundle_error(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> VerifyError {
    VerifyError::with_source(
        ErrorKind::Bundle,
        format!("{what} is not a valid Sigstore bundle"),
        e,
    )
}

/// PEP 740 keeps the same material as a v0.3 bundle under other names.
fn pep740_to_bundle(att: &Value) -> Result<Bundle, VerifyError> {
    let field = |ptr: &str| {
        att.pointer(ptr).cloned().ok_or_else(|| {
            VerifyError::new(
                ErrorKind::Bundle,
                format!("PEP 740 attestation has no {ptr:?}"),
            )
        })
    };
    if att["version"] != json!(1) {
        return Err(VerifyError::mismatch(
            ErrorKind::Bundle,
            "PEP 740 attestation version",
            "1",
            Some(&att["version"].to_string()),
        ));
    }
    let bundle = json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "certificate": { "rawBytes": field("/verification_material/certificate")? },
            "tlogEntries": field("/verification_material/transparency_entries")?,
            "timestampVerificationData": {},
        },
        "dsseEnvelope": {
            "payload": field("/envelope/statement")?,
            "payloadType": "application/vnd.in-toto+json",
            "signatures": [{ "sig": field("/envelope/signature")? }],
        }
    });
    Bundle::from_json(&bundle.to_string()).map_err(|e| bundle_error("the PEP 740 attestation", e))
}

/// Parses evidence, detecting its form.
pub fn parse_evidence(text: &str, origin: &str) -> Result<Vec<Evidence>, VerifyError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        VerifyError::with_source(ErrorKind::Bundle, format!("{origin} is not JSON"), e)
    })?;
    if value.get("mediaType").is_some() {
        let bundle = Bundle::from_json(text).map_err(|e| bundle_error(origin, e))?;
        return Ok(vec![Evidence {
            format: EvidenceFormat::SigstoreBundle,
            bundle,
            publisher: None,
        }]);
    }
    if value.get("envelope").is_some() && value.get("verification_material").is_some() {
        return Ok(vec![Evidence {
            format: EvidenceFormat::Pep740Attestation,
            bundle: pep740_to_bundle(&value)?,
            publisher: None,
        }]);
    }
    if let Some(groups) = value.get("attestation_bundles").and_then(Value::as_array) {
        let mut out = Vec::new();
        for group in groups {
            let publisher = group.get("publisher").cloned();
            for att in group["attestations"].as_array().into_iter().flatten() {
                out.push(Evidence {
                    format: EvidenceFormat::PypiProvenance,
                    bundle: pep740_to_bundle(att)?,
                    publisher: publisher.clone(),
                });
            }
        }
        if out.is_empty() {
            return Err(VerifyError::new(
                ErrorKind::Bundle,
                format!("{origin}: provenance object holds no attestations"),
            ));
        }
        return Ok(out);
    }
    Err(VerifyError::new(
        ErrorKind::Bundle,
        format!(
            "{origin} is neither a Sigstore bundle (mediaType), a PEP 740 attestation (envelope + verification_material) nor a PyPI provenance object (attestation_bundles)"
        ),
    ))
}
