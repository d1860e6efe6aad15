//! Evidence by digest: when an artifact carries no bundle for a wheel, GitHub's attestation
//! store is asked for every attestation of the wheel's sha256, and each is held to exactly the
//! policy a bundle inside the artifact would be. The store is a lookup, not a verdict: anyone
//! with write access to a repository can record anything there, so every entry is verified,
//! the first that passes is used, and the others are reported with the reason they failed.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use vouch_core::Sha256Digest;
use vouch_github::{BundleOrigin, StoredAttestation};
use vouch_verify::{ErrorKind, VerifyError};

use crate::pair::Pair;
use crate::verify::verify_evidence;
use crate::{Fetch, FetchError, RejectKind, Stop, reject};

/// What became of one attestation the store returned.
#[derive(Clone, Debug, Serialize)]
pub struct StoreReport {
    /// The file (or digest) it was looked up for.
    pub subject: String,
    /// Its position in the store's answer.
    pub index: usize,
    pub repository_id: Option<u64>,
    pub initiator: Option<String>,
    pub origin: Option<BundleOrigin>,
    /// Whether it is the evidence used.
    pub accepted: bool,
    /// Why it was not, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Checks every stored attestation with `check` (given its index and bundle JSON); the first
/// that passes is the result. Every entry is checked, so the report is complete; the error of
/// the first failure is returned when none passed.
pub fn judge<T>(
    subject: &str,
    stored: &[StoredAttestation],
    mut check: impl FnMut(usize, &Value) -> Result<T, VerifyError>,
) -> (Option<T>, Vec<StoreReport>, Option<VerifyError>) {
    let mut found = None;
    let mut first_error = None;
    let mut reports = Vec::with_capacity(stored.len());
    for a in stored {
        let outcome = match &a.bundle {
            Ok(bundle) => check(a.index, bundle),
            Err(why) => Err(VerifyError::new(ErrorKind::Bundle, why.clone())),
        };
        let mut report = StoreReport {
            subject: subject.to_owned(),
            index: a.index,
            repository_id: a.repository_id,
            initiator: a.initiator.clone(),
            origin: a.origin,
            accepted: false,
            kind: None,
            reason: None,
        };
        match outcome {
            Ok(t) if found.is_none() => {
                report.accepted = true;
                found = Some(t);
            }
            // A second passing entry adds nothing: the first is the evidence used.
            Ok(_) => {}
            Err(e) => {
                tracing::info!(subject, index = a.index, reason = %e, "stored attestation ignored");
                report.kind = Some(e.kind.as_str());
                report.reason = Some(e.to_string());
                first_error.get_or_insert(e);
            }
        }
        reports.push(report);
    }
    (found, reports, first_error)
}

/// One line per ignored attestation, for a rejection's reason.
pub fn ignored_summary(reports: &[StoreReport]) -> String {
    reports
        .iter()
        .filter(|r| !r.accepted)
        .map(|r| {
            format!(
                "attestation #{} (repository id {}): {}",
                r.index,
                r.repository_id.map_or("?".into(), |i| i.to_string()),
                r.reason.as_deref().unwrap_or("not used")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Fetch<'_> {
    /// Gives every pair without a bundle the first stored attestation that verifies for it,
    /// written under `work`; a wheel for which none does rejects the candidate.
    pub(crate) async fn bundles_by_digest(
        &self,
        store_repo: &str,
        pairs: &mut [Pair],
        artifact_id: u64,
        run_id: u64,
        work: &Path,
        reports: &mut Vec<StoreReport>,
    ) -> Result<(), Stop> {
        let policy = crate::verify::policy_for(self.exp, run_id, self.producer, self.cfg);
        for (n, pair) in pairs.iter_mut().enumerate() {
            if pair.bundle.is_some() {
                continue;
            }
            let name = pair
                .wheel
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // Our own scratch files: failing to read or write them is an I/O error, not a
            // verdict on the candidate.
            let sha256 = Sha256Digest::of_file(&pair.wheel).map_err(|source| FetchError::Io {
                path: pair.wheel.clone(),
                source,
            })?;
            let digest = sha256.to_string();
            let stored = self
                .source
                .attestations(store_repo, &digest)
                .await
                .map_err(|e| {
                    reject(
                        artifact_id,
                        Some(run_id),
                        RejectKind::Download,
                        format!(
                            "{name}: looking up {digest} in {store_repo}'s attestation store: {}",
                            crate::error_chain(&e)
                        ),
                    )
                })?;
            // The wheel is hashed once above; each candidate is checked against that digest.
            let (found, mut report, error) = judge(&name, &stored, |i, bundle| {
                let text = bundle.to_string();
                let origin = format!("{store_repo} attestation #{i}");
                verify_evidence(&sha256, &text, &origin, self.exp, &policy, self.trust)
                    .map(|_| text)
            });
            let ignored = ignored_summary(&report);
            reports.append(&mut report);
            match found {
                Some(text) => {
                    // Written where `commit` copies bundles from, next to the extracted files.
                    let path = work.join(format!("by-digest-{n}.sigstore.json"));
                    std::fs::write(&path, text).map_err(|source| FetchError::Io {
                        path: path.clone(),
                        source,
                    })?;
                    pair.bundle = Some(path);
                }
                None => {
                    let reason = if stored.is_empty() {
                        format!(
                            "{name}: no bundle in the artifact, and {store_repo}'s attestation store holds none for {digest}"
                        )
                    } else {
                        format!(
                            "{name}: no bundle in the artifact, and none of the {} attestation(s) {store_repo}'s store holds for {digest} passed: {ignored}",
                            stored.len()
                        )
                    };
                    let mut r = reject(artifact_id, Some(run_id), RejectKind::Verify, reason);
                    r.verify_kind = Some(error.map_or(ErrorKind::Bundle, |e| e.kind));
                    return Err(r.into());
                }
            }
        }
        Ok(())
    }
}
