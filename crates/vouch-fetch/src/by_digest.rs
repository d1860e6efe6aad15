//! Evidence by digest: when an artifact carries no bundle for a wheel, GitHub's attestation
//! store is asked for the attestations of the wheel's sha256 of the policy's predicate type, and
//! each is held to exactly the policy a bundle inside the artifact would be. The store is a
//! lookup, not a verdict: anyone with write access to a repository can record anything there,
//! and the signer records a pr-build attestation for every wheel it signs (a reproducible PR
//! build of released code has the release wheel's digest). So the type is filtered by the
//! store, every entry is verified, pages are read until one passes or the budget
//! ([`STORE_PAGE_BUDGET`]) is spent, and the others are reported with the reason they failed.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use vouch_core::Sha256Digest;
use vouch_github::{BundleOrigin, StoredAttestation};
use vouch_verify::Policy;
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
            let lookup = self
                .look_up(store_repo, &name, &sha256, &policy)
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
            let Lookup {
                found,
                mut report,
                error,
                exhausted,
            } = lookup;
            let ignored = ignored_summary_capped(&report);
            let looked_at = report.len();
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
                    let predicate = &policy.predicate_type;
                    let reason = if exhausted {
                        format!(
                            "{name}: no bundle in the artifact, and none of the first {looked_at} attestation(s) of type {predicate} that {store_repo}'s store holds for {digest} passed; the lookup stopped at its budget of {STORE_PAGE_BUDGET} pages, and the store holds more (a flood of attestations for this digest?): {ignored}"
                        )
                    } else if looked_at == 0 {
                        format!(
                            "{name}: no bundle in the artifact, and {store_repo}'s attestation store holds none of type {predicate} for {digest}"
                        )
                    } else {
                        format!(
                            "{name}: no bundle in the artifact, and none of the {looked_at} attestation(s) of type {predicate} that {store_repo}'s store holds for {digest} passed: {ignored}"
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

    /// Pages through the store's attestations of `sha256` of the policy's predicate type
    /// (the store filters by it, so another type's flood takes no room) and verifies each
    /// against the policy, until one passes or [`STORE_PAGE_BUDGET`] pages were read: a
    /// passing entry behind any number of failing ones of the right type is found while the
    /// budget lasts, and the budget bounds what a flood can cost.
    async fn look_up(
        &self,
        store_repo: &str,
        name: &str,
        sha256: &Sha256Digest,
        policy: &Policy,
    ) -> Result<Lookup, FetchError> {
        let digest = sha256.to_string();
        let mut lookup = Lookup {
            found: None,
            report: Vec::new(),
            error: None,
            exhausted: false,
        };
        let mut next: Option<String> = None;
        for page_number in 0.. {
            if page_number == STORE_PAGE_BUDGET {
                lookup.exhausted = true;
                break;
            }
            let page = self
                .source
                .attestation_page(
                    store_repo,
                    &digest,
                    &policy.predicate_type,
                    next.as_deref(),
                    lookup.report.len(),
                )
                .await?;
            // The wheel is hashed once by the caller; each entry is checked against that digest.
            let (found, mut report, error) = judge(name, &page.entries, |i, bundle| {
                let text = bundle.to_string();
                let origin = format!("{store_repo} attestation #{i}");
                verify_evidence(sha256, &text, &origin, self.exp, policy, self.trust).map(|_| text)
            });
            lookup.report.append(&mut report);
            if lookup.error.is_none() {
                lookup.error = error;
            }
            if found.is_some() {
                lookup.found = found;
                break;
            }
            match page.next {
                Some(n) => next = Some(n),
                None => break,
            }
        }
        Ok(lookup)
    }
}

/// Pages of the attestation store read for one wheel at most (100 entries each, as listed).
pub const STORE_PAGE_BUDGET: usize = 20;

/// How many ignored entries a rejection names; the report lists them all.
const NAMED_IGNORED: usize = 3;

/// What one wheel's look-up found.
struct Lookup {
    /// The bundle JSON of the first entry that passed.
    found: Option<String>,
    report: Vec<StoreReport>,
    error: Option<VerifyError>,
    /// The budget ran out before the listing did.
    exhausted: bool,
}

/// [`ignored_summary`] of the first few, and how many more: a flood's reasons would make the
/// message as long as the flood.
fn ignored_summary_capped(reports: &[StoreReport]) -> String {
    let ignored: Vec<&StoreReport> = reports.iter().filter(|r| !r.accepted).collect();
    let shown: Vec<StoreReport> = ignored
        .iter()
        .take(NAMED_IGNORED)
        .map(|r| (*r).clone())
        .collect();
    let mut s = ignored_summary(&shown);
    if ignored.len() > NAMED_IGNORED {
        s.push_str(&format!("; and {} more", ignored.len() - NAMED_IGNORED));
    }
    s
}
