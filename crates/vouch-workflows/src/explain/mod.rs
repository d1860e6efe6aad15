//! `vouch workflows explain`: which workflows and jobs an event starts, what each can do
//! (token scopes, readable secrets, OIDC), and what they cause in turn, read from the workflow
//! files themselves and GitHub's documented rules ([`rules`]).
//!
//! The files decide `on:` filters, `if:` conditions ([`expr`]), `needs`, permissions,
//! environments, secret references, job names and concurrency groups. What a job's *script*
//! does cannot be read off the YAML, so the effects of vouch's own jobs (the request they
//! record, the label they set or remove, the build decision, the dispatch) are stated in
//! [`job_effects`], beside the job names they belong to.

pub mod expr;
pub mod rules;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Value, json};
use yaml_rust2::{Yaml, YamlLoader};

use crate::{
    BUILD_FILE, Error, GeneratedFile, PR_BUILD_GROUP, REQUEST_ARTIFACT_PREFIX, SECRETS, SIGN_FILE,
    SecretHome, TRIGGER_FILE, TRIGGER_LABEL, TRUSTED_ENVIRONMENT, TRUSTED_REFS,
};

/// The event a person (or an outside system) causes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Scenario {
    /// `issue_comment`, `pull_request` (its activity is delivered to `pull_request` and
    /// `pull_request_target` workflows alike), `push`, ...
    pub event: String,
    /// The activity type: `created`, `labeled`, `synchronize`, ...
    pub action: Option<String>,
    /// The pull request comes from a fork.
    pub fork: bool,
    /// The label a `labeled` event adds.
    pub label: Option<String>,
    /// The commenter's `author_association`.
    pub actor_association: Option<String>,
    /// The comment's body.
    pub comment: Option<String>,
    /// A push's ref (`refs/heads/main`).
    pub git_ref: Option<String>,
    pub default_branch: String,
    /// The pull request carries the trigger label and a recorded request for its old head
    /// (the state a `synchronize` after a `/test` finds).
    pub previously_tested: bool,
    /// The pull request's head branch (environment policies judge its runs by it).
    pub head_branch: String,
    /// A new head is pushed after the comment and before the record job reads the pull
    /// request (the race a named commit closes).
    pub pushed_after_comment: bool,
    /// The push deletes its branch (`deleted: true`, `after` all zeros).
    pub deleted: bool,
    /// The push merged a pull request labelled `skip-ci`.
    pub skip_ci: bool,
}

/// The head a scenario's pull request has when its event comes.
pub const EXAMPLE_HEAD: &str = "1111111111111111111111111111111111111111";
/// The head a push puts in its place (`synchronize`, or a push after a comment).
pub const EXAMPLE_PUSHED_HEAD: &str = "2222222222222222222222222222222222222222";

impl Scenario {
    pub fn new(event: impl Into<String>) -> Scenario {
        Scenario {
            event: event.into(),
            action: None,
            fork: false,
            label: None,
            actor_association: None,
            comment: None,
            git_ref: None,
            default_branch: "main".into(),
            previously_tested: false,
            head_branch: "feature".into(),
            pushed_after_comment: false,
            deleted: false,
            skip_ci: false,
        }
    }

    fn action(&self) -> Option<String> {
        self.action.clone().or_else(|| match self.event.as_str() {
            "issue_comment" => Some("created".into()),
            "pull_request" | "pull_request_target" if self.label.is_some() => {
                Some("labeled".into())
            }
            "pull_request" | "pull_request_target" => Some("opened".into()),
            _ => None,
        })
    }
}

/// Who caused an event: it decides whether the event starts workflows at all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// A person, or an outside system.
    User,
    /// A GitHub App's installation token: starts workflows.
    AppToken,
    /// A run's GITHUB_TOKEN: starts no workflow ([`rules::GITHUB_TOKEN_EVENTS_DOC`]).
    GithubToken,
    /// GitHub itself, when a run completes (`workflow_run`).
    RunCompleted,
}

#[derive(Clone, Debug, Serialize)]
struct Event {
    name: String,
    action: Option<String>,
    label: Option<String>,
    actor: Actor,
    completed: Option<Completed>,
    cause: String,
}

/// A `workflow_run` event's run: its workflow's name, event, conclusion, and how many
/// `workflow_run` levels led to it.
#[derive(Clone, Debug, Default, Serialize)]
struct Completed {
    workflow: String,
    event: String,
    conclusion: String,
    depth: usize,
}

/// One job as `explain` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobReport {
    pub id: String,
    /// The check name it reports under (its `name:`, evaluated).
    pub name: String,
    pub runs: bool,
    pub environment: Option<String>,
    /// Effective GITHUB_TOKEN scopes.
    pub token: BTreeMap<String, String>,
    /// Secrets the job references and can read.
    pub secrets: Vec<String>,
    /// Secrets the job references but cannot read here.
    pub secrets_withheld: Vec<String>,
    pub oidc: bool,
    /// It checks out (and so may run) the pull request's code.
    pub runs_pr_code: bool,
    /// The compiler cache it uses, and who fences it.
    pub cache: Option<CacheReport>,
    pub effects: Vec<String>,
}

/// How a job reaches the compiler cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CacheReport {
    /// `gha` (the GitHub Actions cache), or `store` (a store of the profile's, reached with a
    /// credential: Redis, S3, ...).
    pub store: String,
    /// For `gha`: the cache scope (a ref) GitHub lets this run write, whatever its code does
    /// with the token ([`rules::GHA_CACHE_SCOPE_DOC`]).
    pub writes: Option<String>,
    /// For `gha`: the scopes GitHub lets it read, in order.
    pub reads: Vec<String>,
    /// What keeps it from writing what trusted builds read.
    pub fence: String,
}

/// One workflow run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunReport {
    pub workflow: String,
    pub event: String,
    pub cause: String,
    /// Whose copy of the workflow file runs.
    pub definition: String,
    pub git_ref: String,
    pub jobs: Vec<JobReport>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explanation {
    pub scenario: Scenario,
    pub runs: Vec<RunReport>,
    /// Events that started nothing, and why.
    pub quiet: Vec<String>,
}

impl Explanation {
    /// Every job that ran, with its workflow.
    pub fn jobs_run(&self) -> impl Iterator<Item = (&RunReport, &JobReport)> {
        self.runs
            .iter()
            .flat_map(|r| r.jobs.iter().filter(|j| j.runs).map(move |j| (r, j)))
    }

    /// `file:job` of every job that ran, in order.
    pub fn ran(&self) -> Vec<String> {
        self.jobs_run()
            .map(|(r, j)| format!("{}:{}", r.workflow, j.id))
            .collect()
    }
}

#[derive(Clone, Debug, Default)]
struct Trigger {
    event: String,
    types: Option<Vec<String>>,
    branches: Option<Vec<String>>,
    tags: Option<Vec<String>>,
    workflows: Option<Vec<String>>,
}

#[derive(Clone, Debug)]
struct Job {
    id: String,
    name: Option<String>,
    condition: Option<String>,
    needs: Vec<String>,
    permissions: BTreeMap<String, String>,
    environment: Option<String>,
    secrets: Vec<String>,
    checks_out: bool,
    /// Its `run:` scripts, one after another.
    scripts: String,
    /// A step gets the GitHub Actions cache service's token (the compiler cache on `gha`).
    gha_cache: bool,
}

#[derive(Clone, Debug)]
struct Workflow {
    file: String,
    name: String,
    on: Vec<Trigger>,
    jobs: Vec<Job>,
}

fn s(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Boolean(b) => Some(b.to_string()),
        Yaml::Integer(i) => Some(i.to_string()),
        _ => None,
    }
}

fn list(y: &Yaml) -> Option<Vec<String>> {
    match y {
        Yaml::Array(a) => Some(a.iter().filter_map(s).collect()),
        Yaml::String(v) => Some(vec![v.clone()]),
        _ => None,
    }
}

fn all_strings(y: &Yaml, out: &mut String) {
    match y {
        Yaml::String(v) => {
            out.push_str(v);
            out.push('\n');
        }
        Yaml::Array(a) => a.iter().for_each(|v| all_strings(v, out)),
        Yaml::Hash(h) => h.iter().for_each(|(k, v)| {
            all_strings(k, out);
            all_strings(v, out);
        }),
        _ => {}
    }
}

fn parse(f: &GeneratedFile) -> Result<Workflow, Error> {
    let shape = |message: &str| Error::Shape {
        file: f.name.clone(),
        message: message.to_owned(),
    };
    let docs = YamlLoader::load_from_str(&f.contents).map_err(|e| Error::Yaml {
        file: f.name.clone(),
        message: e.to_string(),
    })?;
    let doc = docs.first().ok_or_else(|| shape("empty file"))?;
    let mut on = Vec::new();
    match &doc["on"] {
        Yaml::String(e) => on.push(Trigger {
            event: e.clone(),
            ..Trigger::default()
        }),
        Yaml::Array(a) => on.extend(a.iter().filter_map(s).map(|event| Trigger {
            event,
            ..Trigger::default()
        })),
        Yaml::Hash(h) => {
            for (k, v) in h {
                on.push(Trigger {
                    event: s(k).unwrap_or_default(),
                    types: list(&v["types"]),
                    branches: list(&v["branches"]),
                    tags: list(&v["tags"]),
                    workflows: list(&v["workflows"]),
                });
            }
        }
        _ => return Err(shape("no `on:`")),
    }
    let Yaml::Hash(jobs) = &doc["jobs"] else {
        return Err(shape("no `jobs` mapping"));
    };
    let top_permissions = permissions(&doc["permissions"]);
    let mut out = Vec::new();
    for (id, job) in jobs {
        let mut text = String::new();
        all_strings(job, &mut text);
        let secrets: BTreeSet<String> = text
            .match_indices("secrets.")
            .map(|(i, _)| {
                text[i + 8..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .filter(|n| !n.is_empty())
            .collect();
        let scripts = match &job["steps"] {
            Yaml::Array(steps) => steps
                .iter()
                .filter_map(|st| s(&st["run"]))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        let checks_out = match &job["steps"] {
            Yaml::Array(steps) => steps.iter().any(|st| {
                s(&st["uses"])
                    .is_some_and(|u| u.to_ascii_lowercase().starts_with("actions/checkout"))
            }),
            _ => false,
        };
        out.push(Job {
            id: s(id).unwrap_or_default(),
            name: s(&job["name"]),
            condition: s(&job["if"]),
            needs: list(&job["needs"]).unwrap_or_default(),
            permissions: match &job["permissions"] {
                Yaml::BadValue => top_permissions.clone(),
                p => permissions(p),
            },
            environment: s(&job["environment"]).or_else(|| s(&job["environment"]["name"])),
            secrets: secrets.into_iter().collect(),
            checks_out,
            scripts,
            gha_cache: crate::audit::gha_cache_use(job).is_some(),
        });
    }
    Ok(Workflow {
        file: f.name.clone(),
        name: s(&doc["name"]).unwrap_or_else(|| f.name.clone()),
        on,
        jobs: out,
    })
}

const ALL_SCOPES: &[&str] = &[
    "actions",
    "attestations",
    "checks",
    "contents",
    "deployments",
    "id-token",
    "issues",
    "packages",
    "pages",
    "pull-requests",
    "security-events",
    "statuses",
];

fn permissions(y: &Yaml) -> BTreeMap<String, String> {
    match y {
        Yaml::Hash(h) => h.iter().filter_map(|(k, v)| Some((s(k)?, s(v)?))).collect(),
        Yaml::String(all) if all == "write-all" || all == "read-all" => {
            let level = if all == "write-all" { "write" } else { "read" };
            ALL_SCOPES
                .iter()
                .map(|sc| ((*sc).to_owned(), level.to_owned()))
                .collect()
        }
        _ => BTreeMap::new(),
    }
}

/// What the simulated repository knows between runs.
struct State {
    pr: u64,
    head: String,
    request_recorded: bool,
    /// What the recorded request builds instead (`skip`, `force-skip`, `external`).
    skip: Option<String>,
    /// A build job ran in the chain: the build run has unsigned artifacts to sign.
    built: bool,
    next_run: u64,
}

fn secret_home(name: &str) -> SecretHome {
    SECRETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map_or(SecretHome::Repository, |(_, home, _)| *home)
}

/// The branch or tag name a deployment policy sees for `git_ref`.
fn policy_allows(git_ref: &str) -> bool {
    if let Some(tag) = git_ref.strip_prefix("refs/tags/") {
        return TRUSTED_REFS
            .iter()
            .filter_map(|p| p.strip_prefix("tags: "))
            .any(|p| rules::glob(p, tag));
    }
    let Some(branch) = git_ref.strip_prefix("refs/heads/") else {
        return false; // refs/pull/N/merge: no policy allows it
    };
    TRUSTED_REFS
        .iter()
        .filter(|p| !p.starts_with("tags: "))
        .any(|p| rules::glob(p, branch))
}

/// Whether the comment has a line the record job's script accepts: the `grep -Eq '<ERE>'`
/// pattern read from the script itself, applied per line with carriage returns dropped.
fn has_test_line(script: &str, body: &str) -> bool {
    let Some(pattern) = script
        .split("grep -Eq '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
    else {
        return false;
    };
    let Ok(re) = regex::Regex::new(pattern) else {
        return false;
    };
    body.replace('\r', "").lines().any(|l| re.is_match(l))
}

/// What a recorded request builds instead of wheels, as the record job's script decides it:
/// the targets of its first `/test` line (the named commit dropped) matched against the
/// `[[ "$targets" =~ <ERE> ]]` test read from the script (`skip`, `force-skip`), else
/// `external` when every comma-separated target is in the script's `external=",...,"` list.
fn skip_of(script: &str, body: &str) -> Option<String> {
    let pattern = script
        .split(r#"[[ "$targets" =~ "#)
        .nth(1)?
        .split(" ]]")
        .next()?;
    let body = body.replace('\r', "");
    let line = body.lines().find(|l| {
        l.strip_prefix("/test")
            .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
    })?;
    let mut words: Vec<&str> = line.split_whitespace().skip(1).collect();
    if words.last().is_some_and(|w| w.starts_with('@')) {
        words.pop();
    }
    let targets = words.join(" ");
    if let Some(c) = regex::Regex::new(pattern).ok()?.captures(&targets) {
        return Some(c.get(1).map_or(&targets[..], |m| m.as_str()).to_owned());
    }
    let external = script.split("external=\",").nth(1)?.split(",\"").next()?;
    let external: Vec<&str> = external.split(',').collect();
    let all = targets
        .split(',')
        .all(|t| !t.trim().is_empty() && external.contains(&t.trim()));
    all.then(|| "external".to_owned())
}

/// Whether the record job records the comment's request: its first `/test` line must name
/// (`@` and [`crate::MIN_NAMED_DIGITS`]+ hex digits) the head the job reads from the API,
/// which is a newer one when a push came after the comment. `Err` says what it does instead.
fn recordable(sc: &Scenario, st: &mut State) -> Result<(), String> {
    let body = sc.comment.as_deref().unwrap_or("").replace('\r', "");
    let line = body
        .lines()
        .find(|l| {
            l.strip_prefix("/test")
                .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
        })
        .unwrap_or("");
    let last = line.split_whitespace().last().unwrap_or("");
    let named = last.strip_prefix('@').filter(|h| {
        (crate::MIN_NAMED_DIGITS..=40).contains(&h.len())
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if sc.pushed_after_comment {
        st.head = EXAMPLE_PUSHED_HEAD.into();
    }
    let head = st.head.clone();
    match named {
        None => Err(format!(
            "the comment names no commit (`/test <targets> @<sha>`, {}+ hex digits): records nothing; replies with the head it reads now ({head}) and the comment to post, since no fact GitHub sets shows which head the comment was written against",
            crate::MIN_NAMED_DIGITS
        )),
        Some(n) if !head.starts_with(n) => Err(format!(
            "a head pushed after the comment ({head}) is not the commit it names (@{n}): records nothing; replies \"the head of #{} moved to `{head}` since you named `{n}`\" with the comment to post after a review",
            st.pr
        )),
        Some(_) => Ok(()),
    }
}

/// What vouch's own jobs do besides what their YAML says: their outputs, the events they
/// cause, and what they change. Keep beside the scripts in `render/` they describe.
fn job_effects(
    file: &str,
    job: &Job,
    sc: &Scenario,
    event: &Event,
    st: &mut State,
) -> (BTreeMap<String, String>, Vec<Event>, Vec<String>) {
    let mut outputs = BTreeMap::new();
    let mut events = Vec::new();
    let mut notes = Vec::new();
    match (file, job.id.as_str()) {
        (TRIGGER_FILE, "record")
            if has_test_line(&job.scripts, sc.comment.as_deref().unwrap_or(""))
                && let Err(why) = recordable(sc, st) =>
        {
            outputs.insert("head_sha".into(), String::new());
            notes.push(why);
        }
        (TRIGGER_FILE, "record") => {
            if has_test_line(&job.scripts, sc.comment.as_deref().unwrap_or("")) {
                st.request_recorded = true;
                outputs.insert("head_sha".into(), st.head.clone());
                notes.push(format!(
                    "records the request as artifact {REQUEST_ARTIFACT_PREFIX}{}-{} (default-branch run)",
                    st.pr, st.head
                ));
                let skip = skip_of(&job.scripts, sc.comment.as_deref().unwrap_or(""));
                if let Some(skip) = &skip {
                    notes.push(format!(
                        "`{skip}`: builds nothing; as the newest request for this head it supersedes an earlier one (the signer refuses a build of either)"
                    ));
                }
                outputs.insert("skip".into(), skip.clone().unwrap_or_default());
                st.skip = skip;
                if job.scripts.contains(crate::audit::GRANT_COMMAND) {
                    notes.push(format!(
                        "grants pull request #{} its own cache user vouch-pr-{} (writes pr/{} only, until the TTL) and adds its password to the record",
                        st.pr, st.pr, st.pr
                    ));
                }
            } else {
                outputs.insert("head_sha".into(), String::new());
                notes.push("no `/test` line its script accepts: records nothing".into());
            }
        }
        (TRIGGER_FILE, "label") => {
            events.push(Event {
                name: "pull_request".into(),
                action: Some("labeled".into()),
                label: Some(TRIGGER_LABEL.into()),
                actor: Actor::AppToken,
                completed: None,
                cause: format!("{TRIGGER_FILE}:label set {TRIGGER_LABEL} with a GitHub App token"),
            });
            notes.push(format!(
                "removes and sets {TRIGGER_LABEL} with the App token"
            ));
        }
        (TRIGGER_FILE, "skip") => {
            let skip = st.skip.clone().unwrap_or_default();
            notes.push(format!(
                "joins group {PR_BUILD_GROUP}{} with cancel-in-progress, cancelling a build in flight; nothing is built",
                st.pr
            ));
            if skip != "external" {
                notes.push(format!(
                    "posts {} success (\"/test {skip} by <author>: nothing built or signed\") on the named commit {} with the GitHub App's token",
                    crate::REQUIRED_STATUS,
                    st.head
                ));
            }
            if job.scripts.contains("vouch dispatch flexci") {
                notes.push(format!(
                    "posts on {} with the App's token: pfn-public-ci (dashboard) success; pfn-public-ci/<project> success \"Skipped\" for each project of the default branch's list that has no status yet",
                    st.head
                ));
                if skip == "force-skip" {
                    notes.push("force-skip: each project status that is not success becomes success \"❌ <description> (force-skip)\", a comment lists them, and pfn-public-ci (force-skip) is set to failure".into());
                }
                if skip == "external" {
                    notes.push(format!(
                        "sends the targets to vars.VOUCH_EXTERNAL_TEST_REPO by repository_dispatch (event vouch-external-test, head_sha {}, with the App's token); FlexCI's projects are marked Skipped",
                        st.head
                    ));
                }
            }
        }
        (TRIGGER_FILE, "hygiene") => {
            st.request_recorded = false;
            events.push(Event {
                name: "pull_request".into(),
                action: Some("unlabeled".into()),
                label: Some(TRIGGER_LABEL.into()),
                actor: Actor::GithubToken,
                completed: None,
                cause: format!("{TRIGGER_FILE}:hygiene removed {TRIGGER_LABEL} with GITHUB_TOKEN"),
            });
            notes.push(format!(
                "removes {TRIGGER_LABEL}; joins group {PR_BUILD_GROUP}{} with cancel-in-progress, cancelling a build in flight",
                st.pr
            ));
        }
        (BUILD_FILE, "request") if event.name == "push" => {
            let branch = sc
                .git_ref
                .as_deref()
                .unwrap_or("")
                .starts_with("refs/heads/");
            let guarded = |test: &str| job.scripts.contains(test);
            let why_not = if sc.deleted && guarded(crate::render::push_guard::DELETION_TEST) {
                Some("a branch deletion: nothing to build (its run would get the default branch's commit)".to_owned())
            } else if sc.skip_ci
                && branch
                && guarded(&format!("'{}'", crate::render::push_guard::SKIP_CI_LABEL))
            {
                Some(format!(
                    "the merged pull request is labelled {}: nothing to build",
                    crate::render::push_guard::SKIP_CI_LABEL
                ))
            } else {
                None
            };
            outputs.insert("build".into(), why_not.is_none().to_string());
            notes.push(why_not.unwrap_or_else(|| "something to build".into()));
        }
        (BUILD_FILE, "request") => {
            let build = st.request_recorded;
            outputs.insert("build".into(), build.to_string());
            notes.push(if build {
                "something to build".into()
            } else {
                "no /test recorded for this head: nothing to build".into()
            });
        }
        (BUILD_FILE, "dispatch") | (SIGN_FILE, "dispatch") => {
            notes.push("dispatches the signed build to the test farm".into());
        }
        (BUILD_FILE, "build-pr" | "build-push") => st.built = true,
        (SIGN_FILE, "pin") if st.built => {
            outputs.insert("matrix".into(), "{\"include\":[]}".into());
            notes.push(
                "pins the build run by id, the default-branch request and the pull request's head and base"
                    .into(),
            );
        }
        (SIGN_FILE, "pin") => {
            outputs.insert("matrix".into(), String::new());
            notes.push("the build run has no unsigned artifacts: nothing to sign".into());
        }
        (SIGN_FILE, "sign") => {
            notes.push("signs each cell's wheel (claims from the API and the request)".into());
        }
        (SIGN_FILE, "status") => {
            notes.push(format!(
                "posts the commit status {} on the built head with the GitHub App's token: success only when every planned cell was signed",
                crate::REQUIRED_STATUS
            ));
            notes.push(format!(
                "required-check source: the GitHub App (vars.VOUCH_APP_CLIENT_ID), never any source: a pull request's own run can report a check named {}",
                crate::REQUIRED_STATUS
            ));
        }
        _ => {}
    }
    (outputs, events, notes)
}

/// The compiler cache a job's steps reach, read from the file: the GitHub Actions cache when
/// a step gets its token, another store when a script passes `--cache-store`.
fn cache_report(job: &Job, run_ref: &str, default_branch: &str) -> Option<CacheReport> {
    if job.gha_cache {
        // The scenario's pull requests target the default branch.
        let (writes, reads) = rules::gha_cache_scope(run_ref, default_branch, default_branch);
        return Some(CacheReport {
            store: "gha".into(),
            writes: Some(writes),
            reads,
            fence: format!(
                "GitHub scopes the cache by the run's ref ({})",
                rules::GHA_CACHE_SCOPE_DOC
            ),
        });
    }
    if !job.scripts.contains("--cache-store") {
        return None;
    }
    Some(CacheReport {
        store: "store".into(),
        writes: None,
        reads: Vec::new(),
        fence: if job.scripts.contains("vouch cache check") {
            "the store's credential: `vouch cache check` proves it writes no scope it must not"
        } else {
            "the store's credential (trusted)"
        }
        .into(),
    })
}

fn trigger_matches(t: &Trigger, ev: &Event, git_ref: &str) -> bool {
    // One pull-request activity is delivered to both kinds of workflow.
    let pr_kinds = ["pull_request", "pull_request_target"];
    let same_activity =
        pr_kinds.contains(&ev.name.as_str()) && pr_kinds.contains(&t.event.as_str());
    if t.event != ev.name && !same_activity {
        return false;
    }
    let action = ev.action.as_deref().unwrap_or("");
    let listened = match &t.types {
        Some(types) => types.iter().any(|x| x == action),
        // GitHub's default activity types for pull-request events.
        None if same_activity => ["opened", "synchronize", "reopened"].contains(&action),
        None => true,
    };
    if !listened {
        return false;
    }
    if t.event == "push" && (t.branches.is_some() || t.tags.is_some()) {
        let ok = if let Some(tag) = git_ref.strip_prefix("refs/tags/") {
            t.tags.iter().flatten().any(|p| rules::glob(p, tag))
        } else if let Some(b) = git_ref.strip_prefix("refs/heads/") {
            t.branches.iter().flatten().any(|p| rules::glob(p, b))
        } else {
            false
        };
        if !ok {
            return false;
        }
    }
    if t.event == "workflow_run" {
        let Some(c) = &ev.completed else {
            return false;
        };
        if !t.workflows.iter().flatten().any(|w| *w == c.workflow) {
            return false;
        }
    }
    true
}

/// Runs `scenario` through `files`: every run it starts, directly or through the events those
/// runs cause, assuming each job that starts succeeds.
pub fn explain(files: &[GeneratedFile], scenario: &Scenario) -> Result<Explanation, Error> {
    let workflows = files.iter().map(parse).collect::<Result<Vec<_>, _>>()?;
    let mut st = State {
        pr: 1,
        head: EXAMPLE_HEAD.into(),
        request_recorded: false,
        skip: None,
        built: false,
        next_run: 100,
    };
    if scenario.previously_tested {
        st.request_recorded = true;
    }
    if scenario.action.as_deref() == Some("synchronize") {
        // The new head; the request on record was for the old one.
        st.head = EXAMPLE_PUSHED_HEAD.into();
        st.request_recorded = false;
    }
    let mut queue = VecDeque::from([Event {
        name: scenario.event.clone(),
        action: scenario.action(),
        label: scenario.label.clone(),
        actor: Actor::User,
        completed: None,
        cause: "the scenario's event".into(),
    }]);
    let mut runs = Vec::new();
    let mut quiet = Vec::new();
    while let Some(ev) = queue.pop_front() {
        let what = match &ev.action {
            Some(a) => format!("{} ({a})", ev.name),
            None => ev.name.clone(),
        };
        if ev.actor == Actor::GithubToken
            && !["workflow_dispatch", "repository_dispatch"].contains(&ev.name.as_str())
        {
            quiet.push(format!(
                "{what}, caused by GITHUB_TOKEN ({}), starts no workflow ({})",
                ev.cause,
                rules::GITHUB_TOKEN_EVENTS_DOC
            ));
            continue;
        }
        if let Some(c) = &ev.completed
            && c.depth > rules::MAX_WORKFLOW_RUN_DEPTH
        {
            quiet.push(format!(
                "{what}: beyond {} workflow_run levels",
                rules::MAX_WORKFLOW_RUN_DEPTH
            ));
            continue;
        }
        let git_ref = match ev.name.as_str() {
            "push" => scenario
                .git_ref
                .clone()
                .unwrap_or_else(|| format!("refs/heads/{}", scenario.default_branch)),
            "pull_request" => format!("refs/pull/{}/merge", st.pr),
            _ => format!("refs/heads/{}", scenario.default_branch),
        };
        let mut started = false;
        for wf in &workflows {
            let Some(trigger) = wf.on.iter().find(|t| trigger_matches(t, &ev, &git_ref)) else {
                continue;
            };
            started = true;
            let run_event = trigger.event.clone();
            let (run_ref, definition) = match run_event.as_str() {
                "pull_request" => (
                    git_ref.clone(),
                    "the pull request's merge commit: the pull request controls this file"
                        .to_owned(),
                ),
                "push" => (git_ref.clone(), "the pushed commit".to_owned()),
                "pull_request_target" => (
                    format!("refs/heads/{}", scenario.default_branch),
                    format!("the default branch ({})", rules::PULL_REQUEST_TARGET_DOC),
                ),
                "workflow_run" => (
                    format!("refs/heads/{}", scenario.default_branch),
                    format!("the default branch ({})", rules::WORKFLOW_RUN_DOC),
                ),
                "issue_comment" => (
                    format!("refs/heads/{}", scenario.default_branch),
                    format!("the default branch ({})", rules::ISSUE_COMMENT_DOC),
                ),
                _ => (git_ref.clone(), "the ref's commit".to_owned()),
            };
            let fork_pr = scenario.fork && run_event == "pull_request";
            // Deployment policies judge a pull request's runs by its head branch (the safe
            // reading: a same-repository branch named like a trusted ref would pass).
            let policy_ref = if run_event.starts_with("pull_request") {
                format!("refs/heads/{}", scenario.head_branch)
            } else {
                run_ref.clone()
            };
            let run_id = st.next_run;
            st.next_run += 1;
            let event_json = event_payload(scenario, &ev, &st, &run_event);
            let mut needs_ctx = serde_json::Map::new();
            let mut jobs = Vec::new();
            let mut emitted = Vec::new();
            for job in &wf.jobs {
                let needs_ok = job.needs.iter().all(|n| {
                    needs_ctx
                        .get(n)
                        .and_then(|v| v.get("result"))
                        .and_then(Value::as_str)
                        == Some("success")
                });
                let root = json!({
                    "github": {
                        "event_name": run_event,
                        "event": event_json,
                        "ref": run_ref,
                        "sha": st.head,
                        "run_id": run_id,
                        "repository": "owner/repo",
                    },
                    "needs": Value::Object(
                        job.needs.iter().filter_map(|n| Some((n.clone(), needs_ctx.get(n)?.clone()))).collect()
                    ),
                });
                let ctx = expr::Context {
                    root: &root,
                    needs_succeeded: needs_ok,
                };
                let runs = expr::job_condition(job.condition.as_deref(), &ctx).map_err(|e| {
                    Error::Shape {
                        file: wf.file.clone(),
                        message: format!("job {}: {e}", job.id),
                    }
                })?;
                let name = match &job.name {
                    Some(n) if !n.contains("matrix.") => {
                        expr::interpolate(n, &ctx).map_err(|e| Error::Shape {
                            file: wf.file.clone(),
                            message: format!("job {}: {e}", job.id),
                        })?
                    }
                    Some(n) => n.clone(),
                    None => job.id.clone(),
                };
                let mut token = job.permissions.clone();
                token.retain(|_, level| level != "none");
                if fork_pr {
                    token = rules::fork_token(&token);
                }
                let mut secrets = Vec::new();
                let mut withheld = Vec::new();
                for sname in &job.secrets {
                    let readable = !fork_pr
                        && match secret_home(sname) {
                            SecretHome::Repository => true,
                            SecretHome::TrustedEnvironment => {
                                job.environment.as_deref() == Some(TRUSTED_ENVIRONMENT)
                                    && policy_allows(&policy_ref)
                            }
                        };
                    if readable {
                        secrets.push(sname.clone());
                    } else {
                        withheld.push(sname.clone());
                    }
                }
                let oidc = token.get("id-token").is_some_and(|l| l == "write");
                let runs_pr_code = job.checks_out && run_event == "pull_request";
                let cache = if runs {
                    cache_report(job, &run_ref, &scenario.default_branch)
                } else {
                    None
                };
                let (outputs, events, effects) = if runs {
                    job_effects(&wf.file, job, scenario, &ev, &mut st)
                } else {
                    Default::default()
                };
                emitted.extend(events);
                needs_ctx.insert(
                    job.id.clone(),
                    json!({
                        "result": if runs { "success" } else { "skipped" },
                        "outputs": outputs,
                    }),
                );
                jobs.push(JobReport {
                    id: job.id.clone(),
                    name,
                    runs,
                    environment: job.environment.clone(),
                    token: if runs { token } else { BTreeMap::new() },
                    secrets: if runs { secrets } else { Vec::new() },
                    secrets_withheld: if runs { withheld } else { Vec::new() },
                    oidc: runs && oidc,
                    runs_pr_code: runs && runs_pr_code,
                    cache,
                    effects,
                });
            }
            let any_ran = jobs.iter().any(|j| j.runs);
            runs.push(RunReport {
                workflow: wf.file.clone(),
                event: match &ev.action {
                    Some(a) if run_event != "workflow_run" => format!("{run_event} ({a})"),
                    _ => run_event.clone(),
                },
                cause: ev.cause.clone(),
                definition,
                git_ref: run_ref,
                jobs,
            });
            queue.extend(emitted);
            // Every completed run is a workflow_run event, whatever its conclusion.
            let depth = ev.completed.as_ref().map_or(1, |c| c.depth + 1);
            queue.push_back(Event {
                name: "workflow_run".into(),
                action: Some("completed".into()),
                label: None,
                actor: Actor::RunCompleted,
                completed: Some(Completed {
                    workflow: wf.name.clone(),
                    event: run_event.clone(),
                    conclusion: if any_ran { "success" } else { "skipped" }.into(),
                    depth,
                }),
                cause: format!("{} ({run_event}) completed", wf.file),
            });
        }
        if !started && ev.name != "workflow_run" {
            quiet.push(format!("{what} ({}): no workflow listens", ev.cause));
        }
    }
    Ok(Explanation {
        scenario: scenario.clone(),
        runs,
        quiet,
    })
}

/// The parts of the event payload the workflows' expressions read.
fn event_payload(sc: &Scenario, ev: &Event, st: &State, run_event: &str) -> Value {
    let repository =
        json!({"id": 42, "default_branch": sc.default_branch, "full_name": "owner/repo"});
    let head_repo = if sc.fork {
        "contributor/repo"
    } else {
        "owner/repo"
    };
    match run_event {
        "issue_comment" => json!({
            "action": ev.action,
            "issue": {"number": st.pr, "state": "open", "pull_request": {"url": "https://api.github.com/repos/owner/repo/pulls/1"}},
            "comment": {"id": 7, "body": sc.comment.clone().unwrap_or_default(),
                        "author_association": sc.actor_association.clone().unwrap_or_else(|| "NONE".into())},
            "repository": repository,
        }),
        "pull_request" | "pull_request_target" => json!({
            "action": ev.action,
            "label": ev.label.as_ref().map(|l| json!({"name": l})),
            "pull_request": {"number": st.pr, "head": {"sha": st.head, "repo": {"full_name": head_repo}}},
            "repository": repository,
        }),
        "workflow_run" => {
            let c = ev.completed.clone().unwrap_or_default();
            json!({
                "action": "completed",
                "workflow_run": {"name": c.workflow, "event": c.event, "conclusion": c.conclusion,
                                 "head_sha": st.head, "id": st.next_run - 1},
                "repository": repository,
            })
        }
        _ => json!({
            "ref": sc.git_ref,
            "deleted": sc.deleted,
            "after": if sc.deleted { "0".repeat(40) } else { st.head.clone() },
            "repository": repository,
        }),
    }
}

fn join(items: impl IntoIterator<Item = String>) -> String {
    let v: Vec<String> = items.into_iter().collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(", ")
    }
}

/// The human-readable table.
pub fn render_text(x: &Explanation) -> String {
    let sc = &x.scenario;
    let mut out = String::new();
    let mut head = format!("event: {}", sc.event);
    if let Some(a) = sc.action() {
        let _ = write!(head, " ({a})");
    }
    if let Some(l) = &sc.label {
        let _ = write!(head, ", label {l:?}");
    }
    if let Some(a) = &sc.actor_association {
        let _ = write!(head, ", by {a}");
    }
    if let Some(c) = &sc.comment {
        let _ = write!(head, ", comment {c:?}");
    }
    if let Some(r) = &sc.git_ref {
        let _ = write!(head, ", ref {r}");
    }
    if sc.deleted {
        head.push_str(", deleting the branch");
    }
    if sc.skip_ci {
        head.push_str(", merging a pull request labelled skip-ci");
    }
    if sc.event != "push" {
        head.push_str(if sc.fork {
            ", fork pull request"
        } else {
            ", same-repository pull request"
        });
    }
    let _ = writeln!(out, "{head}");
    if x.runs.iter().all(|r| r.jobs.iter().all(|j| !j.runs)) {
        let _ = writeln!(out, "nothing runs");
    }
    for (i, r) in x.runs.iter().enumerate() {
        let _ = writeln!(out, "\n{}. {} on {}", i + 1, r.workflow, r.event);
        let _ = writeln!(out, "   cause: {}", r.cause);
        let _ = writeln!(out, "   definition: {}; ref {}", r.definition, r.git_ref);
        for j in &r.jobs {
            if !j.runs {
                let _ = writeln!(out, "   - {:<9} skipped", j.id);
                continue;
            }
            let _ = writeln!(out, "   - {:<9} runs as {:?}", j.id, j.name);
            let _ = writeln!(
                out,
                "       token: {}",
                join(j.token.iter().map(|(k, v)| format!("{k}: {v}")))
            );
            let _ = writeln!(
                out,
                "       secrets: {}{}",
                join(j.secrets.iter().cloned()),
                if j.secrets_withheld.is_empty() {
                    String::new()
                } else {
                    format!(" (withheld: {})", j.secrets_withheld.join(", "))
                }
            );
            let _ = writeln!(
                out,
                "       OIDC: {}; environment: {}; runs the pull request's code: {}",
                if j.oidc { "yes" } else { "no" },
                j.environment.as_deref().unwrap_or("-"),
                if j.runs_pr_code { "yes" } else { "no" }
            );
            if let Some(c) = &j.cache {
                match &c.writes {
                    Some(w) => {
                        let _ = writeln!(
                            out,
                            "       cache: {}; writes {w}; reads {}; fence: {}",
                            c.store,
                            c.reads.join(", "),
                            c.fence
                        );
                    }
                    None => {
                        let _ = writeln!(out, "       cache: {}; fence: {}", c.store, c.fence);
                    }
                }
            }
            for e in &j.effects {
                let _ = writeln!(out, "       -> {e}");
            }
        }
    }
    if !x.quiet.is_empty() {
        let _ = writeln!(out);
        for q in &x.quiet {
            let _ = writeln!(out, "quiet: {q}");
        }
    }
    out
}
