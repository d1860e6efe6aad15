//! `vouch audit` and `vouch rebuild`.

use std::path::Path;
use std::process::ExitCode;

use vouch_audit::{Auditor, Verdict};

use crate::cli::{AuditArgs, AuditFormat, RebuildArgs};
use crate::output;

pub fn audit(args: AuditArgs) -> anyhow::Result<ExitCode> {
    args.policy.refuse_conflicts()?;
    if args.policy.offline {
        let online = [
            ("--pypi", args.pypi.is_some()),
            ("--github-attestations", args.github_attestations.is_some()),
        ];
        if let Some((flag, _)) = online.iter().find(|(_, given)| *given) {
            anyhow::bail!(crate::common::UsageError(format!(
                "{flag} needs the network, and --offline means none: audit files on disk, with their evidence next to them"
            )));
        }
    }
    // A path that is not there is a typo, not an unverified release: say so (exit 2).
    if let Some(missing) = args
        .paths
        .iter()
        .find(|p| std::fs::symlink_metadata(p).is_err())
    {
        anyhow::bail!(crate::common::UsageError(format!(
            "{missing:?} does not exist"
        )));
    }
    let policy_file = args.policy.load_policy_file()?;
    // Every flag reaches the policy each file is held to: --run-id, --pr and --cell as well as
    // the identity flags, exactly as `vouch verify` applies them.
    let cli = args.policy.cli_spec();
    let trust = vouch_verify::TrustSpec {
        root: args.policy.trust_root()?,
        accept: vouch_verify::Accept::Each(args.policy.read_key()?),
    }
    .load()?;
    let auditor = Auditor {
        cli,
        policy_file,
        trust,
    };
    let rows = match &args.pypi {
        // The same Auditor, over files brought down from the index: the same verdicts, outputs
        // and exit codes as for a directory.
        Some(release) => {
            let index = vouch_audit::pypi::index_url(
                args.index_url
                    .as_deref()
                    .unwrap_or(vouch_audit::pypi::DEFAULT_INDEX),
            )?;
            let report = auditor.audit_pypi(release, &index)?;
            for n in &report.notes {
                output::note(format!("note: {n}"));
            }
            report.rows
        }
        None => {
            let (files, unreadable) = vouch_audit::find_files(&args.paths);
            let mut rows = auditor.audit(&files);
            rows.extend(
                unreadable
                    .into_iter()
                    .map(|(p, why)| vouch_audit::Row::unreadable(&p, why)),
            );
            rows
        }
    };
    let mut rows = rows;
    if let Some(repo) = &args.github_attestations {
        from_store(&args, &auditor, repo, &mut rows)?;
    }
    let passed = !rows.is_empty() && rows.iter().all(|r| r.verdict == Verdict::Verified);
    let format = args.format();
    if format == AuditFormat::Json {
        output::json(&rows);
    } else if format == AuditFormat::Markdown {
        output::data(vouch_audit::markdown(&rows));
    } else {
        for r in &rows {
            let name = r.file.display();
            match r.verdict {
                Verdict::Verified => output::data(match r.pr_build_summary() {
                    Some(summary) => format!(
                        "verified     {name}  {summary} ({})",
                        r.predicate_type.as_deref().unwrap_or("-")
                    ),
                    None => format!(
                        "verified     {name}  {} {} {} {} ({})",
                        r.repository.as_deref().unwrap_or("-"),
                        r.git_ref.as_deref().unwrap_or("-"),
                        r.commit.as_deref().unwrap_or("-"),
                        r.run.as_deref().unwrap_or("-"),
                        r.predicate_type.as_deref().unwrap_or("-")
                    ),
                }),
                Verdict::Failed => output::data(format!(
                    "FAILED       {name}  {}",
                    r.reason.as_deref().unwrap_or("")
                )),
                Verdict::NoEvidence => output::data(format!(
                    "NO EVIDENCE  {name}  {}",
                    r.reason.as_deref().unwrap_or("")
                )),
            }
        }
    }
    let verified = rows
        .iter()
        .filter(|r| r.verdict == Verdict::Verified)
        .count();
    output::note(format!("{verified} of {} files verified", rows.len()));
    output::step_summary(&format!(
        "### vouch audit: {verified} of {} files verified\n\n{}\n",
        rows.len(),
        vouch_audit::markdown(&rows)
    ));
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::DIFFERENT)
    })
}

pub fn rebuild(args: RebuildArgs) -> anyhow::Result<ExitCode> {
    let name = args
        .wheel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let policy = args.policy.policy(Some(&vouch_audit::dist_name(&name)))?;
    let trust = args.policy.trust()?.load()?;
    let report = vouch_audit::rebuild(
        vouch_audit::Rebuild {
            wheel: &args.wheel,
            bundle: &args.bundle,
            policy: &policy,
            trust: &trust,
            // The rebuild picks its own output directory and epoch.
            options: crate::common::build_options(&args.source, Path::new("."), None, &args.env)?,
        },
        &output::Terminal,
    )?;
    let reproduced = report.reproduced;
    let digest = report.original;
    if args.common.json() {
        output::json(&report);
    } else {
        for n in &report.notes {
            output::note(format!("note: {n}"));
        }
        if reproduced {
            output::data(format!("reproduced: {digest}"));
        } else {
            output::data(format!(
                "NOT reproduced: original {digest}, rebuilt {}",
                report.rebuilt
            ));
            if let Some(d) = &report.diff {
                for m in &d.only_in_a {
                    output::data(format!("  only in the original: {m}"));
                }
                for m in &d.only_in_b {
                    output::data(format!("  only in the rebuild: {m}"));
                }
                for c in &d.changed {
                    output::data(format!("  differs: {}", c.name));
                }
            }
        }
    }
    Ok(if reproduced {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::DIFFERENT)
    })
}

/// Evidence by digest for the rows that found none next to their file: one bulk listing of
/// `repo`'s owner (entries of other repositories are not evidence for `repo` and are left out),
/// then each stored attestation verified under the file's own policy, the first that passes
/// used; the ignored ones are noted. A row that still has none stays "no evidence".
fn from_store(
    args: &AuditArgs,
    auditor: &Auditor,
    repo: &str,
    rows: &mut [vouch_audit::Row],
) -> anyhow::Result<()> {
    let wanted: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].verdict == Verdict::NoEvidence && rows[i].sha256.is_some())
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let owner = repo.split('/').next().unwrap_or(repo);
    let client = args.github.client()?;
    let rt = crate::common::runtime()?;
    let repo_id = rt.block_on(client.repository(repo))?.id;
    let digests: Vec<String> = wanted
        .iter()
        .map(|&i| rows[i].sha256.as_ref().expect("filtered").to_string())
        .collect();
    let found = rt.block_on(client.attestations_bulk(owner, &digests, None))?;
    for (&i, (digest, stored)) in wanted.iter().zip(found) {
        let stored: Vec<_> = stored
            .into_iter()
            .filter(|a| repo_id.is_some() && a.repository_id == repo_id)
            .collect();
        if stored.is_empty() {
            continue;
        }
        let row = &mut rows[i];
        let name = row.file.display().to_string();
        let (verified, reports, error) = vouch_fetch::judge(&name, &stored, |n, bundle| {
            auditor.verify_found(
                row,
                &bundle.to_string(),
                &format!("{repo} attestation #{n}"),
            )
        });
        for r in reports.iter().filter(|r| !r.accepted) {
            output::note(format!(
                "{name}: ignored stored attestation #{} of {repo}: {}",
                r.index,
                r.reason.as_deref().unwrap_or("-")
            ));
        }
        let accepted = reports.iter().find(|r| r.accepted).map(|r| r.index);
        match (verified, accepted) {
            (Some(v), Some(n)) => {
                row.evidence = vec![format!("github:{repo}/attestations/{digest}#{n}").into()];
                row.set_verified(v);
            }
            _ => {
                row.verdict = Verdict::Failed;
                row.kind = error.as_ref().map(|e| e.kind);
                row.reason = Some(format!(
                    "no evidence next to it, and none of the {} attestation(s) {repo}'s store holds for {digest} passed: {}",
                    stored.len(),
                    vouch_fetch::ignored_summary(&reports)
                ));
            }
        }
    }
    Ok(())
}
