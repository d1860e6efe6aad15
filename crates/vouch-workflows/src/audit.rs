//! The trust rules the generated workflows exist to keep, checked on the parsed YAML (not on
//! the text), so that an edit which keeps the words but changes the structure is caught too.

use std::fmt;

use serde::Serialize;
use yaml_rust2::{Yaml, YamlLoader};

use crate::{
    Error, GeneratedFile, TRUSTED_ENVIRONMENT, TRUSTED_ONLY_SECRETS, render::SIGNING_JOBS,
};

/// Events whose workflows run with the base repository's secrets on behalf of someone else's
/// input: no code from a pull request, no compiler cache.
const PRIVILEGED_TRIGGERS: &[&str] = &["issue_comment", "pull_request_target"];

/// Events whose runs execute the pull request's own workflow file and code.
const PR_CODE_TRIGGERS: &[&str] = &[
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
];

/// Permissions only the signing jobs ([`SIGNING_JOBS`]) may hold.
const SIGNING_PERMISSIONS: &[&str] = &["id-token", "attestations"];

/// Text in a `run:` script that fetches repository code.
const CHECKOUT_COMMANDS: &[&str] = &[
    "git clone",
    "git fetch",
    "git checkout",
    "git pull",
    "git worktree",
    "gh pr checkout",
    "gh repo clone",
];

/// Text in a `run:` script that reaches a compiler cache.
const CACHE_COMMANDS: &[&str] = &[
    "vouch cache",
    "--cache ",
    "--cache=",
    "--cache-store",
    "--cache-password-file",
    "ccache",
];

/// Environment variable prefixes that configure a compiler cache.
const CACHE_ENV_PREFIXES: &[&str] = &["VOUCH_CACHE", "SCCACHE_", "CCACHE_", "RUSTC_WRAPPER"];

/// The one cache command a privileged job may run: it creates a pull request's store user
/// (reading and writing no cache entry) and needs the store and its admin password. Such a
/// job still checks out and runs nothing from the pull request ([`Rule::PrivilegedCheckout`]).
pub(crate) const GRANT_COMMAND: &str = "vouch cache grant";
/// The grant names its store: that flag is part of the one allowed command.
const GRANT_WITH_STORE: &str = "vouch cache grant --cache-store";
const GRANT_ENV: &[&str] = &["VOUCH_CACHE_STORE", "VOUCH_CACHE_ADMIN_PASSWORD"];

/// Events whose runs have the base branch's GitHub Actions cache scope: what they write, the
/// default branch's trusted builds read.
const BASE_CACHE_SCOPE_TRIGGERS: &[&str] =
    &["pull_request_target", "issue_comment", "workflow_run"];

/// Names that carry the GitHub Actions cache service's URL or token, or switch a tool to it.
const GHA_CACHE_NAMES: &[&str] = &[
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RESULTS_URL",
    "ACTIONS_CACHE_SERVICE_V2",
    "ACTIONS_CACHE_URL",
    "SCCACHE_GHA_",
];

/// A `vouch` store flag naming the GitHub Actions cache (`--cache-store gha`, `--store=gha://x`).
fn gha_store_flag() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(r#"--(cache-)?store[= ]+["']?gha(://|["'\s]|$)"#).expect("a valid regex")
    })
}

/// What in `y` (keys and values alike) hands a process the GitHub Actions cache, if anything.
pub(crate) fn gha_cache_use(y: &Yaml) -> Option<String> {
    let mut texts = Vec::new();
    strings(y, &mut texts);
    texts.iter().find_map(|t| {
        GHA_CACHE_NAMES
            .iter()
            .find(|n| t.contains(*n))
            .map(|n| (*n).to_owned())
            .or_else(|| {
                gha_store_flag()
                    .find(t)
                    .map(|m| m.as_str().trim().to_owned())
            })
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The workflow's top-level `permissions` is missing or not `{}`.
    TopLevelPermissions,
    /// A job other than the signing jobs holds `id-token: write` or `attestations: write`.
    SigningPermissionOutsideAttest,
    /// A signing job that a pull request's own run can start (its code and YAML are the
    /// pull request's).
    SigningJobReachableFromPr,
    /// A job references a trusted secret without naming the trusted environment, so the
    /// secret would have to be a repository secret, readable by same-repository pull
    /// requests that rewrite the workflow.
    TrustedSecretOutsideEnvironment,
    /// A job that can sign checks out code.
    SigningJobChecksOut,
    /// A job of an `issue_comment`/`pull_request_target` workflow checks out code.
    PrivilegedCheckout,
    /// A job of an `issue_comment`/`pull_request_target` workflow can reach a cache.
    PrivilegedCache,
    /// A `uses:` not pinned to a full 40-hex commit (or, for `docker://`, a sha256 digest).
    UnpinnedUses,
    /// An `actions/checkout` step without `persist-credentials: false`.
    PersistedCredentials,
    /// A `${{ ... }}` expression inside a `run:` script (expanded into the script's text
    /// before the shell sees it: script injection).
    ExpressionInRun,
    /// A job that a pull request can start references a secret meant only for pushes
    /// (GitHub sends a runner every secret its job references, whichever branch of an
    /// expression is taken).
    TrustedSecretInPrJob,
    /// The GitHub Actions cache (its token, or a store flag naming it) in a workflow triggered
    /// by `pull_request_target`, `issue_comment` or `workflow_run`: those runs write the base
    /// branch's cache scope, which trusted builds read. Only `pull_request` (fenced by GitHub
    /// to the pull request's merge ref) and trusted pushes may use it.
    GhaCacheInBaseContext,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::TopLevelPermissions => "top-level-permissions",
            Rule::SigningPermissionOutsideAttest => "signing-permission-outside-attest",
            Rule::SigningJobReachableFromPr => "signing-job-reachable-from-pr",
            Rule::TrustedSecretOutsideEnvironment => "trusted-secret-outside-environment",
            Rule::SigningJobChecksOut => "signing-job-checks-out",
            Rule::PrivilegedCheckout => "privileged-checkout",
            Rule::PrivilegedCache => "privileged-cache",
            Rule::UnpinnedUses => "unpinned-uses",
            Rule::PersistedCredentials => "persisted-credentials",
            Rule::ExpressionInRun => "expression-in-run",
            Rule::TrustedSecretInPrJob => "trusted-secret-in-pr-job",
            Rule::GhaCacheInBaseContext => "gha-cache-in-base-context",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One broken rule, where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub file: String,
    pub job: Option<String>,
    /// The step's `name`, else its `uses`, else `#<index>` (from 1).
    pub step: Option<String>,
    pub rule: Rule,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(j) = &self.job {
            write!(f, ": job {j:?}")?;
        }
        if let Some(s) = &self.step {
            write!(f, ", step {s:?}")?;
        }
        write!(f, ": [{}] {}", self.rule, self.message)
    }
}

fn as_str(y: &Yaml) -> Option<&str> {
    match y {
        Yaml::String(s) => Some(s),
        _ => None,
    }
}

/// The events a workflow's `on:` names (string, list or mapping form).
fn triggers(on: &Yaml) -> Vec<String> {
    match on {
        Yaml::String(s) => vec![s.clone()],
        Yaml::Array(a) => a.iter().filter_map(as_str).map(str::to_owned).collect(),
        Yaml::Hash(h) => h.keys().filter_map(as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// Whether `uses` names a commit (or an image digest), not a tag or branch.
fn pinned(uses: &str) -> bool {
    if uses.starts_with("./") {
        return true; // this repository, at the workflow's own commit
    }
    if let Some(image) = uses.strip_prefix("docker://") {
        return image
            .rsplit_once("@sha256:")
            .is_some_and(|(_, d)| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()));
    }
    uses.rsplit_once('@')
        .is_some_and(|(_, r)| r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The action a `uses` names, lowercased, without the ref: `actions/checkout`.
fn action(uses: &str) -> String {
    uses.split('@').next().unwrap_or("").to_ascii_lowercase()
}

fn is_false(y: &Yaml) -> bool {
    matches!(y, Yaml::Boolean(false)) || as_str(y).is_some_and(|s| s == "false")
}

/// Keys of an `env:` mapping that configure a compiler cache.
fn cache_env(env: &Yaml) -> Vec<String> {
    match env {
        Yaml::Hash(h) => h
            .keys()
            .filter_map(as_str)
            .filter(|k| CACHE_ENV_PREFIXES.iter().any(|p| k.starts_with(p)))
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// Which signing permissions a `permissions:` value grants.
fn signing_grants(perms: &Yaml) -> Vec<&'static str> {
    match perms {
        Yaml::String(s) if s == "write-all" => SIGNING_PERMISSIONS.to_vec(),
        Yaml::Hash(h) => SIGNING_PERMISSIONS
            .iter()
            .copied()
            .filter(|p| {
                h.get(&Yaml::String((*p).to_owned()))
                    .and_then(as_str)
                    .is_some_and(|v| v == "write")
            })
            .collect(),
        _ => Vec::new(),
    }
}

struct Audit<'a> {
    file: &'a str,
    out: Vec<Violation>,
}

impl Audit<'_> {
    fn push(&mut self, job: Option<&str>, step: Option<&str>, rule: Rule, message: String) {
        self.out.push(Violation {
            file: self.file.to_owned(),
            job: job.map(str::to_owned),
            step: step.map(str::to_owned),
            rule,
            message,
        });
    }
}

/// Every string anywhere under `y` (keys and values).
fn strings<'y>(y: &'y Yaml, out: &mut Vec<&'y str>) {
    match y {
        Yaml::String(s) => out.push(s),
        Yaml::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Yaml::Hash(h) => h.iter().for_each(|(k, v)| {
            strings(k, out);
            strings(v, out);
        }),
        _ => {}
    }
}

/// Whether a job's `if:` lets it run only for pushes: the condition, or one of its top-level
/// `&&` terms, is exactly `github.event_name == 'push'`. Anything less certain counts as
/// reachable from a pull request.
fn push_only(job: &Yaml) -> bool {
    as_str(&job["if"]).is_some_and(|c| {
        let c = c.trim();
        let c = c
            .strip_prefix("${{")
            .and_then(|c| c.strip_suffix("}}"))
            .unwrap_or(c);
        // Without `||`, every `&&` term must hold; a negated or grouped term never equals
        // the test exactly.
        !c.contains("||")
            && c.split("&&")
                .any(|t| t.trim() == "github.event_name == 'push'")
    })
}

fn is_signing_job(file: &str, job: &str) -> bool {
    SIGNING_JOBS.iter().any(|(f, j)| *f == file && *j == job)
}

fn audit_file(f: &GeneratedFile) -> Result<Vec<Violation>, Error> {
    let docs = YamlLoader::load_from_str(&f.contents).map_err(|e| Error::Yaml {
        file: f.name.clone(),
        message: e.to_string(),
    })?;
    let shape = |message: &str| Error::Shape {
        file: f.name.clone(),
        message: message.to_owned(),
    };
    let [doc @ Yaml::Hash(_)] = docs.as_slice() else {
        return Err(shape("expected one YAML document, a mapping"));
    };
    let Yaml::Hash(jobs) = &doc["jobs"] else {
        return Err(shape("no `jobs` mapping"));
    };
    let mut a = Audit {
        file: &f.name,
        out: Vec::new(),
    };

    match &doc["permissions"] {
        Yaml::Hash(h) if h.is_empty() => {}
        Yaml::BadValue => a.push(
            None,
            None,
            Rule::TopLevelPermissions,
            "no top-level `permissions`: jobs would get the repository's default token permissions"
                .into(),
        ),
        _ => a.push(
            None,
            None,
            Rule::TopLevelPermissions,
            "top-level `permissions` must be `{}`; grant each job what it needs".into(),
        ),
    }

    let on = triggers(&doc["on"]);
    let privileged: Vec<&str> = PRIVILEGED_TRIGGERS
        .iter()
        .copied()
        .filter(|t| on.iter().any(|o| o == t))
        .collect();
    let privileged = privileged.first().copied();
    if let Some(t) = privileged {
        for k in cache_env(&doc["env"]) {
            a.push(
                None,
                None,
                Rule::PrivilegedCache,
                format!("workflow env {k} configures a cache in a {t} workflow"),
            );
        }
    }
    let base_scope = BASE_CACHE_SCOPE_TRIGGERS
        .iter()
        .copied()
        .find(|t| on.iter().any(|o| o == t));
    let gha_refused = |what: &str, t: &str| {
        format!(
            "{what} gives the GitHub Actions cache to a {t} workflow, whose runs write the base branch's cache scope; use it only under pull_request or push"
        )
    };
    if let Some(t) = base_scope
        && let Some(found) = gha_cache_use(&doc["env"])
    {
        a.push(
            None,
            None,
            Rule::GhaCacheInBaseContext,
            gha_refused(&format!("workflow env ({found})"), t),
        );
    }

    for (id, job) in jobs {
        let id = as_str(id).unwrap_or("?");
        let job_ref = Some(id);
        let grants = signing_grants(&job["permissions"]);
        let pr_reachable =
            on.iter().any(|o| PR_CODE_TRIGGERS.contains(&o.as_str())) && !push_only(job);
        if !grants.is_empty() {
            if !is_signing_job(&f.name, id) {
                let allowed: Vec<String> = SIGNING_JOBS
                    .iter()
                    .map(|(f, j)| format!("{f}:{j}"))
                    .collect();
                a.push(
                    job_ref,
                    None,
                    Rule::SigningPermissionOutsideAttest,
                    format!(
                        "grants {} write; only the signing jobs ({}) may",
                        grants.join(" and "),
                        allowed.join(", ")
                    ),
                );
            }
            if pr_reachable {
                a.push(
                    job_ref,
                    None,
                    Rule::SigningJobReachableFromPr,
                    "can sign and can run for a pull request; give it `if: github.event_name == 'push'` (pull requests are signed by the sign workflow)".into(),
                );
            }
        }
        let mut texts = Vec::new();
        strings(job, &mut texts);
        for secret in TRUSTED_ONLY_SECRETS {
            let needle = format!("secrets.{secret}");
            if !texts.iter().any(|t| t.contains(&needle)) {
                continue;
            }
            if pr_reachable {
                a.push(
                    job_ref,
                    None,
                    Rule::TrustedSecretInPrJob,
                    format!(
                        "references {needle}, which no job a pull request can start may hold; give this job `if: github.event_name == 'push'` or a PR-fenced secret"
                    ),
                );
            }
            if as_str(&job["environment"]) != Some(TRUSTED_ENVIRONMENT)
                && as_str(&job["environment"]["name"]) != Some(TRUSTED_ENVIRONMENT)
            {
                a.push(
                    job_ref,
                    None,
                    Rule::TrustedSecretOutsideEnvironment,
                    format!(
                        "references {needle} but does not name `environment: {TRUSTED_ENVIRONMENT}`, where trusted secrets live"
                    ),
                );
            }
        }
        if let Some(uses) = as_str(&job["uses"])
            && !pinned(uses)
        {
            a.push(
                job_ref,
                None,
                Rule::UnpinnedUses,
                format!("reusable workflow {uses:?} is not pinned to a 40-hex commit"),
            );
        }
        if let Some(t) = privileged {
            for k in cache_env(&job["env"]) {
                a.push(
                    job_ref,
                    None,
                    Rule::PrivilegedCache,
                    format!("job env {k} configures a cache in a {t} workflow"),
                );
            }
        }
        if let Some(t) = base_scope
            && let Some(found) = gha_cache_use(&job["env"])
        {
            a.push(
                job_ref,
                None,
                Rule::GhaCacheInBaseContext,
                gha_refused(&format!("job env ({found})"), t),
            );
        }
        let steps = match &job["steps"] {
            Yaml::Array(s) => s.as_slice(),
            _ => &[],
        };
        for (i, step) in steps.iter().enumerate() {
            let uses = as_str(&step["uses"]);
            let label = as_str(&step["name"])
                .map(str::to_owned)
                .or_else(|| uses.map(str::to_owned))
                .unwrap_or_else(|| format!("#{}", i + 1));
            let step_ref = Some(label.as_str());
            if let Some(uses) = uses {
                let act = action(uses);
                if !pinned(uses) {
                    a.push(
                        job_ref,
                        step_ref,
                        Rule::UnpinnedUses,
                        format!("{uses:?} is not pinned to a 40-hex commit"),
                    );
                }
                if act == "actions/checkout" {
                    if !is_false(&step["with"]["persist-credentials"]) {
                        a.push(
                            job_ref,
                            step_ref,
                            Rule::PersistedCredentials,
                            "actions/checkout without `persist-credentials: false` leaves the token in .git/config".into(),
                        );
                    }
                    if !grants.is_empty() {
                        a.push(
                            job_ref,
                            step_ref,
                            Rule::SigningJobChecksOut,
                            "a job that can sign must not check out code".into(),
                        );
                    }
                    if let Some(t) = privileged {
                        a.push(
                            job_ref,
                            step_ref,
                            Rule::PrivilegedCheckout,
                            format!("checks out code in a {t} workflow"),
                        );
                    }
                }
                if let Some(t) = privileged {
                    let cache_input = !matches!(step["with"]["cache"], Yaml::BadValue | Yaml::Null)
                        && !is_false(&step["with"]["cache"])
                        && as_str(&step["with"]["cache"]) != Some("");
                    if act.starts_with("actions/cache") || cache_input {
                        a.push(
                            job_ref,
                            step_ref,
                            Rule::PrivilegedCache,
                            format!("{uses:?} uses a cache in a {t} workflow"),
                        );
                    }
                }
            }
            if let Some(t) = base_scope
                && let Some(found) = gha_cache_use(step)
            {
                a.push(
                    job_ref,
                    step_ref,
                    Rule::GhaCacheInBaseContext,
                    gha_refused(&format!("the step ({found})"), t),
                );
            }
            let grant_step = as_str(&step["run"]).is_some_and(|r| r.contains(GRANT_COMMAND));
            if let Some(t) = privileged {
                for k in cache_env(&step["env"]) {
                    if grant_step && GRANT_ENV.contains(&k.as_str()) {
                        continue;
                    }
                    a.push(
                        job_ref,
                        step_ref,
                        Rule::PrivilegedCache,
                        format!("step env {k} configures a cache in a {t} workflow"),
                    );
                }
            }
            if let Some(run) = as_str(&step["run"]) {
                if run.contains("${{") {
                    a.push(
                        job_ref,
                        step_ref,
                        Rule::ExpressionInRun,
                        "`${{` in a run script: pass the value through `env:` and quote \"$VAR\""
                            .into(),
                    );
                }
                if let Some(t) = privileged {
                    if let Some(c) = CHECKOUT_COMMANDS.iter().find(|c| run.contains(*c)) {
                        a.push(
                            job_ref,
                            step_ref,
                            Rule::PrivilegedCheckout,
                            format!("runs `{c}` in a {t} workflow"),
                        );
                    }
                    let others = run.replace(GRANT_WITH_STORE, "").replace(GRANT_COMMAND, "");
                    if let Some(c) = CACHE_COMMANDS.iter().find(|c| others.contains(*c)) {
                        a.push(
                            job_ref,
                            step_ref,
                            Rule::PrivilegedCache,
                            format!("runs `{}` in a {t} workflow", c.trim()),
                        );
                    }
                }
            }
        }
    }
    Ok(a.out)
}

/// Parses every file and checks the trust rules ([`Rule`]); the violations of all files, in
/// file order. An error only when a file is not a workflow at all (not YAML, no `jobs`).
pub fn audit_trust(files: &[GeneratedFile]) -> Result<Vec<Violation>, Error> {
    let mut out = Vec::new();
    for f in files {
        out.extend(audit_file(f)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins() {
        assert!(pinned(
            "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"
        ));
        assert!(pinned("./.github/actions/x"));
        assert!(pinned(&format!(
            "docker://alpine@sha256:{}",
            "a".repeat(64)
        )));
        assert!(!pinned("actions/checkout@v4"));
        assert!(!pinned(
            "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af68"
        ));
        assert!(!pinned("actions/checkout"));
        assert!(!pinned("docker://alpine:3"));
    }

    #[test]
    fn gha_store_flags() {
        for hit in [
            "vouch build --cache-store gha --scope-from-github",
            "x --cache-store=gha://pfx y",
            "vouch cache check --store 'gha'",
            "vouch cache serve --store gha",
        ] {
            assert!(gha_store_flag().is_match(hit), "{hit}");
        }
        for miss in [
            "--cache-store ghastly",
            "--cache-store \"$store\"",
            "--store redis://gha@h:1",
        ] {
            assert!(!gha_store_flag().is_match(miss), "{miss}");
        }
    }

    #[test]
    fn trigger_forms() {
        let load = |s: &str| YamlLoader::load_from_str(s).unwrap().remove(0);
        assert_eq!(triggers(&load("on: push")["on"]), ["push"]);
        assert_eq!(
            triggers(&load("on: [push, issue_comment]")["on"]),
            ["push", "issue_comment"]
        );
        assert_eq!(
            triggers(&load("on:\n  pull_request_target:\n    types: [opened]")["on"]),
            ["pull_request_target"]
        );
    }
}
