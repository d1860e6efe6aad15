//! `vouch dispatch`: the FlexCI webhook byte for byte against CPython's oracle, on the wire to
//! a loopback server playing FlexCI; and the cases around it (push, refusals, bad input,
//! `repository_dispatch`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use vouch_testgh::webhook::{Recorded, WebhookServer};

use crate::common::{Run, repo_root, run, snapshot_cases, tempdir, vouch};
use crate::vouch_snapshot;

const JOBS: &str = r#"{"job_ids": [{"id": 1}]}"#;

fn fixture(name: &str) -> PathBuf {
    repo_root()
        .join("crates/vouch-dispatch/tests/fixtures")
        .join(name)
}

/// A copy of the fixture secret (the command deletes the file it reads) and the secret itself.
fn secret_file(dir: &Path) -> (PathBuf, String) {
    let text = std::fs::read_to_string(fixture("secret.txt")).unwrap();
    let path = dir.join("secret");
    std::fs::write(&path, &text).unwrap();
    (path, text.trim_end_matches('\n').to_owned())
}

fn flexci(server: &str, event: &str, webhook: &Path, secret: &Path) -> std::process::Command {
    let mut cmd = vouch();
    cmd.args(["dispatch", "flexci", "--event", event, "--webhook"])
        .arg(webhook)
        .arg("--projects")
        .arg(fixture("projects.json"))
        .arg("--password-file")
        .arg(secret)
        .args(["--flexci-uri", server]);
    cmd
}

/// The query's `project` list as a set (CuPy joins a Python set, whose order varies per
/// process), and the other parameters as sent.
fn query_parts(r: &Recorded) -> (BTreeSet<&str>, Vec<(&str, &str)>) {
    let mut projects = BTreeSet::new();
    let mut rest = Vec::new();
    for (k, v) in r.query() {
        if k == "project" {
            projects.extend(v.split(','));
        } else {
            rest.push((k, v));
        }
    }
    (projects, rest)
}

/// CuPy's dispatcher, for the committed fixture (`/test mini,windows` from a MEMBER, with
/// non-ASCII, an emoji, `\r\n` and `+1`/`-1` reaction keys), sends exactly the body and
/// signatures CPython's `json.dumps` and `hmac` make: the committed oracle, re-derived here
/// when python3 exists. vouch's request, as the server received it, is compared with them.
#[test]
#[allow(clippy::print_stderr)] // says when the python3 half is skipped
fn flexci_webhook_is_byte_for_byte_cupys() {
    let server = WebhookServer::start(200, JOBS);
    let dir = tempdir();
    let (secret_path, secret) = secret_file(dir.path());
    let expected_body = std::fs::read(fixture("expected-body.json")).unwrap();
    let signatures = std::fs::read_to_string(fixture("expected-signatures.txt")).unwrap();

    // The oracle still holds: CPython makes the committed bytes.
    let oracle_out = dir.path().join("python-body.json");
    match std::process::Command::new("python3")
        .arg(fixture("oracle.py"))
        .arg(fixture("event.json"))
        .arg(fixture("secret.txt"))
        .arg(&oracle_out)
        .output()
    {
        Ok(out) => {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(String::from_utf8(out.stdout).unwrap(), signatures);
            assert!(std::fs::read(&oracle_out).unwrap() == expected_body);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("python3 not found: the committed oracle is used as it is");
        }
        Err(e) => panic!("python3: {e}"),
    }

    let r = vouch_snapshot!(
        flexci(&server.url, "issue_comment", &fixture("event.json"), &secret_path)
            .args(["--external-tag", "jenkins", "--external-tag", "rocm"]),
        @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    http://127.0.0.1:[PORT]/r/job/1

    ----- stderr -----
    requested tags: mini, windows
    dispatching 2 of 7 projects: gpu-array.win.cuda129, gpu-array.win.cuda130
    no request.json beside "[REPO]/crates/vouch-dispatch/tests/fixtures/event.json": the webhook names no vouched commit, so the test farm cannot check its checkout against one
    request URI: http://127.0.0.1:[PORT]/x/github_webhook?project=gpu-array.win.cuda129,gpu-array.win.cuda130&rule=issue_comment:.%2B&quiet=true
    "#
    );
    assert!(!secret_path.exists(), "the secret file stays behind");
    assert!(!r.stdout.contains(&secret) && !r.stderr.contains(&secret));

    let seen = server.requests();
    assert_eq!(seen.len(), 1, "sent once");
    let req = &seen[0];
    assert_eq!(
        (req.method.as_str(), req.path()),
        ("POST", "/x/github_webhook")
    );
    let (projects, rest) = query_parts(req);
    assert_eq!(
        projects,
        BTreeSet::from(["gpu-array.win.cuda129", "gpu-array.win.cuda130"])
    );
    assert_eq!(rest, [("rule", "issue_comment:.%2B"), ("quiet", "true")]);
    assert!(req.body == expected_body, "the body is not CPython's");
    let mut lines = signatures.lines();
    for (name, value) in [
        ("User-Agent", "FlexCI-Dispatcher"),
        ("Content-Type", "application/json"),
        ("X-GitHub-Event", "issue_comment"),
        ("X-Hub-Signature", lines.next().unwrap()),
        ("X-Hub-Signature-256", lines.next().unwrap()),
    ] {
        assert_eq!(req.header(name), Some(value), "{name}");
    }
    assert_eq!(
        req.header("Content-Length"),
        Some(expected_body.len().to_string().as_str())
    );
}

/// Every other way a dispatch ends, each with its exit status and what reached the server.
#[test]
fn dispatch_cases() {
    let dir = tempdir();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let comment = |body: &str, association: &str| {
        serde_json::json!({"action": "created", "issue": {"number": 7},
            "comment": {"body": body, "author_association": association}})
        .to_string()
    };
    let push = write(
        "push.json",
        "{\n  \"ref\": \"refs/heads/main\",\n  \"after\": \"0123\",\n  \"head_commit\": {\"message\": \"Caf\u{e9}\"}\n}\n",
    );
    let float = write(
        "float.json",
        "{\"action\": \"created\",\n \"comment\": {\"body\": \"/test mini\", \"score\": 0.5}}",
    );
    let no_request = write("none.json", &comment("LGTM, thanks!", "MEMBER"));
    let contributor = write("contributor.json", &comment("/test mini", "CONTRIBUTOR"));
    let nothing = write("nothing.json", &comment("/test mini,rocm", "MEMBER"));
    let external = write("external.json", &comment("/test jenkins", "OWNER"));
    let token = "ghs_not-a-real-token";
    let payload = write("payload.json", r#"{"pr": 7, "head_sha": "0123"}"#);
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("http://127.0.0.1:{dead_port}");

    let mut cases: Vec<(&str, Run)> = Vec::new();
    let mut secrets = Vec::new();
    let mut flexci_case =
        |label: &'static str, reply: (u16, &str), event: &str, webhook: &Path, extra: &[&str]| {
            let server = WebhookServer::start(reply.0, reply.1);
            let (secret_path, secret) = secret_file(dir.path());
            secrets.push(secret);
            let r = run(flexci(&server.url, event, webhook, &secret_path).args(extra));
            (label, r, server.requests())
        };

    // A push asks for @push, and the rule names the event.
    let (label, r, seen) = flexci_case("push", (200, JOBS), "push", &push, &[]);
    assert_eq!(seen.len(), 1);
    let (projects, rest) = query_parts(&seen[0]);
    assert_eq!(
        projects,
        BTreeSet::from([
            "gpu-array.linux.cuda129",
            "gpu-array.linux.cuda130",
            "gpu-array.linux.cuda130.multi",
            "gpu-array.win.cuda130"
        ])
    );
    assert_eq!(rest, [("rule", "push:.%2B"), ("quiet", "true")]);
    assert_eq!(seen[0].header("x-github-event"), Some("push"));
    assert_eq!(
        seen[0].body,
        br#"{"ref": "refs/heads/main", "after": "0123", "head_commit": {"message": "Caf\u00e9"}}"#
    );
    cases.push((label, r));

    // FlexCI's own refusal, seen with every log line on: the message, never the secret.
    let refusal = (200, r#"{"message": "signature mismatch"}"#);
    let (label, r, seen) = flexci_case("refused", refusal, "push", &push, &["-vvv"]);
    assert_eq!(seen.len(), 1, "a refusal is not retried");
    cases.push((label, r));

    for (label, webhook, extra) in [
        ("float", &float, &[][..]),
        ("no /test line", &no_request, &[]),
        ("CONTRIBUTOR", &contributor, &[]),
        ("no project has every tag", &nothing, &[]),
        (
            "only external tags",
            &external,
            &["--external-tag", "jenkins"],
        ),
    ] {
        let (label, r, seen) = flexci_case(label, (200, JOBS), "issue_comment", webhook, extra);
        assert!(seen.is_empty(), "{label}: sent {seen:?}");
        cases.push((label, r));
    }

    // A dry run sends nothing, writes the exact request, and --keep-password-file keeps the file.
    let out = dir.path().join("dry");
    let (label, r, seen) = flexci_case(
        "dry run",
        (200, JOBS),
        "issue_comment",
        &fixture("event.json"),
        &[
            "--dry-run",
            "--out",
            out.to_str().unwrap(),
            "--keep-password-file",
        ],
    );
    assert!(seen.is_empty(), "a dry run sent {seen:?}");
    assert!(
        dir.path().join("secret").exists(),
        "--keep-password-file removed it"
    );
    let expected_body = std::fs::read(fixture("expected-body.json")).unwrap();
    assert!(std::fs::read(out.join("body.json")).unwrap() == expected_body);
    let request: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("request.json")).unwrap()).unwrap();
    let signatures = std::fs::read_to_string(fixture("expected-signatures.txt")).unwrap();
    assert_eq!(request["headers"][3][1], signatures.lines().next().unwrap());
    assert_eq!(request["headers"][4][1], signatures.lines().nth(1).unwrap());
    cases.push((label, r));

    let (secret_path, _) = secret_file(dir.path());
    cases.push((
        "unreachable",
        run(flexci(&dead, "push", &push, &secret_path).arg("-vvv")),
    ));
    let (secret_path, _) = secret_file(dir.path());
    cases.push((
        "plain http off loopback",
        run(&mut flexci(
            "http://ci.example",
            "push",
            &push,
            &secret_path,
        )),
    ));

    let repository = |status: u16, reply: &str| {
        let server = WebhookServer::start(status, reply);
        let token_path = write("token", &format!("{token}\n"));
        let r = run(vouch()
            .args(["dispatch", "repository", "--repo", "o/farm", "--token-file"])
            .arg(&token_path)
            .args([
                "--api-url",
                &server.url,
                "--event-type",
                "vouch-build-completed",
            ])
            .arg("--payload-file")
            .arg(&payload)
            .arg("-vvv"));
        assert!(!token_path.exists(), "the token file stays behind");
        (r, server.requests())
    };
    let (r, seen) = repository(204, "");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].target, "/repos/o/farm/dispatches");
    assert_eq!(
        seen[0].header("authorization"),
        Some(&*format!("Bearer {token}"))
    );
    let body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"event_type": "vouch-build-completed",
            "client_payload": {"pr": 7, "head_sha": "0123"}})
    );
    cases.push(("repository_dispatch", r));
    let (r, seen) = repository(401, r#"{"message": "Bad credentials"}"#);
    assert_eq!(seen.len(), 1);
    cases.push(("repository_dispatch refused", r));

    for (label, r) in &cases {
        for secret in secrets.iter().map(String::as_str).chain([token]) {
            assert!(
                !r.stdout.contains(secret) && !r.stderr.contains(secret),
                "{label}: a secret is in the output"
            );
        }
    }
    insta::assert_snapshot!(snapshot_cases(cases, &[]), @r#"
    ===== "push"
    success: true
    exit_code: 0
    ----- stdout -----
    http://127.0.0.1:[PORT]/r/job/1

    ----- stderr -----
    requested tags: @push
    dispatching 4 of 7 projects: gpu-array.linux.cuda129, gpu-array.linux.cuda130, gpu-array.linux.cuda130.multi, gpu-array.win.cuda130
    request URI: http://127.0.0.1:[PORT]/x/github_webhook?project=gpu-array.linux.cuda129,gpu-array.linux.cuda130,gpu-array.linux.cuda130.multi,gpu-array.win.cuda130&rule=push:.%2B&quiet=true

    ===== "refused"
    success: false
    exit_code: 5
    ----- stdout -----

    ----- stderr -----
    requested tags: @push
    dispatching 4 of 7 projects: gpu-array.linux.cuda129, gpu-array.linux.cuda130, gpu-array.linux.cuda130.multi, gpu-array.win.cuda130
    request URI: http://127.0.0.1:[PORT]/x/github_webhook?project=gpu-array.linux.cuda129,gpu-array.linux.cuda130,gpu-array.linux.cuda130.multi,gpu-array.win.cuda130&rule=push:.%2B&quiet=true
    error: FlexCI refused the webhook: signature mismatch

    ===== "float"
    success: false
    exit_code: 3
    ----- stdout -----

    ----- stderr -----
    error: "[TEMP]/float.json" is not valid JSON for a dispatch
      caused by: the number 0.5 is not a 64-bit integer (a float, -0 or a huge integer); Python's json.dumps would re-serialise it in its own form, which vouch does not imitate (GitHub's payloads carry only integers) at line 2 column 47

    ===== "no /test line"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    no line of the comment is a `/test TAGS` request: nothing dispatched

    ===== "CONTRIBUTOR"
    success: false
    exit_code: 3
    ----- stdout -----

    ----- stderr -----
    error: tests cannot be requested by a commenter whose author_association is "CONTRIBUTOR"; expected OWNER or MEMBER

    ===== "no project has every tag"
    success: false
    exit_code: 3
    ----- stdout -----

    ----- stderr -----
    requested tags: mini, rocm
    error: no project carries every requested tag ["mini", "rocm"] (a project is dispatched only when it has all of them)

    ===== "only external tags"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    requested tags: skip
    `/test skip`: no project is dispatched (7 skipped)

    ===== "dry run"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    requested tags: mini, windows
    dispatching 2 of 7 projects: gpu-array.win.cuda129, gpu-array.win.cuda130
    no request.json beside "[REPO]/crates/vouch-dispatch/tests/fixtures/event.json": the webhook names no vouched commit, so the test farm cannot check its checkout against one
    request URI: http://127.0.0.1:[PORT]/x/github_webhook?project=gpu-array.win.cuda129,gpu-array.win.cuda130&rule=issue_comment:.%2B&quiet=true
    dry run: nothing sent; the request is in "[TEMP]/dry"

    ===== "unreachable"
    success: false
    exit_code: 5
    ----- stdout -----

    ----- stderr -----
    requested tags: @push
    dispatching 4 of 7 projects: gpu-array.linux.cuda129, gpu-array.linux.cuda130, gpu-array.linux.cuda130.multi, gpu-array.win.cuda130
    request URI: http://127.0.0.1:[PORT]/x/github_webhook?project=gpu-array.linux.cuda129,gpu-array.linux.cuda130,gpu-array.linux.cuda130.multi,gpu-array.win.cuda130&rule=push:.%2B&quiet=true
    error: POST http://127.0.0.1:[PORT]/x/github_webhook: no answer
      caused by: POST http://127.0.0.1:[PORT]/x/github_webhook: connection failed

    ===== "plain http off loopback"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: --flexci-uri http://ci.example/: expected an https URL (plain http only on loopback): the request carries the event and its signature

    ===== "repository_dispatch"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    created a "vouch-build-completed" repository_dispatch event in o/farm

    ===== "repository_dispatch refused"
    success: false
    exit_code: 5
    ----- stdout -----

    ----- stderr -----
    error: POST http://127.0.0.1:[PORT]/repos/o/farm/dispatches failed with HTTP 401: Bad credentials
    "#);
}

/// Issue 31 (4): a pull request's dispatch names the commit the signer vouched for. The
/// request record `vouch pr-run pin --request-out` writes beside the event supplies it; the
/// body is CuPy's to the last member, then one more, `vouch`, which the signatures cover. An
/// event of another pull request than the request's is refused, and nothing is sent.
#[test]
fn issue31_the_dispatch_names_the_vouched_commit() {
    let dir = tempdir();
    let request_dir = dir.path().join("request");
    std::fs::create_dir_all(&request_dir).unwrap();
    let webhook = request_dir.join("event.json");
    std::fs::copy(fixture("event.json"), &webhook).unwrap();
    let head = "0123456789abcdef0123456789abcdef01234567";
    let request = |pr: u64| {
        serde_json::json!({
            "schema": "https://vouch.build/test-request/v1",
            "repository": "example-org/gpu-array",
            "pr": pr,
            "head_sha": head,
            "head_repository": "contributor/gpu-array",
            "base_ref": "main",
            "base_sha": "89abcdef0123456789abcdef0123456789abcdef",
            "comment_id": 1,
            "author": "maintainer",
            "author_association": "MEMBER",
            "recorded_by_run": 42,
        })
        .to_string()
    };
    std::fs::write(request_dir.join("request.json"), request(10049)).unwrap();
    let server = WebhookServer::start(200, JOBS);
    let (secret_path, secret) = secret_file(dir.path());
    let r = run(
        flexci(&server.url, "issue_comment", &webhook, &secret_path).args([
            "--external-tag",
            "jenkins",
            "--json",
        ]),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["vouched_commit"], head);
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    let expected = std::fs::read_to_string(fixture("expected-body.json")).unwrap();
    let cupys = expected.strip_suffix('}').unwrap();
    let body = String::from_utf8(seen[0].body.clone()).unwrap();
    assert_eq!(
        body,
        format!(
            r#"{cupys}, "vouch": {{"schema": "https://vouch.build/flexci-dispatch/v1", "repository": "example-org/gpu-array", "pr": 10049, "commit": "{head}"}}}}"#
        )
    );
    let (sha1, sha256) = vouch_dispatch::signatures(secret.as_bytes(), body.as_bytes());
    assert_eq!(seen[0].header("X-Hub-Signature"), Some(sha1.as_str()));
    assert_eq!(seen[0].header("X-Hub-Signature-256"), Some(sha256.as_str()));

    // The request is another pull request's: refused before anything is sent.
    std::fs::write(request_dir.join("request.json"), request(10050)).unwrap();
    let server = WebhookServer::start(200, JOBS);
    let (secret_path, _) = secret_file(dir.path());
    let r = run(flexci(&server.url, "issue_comment", &webhook, &secret_path)
        .args(["--external-tag", "jenkins"]));
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "the event's issue.number is 10049, but the request vouched for pull request 10050"
        ),
        "{}",
        r.stderr
    );
    assert!(server.requests().is_empty(), "nothing sent");
}
