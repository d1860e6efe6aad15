//! Pin: the finished build run and the request it was built for, every fact from the GitHub
//! API. Files the PR wrote are not read here at all; the request files are read only from an
//! artifact a default-branch run of this repository uploaded.

use std::path::Path;

use serde_json::{Value, json};
use vouch_core::ArtifactName;
use vouch_github::{Artifact, GithubClient, PullFile, PullRequest, Run, TimedRun, Workflow};

use crate::refusal::{Candidate, Refusal};
use crate::request::{
    MIN_NAMED_DIGITS, NamedCommit, RequestFiles, TestRequest, named_commit, request_artifact_name,
    skip_target,
};
use crate::{PrRunError, UNSIGNED_PREFIX, log_safe};

/// The repository permissions (`GET collaborators/{user}/permission`'s `permission`) that may
/// vouch for a build: `maintain` is reported as `write`, and listed for clarity.
pub const WRITE_PERMISSIONS: &[&str] = &["admin", "maintain", "write"];

/// Changed files `pull_files` reads at most (its page limit); a pull request listing this
/// many may change more, the build workflow among them.
const MAX_PULL_FILES: usize = 2000;

/// What to pin: the build run the signer workflow was started for, and the workflows that may
/// have built it and recorded its request.
#[derive(Clone, Debug)]
pub struct PinInputs {
    /// `owner/name`.
    pub repo: String,
    pub run_id: u64,
    /// `.github/workflows/vouch-build.yml`.
    pub build_workflow: String,
    /// `.github/workflows/vouch-trigger.yml`.
    pub trigger_workflow: String,
}

/// What pinning found.
#[derive(Debug)]
pub enum PinOutcome {
    /// The run uploaded no `unsigned-*` artifact: a build that had nothing to do (an unrelated
    /// label, an unlabeled PR event) succeeds without building.
    NothingToSign {
        run_id: u64,
    },
    Signable(Box<Pinned>),
}

/// A build run pinned with its request: everything a statement may say about the build.
#[derive(Debug)]
pub struct Pinned {
    pub repo: String,
    pub repo_id: u64,
    pub default_branch: String,
    pub build_workflow: Workflow,
    pub build_workflow_path: String,
    pub run: Run,
    /// `owner/name` of the run's head (a fork's for fork PRs).
    pub head_repository: String,
    /// The pull request as re-read after the request was found.
    pub pull: PullRequest,
    pub request: RequestFiles,
    pub request_artifact: Artifact,
    /// The artifacts to sign, by name (without `unsigned-`).
    pub cells: Vec<Cell>,
    /// `unsigned-*` artifacts of the run that are not signed, and why.
    pub skipped: Vec<Skipped>,
}

/// One artifact of the run to sign.
#[derive(Clone, Debug)]
pub struct Cell {
    /// `<dist>-py<X.Y>-<plat>-pr<N>-<sha>`, the name the signed artifact gets.
    pub artifact: String,
    pub name: ArtifactName,
    /// The run's `unsigned-<artifact>`.
    pub unsigned: Artifact,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Skipped {
    pub artifact: String,
    pub reason: String,
}

impl Pinned {
    /// `{"include":[{"artifact":"<artifact>"},...]}`, for a workflow's `strategy.matrix`.
    pub fn matrix(&self) -> Value {
        matrix(self.cells.iter().map(|c| c.artifact.as_str()))
    }

    /// The pinned cell `artifact` names, or why it is not one.
    pub fn cell(&self, artifact: &str) -> Result<&Cell, Refusal> {
        if let Some(c) = self.cells.iter().find(|c| c.artifact == artifact) {
            return Ok(c);
        }
        let reason = match self.skipped.iter().find(|s| s.artifact == artifact) {
            Some(s) => s.reason.clone(),
            None => format!(
                "the run uploaded no {UNSIGNED_PREFIX}{artifact}; it has {}",
                self.cells
                    .iter()
                    .map(|c| c.artifact.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Err(Refusal::NotPinned {
            artifact: artifact.to_owned(),
            reason,
        })
    }

    /// Writes `event.json` and `request.json`, as the request artifact held them, to `dir`.
    pub fn write_request(&self, dir: &Path) -> Result<(), PrRunError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| PrRunError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        for (name, bytes) in [
            ("event.json", &self.request.event_json),
            ("request.json", &self.request.request_json),
        ] {
            let path = dir.join(name);
            vouch_fs::write_atomically(&path, bytes, vouch_fs::Mode::Public).map_err(io(&path))?;
        }
        Ok(())
    }
}

/// The GitHub matrix of `artifacts`.
pub fn matrix<'a>(artifacts: impl Iterator<Item = &'a str>) -> Value {
    json!({ "include": artifacts.map(|a| json!({ "artifact": a })).collect::<Vec<_>>() })
}

/// A workflow path as given and as runs report it (`path@ref`), without the ref.
fn bare_path(p: &str) -> &str {
    p.split('@').next().unwrap_or(p)
}

/// The build run's own facts: the build workflow's successful pull_request run, in this
/// repository.
pub(crate) fn check_run(run: &Run, workflow: &Workflow, inputs: &PinInputs) -> Result<(), Refusal> {
    if run.workflow_id != Some(workflow.id) {
        return Err(Refusal::Workflow {
            found: run.workflow_id,
            expected: workflow.id,
            path: inputs.build_workflow.clone(),
        });
    }
    let path = run.path.as_deref().map(bare_path).unwrap_or_default();
    if path != bare_path(&inputs.build_workflow) {
        return Err(Refusal::WorkflowPath {
            found: path.to_owned(),
            expected: bare_path(&inputs.build_workflow).to_owned(),
        });
    }
    if run.event != "pull_request" {
        return Err(Refusal::Event {
            found: run.event.clone(),
        });
    }
    let conclusion = run.conclusion.as_deref().unwrap_or("");
    if run.status != "completed" || conclusion != "success" {
        return Err(Refusal::NotSucceeded {
            status: run.status.clone(),
            conclusion: conclusion.to_owned(),
        });
    }
    let repo = run
        .repository
        .as_ref()
        .map(|r| r.full_name.as_str())
        .unwrap_or_default();
    if repo != inputs.repo {
        return Err(Refusal::Repository {
            found: repo.to_owned(),
            expected: inputs.repo.clone(),
        });
    }
    Ok(())
}

/// The request (recorded by a trusted run) against the run the API describes.
pub(crate) fn check_request(
    req: &TestRequest,
    pr: u64,
    run: &Run,
    head_repository: &str,
    repo: &str,
    recorded_by: u64,
) -> Result<(), Refusal> {
    let mismatch = |field, found: String, expected: String| {
        Err(Refusal::RequestMismatch {
            pr,
            field,
            found,
            expected,
        })
    };
    if req.pr != pr {
        return mismatch("pr", req.pr.to_string(), pr.to_string());
    }
    if req.head_sha != run.head_sha {
        return mismatch("head_sha", req.head_sha.clone(), run.head_sha.clone());
    }
    if req.repository != repo {
        return mismatch("repository", req.repository.clone(), repo.to_owned());
    }
    if req.head_repository != head_repository {
        return mismatch(
            "head_repository",
            req.head_repository.clone(),
            head_repository.to_owned(),
        );
    }
    if req.recorded_by_run != recorded_by {
        return mismatch(
            "recorded_by_run",
            req.recorded_by_run.to_string(),
            recorded_by.to_string(),
        );
    }
    Ok(())
}

/// The pull request now: still open, still at the head that was built, from the same
/// repository, into the requested base branch. The base *SHA* is recorded, never compared: the
/// base branch moves on while a PR is tested, and comparing it would refuse every time it did.
pub(crate) fn check_pull(
    pull: &PullRequest,
    run: &Run,
    head_repository: &str,
    req: &TestRequest,
) -> Result<(), Refusal> {
    let pr = pull.number;
    if pull.state != "open" {
        return Err(Refusal::PullNotOpen {
            pr,
            state: pull.state.clone(),
        });
    }
    if pull.head.sha != run.head_sha {
        return Err(Refusal::PullMoved {
            pr,
            now: pull.head.sha.clone(),
            built: run.head_sha.clone(),
        });
    }
    let now = pull
        .head
        .repo
        .as_ref()
        .map(|r| r.full_name.as_str())
        .unwrap_or_default();
    if now != head_repository {
        return Err(Refusal::PullHeadRepository {
            pr,
            now: now.to_owned(),
            built: head_repository.to_owned(),
        });
    }
    if pull.base.git_ref != req.base_ref {
        return Err(Refusal::BaseChanged {
            pr,
            now: pull.base.git_ref.clone(),
            requested: req.base_ref.clone(),
        });
    }
    Ok(())
}

/// The run's `unsigned-*` artifacts for `pr` at `sha`, and the others with their reasons. The
/// names are PR-chosen: they only select; the signer checks the wheel inside against its name.
pub(crate) fn select_cells(unsigned: &[Artifact], pr: u64, sha: &str) -> (Vec<Cell>, Vec<Skipped>) {
    let (mut cells, mut skipped) = (Vec::new(), Vec::new());
    for a in unsigned {
        let artifact = a
            .name
            .strip_prefix(UNSIGNED_PREFIX)
            .unwrap_or(&a.name)
            .to_owned();
        let skip = |reason: String| Skipped {
            artifact: artifact.clone(),
            reason,
        };
        let copies = unsigned.iter().filter(|b| b.name == a.name).count();
        if copies > 1 {
            skipped.push(skip(format!(
                "the run lists {copies} artifacts named \"{}\"",
                log_safe(&a.name)
            )));
            continue;
        }
        match artifact.parse::<ArtifactName>() {
            Err(e) => skipped.push(skip(format!(
                "not an artifact name: {}",
                log_safe(&e.to_string())
            ))),
            Ok(n) if n.pr != Some(pr) => skipped.push(skip(format!(
                "named for {}, not #{pr}",
                n.pr.map_or_else(|| "a push build".to_owned(), |p| format!("#{p}"))
            ))),
            Ok(n) if n.sha != sha => skipped.push(skip(format!("named for {}, not {sha}", n.sha))),
            Ok(name) => cells.push(Cell {
                artifact,
                name,
                unsigned: a.clone(),
            }),
        }
    }
    (cells, skipped)
}

/// The recorded event against its request: the `issue_comment` the request says it came from,
/// whose `/test` line names the recorded head. The trigger refuses to record anything else;
/// this holds the signer to it even for a record an older trigger wrote.
pub(crate) fn check_event(req: &TestRequest, event_json: &[u8]) -> Result<(), Refusal> {
    let pr = req.pr;
    let ev: Value = serde_json::from_slice(event_json).unwrap_or(Value::Null);
    let shown = |v: &Value| match v {
        Value::String(s) => log_safe(s),
        Value::Null => "null".to_owned(),
        other => log_safe(&other.to_string()),
    };
    let checks: [(&'static str, &Value, String); 4] = [
        ("action", &ev["action"], "created".to_owned()),
        ("issue.number", &ev["issue"]["number"], pr.to_string()),
        (
            "comment.id",
            &ev["comment"]["id"],
            req.comment_id.to_string(),
        ),
        (
            "comment.user.login",
            &ev["comment"]["user"]["login"],
            req.author.clone(),
        ),
    ];
    for (field, found, expected) in checks {
        if shown(found) != expected {
            return Err(Refusal::EventMismatch {
                pr,
                field,
                found: shown(found),
                expected,
            });
        }
    }
    let not_named = |problem: String| {
        Err(Refusal::CommitNotNamed {
            pr,
            comment_id: req.comment_id,
            problem,
        })
    };
    let body = ev["comment"]["body"].as_str().unwrap_or("");
    // Issue 32: a skip is recorded (so that it supersedes an earlier /test of the head) but
    // authorises no build, whatever label later starts one.
    if let Some(target) = skip_target(body) {
        return Err(Refusal::BuildsNothing {
            pr,
            target: target.to_owned(),
        });
    }
    match named_commit(body) {
        NamedCommit::Sha(sha) if req.head_sha.starts_with(&sha) => Ok(()),
        NamedCommit::Sha(named) => Err(Refusal::NamedOtherCommit {
            pr,
            named,
            head: req.head_sha.clone(),
        }),
        NamedCommit::NoTestLine => not_named("has no /test line".into()),
        NamedCommit::Missing => not_named("names no commit".into()),
        NamedCommit::TooShort(hex) => not_named(format!(
            "names @{hex}, {} hex digits: fewer than {MIN_NAMED_DIGITS}, few enough for a pushed commit to be made to match",
            hex.len()
        )),
        NamedCommit::Malformed(word) => not_named(format!(
            "ends in \"{}\", not @ and 7 to 40 lower-case hex digits",
            log_safe(&word)
        )),
    }
}

/// The pull request's changed files (GitHub's list, against the merge base): a pull request
/// that changes the build workflow ran its own copy of it, which may build, upload or trigger
/// anything, so nothing it built is signed.
pub(crate) fn check_files(
    files: &[PullFile],
    pr: u64,
    build_workflow: &str,
) -> Result<(), Refusal> {
    let path = bare_path(build_workflow);
    if let Some(f) = files
        .iter()
        .find(|f| f.filename == path || f.previous_filename.as_deref() == Some(path))
    {
        return Err(Refusal::ChangesBuildWorkflow {
            pr,
            path: path.to_owned(),
            status: log_safe(&f.status),
        });
    }
    if files.len() >= MAX_PULL_FILES {
        return Err(Refusal::TooManyFiles {
            pr,
            count: files.len(),
        });
    }
    Ok(())
}

/// A time GitHub set, or the refusal that names the missing field.
fn timestamp(value: Option<&str>, what: &'static str) -> Result<jiff::Timestamp, Refusal> {
    value
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .ok_or(Refusal::Missing { what })
}

/// The build run against its request: created after the request artifact was uploaded (both
/// times GitHub's). Returns the two times.
pub(crate) fn check_created_after(
    run_created: Option<&str>,
    request: &Artifact,
) -> Result<(jiff::Timestamp, jiff::Timestamp), Refusal> {
    let run_at = timestamp(run_created, "created_at of the build run")?;
    let request_at = timestamp(
        request.created_at.as_deref(),
        "created_at of the request artifact",
    )?;
    if run_at <= request_at {
        return Err(Refusal::RunBeforeRequest {
            run_created: run_at.to_string(),
            artifact: request.id,
            request_created: request_at.to_string(),
        });
    }
    Ok((run_at, request_at))
}

/// The other build runs at the same head that GitHub created after the request and before
/// `run` (by creation time, then id): the ones that may have built a cell first. A re-run
/// attempt keeps its run's id and creation time, so it is `run` itself, never another. One
/// of them still running refuses: it may yet upload a cell this run also built.
pub(crate) fn earlier_runs<'a>(
    all: &'a [TimedRun],
    run: &Run,
    run_at: jiff::Timestamp,
    request_at: jiff::Timestamp,
) -> Result<Vec<&'a TimedRun>, Refusal> {
    let mut earlier = Vec::new();
    for r in all {
        if r.run.id == run.id || r.run.head_sha != run.head_sha || r.run.event != "pull_request" {
            continue;
        }
        let at = timestamp(r.created_at.as_deref(), "created_at of a build run")?;
        if at <= request_at || (at, r.run.id) >= (run_at, run.id) {
            continue;
        }
        if r.run.status != "completed" {
            return Err(Refusal::EarlierRunInFlight {
                other: r.run.id,
                created: at.to_string(),
                status: r.run.status.clone(),
            });
        }
        earlier.push(r);
    }
    Ok(earlier)
}

/// Moves each cell an earlier run (`(id, its unsigned-* names)`) also built to `skipped`: the
/// request authorised that run's build of it, not this one's.
pub(crate) fn claim_cells(
    cells: Vec<Cell>,
    skipped: &mut Vec<Skipped>,
    earlier: &[(u64, Vec<String>)],
) -> Vec<Cell> {
    let mut kept = Vec::new();
    for c in cells {
        match earlier
            .iter()
            .find(|(_, names)| names.contains(&c.unsigned.name))
        {
            Some((first, _)) => skipped.push(Skipped {
                reason: format!(
                    "run {first}, created after the same request, built it first (one /test authorises one build of each cell)"
                ),
                artifact: c.artifact,
            }),
            None => kept.push(c),
        }
    }
    kept
}

/// Why a listed request artifact does not count: uploaded by a run of another branch or
/// another repository (a fork's run can name an artifact anything).
fn untrusted_upload(a: &Artifact, repo_id: u64, default_branch: &str) -> Option<String> {
    let r = a.workflow_run.clone().unwrap_or_default();
    if a.expired {
        return Some(format!("artifact {} has expired", a.id));
    }
    if r.head_repository_id != Some(repo_id) || r.head_branch.as_deref() != Some(default_branch) {
        return Some(format!(
            "artifact {} was uploaded by run {} of branch {} in repository {} (a request counts only from {default_branch:?} of repository {repo_id})",
            a.id,
            r.id.map_or_else(|| "?".to_owned(), |i| i.to_string()),
            r.head_branch
                .map_or_else(|| "null".to_owned(), |b| format!("{b:?}")),
            r.head_repository_id
                .map_or_else(|| "null".to_owned(), |i| i.to_string()),
        ));
    }
    None
}

/// Everything a signer needs to know about a run, from the API.
struct Context<'a> {
    gh: &'a GithubClient,
    inputs: &'a PinInputs,
    repo_id: u64,
    default_branch: &'a str,
    trigger: &'a Workflow,
    run: &'a Run,
}

impl Context<'_> {
    /// The newest trustworthy request artifact for `pr` at the run's head and its files; or,
    /// when there is none, why (`Ok(Err(why))`, and the next PR is tried).
    async fn request_for(
        &self,
        pr: u64,
    ) -> Result<Result<(Artifact, RequestFiles), String>, PrRunError> {
        let repo = self.inputs.repo.as_str();
        let name = request_artifact_name(pr, &self.run.head_sha);
        let listed = self.gh.artifacts_named(repo, &name).await?;
        if listed.is_empty() {
            return Ok(Err(format!("no artifact {name:?} is listed")));
        }
        let (mut trusted, mut why) = (Vec::new(), Vec::new());
        for a in &listed {
            match untrusted_upload(a, self.repo_id, self.default_branch) {
                Some(w) => why.push(w),
                None => trusted.push(a),
            }
        }
        // Newest first: a later `/test` on the same head replaces the targets of an earlier one.
        trusted.sort_by(|a, b| (&b.created_at, b.id).cmp(&(&a.created_at, a.id)));
        let Some(artifact) = trusted.first().map(|a| (*a).clone()) else {
            return Ok(Err(why.join("; ")));
        };
        let recorded_by = artifact.run_id().ok_or(Refusal::Missing {
            what: "run of the request artifact",
        });
        let recorded_by = recorded_by.map_err(|r| self.refused(r))?;
        let run = self.gh.run(repo, recorded_by).await?;
        check_request_run(self.trigger, self.inputs, self.default_branch, pr, &run)
            .map_err(|r| self.refused(r))?;
        let files = download_request(self.gh, repo, &artifact).await?;
        Ok(Ok((artifact, files)))
    }

    fn refused(&self, refusal: Refusal) -> PrRunError {
        PrRunError::Refused {
            run: self.run.id,
            refusal,
        }
    }
}

/// The run that recorded a request: the trigger workflow's `issue_comment` run, of this
/// repository's default branch. Every other run of that workflow on the default branch
/// (its `pull_request_target` hygiene runs above all) runs for events a pull request's author
/// causes, and must never count as a maintainer's request.
pub(crate) fn check_request_run(
    trigger: &Workflow,
    inputs: &PinInputs,
    default_branch: &str,
    pr: u64,
    run: &Run,
) -> Result<(), Refusal> {
    let path = run.path.as_deref().map(bare_path).unwrap_or_default();
    let reason =
        if run.workflow_id != Some(trigger.id) || path != bare_path(&inputs.trigger_workflow) {
            Some(format!(
                "a run of workflow {} ({path:?})",
                run.workflow_id
                    .map_or_else(|| "null".to_owned(), |i| i.to_string())
            ))
        } else if run.event != "issue_comment" {
            Some(format!("a {:?} run", run.event))
        } else if run.head_branch.as_deref() != Some(default_branch)
            || run.repository.as_ref().map(|r| r.full_name.as_str()) != Some(&inputs.repo)
        {
            Some(format!(
                "a run of branch {:?} of {:?}",
                run.head_branch.as_deref().unwrap_or(""),
                run.repository
                    .as_ref()
                    .map(|r| r.full_name.as_str())
                    .unwrap_or("")
            ))
        } else {
            None
        };
    match reason {
        Some(reason) => Err(Refusal::RequestRun {
            pr,
            run: run.id,
            reason,
            trigger: bare_path(&inputs.trigger_workflow).to_owned(),
        }),
        None => Ok(()),
    }
}

/// Downloads a request artifact by id and reads its two files.
async fn download_request(
    gh: &GithubClient,
    repo: &str,
    artifact: &Artifact,
) -> Result<RequestFiles, PrRunError> {
    let files = crate::fetch_files(gh, repo, artifact).await?;
    let request_error = |reason: String| PrRunError::Request {
        artifact_id: artifact.id,
        reason,
    };
    let read = |name: &str| -> Result<Vec<u8>, PrRunError> {
        let path = files
            .files
            .iter()
            .find(|f| crate::top_level_name(&files.dir, f) == Some(name))
            .ok_or_else(|| request_error(format!("it holds no {name}")))?;
        std::fs::read(path).map_err(|source| PrRunError::Io {
            path: path.clone(),
            source,
        })
    };
    let request_json = read("request.json")?;
    let event_json = read("event.json")?;
    let request = TestRequest::parse(&request_json).map_err(request_error)?;
    Ok(RequestFiles {
        request,
        request_json,
        event_json,
    })
}

/// Pins build run `inputs.run_id`: the run itself, the one open pull request whose trusted
/// request names its head, that pull request as it is now, and the artifacts to sign.
pub async fn pin(gh: &GithubClient, inputs: &PinInputs) -> Result<PinOutcome, PrRunError> {
    let refused = |refusal| PrRunError::Refused {
        run: inputs.run_id,
        refusal,
    };
    let missing = |what| refused(Refusal::Missing { what });
    let repository = gh.repository(&inputs.repo).await?;
    let repo_id = repository.id.ok_or_else(|| missing("repository id"))?;
    let default_branch = repository
        .default_branch
        .filter(|b| !b.is_empty())
        .ok_or_else(|| missing("repository default_branch"))?;
    let run = gh.run(&inputs.repo, inputs.run_id).await?;
    let build_workflow = gh.workflow(&inputs.repo, &inputs.build_workflow).await?;
    check_run(&run, &build_workflow, inputs).map_err(refused)?;

    let unsigned: Vec<Artifact> = gh
        .run_artifacts(&inputs.repo, run.id)
        .await?
        .into_iter()
        .filter(|a| a.name.starts_with(UNSIGNED_PREFIX) && !a.expired)
        .collect();
    if unsigned.is_empty() {
        return Ok(PinOutcome::NothingToSign { run_id: run.id });
    }

    let head = run.head_repository.clone().unwrap_or_default();
    let owner = head.owner.clone().unwrap_or_default().login;
    let branch = run.head_branch.clone().unwrap_or_default();
    if head.full_name.is_empty() || owner.is_empty() {
        return Err(missing("head repository"));
    }
    if branch.is_empty() {
        return Err(missing("head branch"));
    }
    // Fork runs list no pull requests: the open ones from the run's head branch are the
    // candidates, and a trusted request decides among them.
    let head_label = format!("{owner}:{branch}");
    let mut pulls = gh.open_pulls_from(&inputs.repo, &head_label).await?;
    if pulls.is_empty() {
        return Err(refused(Refusal::NoOpenPull { head: head_label }));
    }
    pulls.sort_by_key(|p| p.number);
    let trigger = gh.workflow(&inputs.repo, &inputs.trigger_workflow).await?;
    let ctx = Context {
        gh,
        inputs,
        repo_id,
        default_branch: &default_branch,
        trigger: &trigger,
        run: &run,
    };
    let (mut found, mut candidates) = (Vec::new(), Vec::new());
    for p in &pulls {
        match ctx.request_for(p.number).await? {
            Ok(r) => found.push((p.number, r)),
            Err(why) => candidates.push(Candidate { pr: p.number, why }),
        }
    }
    let (pr, (request_artifact, request)) = match found.len() {
        0 => {
            return Err(refused(Refusal::NoRequest {
                head: head_label,
                sha: run.head_sha.clone(),
                candidates,
            }));
        }
        1 => found.remove(0),
        _ => {
            return Err(refused(Refusal::Ambiguous {
                prs: found.iter().map(|(n, _)| *n).collect(),
                sha: run.head_sha.clone(),
            }));
        }
    };
    let recorded_by = request_artifact.run_id().unwrap_or_default();
    check_request(
        &request.request,
        pr,
        &run,
        &head.full_name,
        &inputs.repo,
        recorded_by,
    )
    .map_err(refused)?;
    check_event(&request.request, &request.event_json).map_err(refused)?;
    // Now, not when the comment came: a writer whose access was taken away since vouches
    // for nothing more. `author_association` alone (MEMBER) is organization membership.
    let permission = gh
        .collaborator_permission(&inputs.repo, &request.request.author)
        .await?;
    if !WRITE_PERMISSIONS.contains(&permission.permission.as_str()) {
        return Err(refused(Refusal::AuthorPermission {
            pr,
            author: request.request.author.clone(),
            permission: log_safe(&permission.permission),
        }));
    }
    let files = gh.pull_files(&inputs.repo, pr).await?;
    check_files(&files, pr, &inputs.build_workflow).map_err(refused)?;
    // Read again now: the request vouches for the head it named, and only while the PR still
    // points there.
    let pull = gh.pull_request(&inputs.repo, pr).await?;
    check_pull(&pull, &run, &head.full_name, &request.request).map_err(refused)?;

    // One request, one build: a run created after the request, and of each cell only the
    // build of the first such run.
    let timed = gh.timed_run(&inputs.repo, run.id).await?;
    let (run_at, request_at) =
        check_created_after(timed.created_at.as_deref(), &request_artifact).map_err(refused)?;
    let all = gh
        .all_workflow_runs(
            &inputs.repo,
            build_workflow.id,
            "pull_request",
            &run.head_sha,
        )
        .await?;
    let earlier = earlier_runs(&all, &run, run_at, request_at).map_err(refused)?;
    let mut built_before = Vec::new();
    for r in earlier {
        let names = gh
            .run_artifacts(&inputs.repo, r.run.id)
            .await?
            .into_iter()
            .filter(|a| a.name.starts_with(UNSIGNED_PREFIX))
            .map(|a| a.name)
            .collect();
        built_before.push((r.run.id, names));
    }

    let (cells, mut skipped) = select_cells(&unsigned, pr, &run.head_sha);
    let named = cells.len();
    let cells = claim_cells(cells, &mut skipped, &built_before);
    if named > 0 && cells.is_empty() {
        return Err(refused(Refusal::BuiltFirstElsewhere {
            cells: skipped
                .iter()
                .filter(|s| s.reason.contains("built it first"))
                .map(|s| format!("{}: {}", log_safe(&s.artifact), s.reason))
                .collect(),
        }));
    }
    if cells.is_empty() {
        return Err(refused(Refusal::NothingForRequest {
            count: unsigned.len(),
            pr,
            sha: run.head_sha.clone(),
            skipped: skipped
                .iter()
                .map(|s| format!("{}: {}", log_safe(&s.artifact), s.reason))
                .collect(),
        }));
    }
    for s in &skipped {
        tracing::warn!(artifact = %log_safe(&s.artifact), reason = %s.reason, "not signed");
    }
    Ok(PinOutcome::Signable(Box::new(Pinned {
        repo: inputs.repo.clone(),
        repo_id,
        default_branch,
        build_workflow_path: bare_path(&inputs.build_workflow).to_owned(),
        build_workflow,
        head_repository: head.full_name,
        run,
        pull,
        request,
        request_artifact,
        cells,
        skipped,
    })))
}

#[cfg(test)]
mod tests {
    use vouch_github::{Owner, PullEnd, Repository, RunRef};

    use super::*;

    const HEAD: &str = "1111111111111111111111111111111111111111";
    const MOVED: &str = "2222222222222222222222222222222222222222";
    const BASE: &str = "5555555555555555555555555555555555555555";

    fn inputs() -> PinInputs {
        PinInputs {
            repo: "o/r".into(),
            run_id: 700,
            build_workflow: ".github/workflows/vouch-build.yml".into(),
            trigger_workflow: ".github/workflows/vouch-trigger.yml".into(),
        }
    }

    fn repo(name: &str) -> Option<Repository> {
        Some(Repository {
            full_name: name.into(),
            owner: Some(Owner {
                login: name.split('/').next().unwrap().into(),
            }),
            ..Repository::default()
        })
    }

    /// A fork PR's finished build run.
    fn run() -> Run {
        Run {
            id: 700,
            workflow_id: Some(11),
            path: Some(".github/workflows/vouch-build.yml".into()),
            event: "pull_request".into(),
            status: "completed".into(),
            conclusion: Some("success".into()),
            head_sha: HEAD.into(),
            head_branch: Some("feature".into()),
            run_attempt: Some(1),
            repository: repo("o/r"),
            head_repository: repo("fork/r"),
            pull_requests: Some(vec![]),
        }
    }

    const WF: Workflow = Workflow {
        id: 11,
        path: String::new(),
    };

    #[test]
    fn the_build_run() {
        type Edit = fn(&mut Run);
        let cases: &[(&str, Edit, Option<&str>)] = &[
            ("a fork PR's successful build", |_| {}, None),
            (
                "a re-run carries @ref in its path",
                |r| r.path = Some(".github/workflows/vouch-build.yml@refs/pull/7/merge".into()),
                None,
            ),
            (
                "another workflow's run",
                |r| r.workflow_id = Some(12),
                Some("its workflow_id is 12, not 11 (.github/workflows/vouch-build.yml)"),
            ),
            (
                "the id but another path",
                |r| r.path = Some(".github/workflows/other.yml".into()),
                Some(
                    "its workflow path is \".github/workflows/other.yml\", not \".github/workflows/vouch-build.yml\"",
                ),
            ),
            (
                "a push build",
                |r| r.event = "push".into(),
                Some("its event is \"push\": only pull_request builds are signed here"),
            ),
            (
                "a failed build",
                |r| r.conclusion = Some("failure".into()),
                Some("it did not succeed (status \"completed\", conclusion \"failure\")"),
            ),
            (
                "a build still running",
                |r| {
                    r.status = "in_progress".into();
                    r.conclusion = None;
                },
                Some("it did not succeed (status \"in_progress\", conclusion \"\")"),
            ),
            (
                "another repository's run",
                |r| r.repository = repo("x/r"),
                Some("it belongs to \"x/r\", not \"o/r\""),
            ),
        ];
        for (what, edit, want) in cases {
            let mut r = run();
            edit(&mut r);
            let got = check_run(&r, &WF, &inputs()).err().map(|e| e.to_string());
            match (got, want) {
                (None, None) => {}
                (Some(g), Some(w)) => assert!(g.starts_with(w), "{what}: {g}"),
                (g, w) => panic!("{what}: got {g:?}, want {w:?}"),
            }
        }
    }

    fn request() -> TestRequest {
        TestRequest {
            schema: crate::REQUEST_SCHEMA.into(),
            repository: "o/r".into(),
            pr: 7,
            head_sha: HEAD.into(),
            head_repository: "fork/r".into(),
            base_ref: "main".into(),
            base_sha: BASE.into(),
            comment_id: 99,
            author: "m".into(),
            author_association: "MEMBER".into(),
            recorded_by_run: 650,
        }
    }

    #[test]
    fn the_request_against_the_run() {
        type Edit = fn(&mut TestRequest);
        let cases: &[(Edit, Option<(&str, &str)>)] = &[
            (|_| {}, None),
            (|r| r.pr = 8, Some(("pr", "8"))),
            (|r| r.head_sha = MOVED.into(), Some(("head_sha", MOVED))),
            (|r| r.repository = "x/r".into(), Some(("repository", "x/r"))),
            (
                |r| r.head_repository = "other/r".into(),
                Some(("head_repository", "other/r")),
            ),
            (
                |r| r.recorded_by_run = 651,
                Some(("recorded_by_run", "651")),
            ),
        ];
        for (edit, want) in cases {
            let mut req = request();
            edit(&mut req);
            let got = check_request(&req, 7, &run(), "fork/r", "o/r", 650).err();
            let want = want.map(|(field, found)| Refusal::RequestMismatch {
                pr: 7,
                field,
                found: found.into(),
                expected: match field {
                    "pr" => "7".into(),
                    "head_sha" => HEAD.into(),
                    "repository" => "o/r".into(),
                    "head_repository" => "fork/r".into(),
                    _ => "650".into(),
                },
            });
            assert_eq!(got, want);
        }
    }

    fn pull() -> PullRequest {
        PullRequest {
            number: 7,
            state: "open".into(),
            head: PullEnd {
                git_ref: "feature".into(),
                sha: HEAD.into(),
                repo: repo("fork/r"),
            },
            base: PullEnd {
                git_ref: "main".into(),
                // The base moved on since the request: recorded, never compared.
                sha: "6".repeat(40),
                repo: repo("o/r"),
            },
        }
    }

    #[test]
    fn the_pull_request_now() {
        type Edit = fn(&mut PullRequest);
        let cases: &[(Edit, Option<Refusal>)] = &[
            (|_| {}, None),
            (
                |p| p.state = "closed".into(),
                Some(Refusal::PullNotOpen {
                    pr: 7,
                    state: "closed".into(),
                }),
            ),
            (
                |p| p.head.sha = MOVED.into(),
                Some(Refusal::PullMoved {
                    pr: 7,
                    now: MOVED.into(),
                    built: HEAD.into(),
                }),
            ),
            (
                |p| p.head.repo = None,
                Some(Refusal::PullHeadRepository {
                    pr: 7,
                    now: String::new(),
                    built: "fork/r".into(),
                }),
            ),
            (
                |p| p.base.git_ref = "v14".into(),
                Some(Refusal::BaseChanged {
                    pr: 7,
                    now: "v14".into(),
                    requested: "main".into(),
                }),
            ),
        ];
        for (edit, want) in cases {
            let mut p = pull();
            edit(&mut p);
            assert_eq!(check_pull(&p, &run(), "fork/r", &request()).err(), *want);
        }
    }

    fn artifact(id: u64, name: &str, run: RunRef) -> Artifact {
        Artifact {
            id,
            name: name.into(),
            expired: false,
            created_at: None,
            digest: None,
            workflow_run: Some(run),
        }
    }

    #[test]
    fn cells_to_sign() {
        let name = |rest: &str| format!("unsigned-d-py3.12-linux-64-{rest}");
        let unsigned = [
            artifact(1, &name(&format!("pr7-{HEAD}")), RunRef::default()),
            artifact(2, &name(&format!("pr8-{HEAD}")), RunRef::default()),
            artifact(3, &name(&format!("pr7-{MOVED}")), RunRef::default()),
            artifact(4, &name(HEAD), RunRef::default()),
            artifact(5, "unsigned-not a name", RunRef::default()),
            artifact(
                6,
                &format!("unsigned-d-py3.14t-win-64-pr7-{HEAD}"),
                RunRef::default(),
            ),
            artifact(
                7,
                &format!("unsigned-d-py3.14t-win-64-pr7-{HEAD}"),
                RunRef::default(),
            ),
        ];
        let (cells, skipped) = select_cells(&unsigned, 7, HEAD);
        assert_eq!(cells.iter().map(|c| c.unsigned.id).collect::<Vec<_>>(), [1]);
        assert_eq!(cells[0].artifact, format!("d-py3.12-linux-64-pr7-{HEAD}"));
        let reasons: Vec<&str> = skipped.iter().map(|s| s.reason.as_str()).collect();
        assert_eq!(reasons.len(), 6, "{reasons:?}");
        assert_eq!(reasons[0], "named for #8, not #7");
        assert_eq!(reasons[1], format!("named for {MOVED}, not {HEAD}"));
        assert_eq!(reasons[2], "named for a push build, not #7");
        assert!(
            reasons[3].starts_with("not an artifact name: "),
            "{}",
            reasons[3]
        );
        assert!(
            reasons[4].starts_with("the run lists 2 artifacts named"),
            "{}",
            reasons[4]
        );
        let matrix = matrix(cells.iter().map(|c| c.artifact.as_str()));
        assert_eq!(
            matrix,
            json!({ "include": [{ "artifact": format!("d-py3.12-linux-64-pr7-{HEAD}") }] })
        );
    }

    #[test]
    fn a_request_counts_only_from_the_default_branch_of_this_repository() {
        let from = |repo_id: u64, branch: &str| RunRef {
            id: Some(650),
            head_repository_id: Some(repo_id),
            head_branch: Some(branch.into()),
            ..RunRef::default()
        };
        assert_eq!(
            untrusted_upload(&artifact(9, "r", from(1, "main")), 1, "main"),
            None
        );
        let forged = untrusted_upload(&artifact(9, "r", from(2, "main")), 1, "main").unwrap();
        assert_eq!(
            forged,
            "artifact 9 was uploaded by run 650 of branch \"main\" in repository 2 (a request counts only from \"main\" of repository 1)"
        );
        assert!(untrusted_upload(&artifact(9, "r", from(1, "feature")), 1, "main").is_some());
        let mut expired = artifact(9, "r", from(1, "main"));
        expired.expired = true;
        assert_eq!(
            untrusted_upload(&expired, 1, "main").as_deref(),
            Some("artifact 9 has expired")
        );
    }

    /// The test issue 31 asks for: the run that recorded a request must be an `issue_comment`
    /// run; any other default-branch run of the trigger workflow (its `pull_request_target`
    /// hygiene runs, which a pull request's author causes) is refused.
    #[test]
    fn issue_31_a_request_counts_only_from_an_issue_comment_run() {
        let trigger = Workflow {
            id: 12,
            path: String::new(),
        };
        let recorder = |event: &str| Run {
            id: 650,
            workflow_id: Some(12),
            path: Some(".github/workflows/vouch-trigger.yml".into()),
            event: event.into(),
            head_sha: BASE.into(),
            head_branch: Some("main".into()),
            repository: repo("o/r"),
            head_repository: repo("o/r"),
            ..run()
        };
        assert_eq!(
            check_request_run(&trigger, &inputs(), "main", 7, &recorder("issue_comment")),
            Ok(())
        );
        for event in ["pull_request_target", "workflow_dispatch", "push"] {
            assert_eq!(
                check_request_run(&trigger, &inputs(), "main", 7, &recorder(event)),
                Err(Refusal::RequestRun {
                    pr: 7,
                    run: 650,
                    reason: format!("a {event:?} run"),
                    trigger: ".github/workflows/vouch-trigger.yml".into(),
                }),
                "{event}"
            );
        }
    }

    fn event(body: &str) -> Vec<u8> {
        json!({
            "action": "created",
            "issue": { "number": 7 },
            "comment": { "id": 99, "body": body, "user": { "login": "m" } },
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn issue_31_the_event_names_the_recorded_head() {
        let ok = event(&format!("/test mini @{}", &HEAD[..16]));
        assert_eq!(check_event(&request(), &ok), Ok(()));
        assert_eq!(
            check_event(&request(), &event(&format!("/test @{HEAD}"))),
            Ok(())
        );
        for target in ["skip", "force-skip"] {
            assert_eq!(
                check_event(&request(), &event(&format!("/test {target} @{HEAD}"))),
                Err(Refusal::BuildsNothing {
                    pr: 7,
                    target: target.into()
                }),
                "issue 32: a {target} request authorises no build"
            );
        }
        let named_other = check_event(&request(), &event(&format!("/test mini @{}", &MOVED[..16])));
        assert_eq!(
            named_other,
            Err(Refusal::NamedOtherCommit {
                pr: 7,
                named: MOVED[..16].into(),
                head: HEAD.into(),
            })
        );
        let problems = [
            ("/test mini", "names no commit".to_owned()),
            ("hello", "has no /test line".to_owned()),
            (
                "/test mini @1111111",
                "names @1111111, 7 hex digits: fewer than 16, few enough for a pushed commit to be made to match".to_owned(),
            ),
            (
                "/test mini @HEAD\n::add-mask::x",
                "ends in \"@HEAD\", not @ and 7 to 40 lower-case hex digits".to_owned(),
            ),
        ];
        for (body, problem) in problems {
            assert_eq!(
                check_event(&request(), &event(body)),
                Err(Refusal::CommitNotNamed {
                    pr: 7,
                    comment_id: 99,
                    problem,
                }),
                "{body:?}"
            );
        }
        let mut other_comment: Value = serde_json::from_slice(&ok).unwrap();
        other_comment["comment"]["id"] = json!(98);
        let mut other_author: Value = serde_json::from_slice(&ok).unwrap();
        other_author["comment"]["user"]["login"] = json!("x\n::warning::y");
        let mut edited: Value = serde_json::from_slice(&ok).unwrap();
        edited["action"] = json!("edited");
        for (ev, field, found, expected) in [
            (other_comment, "comment.id", "98", "99"),
            (
                other_author,
                "comment.user.login",
                "x%0A%3A%3Awarning%3A%3Ay",
                "m",
            ),
            (edited, "action", "edited", "created"),
        ] {
            assert_eq!(
                check_event(&request(), ev.to_string().as_bytes()),
                Err(Refusal::EventMismatch {
                    pr: 7,
                    field,
                    found: found.into(),
                    expected: expected.into(),
                })
            );
        }
    }

    #[test]
    fn issue_31_a_pull_request_that_changes_the_build_workflow() {
        let file = |name: &str, previous: Option<&str>| PullFile {
            filename: name.into(),
            status: if previous.is_some() {
                "renamed"
            } else {
                "modified"
            }
            .into(),
            previous_filename: previous.map(str::to_owned),
        };
        let wf = ".github/workflows/vouch-build.yml@refs/heads/main";
        assert_eq!(check_files(&[file("cupy/x.py", None)], 7, wf), Ok(()));
        let changed = Err(Refusal::ChangesBuildWorkflow {
            pr: 7,
            path: ".github/workflows/vouch-build.yml".into(),
            status: "modified".into(),
        });
        assert_eq!(
            check_files(
                &[
                    file("a", None),
                    file(".github/workflows/vouch-build.yml", None)
                ],
                7,
                wf
            ),
            changed
        );
        assert!(matches!(
            check_files(
                &[file("x.yml", Some(".github/workflows/vouch-build.yml"))],
                7,
                wf
            ),
            Err(Refusal::ChangesBuildWorkflow { .. })
        ));
        let many: Vec<PullFile> = (0..MAX_PULL_FILES)
            .map(|i| file(&format!("f{i}"), None))
            .collect();
        assert_eq!(
            check_files(&many, 7, wf),
            Err(Refusal::TooManyFiles { pr: 7, count: 2000 })
        );
    }

    fn timed(id: u64, created: &str, status: &str) -> TimedRun {
        TimedRun {
            run: Run {
                id,
                status: status.into(),
                ..run()
            },
            created_at: Some(created.into()),
        }
    }

    #[test]
    fn issue_31_one_request_one_build() {
        let mut req = artifact(2001, "vouch-request-7-h", RunRef::default());
        req.created_at = Some("2026-08-20T10:21:00Z".into());
        let (run_at, req_at) = check_created_after(Some("2026-08-20T11:40:00Z"), &req).unwrap();
        assert_eq!(
            check_created_after(Some("2026-08-20T10:21:00Z"), &req),
            Err(Refusal::RunBeforeRequest {
                run_created: "2026-08-20T10:21:00Z".into(),
                artifact: 2001,
                request_created: "2026-08-20T10:21:00Z".into(),
            })
        );
        assert_eq!(
            check_created_after(None, &req),
            Err(Refusal::Missing {
                what: "created_at of the build run"
            })
        );
        let all = [
            timed(600, "2026-08-20T10:00:00Z", "completed"), // before the request
            timed(699, "2026-08-20T11:39:00Z", "completed"), // after it, before run 700
            timed(700, "2026-08-20T11:40:00Z", "completed"), // the run itself (any attempt)
            timed(701, "2026-08-20T11:41:00Z", "in_progress"), // later
        ];
        let earlier = earlier_runs(&all, &run(), run_at, req_at).unwrap();
        assert_eq!(earlier.iter().map(|r| r.run.id).collect::<Vec<_>>(), [699]);
        let in_flight = [timed(699, "2026-08-20T11:39:00Z", "queued")];
        assert!(matches!(
            earlier_runs(&in_flight, &run(), run_at, req_at),
            Err(Refusal::EarlierRunInFlight { other: 699, .. })
        ));

        let cell = |n: &str| Cell {
            artifact: n.into(),
            name: format!("d-py3.12-linux-64-pr7-{HEAD}").parse().unwrap(),
            unsigned: artifact(1, &format!("unsigned-{n}"), RunRef::default()),
        };
        let mut skipped = Vec::new();
        let kept = claim_cells(
            vec![cell("a"), cell("b")],
            &mut skipped,
            &[(699, vec!["unsigned-a".into()])],
        );
        assert_eq!(
            kept.iter().map(|c| c.artifact.as_str()).collect::<Vec<_>>(),
            ["b"]
        );
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].artifact, "a");
        assert!(
            skipped[0]
                .reason
                .starts_with("run 699, created after the same request, built it first")
        );
    }
}
