//! `vouch audit` and `vouch rebuild`.

use std::process::ExitCode;

use anyhow::Context as _;
use vouch_audit::{Auditor, Verdict};

use crate::cli::{AuditArgs, RebuildArgs};
use crate::output;

pub fn audit(args: AuditArgs) -> anyhow::Result<ExitCode> {
    args.policy.refuse_conflicts()?;
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
        root: args.policy.trust_root(),
        accept: vouch_verify::Accept::Each(args.policy.read_key()?),
    }
    .load()?;
    let auditor = Auditor {
        cli,
        policy_file,
        trust,
    };
    let (files, unreadable) = vouch_audit::find_files(&args.paths);
    let mut rows = auditor.audit(&files);
    rows.extend(
        unreadable
            .into_iter()
            .map(|(p, why)| vouch_audit::Row::unreadable(&p, why)),
    );
    let passed = !rows.is_empty() && rows.iter().all(|r| r.verdict == Verdict::Verified);
    if args.json {
        output::json(&rows);
    } else if args.markdown {
        output::data(vouch_audit::markdown(&rows));
    } else {
        for r in &rows {
            let name = r.file.display();
            match r.verdict {
                Verdict::Verified => output::data(format!(
                    "verified     {name}  {} {} {} {} ({})",
                    r.repository.as_deref().unwrap_or("-"),
                    r.git_ref.as_deref().unwrap_or("-"),
                    r.commit.as_deref().unwrap_or("-"),
                    r.run.as_deref().unwrap_or("-"),
                    r.predicate_type.as_deref().unwrap_or("-")
                )),
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

#[derive(serde::Serialize)]
struct RebuildReport {
    reproduced: bool,
    original: vouch_core::Sha256Digest,
    rebuilt: vouch_core::Sha256Digest,
    source_commit: Option<String>,
    source_date_epoch: Option<u64>,
    notes: Vec<String>,
    diff: Option<vouch_wheel::WheelDiff>,
}

pub fn rebuild(args: RebuildArgs) -> anyhow::Result<ExitCode> {
    // First the provenance must verify: a rebuild of an unproven claim proves nothing.
    let name = args
        .wheel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let policy = args.policy.policy(Some(&vouch_audit::dist_name(&name)))?;
    let trust = args.policy.trust()?;
    let digest = crate::common::hash_file(&args.wheel)?;
    let text = crate::common::read_regular_to_string(&args.bundle)?;
    let evidence = vouch_verify::parse_evidence(&text, &args.bundle.display().to_string())?;
    let ev = evidence.first().ok_or_else(|| {
        vouch_verify::VerifyError::new(
            vouch_verify::ErrorKind::Bundle,
            format!("{:?} holds no evidence", args.bundle),
        )
    })?;
    let verified = trust.load()?.verify(&digest, ev, &policy)?;
    let epoch = verified.statement.claims.source_date_epoch;
    let commit = verified.signer.sha.clone();
    let mut notes = Vec::new();
    match (vouch_core::git::head(&args.source), &commit) {
        (Some(head), Some(c)) if &head != c => {
            anyhow::bail!(crate::common::UsageError(format!(
                "{:?} is at commit {head}, the provenance names {c}; check out that commit",
                args.source
            )))
        }
        (None, Some(c)) => notes.push(format!(
            "the source is not a git checkout; it is taken to be commit {c}"
        )),
        _ => {}
    }
    if epoch.is_none() {
        notes.push("the provenance records no source_date_epoch; using the source's own".into());
    }
    let scratch = tempfile::Builder::new()
        .prefix("vouch-rebuild-")
        .tempdir()?;
    let mut options =
        crate::common::build_options(&args.source, &scratch.path().join("out"), epoch, &args.env)?;
    // A CUDA wheel reproduces only at its original build path: --work-dir (or
    // VOUCH_WORK_DIR) sets it, as in `vouch build`; only without one does the rebuild get a
    // private directory of its own.
    if options.work_dir.is_none() {
        options.work_dir = Some(scratch.path().join("work"));
    }
    // Someone else's release runs its own build code: never next to a trusted build's tools.
    options.trust = vouch_build::TrustLevel::Untrusted;
    output::note(format!("rebuilding {name} from {}", args.source.display()));
    let built = vouch_build::build_wheel(&options).context("rebuilding")?;
    let reproduced = built.sha256 == digest;
    let diff = if reproduced {
        None
    } else {
        Some(vouch_wheel::diff_wheels(&args.wheel, &built.wheel)?)
    };
    let report = RebuildReport {
        reproduced,
        original: digest,
        rebuilt: built.sha256,
        source_commit: commit,
        source_date_epoch: epoch,
        notes,
        diff,
    };
    if args.json {
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
                built.sha256
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
