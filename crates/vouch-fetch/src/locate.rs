//! Locate: the candidates for the expected artifact name (a lookup hint only), newest first,
//! and the cheap rejections the listing alone allows.

use vouch_core::ArtifactName;
use vouch_github::{Artifact, GithubError};
use vouch_wheel::WheelFilename;

use crate::pair::Pair;
use crate::verify::VerifiedFile;

use crate::{
    ArtifactSource, Expectation, FetchError, PinError, Producer, RejectKind, Rejection, reject,
};

pub(crate) struct Located {
    /// Who must have uploaded the artifact, as the source knows it.
    pub producer: Producer,
    pub candidates: Vec<Artifact>,
    /// Whether the candidates carry the expected name (else they were found by run).
    pub named: bool,
}

/// The candidates. With `past_names` (evidence is found by digest), a push build whose
/// artifact is listed under no expected name is looked for among the artifacts of the build
/// workflow's successful runs at the commit: a renamed artifact is still the build's. A
/// pull-request build's signer run is of the default branch's head, so only its name finds it.
pub(crate) async fn locate(
    source: &dyn ArtifactSource,
    exp: &Expectation,
    past_names: bool,
) -> Result<Located, FetchError> {
    let workflow = source.workflow(&exp.repo, exp.producing_workflow()).await?;
    // A signer counts only when it runs the default branch's workflow file; which branch that
    // is, only the repository itself says.
    let default_branch = if exp.signed_by_signer() {
        let repo = source.repository(&exp.repo).await?;
        let branch = repo.default_branch.filter(|b| !b.is_empty());
        Some(branch.ok_or_else(|| {
            FetchError::Github(GithubError::Protocol {
                url: format!("repos/{}", exp.repo),
                reason: "the repository names no default_branch".into(),
            })
        })?)
    } else {
        None
    };
    let mut candidates = source
        .artifacts_named(&exp.repo, &exp.artifact_name)
        .await?;
    let named = !(candidates.is_empty() && past_names && !exp.signed_by_signer());
    if !named {
        tracing::info!(name = %exp.artifact_name, "no artifact has the name; looking at the build's runs at the commit");
        candidates = source
            .artifacts_of_runs(&exp.repo, workflow.id, &exp.event, &exp.sha)
            .await?;
    }
    // Newest first: a re-run's artifact supersedes the first attempt's.
    candidates.sort_by(|a, b| (&b.created_at, b.id).cmp(&(&a.created_at, a.id)));
    Ok(Located {
        producer: Producer {
            workflow,
            default_branch,
        },
        candidates,
        named,
    })
}

/// A candidate found by run holds only wheels of the expected artifact's distribution, Python
/// and platform: another cell's artifact of the same run is not the one asked for.
pub(crate) fn of_expected_cell(pairs: &[Pair], exp: &Expectation) -> Result<(), String> {
    let want: ArtifactName = exp.artifact_name.parse().map_err(|e| {
        format!(
            "the expected name {:?} is not an artifact name, so a candidate found by run cannot be matched to it: {e}",
            exp.artifact_name
        )
    })?;
    for p in pairs {
        let name = p
            .wheel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let fits = name.parse::<WheelFilename>().is_ok_and(|w| {
            w.normalized_name() == want.dist && w.fits_cell(want.python, want.platform)
        });
        if !fits {
            return Err(format!(
                "found by run, and {name} is not a wheel of {}'s distribution, Python and platform",
                exp.artifact_name
            ));
        }
    }
    Ok(())
}

/// A candidate found by run whose statement names its artifact must name the expected one:
/// the signed claim stands in for the name nobody signed.
pub(crate) fn signed_as_expected(files: &[VerifiedFile], exp: &Expectation) -> Result<(), String> {
    for f in files {
        if let Some(claimed) = &f.verified.statement.claims.artifact_name
            && claimed != &exp.artifact_name
        {
            return Err(format!(
                "found by run, and its statement claims artifact {claimed:?}, not {:?}",
                exp.artifact_name
            ));
        }
    }
    Ok(())
}

/// The run `artifact` names, unless the listing already rules it out. The listing names the
/// run's head commit: a decoy of another commit costs no run lookup (the run's own head_sha is
/// checked when pinning). A signer's run is of the default branch's head, not the PR's: its
/// commit says nothing about the build.
pub(crate) fn screen(artifact: &Artifact, exp: &Expectation) -> Result<u64, Rejection> {
    let id = artifact.id;
    let run_id = artifact.run_id();
    if artifact.expired {
        return Err(reject(
            id,
            run_id,
            RejectKind::Download,
            "artifact has expired",
        ));
    }
    let pin_err = |e: PinError| reject(id, run_id, RejectKind::Pin, e.to_string());
    if let Some(h) = artifact
        .workflow_run
        .as_ref()
        .and_then(|r| r.head_sha.as_deref())
        && !exp.signed_by_signer()
        && h != exp.sha
    {
        return Err(pin_err(PinError::ListedHeadSha {
            found: h.to_owned(),
            expected: exp.sha.clone(),
        }));
    }
    run_id.ok_or_else(|| pin_err(PinError::NoRun))
}

#[cfg(test)]
mod tests {
    use vouch_github::RunRef;

    use super::*;

    const SHA: &str = "1111111111111111111111111111111111111111";

    #[test]
    fn screening_by_the_listing_alone() {
        let exp = Expectation {
            repo: "o/r".into(),
            workflow: "ci.yml".into(),
            signer_workflow: "sign.yml".into(),
            event: "push".into(),
            sha: SHA.into(),
            pr: None,
            artifact_name: "a".into(),
            cell: None,
            wait_for_run: std::time::Duration::ZERO,
            checkout: None,
        };
        let listed = |expired: bool, run: Option<u64>, head: Option<&str>| Artifact {
            id: 9,
            name: "a".into(),
            expired,
            created_at: None,
            digest: None,
            workflow_run: Some(RunRef {
                id: run,
                head_sha: head.map(str::to_owned),
                ..RunRef::default()
            }),
        };
        let cases = [
            (listed(false, Some(5), Some(SHA)), Ok(5)),
            (listed(false, Some(5), None), Ok(5)),
            (
                listed(true, Some(5), Some(SHA)),
                Err((RejectKind::Download, "artifact has expired".to_owned())),
            ),
            (
                listed(false, Some(5), Some("22")),
                Err((
                    RejectKind::Pin,
                    format!("artifact's workflow_run.head_sha is 22, expected {SHA}"),
                )),
            ),
            (
                listed(false, None, Some(SHA)),
                Err((RejectKind::Pin, "artifact names no workflow run".to_owned())),
            ),
        ];
        for (artifact, want) in cases {
            let got = screen(&artifact, &exp).map_err(|r| (r.kind, r.reason));
            assert_eq!(got, want, "{artifact:?}");
        }
        // A signer's run is of the default branch's head: its commit is no reason to skip it.
        let pr = Expectation {
            event: "pull_request".into(),
            pr: Some(7),
            ..exp
        };
        assert_eq!(
            screen(&listed(false, Some(5), Some("22")), &pr).ok(),
            Some(5)
        );
    }
}
