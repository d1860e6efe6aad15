//! The generated workflows for the CuPy profile: pinned by snapshot, checked for staleness, and
//! audited for the trust rules, with one mutated copy per rule to show the audit can fail.

use std::path::{Path, PathBuf};

use vouch_profile::Profile;
use vouch_workflows::{
    GeneratedFile, Options, Rule, StaleKind, Violation, audit_trust, check, generate, write_files,
};

fn cupy_profile() -> Profile {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pyproject-templates/cupy/vouch.toml");
    Profile::load(&path).expect("the CuPy profile loads")
}

fn options() -> Options {
    Options::new(
        "vouch.toml",
        "0.1.0",
        vec![
            // Stand-ins: the Linux x86_64, Linux aarch64 and Windows wheels.
            "1".repeat(64),
            "2".repeat(64),
            "3".repeat(64),
        ],
    )
}

fn files() -> Vec<GeneratedFile> {
    generate(&cupy_profile(), &options()).expect("generates")
}

fn file(name: &str) -> GeneratedFile {
    files()
        .into_iter()
        .find(|f| f.name == name)
        .expect("generated")
}

#[test]
fn snapshots() {
    let files = files();
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["vouch-trigger.yml", "vouch-build.yml", "vouch-dispatch.yml"]
    );
    for f in &files {
        assert!(
            f.contents.starts_with(vouch_workflows::HEADER),
            "{}",
            f.name
        );
        insta::assert_snapshot!(f.name.clone(), &f.contents);
    }
}

#[test]
fn deterministic() {
    assert_eq!(files(), files());
    // Hash order does not matter.
    let mut reversed = options();
    reversed.vouch_wheel_sha256.reverse();
    assert_eq!(generate(&cupy_profile(), &reversed).unwrap(), files());
}

/// Writes the files to `$VOUCH_WORKFLOWS_OUT` when set, for linters (zizmor, actionlint).
#[test]
fn write_out_for_linters() {
    let Some(dir) = std::env::var_os("VOUCH_WORKFLOWS_OUT") else {
        return;
    };
    write_files(&PathBuf::from(dir), &files()).expect("writes");
}

#[test]
fn check_fresh_stale_missing_unexpected() {
    let expected = files();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".github/workflows");

    // Nothing there yet: every file is missing.
    let stale = check(&dir, &expected).unwrap();
    assert_eq!(stale.len(), 3);
    assert!(stale.iter().all(|s| s.kind == StaleKind::Missing));

    write_files(&dir, &expected).unwrap();
    assert_eq!(check(&dir, &expected).unwrap(), []);

    // A one-line edit: reported, with a diff naming the line.
    let build = dir.join("vouch-build.yml");
    let text = std::fs::read_to_string(&build).unwrap();
    let edited = text.replacen("timeout-minutes: 240", "timeout-minutes: 30", 1);
    assert_ne!(edited, text);
    std::fs::write(&build, &edited).unwrap();
    // Another, unrelated workflow of the repository is left alone.
    std::fs::write(dir.join("docs.yml"), "name: docs\non: push\n").unwrap();
    let stale = check(&dir, &expected).unwrap();
    assert_eq!(stale.len(), 1, "{stale:#?}");
    assert_eq!(stale[0].name, "vouch-build.yml");
    assert_eq!(stale[0].kind, StaleKind::Changed);
    let diff = &stale[0].diff;
    assert!(diff.contains("--- a/vouch-build.yml"), "{diff}");
    assert!(diff.contains("+++ b/vouch-build.yml"), "{diff}");
    assert!(diff.contains("\n-    timeout-minutes: 30\n"), "{diff}");
    assert!(diff.contains("\n+    timeout-minutes: 240\n"), "{diff}");
    assert_eq!(diff.lines().filter(|l| l.starts_with("@@")).count(), 1);

    // A file vouch generated once and no longer does; and a missing one.
    std::fs::write(&build, &text).unwrap();
    std::fs::write(
        dir.join("vouch-old.yml"),
        format!("{}\nname: old\n", vouch_workflows::HEADER),
    )
    .unwrap();
    std::fs::remove_file(dir.join("vouch-dispatch.yml")).unwrap();
    let stale = check(&dir, &expected).unwrap();
    let kinds: Vec<(&str, StaleKind)> = stale.iter().map(|s| (s.name.as_str(), s.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("vouch-dispatch.yml", StaleKind::Missing),
            ("vouch-old.yml", StaleKind::Unexpected)
        ]
    );
    assert!(stale[0].diff.contains("+name: vouch-dispatch"));
    assert!(stale[1].diff.contains("-name: old"));
}

#[test]
fn audit_passes_on_the_generated_files() {
    let v = audit_trust(&files()).unwrap();
    assert!(v.is_empty(), "{v:#?}");
}

/// Audits `name` after replacing `from` (which must occur) by `to`.
fn audit_mutated(name: &str, from: &str, to: &str) -> Vec<Violation> {
    let mut f = file(name);
    assert!(f.contents.contains(from), "{name} has no {from:?}");
    f.contents = f.contents.replacen(from, to, 1);
    audit_trust(&[f]).unwrap()
}

fn assert_caught(v: &[Violation], rule: Rule, job: Option<&str>) {
    assert!(
        v.iter().any(|x| x.rule == rule && x.job.as_deref() == job),
        "expected {rule} in job {job:?}, got {v:#?}"
    );
}

#[test]
fn audit_catches_top_level_permissions() {
    let v = audit_mutated(
        "vouch-build.yml",
        "\npermissions: {}\n",
        "\npermissions: write-all\n",
    );
    assert_caught(&v, Rule::TopLevelPermissions, None);
    let v = audit_mutated("vouch-dispatch.yml", "\npermissions: {}\n", "\n");
    assert_caught(&v, Rule::TopLevelPermissions, None);
    let v = audit_mutated(
        "vouch-trigger.yml",
        "\npermissions: {}\n",
        "\npermissions:\n  contents: read\n",
    );
    assert_caught(&v, Rule::TopLevelPermissions, None);
}

#[test]
fn audit_catches_signing_permissions_outside_attest() {
    // The build job (it runs the pull request's code) must not get an OIDC token.
    let v = audit_mutated(
        "vouch-build.yml",
        "      contents: read # check out the source\n",
        "      contents: read # check out the source\n      id-token: write\n",
    );
    assert_caught(&v, Rule::SigningPermissionOutsideAttest, Some("build-push"));
    assert!(
        v.iter().all(|x| x.job.as_deref() == Some("build-push")),
        "{v:#?}"
    );
    let v = audit_mutated(
        "vouch-build.yml",
        "    permissions:\n      contents: read # check out the profile\n",
        "    permissions:\n      attestations: write\n      contents: read\n",
    );
    assert_caught(&v, Rule::SigningPermissionOutsideAttest, Some("plan"));
    let v = audit_mutated(
        "vouch-dispatch.yml",
        "    permissions: {}\n    steps:",
        "    permissions: write-all\n    steps:",
    );
    assert_caught(&v, Rule::SigningPermissionOutsideAttest, Some("dispatch"));
}

#[test]
fn audit_catches_a_signing_job_that_checks_out() {
    let checkout = vouch_workflows::pins::CHECKOUT.uses();
    let v = audit_mutated(
        "vouch-build.yml",
        "      matrix: ${{ fromJson(needs.plan.outputs.matrix) }}\n    steps:\n      - name: Install vouch",
        &format!(
            "      matrix: ${{{{ fromJson(needs.plan.outputs.matrix) }}}}\n    steps:\n      - uses: {checkout}\n        with:\n          persist-credentials: false\n      - name: Install vouch"
        ),
    );
    assert_caught(&v, Rule::SigningJobChecksOut, Some("attest"));
}

#[test]
fn audit_catches_checkout_and_cache_in_privileged_workflows() {
    let checkout = vouch_workflows::pins::CHECKOUT.uses();
    let steps = "    steps:\n      - name: GitHub App token";
    let v = audit_mutated(
        "vouch-trigger.yml",
        steps,
        &format!(
            "    steps:\n      - uses: {checkout}\n        with:\n          persist-credentials: false\n      - name: GitHub App token"
        ),
    );
    assert_caught(&v, Rule::PrivilegedCheckout, Some("trigger"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        steps,
        "    steps:\n      - run: gh pr checkout \"$PR_NUMBER\"\n      - name: GitHub App token",
    );
    assert_caught(&v, Rule::PrivilegedCheckout, Some("trigger"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        steps,
        "    steps:\n      - uses: actions/cache@5a3ec84eff668545956fd18022155c47e93e2684\n        with:\n          path: ~/.cache\n          key: k\n      - name: GitHub App token",
    );
    assert_caught(&v, Rule::PrivilegedCache, Some("trigger"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        "          LABEL: 'ci:triggered'\n",
        "          LABEL: 'ci:triggered'\n          VOUCH_CACHE_STORE: ${{ vars.VOUCH_CACHE_STORE }}\n",
    );
    assert_caught(&v, Rule::PrivilegedCache, Some("trigger"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        "    permissions: {}\n    steps:",
        "    permissions: {}\n    env:\n      SCCACHE_WEBDAV_ENDPOINT: http://x\n    steps:",
    );
    assert_caught(&v, Rule::PrivilegedCache, Some("trigger"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        "        run: |\n",
        "        run: |\n          vouch build --source . --out dist --cache sccache --cache-store /c\n",
    );
    assert_caught(&v, Rule::PrivilegedCache, Some("trigger"));
    // The same trigger job under pull_request_target.
    let mut f = file("vouch-trigger.yml");
    f.contents = f
        .contents
        .replace("  issue_comment:\n", "  pull_request_target:\n")
        .replace(
            steps,
            &format!(
                "    steps:\n      - uses: {checkout}\n        with:\n          persist-credentials: false\n      - name: GitHub App token"
            ),
        );
    let v = audit_trust(&[f]).unwrap();
    assert_caught(&v, Rule::PrivilegedCheckout, Some("trigger"));
    // A checkout in the build workflow (pull_request, push) is fine.
    assert!(audit_trust(&[file("vouch-build.yml")]).unwrap().is_empty());
}

#[test]
fn audit_catches_unpinned_uses() {
    let pin = vouch_workflows::pins::CHECKOUT;
    let v = audit_mutated(
        "vouch-build.yml",
        &format!("{}@{}", pin.action, pin.sha),
        "actions/checkout@v4",
    );
    assert_caught(&v, Rule::UnpinnedUses, Some("plan"));
    let pin = vouch_workflows::pins::CREATE_APP_TOKEN;
    let v = audit_mutated(
        "vouch-dispatch.yml",
        &format!("{}@{}", pin.action, pin.sha),
        "actions/create-github-app-token@main",
    );
    assert_caught(&v, Rule::UnpinnedUses, Some("dispatch"));
    let v = audit_mutated(
        "vouch-dispatch.yml",
        "    runs-on: ubuntu-24.04\n    timeout-minutes: 5\n    permissions: {}\n    steps:",
        "    uses: octo/wf/.github/workflows/x.yml@v1\n    steps:",
    );
    assert_caught(&v, Rule::UnpinnedUses, Some("dispatch"));
}

#[test]
fn audit_catches_persisted_credentials() {
    let v = audit_mutated(
        "vouch-build.yml",
        "persist-credentials: false",
        "persist-credentials: true",
    );
    assert_caught(&v, Rule::PersistedCredentials, Some("plan"));
    let v = audit_mutated(
        "vouch-build.yml",
        "        with:\n          persist-credentials: false\n      - name: Set up Python",
        "      - name: Set up Python",
    );
    assert_caught(&v, Rule::PersistedCredentials, Some("build-push"));
}

#[test]
fn audit_catches_expressions_in_run() {
    let v = audit_mutated(
        "vouch-build.yml",
        "--cell \"$CELL\"",
        "--cell \"${{ matrix.cell }}\"",
    );
    assert_caught(&v, Rule::ExpressionInRun, Some("build-push"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        "\"repos/$REPO/issues/comments/$COMMENT_ID/reactions\"",
        "\"repos/$REPO/issues/comments/${{ github.event.comment.id }}/reactions\"",
    );
    assert_caught(&v, Rule::ExpressionInRun, Some("trigger"));
    let v = audit_mutated(
        "vouch-dispatch.yml",
        "--arg head_sha \"$HEAD_SHA\"",
        "--arg head_sha ${{ github.event.workflow_run.head_sha }}",
    );
    assert_caught(&v, Rule::ExpressionInRun, Some("dispatch"));
}

#[test]
fn audit_reports_files_that_are_not_workflows() {
    let bad = |contents: &str| {
        audit_trust(&[GeneratedFile {
            name: "x.yml".into(),
            contents: contents.into(),
        }])
        .unwrap_err()
        .to_string()
    };
    assert!(bad("jobs: [unclosed").contains("x.yml: not valid YAML"));
    assert!(bad("name: x\n").contains("no `jobs` mapping"));
    assert!(bad("- a\n- b\n").contains("a mapping"));
}

#[test]
fn options_are_validated() {
    let profile = cupy_profile();
    let err = |o: Options| generate(&profile, &o).unwrap_err().to_string();
    let mut o = options();
    o.vouch_wheel_sha256.clear();
    assert!(err(o).contains("--require-hashes"));
    let mut o = options();
    o.vouch_wheel_sha256.push("abc".into());
    assert!(err(o).contains("64 hex digits"));
    for p in [
        "",
        "/abs/vouch.toml",
        "../vouch.toml",
        "a b.toml",
        "x/'y'.toml",
        "-x",
    ] {
        let mut o = options();
        o.profile_path = p.into();
        assert!(err(o).contains("profile path"), "{p:?}");
    }
    let mut o = options();
    o.vouch_version = "1.0'; rm -rf /".into();
    assert!(err(o).contains("PEP 440"));
    let mut o = options();
    o.build_timeout_minutes = 0;
    assert!(err(o).contains("build timeout"));
    // Uppercase hashes are accepted and written in lowercase.
    let mut o = options();
    o.vouch_wheel_sha256 = vec!["AB".repeat(32)];
    let build = generate(&profile, &o).unwrap().remove(1).contents;
    assert!(build.contains(&format!(
        "VOUCH_REQUIREMENT: 'vouch-build==0.1.0 --hash=sha256:{}'",
        "ab".repeat(32)
    )));
}

const MIN: &str = r#"
project = "x"
python = ["3.12"]
platforms = ["linux-64"]
runners = { linux-64 = "ubuntu-24.04" }
inputs = { include = ["**/*.c"] }
[flavors.cuda13x]
package = "x-cuda13x"
cuda = "13.0"
"#;

#[test]
fn profiles_the_workflows_cannot_serve_are_refused() {
    let gen_err = |text: &str| {
        let p = Profile::parse(text, "p").unwrap();
        generate(&p, &options()).unwrap_err().to_string()
    };
    let ok = Profile::parse(MIN, "p").unwrap();
    assert!(generate(&ok, &options()).is_ok());
    // A source target that reuses a wheel cell's id: one artifact name for two builds.
    let dup = format!(
        "{MIN}\n[[source_targets]]\nname = \"cuda13x-py3.12-linux-64\"\nflavor = \"cuda13x\"\npython = \"3.12\"\nplatform = \"linux-64\"\nreason = \"r\"\n"
    );
    assert!(
        gen_err(&dup).contains("two cells are named"),
        "{}",
        gen_err(&dup)
    );
    let slash = format!(
        "{MIN}\n[[source_targets]]\nname = \"a/b\"\nflavor = \"cuda13x\"\npython = \"3.12\"\nplatform = \"linux-64\"\nreason = \"r\"\n"
    );
    assert!(gen_err(&slash).contains("\"a/b\""));
    let big = MIN
        .replace(
            "platforms = [\"linux-64\"]",
            "platforms = [\"linux-64\", \"linux-aarch64\", \"win-64\"]",
        )
        .replace(
            "runners = { linux-64 = \"ubuntu-24.04\" }",
            "runners = { linux-64 = \"a\", linux-aarch64 = \"b\", win-64 = \"c\" }",
        )
        .replace(
            "python = [\"3.12\"]",
            &format!(
                "python = [{}]",
                (10..100)
                    .map(|m| format!("\"3.{m}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    assert!(gen_err(&big).contains("at most 256"));
    let project = MIN.replace("project = \"x\"", "project = \"x y\"");
    assert!(gen_err(&project).contains("project \"x y\""));
}

/// Every `vars.X` / `secrets.X` the workflows read is documented in `VARIABLES` / `SECRETS`,
/// and nothing documented is unused.
#[test]
fn variables_and_secrets_are_documented() {
    let all: String = files().into_iter().map(|f| f.contents).collect();
    for (prefix, documented) in [
        ("vars.", vouch_workflows::VARIABLES),
        ("secrets.", vouch_workflows::SECRETS),
    ] {
        let mut used: Vec<&str> = all
            .match_indices(prefix)
            .map(|(i, _)| {
                let rest = &all[i + prefix.len()..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                &rest[..end]
            })
            .filter(|name| !name.is_empty())
            .collect();
        used.sort_unstable();
        used.dedup();
        let mut names: Vec<&str> = documented.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        assert_eq!(used, names, "{prefix}");
    }
}

/// Issue 12, item 3: a runner that runs pull-request code must never receive the push
/// build's cache password, so no job a pull request can start may reference it.
#[test]
fn issue12_pr_build_job_never_references_the_push_secret() {
    let f = file("vouch-build.yml");
    let doc = &yaml_rust2::YamlLoader::load_from_str(&f.contents).unwrap()[0];
    let yaml_rust2::Yaml::Hash(jobs) = &doc["jobs"] else {
        panic!("no jobs")
    };
    let mut pr_jobs = 0;
    for (id, job) in jobs {
        let text = format!("{job:?}");
        let push_only = job["if"].as_str() == Some("github.event_name == 'push'");
        if !push_only {
            pr_jobs += 1;
            assert!(
                !text.contains("secrets.VOUCH_CACHE_PASSWORD"),
                "job {id:?} can run for a pull request and references the push secret"
            );
        }
    }
    assert!(pr_jobs > 0);
    assert!(f.contents.contains("secrets.VOUCH_CACHE_PR_PASSWORD"));
    assert!(audit_trust(&[f]).unwrap().is_empty());
    // The audit catches the old single-job form, which chose the secret in an expression.
    let v = audit_mutated(
        "vouch-build.yml",
        "VOUCH_CACHE_PASSWORD: ${{ secrets.VOUCH_CACHE_PR_PASSWORD }}",
        "VOUCH_CACHE_PASSWORD: ${{ github.event_name == 'push' && secrets.VOUCH_CACHE_PASSWORD || secrets.VOUCH_CACHE_PR_PASSWORD }}",
    );
    assert_caught(&v, Rule::TrustedSecretInPrJob, Some("build-pr"));
}
