//! The forms evidence arrives in, all turned into Sigstore bundles: a bundle itself
//! (`.sigstore.json`), a PEP 740 attestation (`.publish.attestation`), or a PyPI provenance
//! object (the integrity API's `attestation_bundles`).

use std::io::Read as _;
use std::path::Path;

use serde_json::{Value, json};
use sigstore_types::{Bundle, VerificationMaterialContent};

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

impl Evidence {
    /// Signed with a key named by a hint (no certificate at all), to be verified with `--key`.
    pub fn key_signed(&self) -> bool {
        matches!(
            self.bundle.verification_material.content,
            VerificationMaterialContent::PublicKey(_)
        )
    }
}

/// What a path is when it is not a regular file, for messages.
pub fn kind_of(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// Opens `path` (following links) for reading only if it is a regular file. Checked before the
/// open, so a FIFO is never opened (a read from it would wait for a writer forever), and again
/// on the open handle (non-blocking, so a FIFO swapped in between cannot block), so what is read
/// is what was checked.
/// Reads a whole regular file as text (never blocking on a FIFO; see [`open_regular`]).
pub fn read_regular_to_string(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut open_regular(path)?, &mut text)?;
    Ok(text)
}

pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let not_regular = |t: std::fs::FileType| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("it is {}, not a regular file", kind_of(t)),
        )
    };
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    Ok(file)
}

/// Reads an evidence file (bundle, attestation, provenance), refusing anything that is not a
/// regular file.
pub fn read_evidence_file(path: &Path) -> Result<String, VerifyError> {
    let read = || -> std::io::Result<String> {
        let mut text = String::new();
        open_regular(path)?.read_to_string(&mut text)?;
        Ok(text)
    };
    read().map_err(|e| {
        VerifyError::with_source(
            ErrorKind::Bundle,
            format!("cannot read evidence {}", path.display()),
            e,
        )
    })
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
