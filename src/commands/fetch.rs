//! `vouch fetch`, `vouch install`, `vouch publish`.

use std::path::Path;
use std::process::ExitCode;

use secrecy::SecretString;
use vouch_core::{ArtifactName, Platform, PythonVersion};
use vouch_fetch::{ArtifactSource, Expectation, FetchError, FetchReport, RunInfo, VerifyConfig};
use vouch_verify::{Accept, TrustSpec};

use crate::cli::{FetchArgs, FetchCmd, InstallCmd, PublishCmd};
use crate::common::read_public_key;
use crate::exit::{FetchFailed, failure_status};
use crate::output;

impl FetchArgs {
    fn expectation(&self) -> anyhow::Result<Expectation> {
        let usage = |m: String| crate::common::UsageError(m);
        let (mut event, mut pr, mut sha) = (self.event.clone(), self.pr, self.sha.clone());
        let mut sha_from = "--sha";
        if self.from_flexci {
            let Some(job) = vouch_fetch::flexci::FlexciJob::detect() else {
                anyhow::bail!(usage(format!(
                    "--from-flexci: none of {} is set; is this a FlexCI job? (elsewhere give --event, --sha and --pr)",
                    vouch_fetch::flexci::VARS.join(", ")
                )));
            };
            pr = pr.or(job.pr);
            event = event.or(Some(job.event().into()));
            if sha.is_none() {
                (sha, sha_from) = job.commit();
            }
        }
        let repo = self
            .repo
            .clone()
            .ok_or_else(|| usage("--repo OWNER/NAME is required".into()))?;
        let event = event.ok_or_else(|| usage("--event is required (or --from-flexci)".into()))?;
        if !vouch_core::ci::BUILD_EVENTS.contains(&event.as_str()) {
            anyhow::bail!(usage(format!(
                "--event {event:?}: expected one of {} (the events vouch builds under)",
                vouch_core::ci::BUILD_EVENTS.join(", ")
            )));
        }
        let sha = sha.ok_or_else(|| {
            usage(if self.from_flexci {
                "--from-flexci: neither FLEXCI_REFERENCE_COMMIT_ID nor FLEXCI_COMMIT_ID is set, and the current directory is not a git checkout; give --sha".into()
            } else {
                "--sha is required (or --from-flexci)".into()
            })
        })?;
        if !vouch_verify::is_commit_sha(&sha) {
            anyhow::bail!(usage(format!(
                "{sha_from} {sha:?} is not a full commit SHA (40 lowercase hex digits)"
            )));
        }
        match (event.as_str(), pr) {
            ("pull_request", None) => {
                anyhow::bail!(usage("a pull_request build needs --pr".into()))
            }
            ("pull_request", Some(_)) | (_, None) => {}
            (other, Some(n)) => anyhow::bail!(usage(format!(
                "--pr {n} names a pull request, but --event is {other:?}; PR builds run under pull_request"
            ))),
        }
        let artifact_name = match &self.artifact_name {
            Some(n) => n.clone(),
            None => {
                let (Some(d), Some(py), Some(pl)) =
                    (&self.dist, &self.python_version, &self.platform)
                else {
                    anyhow::bail!(usage(
                        "give --artifact-name, or --dist, --python-version and --platform".into()
                    ));
                };
                let py: PythonVersion = py.parse()?;
                let pl: Platform = pl.parse()?;
                ArtifactName::new(
                    d.clone(),
                    py,
                    pl,
                    if event == "pull_request" { pr } else { None },
                    sha.clone(),
                )?
                .to_string()
            }
        };
        let checkout = match &self.checkout {
            None => None,
            Some(dir) => Some(vouch_fetch::Checkout::at(dir).ok_or_else(|| {
                usage(format!(
                    "--checkout {}: not a git checkout, so the commit the tests would run from cannot be read (keep its .git)",
                    dir.display()
                ))
            })?),
        };
        Ok(Expectation {
            repo,
            workflow: self.workflow.clone(),
            signer_workflow: self.signer_workflow.clone(),
            event,
            sha,
            pr,
            artifact_name,
            cell: self.cell.clone(),
            wait_for_run: std::time::Duration::from_secs(self.wait_for_run),
            checkout,
        })
    }

    fn token(&self) -> Option<SecretString> {
        if let Some(f) = &self.token_file {
            return Some(f.token.clone());
        }
        for var in ["GH_TOKEN", "GITHUB_TOKEN"] {
            if let Ok(t) = std::env::var(var)
                && !t.is_empty()
            {
                output::note(format!(
                    "warning: using the token from ${var}; prefer --token-file (environment variables leak into child processes)"
                ));
                return Some(SecretString::from(t));
            }
        }
        None
    }

    fn source(&self, spinner: &output::Spinner) -> anyhow::Result<Box<dyn ArtifactSource>> {
        use vouch_fetch::{SOURCES, SourceSpec};
        let spec = match (&self.source, &self.store) {
            (Some(spec), _) => spec.clone(),
            // The path as given, not as text: a store may live under any name.
            (None, Some(dir)) => {
                return Ok(Box::new(vouch_fetch::LocalStore { root: dir.clone() }));
            }
            (None, None) => {
                let github = SOURCES
                    .iter()
                    .find(|k| k.name == "github")
                    .expect("built in");
                SourceSpec::of(github, self.api_url.clone())
            }
        };
        let inputs = vouch_fetch::SourceInputs {
            // Asked only when the source wants one: the environment warning means nothing else.
            token: spec.kind().needs_token.then(|| self.token()).flatten(),
            progress: spinner.bytes_progress(),
        };
        Ok(spec.open(inputs)?)
    }

    fn verify_config(&self) -> anyhow::Result<VerifyConfig> {
        let accept = match &self.key {
            // A wrong file must fail here, not after the API calls and the download.
            Some(k) => Accept::Key(read_public_key(k)?),
            None => Accept::Keyless,
        };
        Ok(VerifyConfig {
            trust: TrustSpec {
                root: crate::common::trust_root_source(
                    self.trust_root.clone(),
                    self.staging,
                    false,
                    &crate::cli::TufRepoArgs::default(),
                )?,
                accept,
            },
            runner: (self.runner != "any").then(|| self.runner.clone()),
            attestation_store: self.github_attestations.clone(),
        })
    }
}

fn do_fetch(args: &FetchArgs, out: &Path) -> anyhow::Result<FetchReport> {
    let exp = args.expectation()?;
    let cfg = args.verify_config()?;
    output::note(if exp.signed_by_signer() {
        format!(
            "looking for {} signed by {} (a {} build of {} by {} of {})",
            exp.artifact_name,
            exp.signer_workflow,
            exp.event,
            exp.pr.map_or_else(String::new, |n| format!("#{n}")),
            exp.workflow,
            exp.repo
        )
    } else {
        format!(
            "looking for {} from {} ({} of {})",
            exp.artifact_name, exp.workflow, exp.event, exp.repo
        )
    });
    let spinner = output::spinner(format!("fetching {}", exp.artifact_name));
    let source = args.source(&spinner)?;
    let rt = crate::common::runtime()?;
    let fetched = rt.block_on(vouch_fetch::fetch(source.as_ref(), &exp, &cfg, out));
    drop(spinner);
    match fetched {
        Ok(r) => Ok(r),
        Err(e) => {
            let status = failure_status(&e);
            let mut message = e.to_string();
            let mut cur = std::error::Error::source(&e);
            while let Some(c) = cur {
                message.push_str(": ");
                message.push_str(&c.to_string());
                cur = c.source();
            }
            if let FetchError::Github(vouch_github::GithubError::Status { status: 401, .. }) = &e {
                message.push_str(&if let Some(f) = &args.token_file {
                    format!(
                        " (the token from --token-file {:?} was refused: is it expired, or for another host?)",
                        f.path
                    )
                } else if ["GH_TOKEN", "GITHUB_TOKEN"]
                    .iter()
                    .any(|v| std::env::var(v).is_ok_and(|t| !t.is_empty()))
                {
                    " (the token from GH_TOKEN/GITHUB_TOKEN was refused; give a valid one with --token-file FILE)".to_owned()
                } else {
                    " (no token was given: pass one with --token-file FILE, or set GH_TOKEN)".to_owned()
                });
            }
            if args.common.json() {
                output::json(
                    &serde_json::json!({ "fetched": false, "ok": false, "exit_code": status.code(), "status": status.name(), "message": message }),
                );
            }
            Err(FetchFailed { status, message }.into())
        }
    }
}

fn print_report(r: &FetchReport) {
    for rej in &r.rejected {
        output::note(format!(
            "rejected artifact {} (run {}): {}",
            rej.artifact_id,
            rej.run_id.map_or("?".into(), |x| x.to_string()),
            rej.reason
        ));
    }
    for a in &r.attestation_store {
        output::note(match (&a.reason, a.accepted) {
            (_, true) => format!(
                "{}: evidence from the attestation store (attestation #{}, {:?})",
                a.subject,
                a.index,
                a.origin.map_or("?".into(), |o| format!("{o:?}"))
            ),
            (Some(why), false) => format!(
                "{}: ignored stored attestation #{} (repository id {}): {why}",
                a.subject,
                a.index,
                a.repository_id.map_or("?".into(), |i| i.to_string())
            ),
            (None, false) => format!(
                "{}: stored attestation #{} also verifies (not needed)",
                a.subject, a.index
            ),
        });
    }
    for w in &r.wheels {
        output::data(format!("{}  {}", w.sha256, w.path.display()));
    }
    output::note(format!(
        "verified artifact {} from run {} ({} API calls)",
        r.artifact_id, r.run_id, r.api_calls
    ));
    let mut md = format!(
        "### vouch fetch: artifact {} from run {} verified\n\n| wheel | sha256 |\n|---|---|\n",
        r.artifact_id, r.run_id
    );
    for w in &r.wheels {
        md.push_str(&format!(
            "| `{}` | `{}` |\n",
            w.path.file_name().unwrap_or_default().to_string_lossy(),
            w.sha256
        ));
    }
    output::step_summary(&md);
}

pub fn fetch(cmd: FetchCmd) -> anyhow::Result<ExitCode> {
    let report = do_fetch(&cmd.fetch, &cmd.out)?;
    if cmd.fetch.common.json() {
        output::json(&report);
    } else {
        print_report(&report);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn install(cmd: InstallCmd) -> anyhow::Result<ExitCode> {
    let scratch = tempfile::Builder::new()
        .prefix("vouch-install-")
        .tempdir()?;
    let out = cmd
        .out
        .clone()
        .unwrap_or_else(|| scratch.path().join("wheels"));
    let report = do_fetch(&cmd.fetch, &out)?;
    // Planned before anything is installed: an unknown extra must leave nothing behind.
    let plan = if cmd.extras.is_empty() {
        None
    } else {
        Some(vouch_fetch::plan_dependencies(
            &cmd.python,
            &report,
            &cmd.extras,
        )?)
    };
    vouch_fetch::pip_install_verified(&cmd.python, &report, scratch.path(), &cmd.pip_args)?;
    let from_index = match &plan {
        Some(plan) => {
            let requirements: usize = plan.iter().map(|d| d.requirements.len()).sum();
            if requirements > 0 {
                output::note(format!(
                    "installing {requirements} requirement(s) of the verified wheel(s) with a second pip call: they come from the package index and are NOT verified by vouch"
                ));
            }
            Some(vouch_fetch::pip_install_dependencies(
                &cmd.python,
                plan,
                scratch.path(),
                &cmd.pip_args,
            )?)
        }
        None => None,
    };
    if cmd.fetch.common.json() {
        let mut doc = serde_json::json!({ "installed": true, "fetch": report });
        if let (Some(plan), Some(installed)) = (&plan, &from_index) {
            doc["dependencies"] = serde_json::json!({
                "verified_by_vouch": false,
                "plan": plan,
                "installed": installed,
            });
        }
        output::json(&doc);
    } else {
        print_report(&report);
        output::data(format!(
            "installed {} verified wheel(s)",
            report.wheels.len()
        ));
        if let (Some(plan), Some(installed)) = (&plan, &from_index) {
            print_dependencies(plan, installed);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_dependencies(plan: &[vouch_fetch::Dependencies], installed: &[vouch_fetch::Installed]) {
    for d in plan {
        output::note(format!(
            "{} {} [{}] requires: {}",
            d.name,
            d.version,
            d.extras.join(","),
            if d.requirements.is_empty() {
                "nothing".to_owned()
            } else {
                d.requirements.join(", ")
            }
        ));
    }
    output::data(format!(
        "installed {} distribution(s) from the package index, NOT verified by vouch{}",
        installed.len(),
        if installed.is_empty() { "" } else { ":" }
    ));
    for i in installed {
        output::data(format!("  {} {}", i.name, i.version));
    }
}

pub fn publish(cmd: PublishCmd) -> anyhow::Result<ExitCode> {
    let run = RunInfo {
        repo: cmd.repo,
        run_id: cmd.run_id,
        workflow_id: cmd.workflow_id,
        workflow_path: cmd.workflow,
        event: cmd.event,
        head_sha: cmd.sha,
        head_branch: cmd.head_branch,
        pr: cmd.pr,
        default_branch: cmd.default_branch,
    };
    let id = vouch_fetch::publish(&cmd.store, &cmd.name, &run, &cmd.files)?;
    output::data(format!(
        "published artifact {id} {:?} to {}",
        cmd.name,
        cmd.store.display()
    ));
    Ok(ExitCode::SUCCESS)
}
