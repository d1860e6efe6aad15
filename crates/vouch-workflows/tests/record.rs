//! Issue 31: the trigger's record job, run as the generated file has it (its bash, jq, and a
//! `gh` that forwards `gh api` to the project's GitHub double), while the pull request's head
//! moves between the maintainer's comment and the job. A head pushed after the comment must
//! never be recorded; the maintainer is told on the pull request what happened.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use vouch_profile::Profile;
use vouch_testgh::FakeGithub;
use vouch_workflows::{Options, TRIGGER_FILE, generate};

const TOKEN: &str = "ghs_RecordJobTokenThatNeverLeavesTheDouble";
const REPO: &str = "cupy/cupy";
const PR: u64 = 7;
/// The head the maintainer reviewed and commented on.
const H1: &str = "1111111111111111111111111111111111111111";
/// The head the author pushes after the comment, before the record job.
const H2: &str = "2222222222222222222222222222222222222222";
const MAINTAINER: &str = "maintainer";

/// The `run:` script of the record job's "Record the request" step, as generated for CuPy.
fn record_script() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pyproject-templates/cupy/vouch.toml");
    let profile = Profile::load(&path).expect("the CuPy profile loads");
    let opts = Options::from_profile(&profile, "vouch.toml").unwrap();
    let files = generate(&profile, &opts).unwrap();
    let trigger = files.iter().find(|f| f.name == TRIGGER_FILE).unwrap();
    let doc = &yaml_rust2::YamlLoader::load_from_str(&trigger.contents).unwrap()[0];
    let steps = doc["jobs"]["record"]["steps"].as_vec().unwrap();
    steps
        .iter()
        .find(|s| s["name"].as_str() == Some("Record the request"))
        .and_then(|s| s["run"].as_str())
        .expect("the record step")
        .to_owned()
}

struct World {
    dir: tempfile::TempDir,
    store: PathBuf,
}

/// What one run of the record step left behind.
struct Recorded {
    ok: bool,
    stdout: String,
    stderr: String,
    /// `$GITHUB_OUTPUT`.
    outputs: String,
    request: Option<Value>,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let w = World {
            store: dir.path().join("store"),
            dir,
        };
        w.set_head(H1);
        w.write(
            &format!("permissions/{MAINTAINER}.json"),
            json!({ "permission": "write", "role_name": "maintain" }),
        );
        w
    }

    fn write(&self, rel: &str, v: Value) {
        let p = self.store.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, v.to_string()).unwrap();
    }

    /// The pull request as `GET pulls/7` answers now: a fork's branch at `head`.
    fn set_head(&self, head: &str) {
        let repo = |name: &str, id: u64| json!({ "id": id, "full_name": name, "owner": { "login": name.split('/').next().unwrap() } });
        self.write(
            &format!("pulls/{PR}.json"),
            json!({
                "number": PR, "state": "open",
                "head": { "ref": "feature", "sha": head, "repo": repo("contributor/cupy", 99) },
                "base": { "ref": "main", "sha": "5".repeat(40), "repo": repo(REPO, 1) },
            }),
        );
    }

    /// The record step for a `created` comment `body` by `author` (OWNER or MEMBER, as the
    /// job's `if:` lets through), with `gh` on PATH forwarding to `gh`.
    fn record(&self, gh: &FakeGithub, body: &str, author: &str) -> Recorded {
        let work = self.dir.path().join(format!("work-{}", unique()));
        let bin = work.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let shim = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/gh-shim.sh");
        std::os::unix::fs::symlink(shim, bin.join("gh")).unwrap();
        let event = work.join("event.json");
        std::fs::write(
            &event,
            json!({
                "action": "created",
                "issue": { "number": PR, "pull_request": {}, "state": "open" },
                "comment": { "id": 99, "body": body, "author_association": "MEMBER",
                             "user": { "login": author } },
            })
            .to_string(),
        )
        .unwrap();
        let output = work.join("github_output");
        std::fs::write(&output, "").unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        // As GitHub runs a `shell: bash` step.
        let out = std::process::Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
            .arg(record_script())
            .current_dir(&work)
            .env_clear()
            .env("PATH", path)
            .env("GH_SHIM_API", &gh.url)
            .env("GH_TOKEN", TOKEN)
            .env("REPO", REPO)
            .env("PR_NUMBER", PR.to_string())
            .env("RUN_ID", "650")
            .env("AUTHOR", author)
            .env("GITHUB_EVENT_PATH", &event)
            .env("GITHUB_OUTPUT", &output)
            .env("RUNNER_TEMP", &work)
            .output()
            .unwrap();
        let request = std::fs::read_to_string(work.join("request/request.json"))
            .ok()
            .map(|t| serde_json::from_str(&t).unwrap());
        Recorded {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            outputs: std::fs::read_to_string(&output).unwrap(),
            request,
        }
    }
}

fn unique() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Nothing recorded, and exactly one reply on the pull request: its text.
fn refused_with_reply(gh: &FakeGithub, r: &Recorded) -> String {
    assert!(
        r.ok,
        "a refusal is not a failure: {}\n{}",
        r.stdout, r.stderr
    );
    assert!(r.request.is_none(), "recorded: {:?}", r.request);
    assert!(!r.outputs.contains("head_sha="), "{}", r.outputs);
    let comments = gh.comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert_eq!((comments[0].repo.as_str(), comments[0].issue), (REPO, PR));
    comments[0].body.clone()
}

/// The race: the maintainer reviews H1 and comments `/test mini @<H1>`; the author pushes H2
/// before the record job reads the pull request. H2 is not recorded, and the reply names both.
#[test]
fn issue_31_a_head_pushed_after_the_comment_is_refused_with_a_reply() {
    let w = World::new();
    let gh = FakeGithub::start(w.store.clone(), TOKEN);
    let comment = format!("/test mini @{}", &H1[..16]);
    w.set_head(H2);
    let r = w.record(&gh, &comment, MAINTAINER);
    let reply = refused_with_reply(&gh, &r);
    insta::assert_snapshot!("reply-head-moved", reply);
    assert!(
        r.stdout.contains(&format!(
            "::notice::/test on #7 not recorded (head {H2}, named '{}')",
            &H1[..16]
        )),
        "{}",
        r.stdout
    );
}

/// Without a named commit nothing GitHub records proves which head the comment was written
/// against, so the job refuses and gives the exact comment to post.
#[test]
fn issue_31_a_test_without_a_commit_is_refused_with_the_comment_to_post() {
    let w = World::new();
    let gh = FakeGithub::start(w.store.clone(), TOKEN);
    let r = w.record(&gh, "LGTM\r\n/test mini,cuda12\r\n", MAINTAINER);
    insta::assert_snapshot!("reply-no-commit", refused_with_reply(&gh, &r));

    // Seven digits, as GitHub shows a commit: a pushed commit can be made to match them.
    let w = World::new();
    let gh = FakeGithub::start(w.store.clone(), TOKEN);
    let r = w.record(&gh, &format!("/test mini @{}", &H1[..7]), MAINTAINER);
    insta::assert_snapshot!("reply-short-commit", refused_with_reply(&gh, &r));
}

/// The head the comment names, still the head: recorded, and no reply.
#[test]
fn a_named_head_that_is_still_the_head_is_recorded() {
    for named in [&H1[..16], H1] {
        let w = World::new();
        let gh = FakeGithub::start(w.store.clone(), TOKEN);
        let r = w.record(&gh, &format!("/test mini @{named}"), MAINTAINER);
        assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
        assert_eq!(r.outputs, format!("head_sha={H1}\nskip=\n"));
        let req = r.request.expect("request.json");
        assert_eq!(req["head_sha"], H1);
        assert_eq!(req["author"], MAINTAINER);
        assert!(gh.comments().is_empty());
    }
}

/// Issue 31 (7a): `MEMBER` is organization membership. A member without write access to the
/// repository (read, triage, or none) records nothing, and gets no reply either.
#[test]
fn issue_31_a_member_without_write_access_records_nothing() {
    for permission in ["read", "none"] {
        let w = World::new();
        w.write(
            "permissions/member.json",
            json!({ "permission": permission, "role_name": permission }),
        );
        let gh = FakeGithub::start(w.store.clone(), TOKEN);
        let r = w.record(&gh, &format!("/test mini @{H1}"), "member");
        assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
        assert!(r.request.is_none() && r.outputs.is_empty(), "{permission}");
        assert!(gh.comments().is_empty());
        assert!(
            r.stdout.contains(&format!(
                "::notice::member has permission '{permission}' on cupy/cupy, not write: nothing recorded"
            )),
            "{}",
            r.stdout
        );
    }
}

/// Issue 32: `/test skip` and `/test force-skip` alone, or only targets another CI serves
/// (CuPy's `external_tags`, ROCm's among them), are recorded (so they supersede an earlier
/// request for the head) with `skip` set, which keeps the label job, and so the build, from
/// running; anything else is a build. The named commit is held to the head as for any request.
#[test]
fn issue_32_requests_that_build_nothing() {
    let cases: &[(&str, &str)] = &[
        ("/test skip", "skip=skip\n"),
        ("/test force-skip", "skip=force-skip\n"),
        ("/test  skip ", "skip=skip\n"),
        ("/test rocm", "targets=rocm\nskip=external\n"),
        (
            "/test jenkins, rocm",
            "targets=jenkins, rocm\nskip=external\n",
        ),
        ("/test mini,rocm", "skip=\n"),
        ("/test skip,mini", "skip=\n"),
        ("/test rocm,", "skip=\n"),
        ("/test skipped", "skip=\n"),
    ];
    for (line, want) in cases {
        let w = World::new();
        let gh = FakeGithub::start(w.store.clone(), TOKEN);
        let r = w.record(&gh, &format!("{line} @{H1}"), MAINTAINER);
        assert!(r.ok, "{line}: {}\n{}", r.stdout, r.stderr);
        let mut got: Vec<&str> = r.outputs.lines().collect();
        let mut expected: Vec<String> = format!("head_sha={H1}\n{want}")
            .lines()
            .map(str::to_owned)
            .collect();
        got.sort_unstable();
        expected.sort_unstable();
        assert_eq!(got, expected, "{line}");
        assert!(r.request.is_some(), "{line}: recorded");
    }
    // A skip names its commit like any request: a head pushed after it is not skipped.
    let w = World::new();
    let gh = FakeGithub::start(w.store.clone(), TOKEN);
    w.set_head(H2);
    let r = w.record(&gh, &format!("/test skip @{}", &H1[..16]), MAINTAINER);
    assert!(r.ok && r.outputs.is_empty() && r.request.is_none());
    assert_eq!(gh.comments().len(), 1);
}
