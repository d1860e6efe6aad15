//! The consumer's expectations, checked against the Fulcio certificate's extensions (OIDs
//! 1.3.6.1.4.1.57264.1.8-.22) and against the statement's own claims.

use serde::Serialize;
use serde_json::Value;
use sigstore_crypto::CertificateInfo;
use vouch_core::statement::{
    GITHUB_BUILD_TYPES, PREDICATE_PR_BUILD_V1, PREDICATE_SLSA_V1, PrBuildPredicate, STATEMENT_TYPE,
    VOUCH_CLAIMS_POINTER, VouchClaims,
};

use crate::{ErrorKind, VerifyError};

pub const GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";

#[derive(Clone, Debug)]
pub struct Policy {
    pub server_url: String,
    /// `owner/name`: the source repository URI must be `<server>/<owner>/<name>`.
    pub repository: Option<String>,
    /// The source repository must be one of this owner's: `<server>/<owner>/<any name>`
    /// (gh's `--owner`).
    pub owner: Option<String>,
    /// The workflow that signed (build signer URI); differs from the build workflow when a
    /// reusable workflow signs. `PATH` (in `repository`), `OWNER/REPO/PATH`, either with `@REF`.
    pub signer_workflow: Option<String>,
    /// The top-level workflow the run started from (build config URI).
    pub build_workflow: Option<String>,
    /// Source ref, e.g. `refs/heads/main`; a trailing `*` matches any suffix (`refs/tags/v*`).
    pub git_ref: Option<String>,
    pub sha: Option<String>,
    pub event: Option<String>,
    pub run_id: Option<String>,
    pub issuer: String,
    /// `github-hosted` by default; `None` accepts any runner.
    pub runner: Option<String>,
    pub predicate_type: String,
    pub pr: Option<u64>,
    pub cell: Option<String>,
    /// pr-build statements: the PR head commit the build run must have built.
    pub pr_head_sha: Option<String>,
    /// pr-build statements: the workflow file (path) that must have run the build.
    pub pr_build_workflow: Option<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            server_url: "https://github.com".into(),
            repository: None,
            owner: None,
            signer_workflow: None,
            build_workflow: None,
            git_ref: None,
            sha: None,
            event: None,
            run_id: None,
            issuer: GITHUB_ISSUER.into(),
            runner: Some("github-hosted".into()),
            predicate_type: PREDICATE_SLSA_V1.into(),
            pr: None,
            cell: None,
            pr_head_sha: None,
            pr_build_workflow: None,
        }
    }
}

/// Who signed, as the certificate says.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct SignerIdentity {
    pub issuer: Option<String>,
    pub san: Option<String>,
    pub repository: Option<String>,
    pub git_ref: Option<String>,
    pub sha: Option<String>,
    pub signer_workflow: Option<String>,
    pub build_workflow: Option<String>,
    pub event: Option<String>,
    pub run: Option<String>,
    pub runner: Option<String>,
}

impl SignerIdentity {
    pub fn from_certificate(info: &CertificateInfo) -> Self {
        let c = &info.ci_claims;
        SignerIdentity {
            issuer: info.issuer.clone(),
            san: info.identity.as_ref().map(|s| s.to_string()),
            repository: c.source_repository_uri.clone(),
            git_ref: c.source_repository_ref.clone(),
            sha: c.source_repository_digest.clone(),
            signer_workflow: c.build_signer_uri.clone(),
            build_workflow: c.build_config_uri.clone(),
            event: c.build_trigger.clone(),
            run: c.run_invocation_uri.clone(),
            runner: c.runner_environment.clone(),
        }
    }

    /// What a statement in GitHub's build type claims about its own origin. Used for
    /// key-signed bundles, where no CA vouches for the identity.
    pub fn from_statement(payload: &[u8]) -> Option<Self> {
        let st: Value = serde_json::from_slice(payload).ok()?;
        if st["predicateType"] == PREDICATE_PR_BUILD_V1 {
            return crate::pr_build::claimed_signer(&st["predicate"]);
        }
        let bd = st.pointer("/predicate/buildDefinition")?;
        let s = |v: &Value| v.as_str().map(str::to_owned);
        let repository = s(&bd["externalParameters"]["workflow"]["repository"]);
        let git_ref = s(&bd["externalParameters"]["workflow"]["ref"]);
        let workflow = match (
            &repository,
            s(&bd["externalParameters"]["workflow"]["path"]),
            &git_ref,
        ) {
            (Some(repo), Some(path), Some(r)) => Some(format!("{repo}/{path}@{r}")),
            _ => None,
        };
        Some(SignerIdentity {
            issuer: None,
            san: None,
            repository,
            git_ref,
            sha: s(&bd["resolvedDependencies"][0]["digest"]["gitCommit"]),
            signer_workflow: workflow.clone(),
            build_workflow: workflow,
            event: s(&bd["internalParameters"]["github"]["event_name"]),
            run: s(&st["predicate"]["runDetails"]["metadata"]["invocationId"]),
            runner: s(&bd["internalParameters"]["github"]["runner_environment"]),
        })
    }

    /// `owner/name` from the repository URI.
    pub fn repository_slug(&self, server: &str) -> Option<&str> {
        self.repository
            .as_deref()?
            .strip_prefix(server)?
            .strip_prefix('/')
    }
}

fn pattern_matches(pattern: &str, value: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => value.starts_with(prefix),
        None => pattern == value,
    }
}

impl Policy {
    fn workflow_uri(&self, spec: &str) -> Result<String, VerifyError> {
        let (path, at) = match spec.split_once('@') {
            Some((p, r)) => (p, Some(r)),
            None => (spec, None),
        };
        let full = if path.starts_with(".github/") {
            let repo = self.repository.as_deref().ok_or_else(|| {
                VerifyError::new(
                    ErrorKind::Policy,
                    format!(
                        "workflow {spec:?} is a path, and the policy names no repository to find \
                         it in; name the repository, or give OWNER/REPO/{spec}"
                    ),
                )
            })?;
            format!("{}/{repo}/{path}", self.server_url)
        } else {
            format!("{}/{path}", self.server_url)
        };
        Ok(match at {
            Some(r) => format!("{full}@{r}"),
            None => full,
        })
    }

    fn check_workflow(
        &self,
        claim: &str,
        spec: Option<&str>,
        found: Option<&str>,
    ) -> Result<(), VerifyError> {
        let Some(spec) = spec else { return Ok(()) };
        let expected = self.workflow_uri(spec)?;
        let ok = found.is_some_and(|f| {
            if expected.contains('@') {
                f == expected
            } else {
                f.split_once('@').map_or(f, |(p, _)| p) == expected
            }
        });
        if ok {
            Ok(())
        } else {
            Err(VerifyError::mismatch(
                ErrorKind::Policy,
                claim,
                &expected,
                found,
            ))
        }
    }

    /// Checks the certificate's identity against this policy.
    pub fn check_certificate(&self, id: &SignerIdentity) -> Result<(), VerifyError> {
        self.check_identity(id, IdentitySource::Certificate)
    }

    /// Checks what a key-signed statement claims about its origin against this policy. The
    /// messages name the statement's fields: there is no certificate, so no OID to cite.
    pub fn check_statement_claims(&self, id: &SignerIdentity) -> Result<(), VerifyError> {
        self.check_identity(id, IdentitySource::Statement)
    }

    fn check_identity(&self, id: &SignerIdentity, from: IdentitySource) -> Result<(), VerifyError> {
        let label = |claim: Claim| from.label(claim);
        let eq = |claim: Claim,
                  expected: Option<&str>,
                  found: Option<&str>|
         -> Result<(), VerifyError> {
            match expected {
                Some(e) if found != Some(e) => Err(VerifyError::mismatch(
                    ErrorKind::Policy,
                    &label(claim),
                    e,
                    found,
                )),
                _ => Ok(()),
            }
        };
        if id.san.is_some() {
            eq(Claim::Issuer, Some(&self.issuer), id.issuer.as_deref())?;
        }
        let repo_uri = self
            .repository
            .as_ref()
            .map(|r| format!("{}/{r}", self.server_url));
        eq(
            Claim::Repository,
            repo_uri.as_deref(),
            id.repository.as_deref(),
        )?;
        if let Some(owner) = &self.owner {
            let prefix = format!("{}/{owner}/", self.server_url);
            let owned = id.repository.as_deref().is_some_and(|r| {
                r.strip_prefix(&prefix)
                    .is_some_and(|name| !name.is_empty() && !name.contains('/'))
            });
            if !owned {
                return Err(VerifyError::mismatch(
                    ErrorKind::Policy,
                    &label(Claim::Owner),
                    &format!("{prefix}*"),
                    id.repository.as_deref(),
                ));
            }
        }
        self.check_workflow(
            &label(Claim::SignerWorkflow),
            self.signer_workflow.as_deref(),
            id.signer_workflow.as_deref(),
        )?;
        self.check_workflow(
            &label(Claim::BuildWorkflow),
            self.build_workflow.as_deref(),
            id.build_workflow.as_deref(),
        )?;
        if let Some(pattern) = &self.git_ref
            && !id
                .git_ref
                .as_deref()
                .is_some_and(|r| pattern_matches(pattern, r))
        {
            return Err(VerifyError::mismatch(
                ErrorKind::Policy,
                &label(Claim::Ref),
                pattern,
                id.git_ref.as_deref(),
            ));
        }
        eq(Claim::Commit, self.sha.as_deref(), id.sha.as_deref())?;
        eq(Claim::Event, self.event.as_deref(), id.event.as_deref())?;
        eq(Claim::Runner, self.runner.as_deref(), id.runner.as_deref())?;
        if let Some(run) = &self.run_id {
            let found = id.run.as_deref().and_then(run_id_of);
            if found != Some(run.as_str()) {
                return Err(VerifyError::mismatch(
                    ErrorKind::Policy,
                    &label(Claim::Run),
                    run,
                    id.run.as_deref(),
                ));
            }
        }
        Ok(())
    }
}

/// Where a [`SignerIdentity`] came from, which decides how a mismatch names the claim.
#[derive(Clone, Copy)]
enum IdentitySource {
    Certificate,
    Statement,
}

#[derive(Clone, Copy)]
enum Claim {
    Issuer,
    Repository,
    Owner,
    SignerWorkflow,
    BuildWorkflow,
    Ref,
    Commit,
    Event,
    Runner,
    Run,
}

impl IdentitySource {
    fn label(self, claim: Claim) -> String {
        let (what, oid, field) = match claim {
            Claim::Issuer => ("issuer", "OID 1.3.6.1.4.1.57264.1.8", "-"),
            Claim::Repository => (
                "source repository",
                "OID .1.12",
                "externalParameters.workflow.repository",
            ),
            Claim::Owner => (
                "source repository owner",
                "OID .1.12",
                "externalParameters.workflow.repository",
            ),
            Claim::SignerWorkflow => (
                "build signer workflow",
                "OID .1.9",
                "externalParameters.workflow",
            ),
            Claim::BuildWorkflow => (
                "build config workflow",
                "OID .1.18",
                "externalParameters.workflow",
            ),
            Claim::Ref => ("source ref", "OID .1.14", "externalParameters.workflow.ref"),
            Claim::Commit => (
                "source commit",
                "OID .1.13",
                "resolvedDependencies[0].digest.gitCommit",
            ),
            Claim::Event => (
                "build trigger",
                "OID .1.20",
                "internalParameters.github.event_name",
            ),
            Claim::Runner => (
                "runner environment",
                "OID .1.11",
                "internalParameters.github.runner_environment",
            ),
            Claim::Run => ("run", "OID .1.21", "runDetails.metadata.invocationId"),
        };
        match self {
            IdentitySource::Certificate => format!("{what} ({oid})"),
            IdentitySource::Statement => format!("{what} (statement claim {field})"),
        }
    }
}

/// A full commit SHA: 40 lowercase hex digits, as certificates and statements carry it.
pub fn is_commit_sha(s: &str) -> bool {
    s.len() == 40
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `https://github.com/o/r/actions/runs/123/attempts/1` -> `123`.
pub fn run_id_of(uri: &str) -> Option<&str> {
    uri.split_once("/actions/runs/")?.1.split('/').next()
}

/// The statement's summary, for reports.
#[derive(Clone, Debug, Serialize)]
pub struct StatementSummary {
    pub predicate_type: String,
    pub subjects: Vec<String>,
    /// vouch's claims as the statement carries them, shown verbatim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vouch: Option<Value>,
    /// The same claims, typed, for readers; empty when the statement has none.
    #[serde(skip)]
    pub claims: VouchClaims,
    /// The pr-build predicate, when that is the statement's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr_build: Option<PrBuildPredicate>,
}

/// Parses the statement and checks its type, predicate type, that `digest_hex` is a subject,
/// and that its claims agree with the certificate (`id`, when keyless) and with the policy.
pub fn check_statement(
    payload: &[u8],
    digest_hex: &str,
    policy: &Policy,
    id: Option<&SignerIdentity>,
) -> Result<StatementSummary, VerifyError> {
    let st: Value = serde_json::from_slice(payload).map_err(|e| {
        VerifyError::with_source(
            ErrorKind::Statement,
            "the DSSE payload is not a JSON statement",
            e,
        )
    })?;
    let str_at = |ptr: &str| st.pointer(ptr).and_then(Value::as_str);
    let stmt = |claim: &str, expected: &str, found: Option<&str>| -> Result<(), VerifyError> {
        if found == Some(expected) {
            Ok(())
        } else {
            Err(VerifyError::mismatch(
                ErrorKind::Statement,
                claim,
                expected,
                found,
            ))
        }
    };
    stmt("statement _type", STATEMENT_TYPE, str_at("/_type"))?;
    stmt(
        "predicateType",
        &policy.predicate_type,
        str_at("/predicateType"),
    )?;
    let subjects = st["subject"].as_array().cloned().unwrap_or_default();
    if subjects.is_empty() {
        return Err(VerifyError::new(
            ErrorKind::Statement,
            "the statement has no subjects",
        ));
    }
    let names: Vec<String> = subjects
        .iter()
        .map(|s| {
            format!(
                "{} sha256:{}",
                s["name"].as_str().unwrap_or("?"),
                s["digest"]["sha256"].as_str().unwrap_or("?")
            )
        })
        .collect();
    if !subjects
        .iter()
        .any(|s| s["digest"]["sha256"].as_str() == Some(digest_hex))
    {
        return Err(VerifyError::new(
            ErrorKind::Digest,
            format!(
                "sha256:{digest_hex} is not among the statement's subjects ({})",
                names.join(", ")
            ),
        ));
    }

    let p = &st["predicate"];
    if policy.predicate_type == PREDICATE_PR_BUILD_V1 {
        let pr_build = crate::pr_build::check(p, policy, id)?;
        return Ok(StatementSummary {
            predicate_type: PREDICATE_PR_BUILD_V1.to_owned(),
            subjects: names,
            vouch: None,
            claims: VouchClaims::default(),
            pr_build: Some(pr_build),
        });
    }
    let claims = VouchClaims::from_predicate(p)
        .map_err(|e| {
            VerifyError::with_source(
                ErrorKind::Statement,
                "statement claim internalParameters.vouch is not vouch's claims",
                e,
            )
        })?
        .unwrap_or_default();
    let build_type = str_at("/predicate/buildDefinition/buildType");
    let github_build = build_type.is_some_and(|t| GITHUB_BUILD_TYPES.contains(&t));
    // A GitHub Actions certificate over SLSA provenance must use GitHub's build type: another
    // type would skip every claim-by-claim comparison below.
    if let Some(id) = id
        && id.issuer.as_deref() == Some(GITHUB_ISSUER)
        && str_at("/predicateType") == Some(PREDICATE_SLSA_V1)
        && !github_build
    {
        return Err(VerifyError::mismatch(
            ErrorKind::Statement,
            "buildDefinition.buildType",
            GITHUB_BUILD_TYPES[0],
            build_type,
        ));
    }
    if github_build && let Some(id) = id {
        // The statement is written by the build; the certificate by Fulcio from the OIDC
        // token. Where both speak, they must agree.
        let bd = &p["buildDefinition"];
        let agree =
            |claim: &str, stated: Option<&str>, cert: Option<&str>| -> Result<(), VerifyError> {
                match (stated, cert) {
                    (Some(s), Some(c)) if s != c => Err(VerifyError::new(
                        ErrorKind::Statement,
                        format!(
                            "statement claim {claim} = {s:?} disagrees with the certificate's {c:?}"
                        ),
                    )),
                    _ => Ok(()),
                }
            };
        agree(
            "externalParameters.workflow.repository",
            bd["externalParameters"]["workflow"]["repository"].as_str(),
            id.repository.as_deref(),
        )?;
        agree(
            "externalParameters.workflow.ref",
            bd["externalParameters"]["workflow"]["ref"].as_str(),
            id.git_ref.as_deref(),
        )?;
        let build_path = id.build_workflow.as_deref().and_then(|u| {
            let repo = id.repository.as_deref()?;
            u.strip_prefix(repo)?.strip_prefix('/')?.split('@').next()
        });
        agree(
            "externalParameters.workflow.path",
            bd["externalParameters"]["workflow"]["path"].as_str(),
            build_path,
        )?;
        agree(
            "internalParameters.github.event_name",
            bd["internalParameters"]["github"]["event_name"].as_str(),
            id.event.as_deref(),
        )?;
        agree(
            "internalParameters.github.runner_environment",
            bd["internalParameters"]["github"]["runner_environment"].as_str(),
            id.runner.as_deref(),
        )?;
        agree(
            "resolvedDependencies[0].digest.gitCommit",
            bd["resolvedDependencies"][0]["digest"]["gitCommit"].as_str(),
            id.sha.as_deref(),
        )?;
        agree(
            "runDetails.metadata.invocationId",
            p["runDetails"]["metadata"]["invocationId"].as_str(),
            id.run.as_deref(),
        )?;
        if let Some(merge) = claims.merge_sha.as_deref() {
            agree(
                "internalParameters.vouch.merge_sha",
                Some(merge),
                id.sha.as_deref(),
            )?;
        }
        if let (Some(pr), Some(r)) = (claims.pr_number, id.git_ref.as_deref())
            && r.starts_with("refs/pull/")
            && vouch_core::ci::pull_number(r) != Some(pr)
        {
            return Err(VerifyError::new(
                ErrorKind::Statement,
                format!(
                    "statement claim internalParameters.vouch.pr_number = {pr} disagrees with the certificate's ref {r:?}"
                ),
            ));
        }
    }

    let vouch = p.pointer(VOUCH_CLAIMS_POINTER).cloned();
    if let (Some(expected), Some(id)) = (policy.pr, id) {
        // The certificate, not only the statement, must say which pull request was built.
        let want = vouch_core::ci::pull_merge_ref(expected);
        if id.git_ref.as_deref() != Some(want.as_str()) {
            return Err(VerifyError::mismatch(
                ErrorKind::Policy,
                "source ref for the pull request (OID .1.14)",
                &want,
                id.git_ref.as_deref(),
            ));
        }
    }
    if let Some(expected) = policy.pr {
        let found = claims.pr_number.map(|n| n.to_string());
        if found.as_deref() != Some(expected.to_string().as_str()) {
            return Err(VerifyError::mismatch(
                ErrorKind::Policy,
                "statement PR number (internalParameters.vouch.pr_number)",
                &expected.to_string(),
                found.as_deref(),
            ));
        }
    }
    if let Some(expected) = &policy.cell {
        let found = claims.cell.as_deref();
        if found != Some(expected.as_str()) {
            return Err(VerifyError::mismatch(
                ErrorKind::Policy,
                "statement cell (internalParameters.vouch.cell)",
                expected,
                found,
            ));
        }
    }
    Ok(StatementSummary {
        predicate_type: str_at("/predicateType").unwrap_or_default().to_owned(),
        subjects: names,
        vouch,
        claims,
        pr_build: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use vouch_core::statement::PREDICATE_PEP740;

    use super::*;

    const REPO: &str = "https://github.com/o/r";
    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";
    const DIGEST: &str = "aa";

    /// A certificate identity for a push build of `o/r` on main.
    fn cert() -> SignerIdentity {
        SignerIdentity {
            issuer: Some(GITHUB_ISSUER.into()),
            san: Some(format!("{REPO}/.github/workflows/ci.yml@refs/heads/main")),
            repository: Some(REPO.into()),
            git_ref: Some("refs/heads/main".into()),
            sha: Some(SHA.into()),
            signer_workflow: Some(format!("{REPO}/.github/workflows/ci.yml@refs/heads/main")),
            build_workflow: Some(format!("{REPO}/.github/workflows/ci.yml@refs/heads/main")),
            event: Some("push".into()),
            run: Some(format!("{REPO}/actions/runs/5/attempts/1")),
            runner: Some("github-hosted".into()),
        }
    }

    fn policy() -> Policy {
        Policy {
            repository: Some("o/r".into()),
            ..Policy::default()
        }
    }

    /// The statement vouch writes for `cert()`'s build.
    fn statement() -> Value {
        json!({
            "_type": STATEMENT_TYPE,
            "subject": [{ "name": "f.whl", "digest": { "sha256": DIGEST } }],
            "predicateType": PREDICATE_SLSA_V1,
            "predicate": {
                "buildDefinition": {
                    "buildType": GITHUB_BUILD_TYPES[0],
                    "externalParameters": { "workflow": {
                        "ref": "refs/heads/main",
                        "repository": REPO,
                        "path": ".github/workflows/ci.yml",
                    } },
                    "internalParameters": {
                        "github": { "event_name": "push", "runner_environment": "github-hosted" },
                        "vouch": { "cell": "c1" },
                    },
                    "resolvedDependencies": [{ "uri": "git+x", "digest": { "gitCommit": SHA } }],
                },
                "runDetails": { "metadata": {
                    "invocationId": format!("{REPO}/actions/runs/5/attempts/1"),
                } },
            }
        })
    }

    #[test]
    fn patterns() {
        for (pattern, value, expected) in [
            ("refs/tags/v*", "refs/tags/v1.2", true),
            ("refs/tags/v*", "refs/heads/v1", false),
            ("refs/heads/main", "refs/heads/main", true),
            ("refs/heads/main", "refs/heads/main2", false),
            ("*", "anything", true),
        ] {
            assert_eq!(
                pattern_matches(pattern, value),
                expected,
                "{pattern} {value}"
            );
        }
    }

    #[test]
    fn small_parsers() {
        for (s, expected) in [
            (SHA, true),
            ("0123456", false),
            ("0123456789ABCDEF0123456789abcdef01234567", false),
            ("g123456789abcdef0123456789abcdef01234567", false),
        ] {
            assert_eq!(is_commit_sha(s), expected, "{s}");
        }
        for (uri, expected) in [
            (
                "https://github.com/o/r/actions/runs/123/attempts/1",
                Some("123"),
            ),
            ("https://github.com/o/r/actions/runs/123", Some("123")),
            ("https://github.com/o/r", None),
        ] {
            assert_eq!(run_id_of(uri), expected, "{uri}");
        }
    }

    #[test]
    fn workflow_specs() {
        let with_repo = policy();
        let without = Policy::default();
        for (p, spec, expected) in [
            (
                &with_repo,
                ".github/workflows/ci.yml",
                Ok(format!("{REPO}/.github/workflows/ci.yml")),
            ),
            (
                &with_repo,
                ".github/workflows/ci.yml@refs/heads/main",
                Ok(format!("{REPO}/.github/workflows/ci.yml@refs/heads/main")),
            ),
            (
                &without,
                "x/y/.github/workflows/a.yml@v1",
                Ok("https://github.com/x/y/.github/workflows/a.yml@v1".to_owned()),
            ),
            (
                &without,
                ".github/workflows/ci.yml",
                Err("the policy names no repository"),
            ),
        ] {
            let got = p.workflow_uri(spec).map_err(|e| e.message);
            match (got, expected) {
                (Ok(g), Ok(e)) => assert_eq!(g, e, "{spec}"),
                (Err(g), Err(e)) => assert!(g.contains(e) && !g.contains("--"), "{spec}: {g}"),
                (g, e) => panic!("{spec}: {g:?}, expected {e:?}"),
            }
        }
    }

    /// Each policy field, set to what the certificate does not say, fails naming the claim by
    /// its OID for a certificate and by the statement field for a key-signed statement.
    #[test]
    fn identity_mismatches_name_the_claim() {
        type Edit = fn(&mut Policy);
        let cases: &[(Edit, &str, &str)] = &[
            (
                |p| p.repository = Some("o/other".into()),
                "source repository (OID .1.12)",
                "source repository (statement claim externalParameters.workflow.repository)",
            ),
            (
                |p| p.signer_workflow = Some(".github/workflows/other.yml".into()),
                "build signer workflow (OID .1.9)",
                "build signer workflow (statement claim externalParameters.workflow)",
            ),
            (
                |p| p.build_workflow = Some(".github/workflows/ci.yml@refs/heads/dev".into()),
                "build config workflow (OID .1.18)",
                "build config workflow (statement claim externalParameters.workflow)",
            ),
            (
                |p| p.git_ref = Some("refs/tags/v*".into()),
                "source ref (OID .1.14)",
                "source ref (statement claim externalParameters.workflow.ref)",
            ),
            (
                |p| p.sha = Some("1".repeat(40)),
                "source commit (OID .1.13)",
                "source commit (statement claim resolvedDependencies[0].digest.gitCommit)",
            ),
            (
                |p| p.event = Some("pull_request".into()),
                "build trigger (OID .1.20)",
                "build trigger (statement claim internalParameters.github.event_name)",
            ),
            (
                |p| p.runner = Some("self-hosted".into()),
                "runner environment (OID .1.11)",
                "runner environment (statement claim internalParameters.github.runner_environment)",
            ),
            (
                |p| p.run_id = Some("6".into()),
                "run (OID .1.21)",
                "run (statement claim runDetails.metadata.invocationId)",
            ),
            (
                |p| p.issuer = "https://other".into(),
                "issuer (OID 1.3.6.1.4.1.57264.1.8)",
                "",
            ),
        ];
        for (edit, from_cert, from_statement) in cases {
            let mut p = policy();
            edit(&mut p);
            let e = p.check_certificate(&cert()).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Policy);
            assert!(e.message.starts_with(from_cert), "{}", e.message);
            // A statement's claims carry no issuer (no SAN): the issuer is not held to them.
            let claimed = SignerIdentity {
                issuer: None,
                san: None,
                ..cert()
            };
            match (p.check_statement_claims(&claimed), *from_statement) {
                (Ok(()), "") => {}
                (Err(e), label) if !label.is_empty() => {
                    assert!(e.message.starts_with(label), "{}", e.message)
                }
                (r, label) => panic!("{label:?}: {r:?}"),
            }
        }
    }

    #[test]
    fn identity_matches() {
        let cases: &[fn(&mut Policy)] = &[
            |_| {},
            |p| p.git_ref = Some("refs/heads/*".into()),
            |p| p.signer_workflow = Some(".github/workflows/ci.yml".into()),
            |p| p.signer_workflow = Some("o/r/.github/workflows/ci.yml@refs/heads/main".into()),
            |p| p.run_id = Some("5".into()),
            |p| p.runner = None,
            |p| p.sha = Some(SHA.into()),
        ];
        for (i, edit) in cases.iter().enumerate() {
            let mut p = policy();
            edit(&mut p);
            assert!(p.check_certificate(&cert()).is_ok(), "case {i}");
        }
    }

    /// `--owner`: the certificate's repository is one repository directly under the owner, for
    /// a certificate and for a key-signed statement's claims alike.
    #[test]
    fn owner_names_one_level_under_the_owner() {
        let p = Policy {
            repository: None,
            owner: Some("o".into()),
            ..policy()
        };
        for (repository, ok) in [
            ("https://github.com/o/r", true),
            ("https://github.com/o/other", true),
            ("https://github.com/x/r", false),
            ("https://github.com/ox/r", false),
            ("https://github.com/o/", false),
            ("https://github.com/o/r/x", false),
            ("https://example.com/o/r", false),
        ] {
            let id = SignerIdentity {
                repository: Some(repository.into()),
                signer_workflow: None,
                build_workflow: None,
                ..cert()
            };
            let claimed = SignerIdentity {
                issuer: None,
                san: None,
                ..id.clone()
            };
            for (from, got, label) in [
                (
                    "certificate",
                    p.check_certificate(&id),
                    "source repository owner (OID .1.12): expected \"https://github.com/o/*\"",
                ),
                (
                    "statement",
                    p.check_statement_claims(&claimed),
                    "source repository owner (statement claim externalParameters.workflow.repository)",
                ),
            ] {
                match (got, ok) {
                    (Ok(()), true) => {}
                    (Err(e), false) => {
                        assert_eq!(e.kind, ErrorKind::Policy, "{repository} {from}");
                        assert!(
                            e.message.starts_with(label),
                            "{repository} {from}: {}",
                            e.message
                        );
                    }
                    (r, _) => panic!("{repository} ({from}): {r:?}"),
                }
            }
        }
    }

    fn check(
        st: &Value,
        p: &Policy,
        id: Option<&SignerIdentity>,
    ) -> Result<StatementSummary, VerifyError> {
        check_statement(&serde_json::to_vec(st).unwrap(), DIGEST, p, id)
    }

    #[test]
    fn statement_accepted() {
        let summary = check(&statement(), &policy(), Some(&cert())).unwrap();
        assert_eq!(summary.predicate_type, PREDICATE_SLSA_V1);
        assert_eq!(summary.subjects, ["f.whl sha256:aa"]);
        assert_eq!(summary.claims.cell.as_deref(), Some("c1"));
        assert_eq!(summary.vouch, Some(json!({ "cell": "c1" })));
        let p = Policy {
            cell: Some("c1".into()),
            ..policy()
        };
        check(&statement(), &p, Some(&cert())).unwrap();
    }

    /// One edit of the statement (or the policy), the kind it fails with, and words the message
    /// must contain.
    #[test]
    fn statement_refused() {
        type Edit = fn(&mut Value, &mut Policy);
        let cases: &[(&str, Edit, ErrorKind, &str)] = &[
            (
                "not json",
                |v, _| *v = json!("x"),
                ErrorKind::Statement,
                "statement _type",
            ),
            (
                "type",
                |v, _| v["_type"] = json!("x"),
                ErrorKind::Statement,
                "statement _type",
            ),
            (
                "predicate",
                |v, _| v["predicateType"] = json!(PREDICATE_PEP740),
                ErrorKind::Statement,
                "predicateType",
            ),
            (
                "no subjects",
                |v, _| v["subject"] = json!([]),
                ErrorKind::Statement,
                "no subjects",
            ),
            (
                "digest",
                |v, _| v["subject"][0]["digest"]["sha256"] = json!("bb"),
                ErrorKind::Digest,
                "sha256:aa is not among the statement's subjects (f.whl sha256:bb)",
            ),
            (
                "build type",
                |v, _| v["predicate"]["buildDefinition"]["buildType"] = json!("https://other"),
                ErrorKind::Statement,
                "buildDefinition.buildType",
            ),
            (
                "repository",
                |v, _| {
                    v["predicate"]["buildDefinition"]["externalParameters"]["workflow"]["repository"] =
                        json!("https://github.com/o/x")
                },
                ErrorKind::Statement,
                "externalParameters.workflow.repository = \"https://github.com/o/x\" disagrees",
            ),
            (
                "ref",
                |v, _| {
                    v["predicate"]["buildDefinition"]["externalParameters"]["workflow"]["ref"] =
                        json!("refs/heads/dev")
                },
                ErrorKind::Statement,
                "externalParameters.workflow.ref = \"refs/heads/dev\" disagrees with the certificate's \"refs/heads/main\"",
            ),
            (
                "event",
                |v, _| {
                    v["predicate"]["buildDefinition"]["internalParameters"]["github"]["event_name"] =
                        json!("workflow_dispatch")
                },
                ErrorKind::Statement,
                "internalParameters.github.event_name = \"workflow_dispatch\" disagrees with the certificate's \"push\"",
            ),
            (
                "runner",
                |v, _| {
                    v["predicate"]["buildDefinition"]["internalParameters"]["github"]["runner_environment"] =
                        json!("self-hosted")
                },
                ErrorKind::Statement,
                "internalParameters.github.runner_environment = \"self-hosted\" disagrees with the certificate's \"github-hosted\"",
            ),
            (
                "path",
                |v, _| {
                    v["predicate"]["buildDefinition"]["externalParameters"]["workflow"]["path"] =
                        json!(".github/workflows/x.yml")
                },
                ErrorKind::Statement,
                "externalParameters.workflow.path",
            ),
            (
                "commit",
                |v, _| {
                    v["predicate"]["buildDefinition"]["resolvedDependencies"][0]["digest"]["gitCommit"] =
                        json!("1".repeat(40))
                },
                ErrorKind::Statement,
                "resolvedDependencies[0].digest.gitCommit",
            ),
            (
                "run",
                |v, _| v["predicate"]["runDetails"]["metadata"]["invocationId"] = json!("x"),
                ErrorKind::Statement,
                "runDetails.metadata.invocationId",
            ),
            (
                "merge sha",
                |v, _| {
                    v["predicate"]["buildDefinition"]["internalParameters"]["vouch"]["merge_sha"] =
                        json!("1".repeat(40))
                },
                ErrorKind::Statement,
                "internalParameters.vouch.merge_sha",
            ),
            (
                "malformed claims",
                |v, _| {
                    v["predicate"]["buildDefinition"]["internalParameters"]["vouch"]["pr_number"] =
                        json!("7")
                },
                ErrorKind::Statement,
                "internalParameters.vouch is not vouch's claims",
            ),
            (
                "policy pr needs the PR ref",
                |_, p| p.pr = Some(7),
                ErrorKind::Policy,
                "source ref for the pull request (OID .1.14): expected \"refs/pull/7/merge\"",
            ),
            (
                "policy cell",
                |_, p| p.cell = Some("c2".into()),
                ErrorKind::Policy,
                "statement cell (internalParameters.vouch.cell): expected \"c2\", found \"c1\"",
            ),
        ];
        for (what, edit, kind, words) in cases {
            let (mut st, mut p) = (statement(), policy());
            edit(&mut st, &mut p);
            let e = check(&st, &p, Some(&cert())).unwrap_err();
            assert_eq!(e.kind, *kind, "{what}: {}", e.message);
            assert!(e.message.contains(words), "{what}: {}", e.message);
        }
    }

    /// A pull request build: the statement's PR number must be the certificate's ref's, and the
    /// policy's PR must be both.
    #[test]
    fn pull_request_claims() {
        let pr_cert = SignerIdentity {
            git_ref: Some("refs/pull/7/merge".into()),
            ..cert()
        };
        let pr_statement = |n: u64| {
            let mut st = statement();
            st["predicate"]["buildDefinition"]["externalParameters"]["workflow"]["ref"] =
                json!("refs/pull/7/merge");
            st["predicate"]["buildDefinition"]["internalParameters"]["vouch"]["pr_number"] =
                json!(n);
            st
        };
        let p7 = Policy {
            pr: Some(7),
            ..policy()
        };
        check(&pr_statement(7), &p7, Some(&pr_cert)).unwrap();
        let e = check(&pr_statement(8), &policy(), Some(&pr_cert)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Statement);
        assert!(
            e.message.contains("pr_number = 8 disagrees"),
            "{}",
            e.message
        );
        // Key-signed (no certificate): only the statement's claim is there to hold.
        let e = check(&pr_statement(8), &p7, None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Policy);
        assert!(
            e.message.contains("expected \"7\", found \"8\""),
            "{}",
            e.message
        );
        check(&pr_statement(7), &p7, None).unwrap();
    }

    #[test]
    fn identity_from_a_statement() {
        let payload = serde_json::to_vec(&statement()).unwrap();
        let id = SignerIdentity::from_statement(&payload).unwrap();
        let wf = format!("{REPO}/.github/workflows/ci.yml@refs/heads/main");
        assert_eq!(
            id,
            SignerIdentity {
                issuer: None,
                san: None,
                signer_workflow: Some(wf.clone()),
                build_workflow: Some(wf),
                ..cert()
            }
        );
        assert_eq!(id.repository_slug("https://github.com"), Some("o/r"));
        assert_eq!(SignerIdentity::from_statement(b"not json"), None);
    }
}
