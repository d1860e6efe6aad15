//! Sign: exactly one pinned cell's wheel, with a pr-build statement about its digest.

use std::path::{Path, PathBuf};

use serde_json::Value;
use vouch_attest::{
    BUILT_FROM_HEAD, BuildRun, BuiltSource, PrBuildPredicate, RecordedRequest, ReportedByBuild,
    SignedBy, Signer, Statement, Subject, pr_build_statement,
};
use vouch_core::Sha256Digest;
use vouch_github::GithubClient;
use vouch_wheel::WheelFilename;

use crate::pin::{Cell, Pinned};
use crate::{PrRunError, top_level_name};

/// Which pinned artifact to sign, where the results go, and who signs (as the signing run's
/// own environment describes it, when it is known).
pub struct SignRequest<'a> {
    /// The artifact's name without `unsigned-`.
    pub artifact: &'a str,
    pub out: &'a Path,
    pub signed_by: Option<SignedBy>,
}

/// What was written.
#[derive(Debug, serde::Serialize)]
pub struct Signed {
    pub wheel: PathBuf,
    pub sha256: Sha256Digest,
    /// `<out>/<artifact>.sigstore.json`.
    pub bundle: PathBuf,
    pub statement: Statement,
}

/// The longest reported value carried into a statement: the build record is the PR's.
const MAX_REPORTED: usize = 256;

fn reported_str(v: &Value) -> Option<String> {
    v.as_str()
        .filter(|s| s.len() <= MAX_REPORTED && !s.chars().any(char::is_control))
        .map(str::to_owned)
}

/// What the build's record says about `wheel` (name and digest must be this wheel's, or the
/// record is about something else and says nothing here). Never an error: it is data.
fn reported_by_build(record: Option<&[u8]>, wheel: &str, digest: &Sha256Digest) -> ReportedByBuild {
    let Some(v) = record.and_then(|b| serde_json::from_slice::<Value>(b).ok()) else {
        return ReportedByBuild::default();
    };
    let names_this_wheel = v["wheel"].as_str() == Some(wheel)
        && v["sha256"]
            .as_str()
            .is_none_or(|s| s == digest.to_string() || s == digest.hex());
    if !names_this_wheel {
        tracing::warn!(
            wheel,
            "the build record names another wheel; nothing of it is reported"
        );
        return ReportedByBuild::default();
    }
    ReportedByBuild {
        cell: reported_str(&v["cell"]),
        inputs_digest: reported_str(&v["inputs_digest"]),
        source_date_epoch: v["source_date_epoch"].as_u64(),
        cache_scope: reported_str(&v["cache"]["policy"]["write"]),
    }
}

/// The one wheel of `cell` among the extracted `files`, and its build record when there is one.
fn the_wheel<'a>(
    cell: &Cell,
    dir: &Path,
    files: &'a [PathBuf],
) -> Result<(&'a Path, String, Option<&'a Path>), PrRunError> {
    let refuse = |reason: String| PrRunError::Cell {
        artifact: cell.unsigned.name.clone(),
        artifact_id: cell.unsigned.id,
        reason,
    };
    let wheels: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "whl"))
        .collect();
    let [wheel] = wheels.as_slice() else {
        return Err(refuse(format!(
            "it holds {} wheels ({}); exactly one, the cell's, is signed",
            wheels.len(),
            wheels
                .iter()
                .map(|w| w.strip_prefix(dir).unwrap_or(w).display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let name = top_level_name(dir, wheel)
        .ok_or_else(|| refuse(format!("its wheel {} is not at the top", wheel.display())))?
        .to_owned();
    let parsed: WheelFilename = name
        .parse()
        .map_err(|e: vouch_wheel::WheelError| refuse(e.to_string()))?;
    parsed
        .fits(&cell.name)
        .map_err(|why| refuse(format!("{name}: {why}")))?;
    let record_name = format!("{name}.build.json");
    let record = files
        .iter()
        .find(|f| top_level_name(dir, f) == Some(record_name.as_str()))
        .map(PathBuf::as_path);
    Ok((wheel.as_path(), name, record))
}

fn predicate(
    pinned: &Pinned,
    cell: &Cell,
    reported: ReportedByBuild,
    signed_by: Option<SignedBy>,
) -> PrBuildPredicate {
    let run = &pinned.run;
    let req = &pinned.request.request;
    PrBuildPredicate {
        build_run: BuildRun {
            repository: pinned.repo.clone(),
            workflow_path: pinned.build_workflow_path.clone(),
            workflow_id: pinned.build_workflow.id,
            run_id: run.id,
            run_attempt: run.run_attempt.unwrap_or(1),
            event: run.event.clone(),
            head_sha: run.head_sha.clone(),
            head_repository: pinned.head_repository.clone(),
            conclusion: run.conclusion.clone().unwrap_or_default(),
            artifact_id: cell.unsigned.id,
            artifact_name: cell.unsigned.name.clone(),
        },
        request: RecordedRequest {
            pr: req.pr,
            comment_id: req.comment_id,
            author: req.author.clone(),
            author_association: req.author_association.clone(),
            head_sha: req.head_sha.clone(),
            base_ref: req.base_ref.clone(),
            base_sha: req.base_sha.clone(),
            recorded_by_run: req.recorded_by_run,
        },
        reported_by_build: reported,
        source: built_source(pinned),
        signed_by,
    }
}

/// Which commit the build built. The build workflow checks out `pull_request.head.sha`, which
/// is the run's `head_sha` (an API fact) and, by `pin`, the head the request named; the PR
/// cannot have changed that checkout, since `pin` refuses a PR that changes the build
/// workflow. So the built commit is derived here, never read from what the build wrote.
fn built_source(pinned: &Pinned) -> BuiltSource {
    let req = &pinned.request.request;
    BuiltSource {
        built_from: BUILT_FROM_HEAD.to_owned(),
        head_sha: pinned.run.head_sha.clone(),
        base_ref: req.base_ref.clone(),
        base_sha: req.base_sha.clone(),
        built_sha: pinned.run.head_sha.clone(),
    }
}

/// Downloads the pinned `unsigned-<artifact>` by id, checks it holds exactly the cell's wheel,
/// signs a pr-build statement about that wheel's digest, and writes `<out>/<wheel>` and
/// `<out>/<artifact>.sigstore.json`.
pub async fn sign(
    gh: &GithubClient,
    pinned: &Pinned,
    req: SignRequest<'_>,
    signer: &dyn Signer,
) -> Result<Signed, PrRunError> {
    let cell = pinned
        .cell(req.artifact)
        .map_err(|refusal| PrRunError::Refused {
            run: pinned.run.id,
            refusal,
        })?;
    let x = crate::fetch_files(gh, &pinned.repo, &cell.unsigned).await?;
    let (wheel, name, record) = the_wheel(cell, &x.dir, &x.files)?;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| PrRunError::Io { path, source }
    };
    let digest = Sha256Digest::of_file(wheel).map_err(io(wheel))?;
    let record = record
        .map(|r| std::fs::read(r).map_err(io(r)))
        .transpose()?;
    let reported = reported_by_build(record.as_deref(), &name, &digest);
    let predicate = predicate(pinned, cell, reported, req.signed_by);
    let statement = pr_build_statement(Subject::sha256(&name, &digest), &predicate);
    let bundle = signer.sign(&statement).await?;
    let json = bundle
        .to_json_pretty()
        .map_err(|e| PrRunError::Bundle(Box::new(e)))?;
    std::fs::create_dir_all(req.out).map_err(io(req.out))?;
    let wheel_out = req.out.join(&name);
    let bundle_out = req.out.join(format!("{}.sigstore.json", req.artifact));
    vouch_fs::copy_atomically(wheel, &wheel_out, vouch_fs::Mode::Public).map_err(io(&wheel_out))?;
    vouch_fs::write_atomically(&bundle_out, json.as_bytes(), vouch_fs::Mode::Public)
        .map_err(io(&bundle_out))?;
    drop(x);
    Ok(Signed {
        wheel: wheel_out,
        sha256: digest,
        bundle: bundle_out,
        statement,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reported_claims_come_only_from_a_record_of_this_wheel() {
        let digest = Sha256Digest::of(b"w");
        let record = |v: Value| serde_json::to_vec(&v).unwrap();
        let full = record(json!({
            "wheel": "w.whl", "sha256": digest.to_string(), "cell": "c1",
            "inputs_digest": "sha256:ab", "source_date_epoch": 1700000000,
            "cache": { "policy": { "write": "pr/7" } },
        }));
        assert_eq!(
            reported_by_build(Some(&full), "w.whl", &digest),
            ReportedByBuild {
                cell: Some("c1".into()),
                inputs_digest: Some("sha256:ab".into()),
                source_date_epoch: Some(1_700_000_000),
                cache_scope: Some("pr/7".into()),
            }
        );
        let cases = [
            (None, ReportedByBuild::default()),
            (Some(b"not json".to_vec()), ReportedByBuild::default()),
            // A record of another wheel says nothing about this one.
            (
                Some(record(json!({ "wheel": "other.whl", "cell": "c1" }))),
                ReportedByBuild::default(),
            ),
            (
                Some(record(
                    json!({ "wheel": "w.whl", "sha256": "sha256:00", "cell": "c1" }),
                )),
                ReportedByBuild::default(),
            ),
            // Values a statement should not carry are left out, one by one.
            (
                Some(record(json!({
                    "wheel": "w.whl", "cell": "x".repeat(300), "inputs_digest": "a\nb",
                    "source_date_epoch": "1700000000",
                }))),
                ReportedByBuild::default(),
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(reported_by_build(bytes.as_deref(), "w.whl", &digest), want);
        }
    }
}
