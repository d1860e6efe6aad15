/// The class of a verification failure. Each has its own exit code in the CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// The bundle (or attestation) is not well-formed or not a supported version.
    Bundle,
    /// The signing certificate: chain to the Fulcio CA, validity at signing time, SCT.
    Certificate,
    /// Transparency log: inclusion proof, checkpoint, signed entry timestamp, integrated time.
    TransparencyLog,
    /// The DSSE signature over the PAE.
    Signature,
    /// The in-toto statement: type, predicate type, claims that disagree with the certificate.
    Statement,
    /// The file's digest is not among the statement's subjects.
    Digest,
    /// The signer's identity is not what the policy expects.
    Policy,
    /// The trust root or key given to the verifier is unusable.
    TrustRoot,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Bundle => "bundle",
            ErrorKind::Certificate => "certificate",
            ErrorKind::TransparencyLog => "transparency-log",
            ErrorKind::Signature => "signature",
            ErrorKind::Statement => "statement",
            ErrorKind::Digest => "digest",
            ErrorKind::Policy => "policy",
            ErrorKind::TrustRoot => "trust-root",
        }
    }
}

/// A failed verification: its kind, a message naming the claim with expected and found
/// values, and the underlying error when there is one.
#[derive(Debug, thiserror::Error)]
#[error("{kind} check failed: {message}", kind = kind.as_str())]
pub struct VerifyError {
    pub kind: ErrorKind,
    pub message: String,
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl VerifyError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        VerifyError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    pub fn with_source(
        kind: ErrorKind,
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        VerifyError {
            kind,
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// A claim that differs: names it, with what was expected and what was found.
    pub fn mismatch(kind: ErrorKind, claim: &str, expected: &str, found: Option<&str>) -> Self {
        let found = found.map_or_else(|| "nothing (claim absent)".to_owned(), |f| format!("{f:?}"));
        VerifyError::new(
            kind,
            format!("{claim}: expected {expected:?}, found {found}"),
        )
    }
}

/// Sorts a sigstore-verify error into our kinds.
pub(crate) fn classify(err: sigstore_verify::Error) -> VerifyError {
    use sigstore_verify::Error as E;
    let kind = match &err {
        E::IdentityMismatch { .. } | E::IssuerMismatch { .. } => ErrorKind::Policy,
        E::SignatureInvalid(_) | E::Crypto(_) => ErrorKind::Signature,
        E::ArtifactMismatch(_) | E::UnsupportedArtifact(_) => ErrorKind::Digest,
        E::Certificate(_) | E::TrustedCertificate(_) => ErrorKind::Certificate,
        E::TransparencyLog(_) | E::Timestamp(_) => ErrorKind::TransparencyLog,
        E::InvalidTrustRoot(_) | E::TrustRoot(_) => ErrorKind::TrustRoot,
        E::InvalidBundle(msg) | E::UnsupportedBundle(msg)
            if msg.contains("in-toto")
                || msg.contains("statement")
                || msg.contains("payload type") =>
        {
            ErrorKind::Statement
        }
        _ => ErrorKind::Bundle,
    };
    let message = err.to_string();
    VerifyError::with_source(kind, message, err)
}
