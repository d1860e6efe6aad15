//! Helpers the commands share. A command module imports from here (and from `cli`, `output`,
//! `exit`, `token_files`), never from another command module.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use vouch_cache::{ScopePolicy, Trigger};
use vouch_verify::{Accept, Policy, TrustRootSource, TrustSpec};

use crate::cli::{BuildEnvArgs, PolicyArgs, ScopeArgs, SignerArgs, ToolEnvArgs, TufRepoArgs};
use crate::output;

/// Bad flag combinations found after parsing; exit 2 like clap's own.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A usage error (exit 2) as an `anyhow::Error`.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// Reads a file the user named as evidence; a FIFO or directory is refused, never waited on.
pub fn read_regular_to_string(path: &Path) -> anyhow::Result<String> {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut vouch_verify::open_regular(path).with_context(|| format!("opening {path:?}"))?,
        &mut text,
    )
    .with_context(|| format!("reading {path:?}"))?;
    Ok(text)
}

/// Streams a file through sha256; a FIFO or a directory is refused, never waited on.
pub fn hash_file(path: &Path) -> anyhow::Result<vouch_core::Sha256Digest> {
    let f = vouch_verify::open_regular(path).with_context(|| format!("opening {path:?}"))?;
    let (digest, _) =
        vouch_core::Sha256Digest::of_reader(f).with_context(|| format!("reading {path:?}"))?;
    Ok(digest)
}

/// Writes a release file (0644) atomically through `vouch_fs`, the one output helper.
pub fn write_atomically(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    vouch_fs::write_atomically(path, data, vouch_fs::Mode::Public)
        .with_context(|| format!("writing {path:?}"))
}

pub fn build_options(
    source: &Path,
    out: &Path,
    epoch: Option<u64>,
    env: &BuildEnvArgs,
) -> anyhow::Result<vouch_build::BuildOptions> {
    Ok(vouch_build::BuildOptions {
        source: source.to_owned(),
        out_dir: out.to_owned(),
        source_date_epoch: epoch,
        python: env.tools.python.clone(),
        cache_dir: default_cache_dir(env.tools.cache_dir.clone()),
        env: Vec::new(),
        launcher: None,
        work_dir: env
            .work_dir
            .clone()
            .map(|w| std::path::absolute(&w).unwrap_or(w)),
        path_prepend: Vec::new(),
        prefix_maps: Vec::new(),
        patch: None,
        repair: None,
        lock: env.lock.clone(),
        trust: trust_level(None),
        seal_key: env.tools.seal_key()?,
        toolkit: None,
        kv_cache: None,
    })
}

impl ToolEnvArgs {
    /// The seal key from `--seal-key-file`, when given.
    pub fn seal_key(&self) -> anyhow::Result<Option<std::sync::Arc<vouch_fs::seal::SealKey>>> {
        read_seal_key(self.seal_key_file.as_deref())
    }
}

/// The seal key in `path` (`--seal-key-file`), when one is given.
pub fn read_seal_key(
    path: Option<&Path>,
) -> anyhow::Result<Option<std::sync::Arc<vouch_fs::seal::SealKey>>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let bytes = std::fs::read(path).with_context(|| format!("reading --seal-key-file {path:?}"))?;
    let secret = bytes.trim_ascii_end();
    let key = vouch_fs::seal::SealKey::new(secret)
        .map_err(|e| UsageError(format!("--seal-key-file {path:?}: {e}")))?;
    Ok(Some(std::sync::Arc::new(key)))
}

/// The keys a cache gateway runs with: the seal key signs (and its public half verifies);
/// without it, the public key only verifies. A build whose policy writes needs the seal key,
/// one whose policy reads needs one of the two: refused here rather than run as a cache that
/// never hits, or silently writes what nothing will read.
pub fn entry_keys(
    seal_key_file: Option<&Path>,
    public_key: Option<&vouch_cache::EntryVerifier>,
    policy: &ScopePolicy,
) -> anyhow::Result<vouch_cache::EntryKeys> {
    if let Some(seal) = read_seal_key(seal_key_file)? {
        return vouch_cache::EntryKeys::signing(&seal, public_key)
            .map_err(|e| usage(format!("--cache-public-key: {e}")));
    }
    if policy.write.is_some() {
        return Err(usage(format!(
            "{}: this build writes the cache, and every entry must be signed with the trusted builds' key; give --seal-key-file (VOUCH_SEAL_KEY_FILE)",
            policy.reason
        )));
    }
    match public_key {
        Some(v) => Ok(vouch_cache::EntryKeys::verifying(v.clone())),
        None if policy.read.is_empty() => Ok(vouch_cache::EntryKeys::default()),
        None => Err(usage(format!(
            "{}: a cache entry is served only when it verifies with the trusted builds' public key; give --cache-public-key (VOUCH_CACHE_PUBLIC_KEY; `vouch cache public-key` prints it)",
            policy.reason
        ))),
    }
}

/// A trusted build without a seal key reuses records any same-user process could have
/// rewritten: say so where the build's log is read.
pub fn warn_unkeyed(trust: vouch_build::TrustLevel, key: bool) {
    if trust == vouch_build::TrustLevel::Trusted && !key {
        output::annotate_warning(
            "a trusted build without --seal-key-file: the venvs and toolkits it reuses are checked against records that code of an untrusted build on this machine could rewrite",
        );
    }
}

/// The cache directory, absolute: a relative `--cache-dir`/`VOUCH_CACHE_DIR` is taken
/// against the current directory once, here, so every path derived from it (the work
/// directory, toolkit paths in prefix maps) means the same place.
pub fn default_cache_dir(explicit: Option<PathBuf>) -> PathBuf {
    let dir = explicit
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("vouch")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("vouch")))
        .unwrap_or_else(|| std::env::temp_dir().join("vouch-cache"));
    std::path::absolute(&dir).unwrap_or(dir)
}

/// The trust a build runs with, which picks the cache root its venv and toolkit come from.
/// In GitHub Actions only the event GitHub reports counts (a flag cannot raise it); elsewhere
/// `--event push` does. Everything else (pull requests, local builds, rebuilds) is untrusted.
pub fn trust_level(event: Option<&str>) -> vouch_build::TrustLevel {
    let in_actions = vouch_core::ci::in_github_actions();
    let event = if in_actions {
        std::env::var("GITHUB_EVENT_NAME").ok()
    } else {
        event.map(str::to_owned)
    };
    if event.as_deref() == Some("push") {
        vouch_build::TrustLevel::Trusted
    } else {
        vouch_build::TrustLevel::Untrusted
    }
}

/// Errors of the `cache` subcommands that are not usage errors.
#[derive(Debug, thiserror::Error)]
pub enum CacheCmdError {
    /// The URL is shown without its path: that is the gateway's secret.
    #[error("cannot read the gateway's counters from {url}")]
    Stats {
        url: String,
        #[source]
        source: reqwest::Error,
    },
}

/// The store `spec` names, with the secret from `file` (a Redis password, an S3 secret
/// access key, a GCS key or token), so it never appears on a command line or in the
/// environment. Checked here, not by clap, whose message would repeat a password in the spec.
/// The file is read, not removed: a long-lived runner credential may be reused by later steps.
pub fn store_spec(spec: &str, file: Option<&Path>) -> anyhow::Result<vouch_cache::StoreSpec> {
    let parsed = vouch_cache::StoreSpec::parse(spec).map_err(|e| usage(e.to_string()))?;
    let Some(file) = file else {
        return Ok(parsed);
    };
    let secret = std::fs::read_to_string(file)
        .with_context(|| format!("reading the store password file {file:?}"))?;
    Ok(parsed.with_secret(secret.trim_end_matches(['\n', '\r']).to_owned())?)
}

impl ScopeArgs {
    pub fn trigger(&self) -> anyhow::Result<Trigger> {
        if self.scope_from_github {
            return Trigger::from_github_actions(|k| std::env::var(k).ok(), &self.default_branch)
                .context(
                    "--scope-from-github: run inside GitHub Actions, or give --event (and --ref, --pr, --base-ref)",
                );
        }
        let event = self.event.clone().ok_or_else(|| {
            usage("give --event (and --ref, --pr, --base-ref) or --scope-from-github")
        })?;
        self.check_consistent(&event)?;
        Ok(Trigger {
            event,
            git_ref: self.git_ref.clone().unwrap_or_default(),
            pr: self.pr,
            base_ref: self.base_ref.clone(),
            default_branch: self.default_branch.clone(),
            from_fork: false,
        })
    }

    /// Refuses flags the event's policy would ignore: `--event push --pr 7` must not quietly
    /// become a trusted build that writes `branch/<name>`.
    fn check_consistent(&self, event: &str) -> anyhow::Result<()> {
        let push_like = vouch_core::ci::BRANCH_EVENTS.contains(&event);
        if push_like && (self.pr.is_some() || self.base_ref.is_some()) {
            return Err(usage(format!(
                "--pr and --base-ref describe a pull request; a {event} build's scope comes from --ref alone"
            )));
        }
        if let ("pull_request", Some(r)) = (event, self.git_ref.as_deref()) {
            // A full ref (`refs/pull/N/merge` or `/head`), not a bare number.
            let n = vouch_core::ci::pull_number(r).filter(|_| r.matches('/').count() >= 3);
            if n.is_none() || n != self.pr {
                return Err(usage(format!(
                    "--ref {r:?} is not refs/pull/<N>/… for --pr {}",
                    self.pr.map_or("(none)".into(), |n| n.to_string())
                )));
            }
        }
        Ok(())
    }

    pub fn policy(&self) -> anyhow::Result<ScopePolicy> {
        Ok(ScopePolicy::for_trigger(&self.trigger()?)?)
    }
}

/// One runtime for a command's async library calls (GitHub, Sigstore, the cache gateway).
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

impl PolicyArgs {
    pub fn trust_root(&self) -> anyhow::Result<TrustRootSource> {
        trust_root_source(
            self.trust_root.clone(),
            self.staging,
            self.offline,
            &self.tuf,
        )
    }

    /// What is trusted: the key when one is given (checked first), else certificates.
    pub fn trust(&self) -> anyhow::Result<TrustSpec> {
        Ok(TrustSpec {
            root: self.trust_root()?,
            accept: match self.read_key()? {
                Some(pem) => Accept::Key(pem),
                None => Accept::Keyless,
            },
        })
    }

    /// The policy from the policy file (its defaults, then the entry for `dist`), then flags.
    pub fn policy_for(
        &self,
        file: Option<&vouch_verify::PolicyFile>,
        dist: Option<&str>,
    ) -> Policy {
        let mut p = Policy::default();
        if let Some(f) = file {
            f.default.apply(&mut p);
            if let Some(spec) = dist.and_then(|d| f.project(d)) {
                spec.apply(&mut p);
            }
        }
        self.cli_spec().apply(&mut p);
        p
    }

    /// The identity flags given on the command line.
    pub fn cli_spec(&self) -> vouch_verify::PolicySpec {
        vouch_verify::PolicySpec {
            repository: self.repo.clone(),
            owner: self.owner.clone(),
            signer_workflow: self.signer_workflow.clone(),
            build_workflow: self.build_workflow.clone(),
            git_ref: self.git_ref.clone(),
            sha: self.sha.clone(),
            event: self.event.clone(),
            issuer: self.issuer.clone(),
            runner: self.runner.clone().or_else(|| {
                self.deny_self_hosted_runners
                    .then(|| "github-hosted".to_owned())
            }),
            predicate_type: self.predicate_type.clone(),
            run_id: self.run_id,
            pr: self.pr,
            cell: self.cell.clone(),
            pr_head_sha: self.pr_head_sha.clone(),
            pr_build_workflow: self.pr_build_workflow.clone(),
        }
    }

    /// The `--key` file's text, checked to be a PEM public key before anything else is done.
    pub fn read_key(&self) -> anyhow::Result<Option<String>> {
        self.key.as_deref().map(read_public_key).transpose()
    }

    pub fn load_policy_file(&self) -> anyhow::Result<Option<vouch_verify::PolicyFile>> {
        Ok(match &self.policy {
            Some(path) => Some(vouch_verify::PolicyFile::load(path)?),
            None => None,
        })
    }

    /// Flags that cannot hold together, refused before anything is verified.
    pub fn refuse_conflicts(&self) -> anyhow::Result<()> {
        if self.key.is_some() && self.issuer.is_some() {
            // A key-signed bundle has no certificate, so no issuer: the flag could not be held.
            anyhow::bail!(UsageError(
                "--issuer applies to certificates; a bundle verified with --key has none".into()
            ));
        }
        if let (Some(repo), Some(owner)) = (&self.repo, &self.owner)
            && repo.split('/').next() != Some(owner.as_str())
        {
            anyhow::bail!(UsageError(format!(
                "--repo {repo} is not one of --owner {owner}'s repositories; give one of them, or the repository alone"
            )));
        }
        Ok(())
    }

    /// The policy for one file (or digest), refusing keyless verification without an identity.
    pub fn policy(&self, dist: Option<&str>) -> anyhow::Result<Policy> {
        self.refuse_conflicts()?;
        let file = self.load_policy_file()?;
        if let (None, Some(f), Some(path)) = (dist, &file, &self.policy)
            && !f.project.is_empty()
        {
            // Entries are chosen by the file's distribution name; a bare digest has none, so
            // they would be read and then ignored.
            anyhow::bail!(UsageError(format!(
                "--policy {path:?} has [[project]] entries, but --digest gives no file name to choose one by; verify the file itself, or give the identity as flags"
            )));
        }
        let p = self.policy_for(file.as_ref(), dist);
        // The source repository must be named: a reusable workflow's signer URI names the
        // repository that holds the workflow, not the one that was built.
        if self.key.is_none() && p.repository.is_none() && p.owner.is_none() {
            anyhow::bail!(UsageError(
                "keyless verification needs an identity: give --repo OWNER/NAME (or `repository` in a --policy file), or at least --owner OWNER".into()
            ));
        }
        if p.repository.is_none()
            && let Some(owner) = &p.owner
        {
            output::annotate_warning(&format!(
                "only --owner {owner} is required: a build by any of {owner}'s repositories passes; give --repo to name the one"
            ));
        }
        Ok(p)
    }
}

impl SignerArgs {
    /// The signer these flags name, checked: flags only keyless signing uses are refused with
    /// another signer, never ignored.
    pub fn spec(&self) -> anyhow::Result<vouch_attest::SignerSpec> {
        let spec: vouch_attest::SignerSpec = self
            .signer
            .parse()
            .map_err(|e| usage(format!("--signer {e}")))?;
        if !spec.kind().keyless {
            let keyless_only: Vec<&str> = [
                ("--fulcio-url", self.fulcio_url.is_some()),
                ("--rekor-url", self.rekor_url.is_some()),
                ("--oidc-token-file", self.oidc_token_file.is_some()),
            ]
            .into_iter()
            .filter_map(|(flag, given)| given.then_some(flag))
            .collect();
            if !keyless_only.is_empty() {
                return Err(usage(format!(
                    "{} only apply to keyless signing (--signer sigstore), not to --signer {}",
                    keyless_only.join(", "),
                    self.signer
                )));
            }
        }
        Ok(spec)
    }

    /// The signer `spec` names, built (a key read and checked, a token parsed), with the
    /// token's `job_workflow_ref` when signing keyless. In GitHub Actions the ambient token is
    /// fetched here, before the statement is made, because only it names the signing job's
    /// workflow.
    pub fn build(
        &self,
        spec: &vouch_attest::SignerSpec,
    ) -> anyhow::Result<(Box<dyn vouch_attest::Signer>, Option<String>)> {
        let oidc_token = match &self.oidc_token_file {
            Some(f) => Some(
                vouch_attest::token_from_jwt(secrecy::ExposeSecret::expose_secret(&f.jwt))
                    .with_context(|| format!("the OIDC token from {:?}", f.path))?,
            ),
            None if spec.kind().keyless && vouch_core::ci::in_github_actions() => {
                Some(runtime()?.block_on(vouch_attest::ambient_token())?)
            }
            None => None,
        };
        let job = oidc_token.as_ref().and_then(vouch_attest::job_workflow_ref);
        let signer = spec.signer(vouch_attest::SignerInputs {
            fulcio_url: self.fulcio_url.clone(),
            rekor_url: self.rekor_url.clone(),
            oidc_token,
        })?;
        Ok((signer, job))
    }
}

/// The GitHub Actions run this process runs in, from `GITHUB_*`; `None` outside Actions.
pub fn github_run_context() -> anyhow::Result<Option<vouch_attest::RunContext>> {
    if !vouch_core::ci::in_github_actions() {
        return Ok(None);
    }
    let env: std::collections::BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("GITHUB_") || k == "RUNNER_ENVIRONMENT")
        .collect();
    Ok(Some(
        vouch_attest::RunContext::from_github_env(&env)
            .context("reading the GitHub Actions run context")?,
    ))
}

/// A `--key` file's text, checked to be a PEM public key before anything else is done (and
/// read only if it is a regular file: a FIFO would block).
pub fn read_public_key(path: &Path) -> anyhow::Result<String> {
    let pem = vouch_verify::read_regular_to_string(path)
        .with_context(|| format!("reading key {path:?}"))?;
    vouch_verify::check_public_key(&pem).with_context(|| format!("--key {path:?}"))?;
    Ok(pem)
}

impl crate::cli::GithubAccessArgs {
    /// A client for the API these flags name (`$GITHUB_API_URL` in Actions).
    pub fn client(&self) -> anyhow::Result<vouch_github::GithubClient> {
        let api = self
            .api_url
            .clone()
            .or_else(|| {
                std::env::var("GITHUB_API_URL")
                    .ok()
                    .filter(|u| !u.is_empty())
            })
            .unwrap_or_else(|| vouch_github::DEFAULT_API_URL.to_owned());
        Ok(vouch_github::GithubClient::new(
            &api,
            self.token_file.as_ref().map(|t| t.token.clone()),
        )?)
    }
}

/// Whether `bundle` may be recorded in `repo`'s GitHub attestation store: its certificate
/// must name `server/repo` as source repository, or GitHub would hold, under this repository,
/// evidence about another. Exit 16 (policy) when it does not.
pub fn check_recordable(
    server: &str,
    repo: &str,
    bundle: &vouch_attest::Bundle,
) -> anyhow::Result<()> {
    let want = format!("{server}/{repo}");
    let claimed = vouch_verify::claimed_identity(bundle)?.and_then(|i| i.repository);
    if claimed.as_deref() != Some(want.as_str()) {
        return Err(vouch_verify::VerifyError::mismatch(
            vouch_verify::ErrorKind::Policy,
            "certificate source repository (OID .1.12) of the bundle to record",
            &want,
            claimed.as_deref(),
        )
        .into());
    }
    Ok(())
}

/// `POST /repos/{repo}/attestations` with the bundle's JSON: the id GitHub gave the record.
/// Async, so it runs on the runtime `client` already used: a pooled connection is driven by
/// the runtime that opened it, and blocks forever on another.
pub async fn record_attestation(
    client: &vouch_github::GithubClient,
    repo: &str,
    bundle_json: &str,
) -> anyhow::Result<u64> {
    let value: serde_json::Value = serde_json::from_str(bundle_json)?;
    Ok(client.create_attestation(repo, &value).await?)
}

/// The TUF repository `trust update` refreshes from and `verify` reads the cache of: Sigstore's,
/// or the one `--tuf-url`/`--tuf-root` name. Plain http is refused off loopback: TUF
/// protects the metadata, but not against a network attacker stalling or freezing updates.
pub fn tuf_repo(
    args: &TufRepoArgs,
    cache_root: &Path,
    staging: bool,
) -> anyhow::Result<vouch_verify::tuf::TufRepo> {
    // --staging names Sigstore's staging instance, whatever repository stands in for
    // production (`--tuf-url`).
    if staging {
        return Ok(vouch_verify::tuf::TufRepo::staging(cache_root));
    }
    let (Some(url), Some(root)) = (&args.tuf_url, &args.tuf_root) else {
        return Ok(vouch_verify::tuf::TufRepo::production(cache_root));
    };
    let parsed = url::Url::parse(url).map_err(|e| usage(format!("--tuf-url {url:?}: {e}")))?;
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    if !(parsed.scheme() == "https" || (parsed.scheme() == "http" && loopback)) {
        return Err(usage(format!(
            "--tuf-url {url:?}: use https (plain http only on a loopback address)"
        )));
    }
    let bootstrap = std::fs::read(root).with_context(|| format!("reading --tuf-root {root:?}"))?;
    Ok(vouch_verify::tuf::TufRepo::custom(
        url, bootstrap, cache_root,
    ))
}

/// The cache directory of a command without a `--cache-dir` of its own.
pub fn env_cache_dir() -> PathBuf {
    default_cache_dir(std::env::var_os("VOUCH_CACHE_DIR").map(PathBuf::from))
}

/// The root a verifying command trusts: `--trust-root`, else the root from the last
/// `trust update` of the instance (production, or staging with `--staging`), verified offline
/// from the cache, else that instance's embedded root.
/// Says on stderr which, unless it is the embedded root with nothing to explain.
pub fn trust_root_source(
    file: Option<PathBuf>,
    staging: bool,
    offline: bool,
    tuf: &TufRepoArgs,
) -> anyhow::Result<TrustRootSource> {
    if file.is_some() {
        return Ok(TrustRootSource::choose(file, staging));
    }
    let repo = tuf_repo(tuf, &env_cache_dir(), staging)?;
    let embedded = TrustRootSource::choose(None, staging);
    match repo.load_cached() {
        Ok(cached) => {
            if cached.stale_at(jiff::Timestamp::now()) {
                output::annotate_warning(&format!(
                    "the trust root was last refreshed {} (over 30 days ago): run `vouch trust update{}`",
                    cached.refreshed_at,
                    if staging { " --staging" } else { "" }
                ));
            }
            let source = TrustRootSource::TufCache(Box::new(cached));
            output::note(format!("trust root: {}", source.describe()));
            Ok(source)
        }
        Err(vouch_verify::tuf::TufError::NoCache { .. }) => {
            if offline {
                output::note(format!(
                    "trust root: {} (no `vouch trust update` in the cache)",
                    embedded.describe()
                ));
            }
            Ok(embedded)
        }
        Err(e) => {
            output::annotate_warning(&format!(
                "ignoring the refreshed trust root: {}; using {}",
                error_chain(&e),
                embedded.describe()
            ));
            Ok(embedded)
        }
    }
}

/// An error and its causes on one line.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cur = c.source();
    }
    text
}
