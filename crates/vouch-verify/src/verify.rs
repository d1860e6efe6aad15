use serde::Serialize;
use sigstore_trust_root::TrustedRoot;
use sigstore_types::{
    Bundle, DerPublicKey, Sha256Hash, SignatureContent, VerificationMaterialContent,
};
use sigstore_verify::{PublicKeyVerificationPolicy, VerificationPolicy};
use vouch_core::Sha256Digest;
use vouch_core::statement::PAYLOAD_TYPE;

use crate::error::classify;
use crate::policy::{SignerIdentity, StatementSummary, check_statement};
use crate::{ErrorKind, Evidence, EvidenceFormat, Policy, TrustRootSource, VerifyError};

/// What was checked, each `true` only when that check ran and passed.
#[derive(Clone, Debug, Serialize)]
pub struct Checks {
    pub certificate_chain: bool,
    pub sct: bool,
    pub transparency_log: bool,
    pub signature: bool,
    pub statement: bool,
    pub digest: bool,
    pub identity_policy: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Verified {
    pub format: EvidenceFormat,
    pub sha256: Sha256Digest,
    /// `certificate` (keyless) or `public-key`.
    pub signed_with: &'static str,
    pub signer: SignerIdentity,
    pub statement: StatementSummary,
    pub checks: Checks,
    /// Seconds since 1970, from the verified transparency-log entry.
    pub integrated_time: Option<i64>,
    /// Honest caveats a human should read (e.g. "identity comes only from the statement").
    pub notes: Vec<String>,
}

impl Verified {
    /// The commit the file was built from: a pr-build statement's `source.builtSha`; else the
    /// commit the signing run was at (the certificate's source digest, or a key-signed
    /// statement's resolved dependency), which for a build signed in its own run is the commit
    /// it checked out.
    pub fn built_commit(&self) -> Option<&str> {
        match &self.statement.pr_build {
            Some(p) => Some(&p.source.built_sha),
            None => self.signer.sha.as_deref(),
        }
    }
}

/// Why a bundle has no signing certificate, in words that lead to the right next step.
fn no_certificate(bundle: &Bundle) -> VerifyError {
    match &bundle.verification_material.content {
        VerificationMaterialContent::PublicKey(_) => VerifyError::new(
            ErrorKind::Bundle,
            "the bundle carries no certificate (it is key-signed); verify it with its public key",
        ),
        _ => VerifyError::new(
            ErrorKind::Bundle,
            "the bundle's verificationMaterial.x509CertificateChain holds no certificate: there \
             is nothing to verify the signature against (it is not key-signed either, which \
             would name a publicKey)",
        ),
    }
}

pub(crate) fn parse_public_key(pem: &str) -> Result<DerPublicKey, VerifyError> {
    if pem.contains("PRIVATE KEY-----") {
        return Err(VerifyError::new(
            ErrorKind::TrustRoot,
            "the file holds a private key; give the public key (`vouch keygen` writes it to \
             <key>.pub)",
        ));
    }
    let key = DerPublicKey::from_pem(pem).map_err(|e| {
        VerifyError::with_source(
            ErrorKind::TrustRoot,
            "the file is not a PEM public key (`-----BEGIN PUBLIC KEY-----`)",
            e,
        )
    })?;
    sigstore_crypto::VerificationKey::from_spki(&key).map_err(|e| {
        VerifyError::with_source(
            ErrorKind::TrustRoot,
            "the file's public key is of an unsupported kind",
            e,
        )
    })?;
    Ok(key)
}

fn dsse_payload(bundle: &Bundle) -> Result<&[u8], VerifyError> {
    match &bundle.content {
        SignatureContent::DsseEnvelope(env) => Ok(env.payload.as_bytes()),
        _ => Err(VerifyError::new(
            ErrorKind::Bundle,
            "the bundle signs a bare message, not a DSSE envelope with an in-toto statement",
        )),
    }
}

/// The identity `bundle`'s certificate claims, read without verifying anything (`None` for a
/// key-signed bundle). Only for a signer's checks on the bundle it just made, e.g. that it
/// names the repository whose attestation store it is about to be recorded in.
pub fn claimed_identity(bundle: &Bundle) -> Result<Option<SignerIdentity>, VerifyError> {
    let Some(cert) = bundle.signing_certificate() else {
        return Ok(None);
    };
    let info = sigstore_crypto::parse_certificate_info(cert).map_err(|e| {
        VerifyError::with_source(
            ErrorKind::Certificate,
            "the signing certificate cannot be parsed",
            e,
        )
    })?;
    Ok(Some(SignerIdentity::from_certificate(&info)))
}

/// Verifies keyless (certificate) bundles against one trust root. Build once, use for many
/// files: loading the root and its keys is the expensive part.
pub(crate) struct Verifier {
    source: TrustRootSource,
    root: TrustedRoot,
    inner: sigstore_verify::Verifier,
}

impl Verifier {
    pub fn new(source: TrustRootSource) -> Result<Self, VerifyError> {
        let root = source.load()?;
        let inner = sigstore_verify::Verifier::new(&root).map_err(classify)?;
        Ok(Verifier {
            source,
            root,
            inner,
        })
    }

    pub fn trust_root(&self) -> &TrustedRoot {
        &self.root
    }

    /// Full verification of a certificate-signed bundle for a file with `digest`.
    pub fn verify(
        &self,
        digest: &Sha256Digest,
        evidence: &Evidence,
        policy: &Policy,
    ) -> Result<Verified, VerifyError> {
        let bundle = &evidence.bundle;
        let cert = bundle
            .signing_certificate()
            .ok_or_else(|| no_certificate(bundle))?;
        let info = sigstore_crypto::parse_certificate_info(cert).map_err(|e| {
            VerifyError::with_source(
                ErrorKind::Certificate,
                "the signing certificate cannot be parsed",
                e,
            )
        })?;
        let identity = SignerIdentity::from_certificate(&info);

        // Identity is checked by us against every extension below; sigstore checks the issuer
        // and everything cryptographic. A root without CT logs (a private instance) cannot
        // check SCTs: that is reported, not hidden.
        let mut sigstore_policy =
            VerificationPolicy::any_identity().require_issuer(policy.issuer.clone());
        let sct_possible = !self.root.ctlogs.is_empty();
        let mut notes = Vec::new();
        if !sct_possible {
            sigstore_policy = sigstore_policy.skip_sct();
            notes.push(format!(
                "trust root {} has no CT logs: SCT not checked",
                self.source.describe()
            ));
        }
        let hash = Sha256Hash::new(*digest.as_bytes());
        let result = self
            .inner
            .verify(hash, bundle, &sigstore_policy)
            .map_err(classify)?;
        let statement = check_statement(
            dsse_payload(bundle)?,
            &digest.hex(),
            policy,
            Some(&identity),
        )?;
        policy.check_certificate(&identity)?;
        notes.extend(crate::pr_build::notes(&statement));
        Ok(Verified {
            format: evidence.format,
            sha256: *digest,
            signed_with: "certificate",
            signer: identity,
            statement,
            checks: Checks {
                certificate_chain: result.certificate_verified(),
                sct: result.sct_verified(),
                transparency_log: result.tlog_verified(),
                signature: true,
                statement: true,
                digest: true,
                identity_policy: true,
            },
            integrated_time: result.integrated_time().map(|t| t.as_second()),
            notes,
        })
    }
}

/// Verifies a key-signed bundle with the caller's public key (PEM). Identity claims then come
/// only from the statement, which the key holder wrote; the report says so.
pub(crate) fn verify_with_key(
    digest: &Sha256Digest,
    evidence: &Evidence,
    key_pem: &str,
    policy: &Policy,
    root: Option<&TrustedRoot>,
) -> Result<Verified, VerifyError> {
    let bundle = &evidence.bundle;
    let hint = match &bundle.verification_material.content {
        VerificationMaterialContent::PublicKey(k) => &k.hint,
        VerificationMaterialContent::X509CertificateChain { certificates }
            if certificates.is_empty() =>
        {
            return Err(no_certificate(bundle));
        }
        _ => {
            return Err(VerifyError::new(
                ErrorKind::Bundle,
                "the bundle carries a certificate; verify it keyless, not with a public key",
            ));
        }
    };
    let key = parse_public_key(key_pem)?;
    // The bundle spec: a key-signed DSSE envelope's signature names the key by the same hint
    // as the verification material. A bundle where they differ was not made by one signer.
    if let SignatureContent::DsseEnvelope(env) = &bundle.content
        && env.signature.keyid.as_str() != hint
    {
        return Err(VerifyError::new(
            ErrorKind::Bundle,
            format!(
                "dsseEnvelope.signatures[0].keyid {:?} is not verificationMaterial.publicKey.hint {hint:?}; the bundle spec requires them to be equal",
                env.signature.keyid.as_str()
            ),
        ));
    }
    let payload = dsse_payload(bundle)?;
    let mut notes = vec![
        "key-signed: signer identity comes only from the statement, which the key holder wrote"
            .to_owned(),
    ];
    let tlog = !bundle.verification_material.tlog_entries.is_empty();
    if tlog {
        let root = root.ok_or_else(|| {
            VerifyError::new(
                ErrorKind::TrustRoot,
                "the bundle has log entries but no trust root was given",
            )
        })?;
        let hash = Sha256Hash::new(*digest.as_bytes());
        sigstore_verify::verify(hash, bundle, &PublicKeyVerificationPolicy::new(key), root)
            .map_err(classify)?;
    } else {
        let SignatureContent::DsseEnvelope(env) = &bundle.content else {
            unreachable!("dsse_payload checked")
        };
        let vk = sigstore_crypto::VerificationKey::from_spki(&key).map_err(|e| {
            VerifyError::with_source(ErrorKind::TrustRoot, "unsupported public key", e)
        })?;
        vk.verify(
            sigstore_types::pae(&env.payload_type, payload),
            &env.signature.sig,
        )
        .map_err(|e| {
            VerifyError::with_source(
                ErrorKind::Signature,
                "DSSE signature does not verify with the given key",
                e,
            )
        })?;
        if env.payload_type != PAYLOAD_TYPE {
            return Err(VerifyError::mismatch(
                ErrorKind::Statement,
                "DSSE payloadType",
                PAYLOAD_TYPE,
                Some(&env.payload_type),
            ));
        }
        notes.push("no transparency-log entry: the signing time is not proven".to_owned());
    }
    let statement = check_statement(payload, &digest.hex(), policy, None)?;
    // No CA speaks for the signer: the policy is held against what the statement claims.
    let claimed = SignerIdentity::from_statement(payload).unwrap_or_default();
    policy.check_statement_claims(&claimed)?;
    notes.extend(crate::pr_build::notes(&statement));
    Ok(Verified {
        format: evidence.format,
        sha256: *digest,
        signed_with: "public-key",
        signer: claimed,
        statement,
        checks: Checks {
            certificate_chain: false,
            sct: false,
            transparency_log: tlog,
            signature: true,
            statement: true,
            digest: true,
            identity_policy: true,
        },
        integrated_time: None,
        notes,
    })
}
