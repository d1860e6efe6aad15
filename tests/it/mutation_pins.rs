//! Issue 31's mutation pass over `vouch pr-run pin`: refusals that no test held (switching
//! each off left every test passing). The project's fake GitHub serves a fork PR's finished
//! build run and its `/test` request, as in `prsign`; each case edits one fact the API gives
//! and the pin must refuse it, naming why.

use std::path::PathBuf;

use serde_json::{Value, json};
use vouch_testgh::FakeGithub;
use vouch_testsig::GithubClaims;

use crate::common::*;

const REPO: &str = "cupy/cupy";
const REPO_ID: u64 = 1;
const FORK: &str = "contributor/cupy";
const FORK_ID: u64 = 99;
const HEAD: &str = "1111111111111111111111111111111111111111";
const MOVED: &str = "2222222222222222222222222222222222222222";
const MAIN: &str = "5555555555555555555555555555555555555555";
const TOKEN: &str = "ghp_MutationPinsTokenThatMustNeverAppear0123";
const BUILD_WF: u64 = 11;
const TRIGGER_WF: u64 = 12;
const SIGN_WF: u64 = 13;
const REQUEST_RUN: u64 = 650;
const BUILD_RUN: u64 = 700;
const WHEEL: &str = "vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl";

/// The cell artifact of PR `pr` at HEAD.
fn artifact(pr: u64) -> String {
    format!("vouch-sample-py3.11-linux-64-pr{pr}-{HEAD}")
}

/// A fork PR (#7, head HEAD from `contributor/cupy`), its `/test` recorded by run 650 of the
/// trigger workflow on main, and its build run 700 with one `unsigned-<artifact>`.
struct World {
    _dir: tempfile::TempDir,
    store: PathBuf,
    token: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempdir();
        let store = dir.path().join("store");
        let token = dir.path().join("token");
        std::fs::write(&token, TOKEN).unwrap();
        let w = World {
            store,
            token,
            _dir: dir,
        };
        w.write("repository.json", repo_json(REPO, REPO_ID, false));
        for (file, id) in [
            ("vouch-build.yml", BUILD_WF),
            ("vouch-trigger.yml", TRIGGER_WF),
            ("vouch-sign.yml", SIGN_WF),
        ] {
            w.write(
                &format!("workflows/{file}.json"),
                json!({ "id": id, "path": format!(".github/workflows/{file}"), "state": "active" }),
            );
        }
        w.write(
            &format!("runs/{REQUEST_RUN}.json"),
            run_json(
                REQUEST_RUN,
                TRIGGER_WF,
                "vouch-trigger.yml",
                "issue_comment",
                MAIN,
                "main",
                REPO,
            ),
        );
        w.put_request(2001, 7, &request_json(7));
        w.write(
            &format!("runs/{BUILD_RUN}.json"),
            run_json(
                BUILD_RUN,
                BUILD_WF,
                "vouch-build.yml",
                "pull_request",
                HEAD,
                "feature",
                FORK,
            ),
        );
        w.put_artifact(
            2002,
            &format!("unsigned-{}", artifact(7)),
            json!({ "id": BUILD_RUN, "repository_id": REPO_ID, "head_repository_id": FORK_ID,
                    "head_branch": "feature", "head_sha": HEAD }),
            &[(WHEEL, b"a fork's wheel".to_vec())],
        );
        w.write("pulls/7.json", pull_json(7, HEAD));
        w.write(
            "permissions/maintainer.json",
            json!({ "permission": "write", "role_name": "maintain" }),
        );
        w
    }

    fn write(&self, rel: &str, v: Value) {
        let p = self.store.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    }

    fn edit(&self, rel: &str, f: impl FnOnce(&mut Value)) {
        let p = self.store.join(rel);
        let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        f(&mut v);
        self.write(rel, v);
    }

    fn put_artifact(&self, id: u64, name: &str, workflow_run: Value, files: &[(&str, Vec<u8>)]) {
        let zip = self.store.join(format!("artifacts/{id}.zip"));
        std::fs::create_dir_all(zip.parent().unwrap()).unwrap();
        let mut z = zip::ZipWriter::new(std::fs::File::create(&zip).unwrap());
        for (member, data) in files {
            z.start_file(*member, zip::write::SimpleFileOptions::default())
                .unwrap();
            std::io::Write::write_all(&mut z, data).unwrap();
        }
        z.finish().unwrap();
        self.write(
            &format!("artifacts/{id}.json"),
            json!({
                "id": id, "name": name, "expired": false,
                "created_at": format!("2026-08-20T10:{:02}:00Z", id % 60),
                "digest": format!("sha256:{}", sha256_file(&zip)),
                "workflow_run": workflow_run,
            }),
        );
    }

    /// The request artifact for `pr` at HEAD, uploaded by run 650 of main.
    fn put_request(&self, id: u64, pr: u64, request: &Value) {
        let event = json!({
            "action": "created",
            "issue": { "number": pr, "pull_request": {} },
            "comment": { "id": 99, "body": format!("/test mini @{HEAD}"),
                         "author_association": "MEMBER", "user": { "login": "maintainer" } },
        });
        self.put_artifact(
            id,
            &format!("vouch-request-{pr}-{HEAD}"),
            json!({ "id": REQUEST_RUN, "repository_id": REPO_ID, "head_repository_id": REPO_ID,
                    "head_branch": "main", "head_sha": MAIN }),
            &[
                ("event.json", event.to_string().into_bytes()),
                ("request.json", request.to_string().into_bytes()),
            ],
        );
    }

    /// `vouch pr-run pin` for build run 700, outside any Actions run.
    fn pin(&self) -> Run {
        let gh = FakeGithub::start(self.store.clone(), TOKEN);
        let r = run(vouch()
            .env_clear()
            .args(["pr-run", "pin", "--repo", REPO, "--run-id"])
            .arg(BUILD_RUN.to_string())
            .args(["--api-url", &gh.url, "--token-file"])
            .arg(&self.token));
        assert!(!r.stderr.contains(TOKEN) && !r.stdout.contains(TOKEN));
        r
    }
}

fn repo_json(full_name: &str, id: u64, fork: bool) -> Value {
    json!({
        "id": id, "full_name": full_name, "fork": fork, "default_branch": "main",
        "owner": { "login": full_name.split('/').next().unwrap() },
    })
}

fn run_json(
    id: u64,
    workflow_id: u64,
    file: &str,
    event: &str,
    head_sha: &str,
    head_branch: &str,
    head_repo: &str,
) -> Value {
    let head_id = if head_repo == REPO { REPO_ID } else { FORK_ID };
    json!({
        "id": id, "workflow_id": workflow_id, "path": format!(".github/workflows/{file}"),
        "event": event, "status": "completed", "conclusion": "success", "run_attempt": 1,
        // After every artifact's (10:MM): a build run is created after its request.
        "created_at": format!("2026-08-20T11:{:02}:00Z", id % 60),
        "head_sha": head_sha, "head_branch": head_branch,
        "repository": repo_json(REPO, REPO_ID, false),
        "head_repository": repo_json(head_repo, head_id, head_repo != REPO),
        "pull_requests": [],
    })
}

fn request_json(pr: u64) -> Value {
    json!({
        "schema": "https://vouch.build/test-request/v1", "repository": REPO, "pr": pr,
        "head_sha": HEAD, "head_repository": FORK, "base_ref": "main", "base_sha": MAIN,
        "comment_id": 99, "author": "maintainer", "author_association": "MEMBER",
        "recorded_by_run": REQUEST_RUN,
    })
}

fn pull_json(pr: u64, head: &str) -> Value {
    json!({
        "number": pr, "state": "open",
        "head": { "ref": "feature", "sha": head, "label": "contributor:feature",
                  "repo": repo_json(FORK, FORK_ID, true) },
        "base": { "ref": "main", "sha": MAIN, "repo": repo_json(REPO, REPO_ID, false) },
    })
}

#[test]
fn issue31_the_unedited_world_pins() {
    let r = World::new().pin();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        serde_json::from_str::<Value>(&r.stdout).unwrap(),
        json!({ "include": [{ "artifact": artifact(7) }] })
    );
}

/// One edit of what the API says, and words the refusal must contain.
#[test]
fn issue31_pin_refuses() {
    type Edit = fn(&World);
    let cases: &[(&str, Edit, &str)] = &[
        (
            "the request was recorded by another workflow's run",
            |w| w.edit("runs/650.json", |r| r["workflow_id"] = SIGN_WF.into()),
            "recorded by run 650, which is a run of workflow 13",
        ),
        (
            "the request run has the trigger's id but another path",
            |w| {
                w.edit("runs/650.json", |r| {
                    r["path"] = ".github/workflows/other.yml".into()
                })
            },
            "recorded by run 650, which is a run of workflow 12 (\".github/workflows/other.yml\")",
        ),
        (
            "the request run ran another branch",
            |w| w.edit("runs/650.json", |r| r["head_branch"] = "feature".into()),
            "recorded by run 650, which is a run of branch \"feature\" of \"cupy/cupy\"",
        ),
        (
            "the request run belongs to another repository",
            |w| {
                w.edit("runs/650.json", |r| {
                    r["repository"] = repo_json(FORK, FORK_ID, true)
                })
            },
            "recorded by run 650, which is a run of branch \"main\" of \"contributor/cupy\"",
        ),
        (
            "the request names another recording run",
            |w| {
                let mut req = request_json(7);
                req["recorded_by_run"] = 651.into();
                w.put_request(2001, 7, &req);
            },
            "the request recorded for #7 says recorded_by_run is \"651\", the API says \"650\"",
        ),
        (
            "the pull request moved after the build",
            |w| w.write("pulls/7.json", pull_json(7, MOVED)),
            MOVED,
        ),
        (
            "two open pull requests from the head have a request for it",
            |w| {
                w.write("pulls/8.json", pull_json(8, HEAD));
                w.put_request(2005, 8, &request_json(8));
            },
            "pull requests #7, #8 all have a /test request for",
        ),
        (
            "the API names no head repository for the build run",
            |w| w.edit("runs/700.json", |r| r["head_repository"] = Value::Null),
            "the API names no head repository for it",
        ),
        (
            "the build run is not completed, whatever its conclusion says",
            |w| w.edit("runs/700.json", |r| r["status"] = "in_progress".into()),
            "it did not succeed (status \"in_progress\", conclusion \"success\")",
        ),
    ];
    for (what, edit, words) in cases {
        let w = World::new();
        edit(&w);
        let r = w.pin();
        assert_ne!(r.code, 0, "{what}: pinned\n{}", r.stdout);
        assert!(r.stderr.contains(words), "{what}: {}", r.stderr);
    }
}

// ------------------------------------------------------------------ vouch fetch, push builds

/// `vouch fetch` of the push build `fetch`'s world published (run 500 at HEAD), held to `cell`.
fn fetch_push(w: &crate::fetch::World, gh: &FakeGithub, cell: &str) -> Run {
    let token = w.dir.path().join("token");
    std::fs::write(&token, crate::fetch::TOKEN).unwrap();
    let out = w.dir.path().join("out");
    let r = run(vouch()
        .args(["fetch", "--repo", crate::fetch::REPO])
        .args(["--workflow", ".github/workflows/vouch-build.yml"])
        .args(["--api-url", &gh.url, "--token-file"])
        .arg(&token)
        .arg("--trust-root")
        .arg(&w.root)
        .arg("--out")
        .arg(&out)
        .args(["--json", "--event", "push", "--sha", crate::fetch::HEAD])
        .args(["--dist", "cupy-cuda13x", "--python-version", "3.12"])
        .args(["--platform", "linux-64", "--cell", cell]));
    if r.code != 0 {
        assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
    }
    r
}

/// The certificate of a push build's bundle must name the expected commit, event and cell
/// even where the run the API describes (run 500: push of main at HEAD, the build workflow)
/// is the expected one: the API's run and the certificate are two witnesses, and the policy
/// holds the certificate to the expectation itself.
#[test]
fn issue31_fetch_holds_a_push_certificate_to_the_expectation() {
    const CELL: &str = "cuda13x-py3.12-linux-64";
    type Edit = fn(&mut GithubClaims);
    let cases: &[(&str, Edit, &str, &str)] = &[
        ("as expected", |_| {}, CELL, ""),
        (
            "signed at another commit",
            |c| c.sha = MOVED.into(),
            CELL,
            "source commit (OID .1.13): expected \"1111111111111111111111111111111111111111\", found \"2222222222222222222222222222222222222222\"",
        ),
        (
            "signed by a run of another event",
            |c| c.event_name = "workflow_dispatch".into(),
            CELL,
            "build trigger (OID .1.20): expected \"push\", found \"workflow_dispatch\"",
        ),
        (
            "signed for another cell",
            |_| {},
            "cuda13x-py3.12-linux-64-other",
            "statement cell (internalParameters.vouch.cell): expected \"cuda13x-py3.12-linux-64-other\", found \"cuda13x-py3.12-linux-64\"",
        ),
    ];
    for (what, edit, cell, words) in cases {
        let w = crate::fetch::World::new();
        let mut c = crate::fetch::claims("push", "vouch-build.yml", 500);
        edit(&mut c);
        let (wheel, bundle) = w.signed(what, &c, b"the wheel");
        w.publish(
            &format!("cupy-cuda13x-py3.12-linux-64-{}", crate::fetch::HEAD),
            500,
            &[wheel, bundle],
        );
        let gh = w.github();
        let r = fetch_push(&w, &gh, cell);
        if words.is_empty() {
            assert_eq!(r.code, 0, "{what}: {}", r.stderr);
        } else {
            assert_ne!(r.code, 0, "{what}: fetched\n{}", r.stdout);
            assert!(r.stderr.contains(words), "{what}: {}", r.stderr);
        }
    }
}
