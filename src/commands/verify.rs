//! `vouch verify`.

use std::process::ExitCode;

use vouch_verify::{Verified, VerifyError, parse_evidence};

use crate::cli::VerifyArgs;
use crate::common::read_regular_to_string;
use crate::output;

/// `--json`'s failure report: the success report's shape (`verified`, `results`), empty, with
/// what failed.
#[derive(serde::Serialize)]
struct Failure<'a> {
    verified: bool,
    ok: bool,
    exit_code: u8,
    status: String,
    results: [(); 0],
    /// The success report's `checks`, for the check that failed: it is `false`, every other
    /// is `null` (not established: verification stops at the first failure, and a malformed
    /// bundle or unusable trust root fails before any check).
    checks: serde_json::Map<String, serde_json::Value>,
    kind: &'a str,
    message: String,
    /// What lies under `message`, outermost first: the parser's or sigstore's own words.
    causes: Vec<String>,
    /// With `--github-attestations`: what became of each stored attestation.
    #[serde(skip_serializing_if = "Option::is_none")]
    attestation_store: Option<&'a Vec<vouch_fetch::StoreReport>>,
}

/// Whose attestation store `verify` looks a digest up in.
enum Store<'a> {
    /// `--github-attestations OWNER/NAME`: one repository's.
    Repository(&'a str),
    /// `--owner OWNER` without other evidence: every repository of the owner the token may
    /// read (the bulk listing, as `gh attestation verify --owner` looks up).
    Owner(&'a str),
}

impl Store<'_> {
    fn name(&self) -> String {
        match self {
            Store::Repository(r) => format!("{r}'s attestation store"),
            Store::Owner(o) => format!("{o}'s attestation stores"),
        }
    }
}

/// Every attestation `store` holds for `digest`, each verified under `policy`: the first that
/// passes, or the first failure (exit status by its kind). None at all is a bundle failure:
/// there is no evidence.
fn from_store(
    args: &VerifyArgs,
    store: &Store,
    digest: &vouch_core::Sha256Digest,
    policy: &vouch_verify::Policy,
    trust: vouch_verify::TrustSpec,
    report: &mut Vec<vouch_fetch::StoreReport>,
) -> anyhow::Result<Result<Vec<Verified>, VerifyError>> {
    // Loaded first: an unusable root or key fails before any request.
    let trust = match trust.load() {
        Ok(t) => t,
        Err(e) => return Ok(Err(e)),
    };
    let client = args.github.client()?;
    let rt = crate::common::runtime()?;
    let predicate = Some(policy.predicate_type.as_str());
    let stored = match store {
        Store::Repository(repo) => {
            rt.block_on(client.attestations(repo, &digest.to_string(), predicate))?
        }
        Store::Owner(owner) => rt
            .block_on(client.attestations_bulk(owner, &[digest.to_string()], predicate))?
            .into_iter()
            .flat_map(|(_, found)| found)
            .collect(),
    };
    let name = store.name();
    let (found, reports, error) = vouch_fetch::judge(&digest.to_string(), &stored, |i, bundle| {
        let evidence = parse_evidence(&bundle.to_string(), &format!("{name}, attestation #{i}"))?;
        evidence
            .iter()
            .map(|e| trust.verify(digest, e, policy))
            .collect::<Result<Vec<_>, _>>()
    });
    *report = reports;
    Ok(match (found, error) {
        (Some(all), _) => Ok(all),
        (None, Some(e)) => Err(VerifyError::new(
            e.kind,
            format!(
                "none of the {} attestation(s) for {digest} in {name} passed: {}",
                stored.len(),
                vouch_fetch::ignored_summary(report)
            ),
        )),
        (None, None) => Err(VerifyError::new(
            vouch_verify::ErrorKind::Bundle,
            format!("no evidence: no attestation for {digest} in {name}"),
        )),
    })
}

/// [`Failure::checks`] for a failure of `kind`.
fn failed_checks(kind: vouch_verify::ErrorKind) -> serde_json::Map<String, serde_json::Value> {
    use vouch_verify::ErrorKind as K;
    let failed = match kind {
        K::Certificate => Some("certificate_chain"),
        K::TransparencyLog => Some("transparency_log"),
        K::Signature => Some("signature"),
        K::Statement => Some("statement"),
        K::Digest => Some("digest"),
        K::Policy => Some("identity_policy"),
        K::Bundle | K::TrustRoot => None,
    };
    // The names are the success report's own, so the two shapes cannot drift apart.
    let all = vouch_verify::Checks {
        certificate_chain: false,
        sct: false,
        transparency_log: false,
        signature: false,
        statement: false,
        digest: false,
        identity_policy: false,
    };
    let serde_json::Value::Object(names) = serde_json::json!(all) else {
        unreachable!("Checks serializes as an object")
    };
    names
        .into_iter()
        .map(|(name, _)| {
            let value = if Some(name.as_str()) == failed {
                serde_json::Value::Bool(false)
            } else {
                serde_json::Value::Null
            };
            (name, value)
        })
        .collect()
}

/// The error's causes, each once: sigstore errors are wrapped with their own text as message,
/// and parsers repeat their cause's text at the end of their own.
fn causes(e: &VerifyError) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = std::error::Error::source(e);
    while let Some(c) = cur {
        let text = c.to_string();
        let said = out.last().unwrap_or(&e.message);
        if !said.ends_with(&text) {
            out.push(text);
        }
        cur = c.source();
    }
    out
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let evidence_file = args
        .bundle
        .as_ref()
        .or(args.attestation.as_ref())
        .or(args.provenance.as_ref());
    let store = match (&args.github_attestations, evidence_file, &args.policy.owner) {
        (Some(repo), _, _) => Some(Store::Repository(repo)),
        (None, None, Some(owner)) => Some(Store::Owner(owner)),
        (None, Some(_), _) => None,
        (None, None, None) => anyhow::bail!(crate::common::UsageError(
            "no evidence named: give --bundle, --attestation, --provenance, --github-attestations OWNER/NAME, or --owner OWNER to look the digest up in the owner's attestation store".into()
        )),
    };
    if args.policy.offline
        && let Some(store) = &store
    {
        let flag = match store {
            Store::Repository(_) => "--github-attestations",
            Store::Owner(_) => "--owner without a bundle",
        };
        anyhow::bail!(crate::common::UsageError(format!(
            "{flag} looks in {}, through GitHub's API, and --offline means no network: give the bundle with --bundle instead",
            store.name()
        )));
    }
    let dist = args
        .file
        .as_ref()
        .and_then(|f| f.file_name())
        .map(|n| vouch_audit::dist_name(&n.to_string_lossy()));
    let mut policy = args.policy.policy(dist.as_deref())?;
    // A PEP 740 attestation file carries PyPI's publish attestation unless told otherwise (by
    // the flag or a policy file), as `pypi-attestations verify` assumes.
    let predicate_given = args.policy.predicate_type.is_some() || args.policy.policy.is_some();
    if args.attestation.is_some() && !predicate_given {
        policy.predicate_type = vouch_verify::PREDICATE_PEP740.to_owned();
    }
    let trust = args.policy.trust()?;
    let digest = match (&args.file, args.digest) {
        (Some(f), _) => crate::common::hash_file(f)?,
        (None, Some(d)) => d,
        (None, None) => unreachable!("clap requires one"),
    };
    let mut store_report = Vec::new();
    let (evidence_name, result) = if let Some(store) = &store {
        let result = from_store(&args, store, &digest, &policy, trust, &mut store_report)?;
        (store.name(), result)
    } else {
        let evidence_path = evidence_file.expect("no store without an evidence file");
        let text = read_regular_to_string(evidence_path)?;
        let result = (|| -> Result<Vec<Verified>, VerifyError> {
            let evidence = parse_evidence(&text, &evidence_path.display().to_string())?;
            let trust = trust.load()?;
            evidence
                .iter()
                .map(|e| trust.verify(&digest, e, &policy))
                .collect()
        })();
        (evidence_path.display().to_string(), result)
    };
    for r in &store_report {
        if let (false, Some(why)) = (r.accepted, &r.reason) {
            output::note(format!(
                "ignored stored attestation #{} (repository id {}): {why}",
                r.index,
                r.repository_id.map_or("?".into(), |i| i.to_string())
            ));
        }
    }
    match result {
        Ok(all) => {
            let shown = args
                .file
                .as_ref()
                .map_or_else(|| digest.to_string(), |f| f.display().to_string());
            output::step_summary(&format!(
                "| vouch verify | `{}` | verified ({} evidence) |\n",
                shown,
                all.len()
            ));
            if args.common.json() {
                let mut doc = serde_json::json!({ "verified": true, "results": all });
                if store.is_some() {
                    doc["attestation_store"] = serde_json::json!(store_report);
                }
                output::json(&doc);
            } else {
                let what = args.file.as_ref().map_or_else(
                    || digest.to_string(),
                    |f| format!("{} ({digest})", f.display()),
                );
                for v in &all {
                    print_verified(&what, v);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            output::step_summary(&format!(
                "| vouch verify | `{}` | **FAILED** ({}): {} |\n",
                evidence_name,
                e.kind.as_str(),
                e.message.replace('|', "\\|")
            ));
            if args.common.json() {
                output::json(&Failure {
                    verified: false,
                    ok: false,
                    exit_code: crate::exit::verify_status(e.kind).code(),
                    status: crate::exit::verify_status(e.kind).name(),
                    results: [],
                    checks: failed_checks(e.kind),
                    kind: e.kind.as_str(),
                    message: e.message.clone(),
                    causes: causes(&e),
                    attestation_store: store.as_ref().map(|_| &store_report),
                });
            }
            Err(anyhow::Error::new(e).context(format!("verification of {evidence_name} failed")))
        }
    }
}

fn print_verified(what: &str, v: &Verified) {
    let s = &v.signer;
    output::data(format!("verified: {what}"));
    if v.signed_with == "certificate" {
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        output::data(format!("  signer:     {}", opt(&s.san)));
        output::data(format!("  issuer:     {}", opt(&s.issuer)));
        output::data(format!(
            "  repository: {}  ref: {}  commit: {}",
            opt(&s.repository),
            opt(&s.git_ref),
            opt(&s.sha)
        ));
        output::data(format!(
            "  workflow:   {}  event: {}  runner: {}",
            opt(&s.build_workflow),
            opt(&s.event),
            opt(&s.runner)
        ));
        output::data(format!("  run:        {}", opt(&s.run)));
    } else {
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        output::data("  signer:     the public key given with --key");
        output::data(format!(
            "  claimed:    repository {}  ref {}  commit {}  runner {}",
            opt(&s.repository),
            opt(&s.git_ref),
            opt(&s.sha),
            opt(&s.runner)
        ));
    }
    output::data(format!("  predicate:  {}", v.statement.predicate_type));
    if let Some(p) = &v.statement.pr_build {
        let (run, req) = (&p.build_run, &p.request);
        output::data(format!(
            "  built by:   run {} (attempt {}) of {}, pull_request of {} at {} (artifact {})",
            run.run_id,
            run.run_attempt,
            run.workflow_path,
            run.head_repository,
            run.head_sha,
            run.artifact_name
        ));
        output::data(format!(
            "  request:    #{} /test by {} ({}), comment {}, base {} at {}, recorded by run {}",
            req.pr,
            req.author,
            req.author_association,
            req.comment_id,
            req.base_ref,
            req.base_sha,
            req.recorded_by_run
        ));
        output::data(format!(
            "  built:      {} (the vouched head itself; tests must run from this commit, not a merge)",
            p.source.built_sha
        ));
        let r = &p.reported_by_build;
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        output::data(format!(
            "  reported:   cell {}, inputs {}, epoch {}, cache scope {} (by the build itself, not verified)",
            opt(&r.cell),
            opt(&r.inputs_digest),
            r.source_date_epoch
                .map_or_else(|| "-".to_owned(), |e| e.to_string()),
            opt(&r.cache_scope)
        ));
    }
    let c = &v.checks;
    let mark = |b: bool| if b { "ok" } else { "not checked" };
    output::data(format!(
        "  checks:     certificate chain {}, SCT {}, transparency log {}, signature ok, statement ok, digest ok, identity policy {}{}",
        mark(c.certificate_chain),
        mark(c.sct),
        mark(c.transparency_log),
        mark(c.identity_policy),
        if v.signed_with == "certificate" {
            ""
        } else {
            " (against the statement's own claims)"
        }
    ));
    for n in &v.notes {
        output::data(format!("  note:       {n}"));
    }
}
