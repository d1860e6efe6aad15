//! Issue 31's mutation pass: the consumer's refusals that no test held to their own rule.
//! Safe extraction (each name rule, the limits before anything is written, a fresh directory)
//! and `pin`'s head-repository and status checks, each switched off once and caught here.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::json;
use vouch_fetch::{Artifact, Expectation, ExtractLimits, Producer, Run, extract_safely, pin};

/// A zip of `members` (name, bytes) at `path`.
fn zip_of(path: &Path, members: &[(&str, &[u8])]) {
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, data) in members {
        w.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap();
}

/// Extracts `members` into a directory that does not exist yet, under `limits`; a refusal must
/// leave nothing behind.
fn extract_with(members: &[(&str, &[u8])], limits: &ExtractLimits) -> Result<Vec<PathBuf>, String> {
    let tmp = tempfile::tempdir().unwrap();
    let zip = tmp.path().join("a.zip");
    zip_of(&zip, members);
    let dir = tmp.path().join("x");
    let result = extract_safely(&zip, &dir, limits);
    if let Err(e) = &result {
        assert!(!dir.exists(), "refused ({e}), yet {dir:?} was written");
    }
    result
}

#[test]
fn issue31_each_unsafe_name_is_refused_by_its_own_rule() {
    for (name, rule) in [
        ("/etc/cron.d/evil", "absolute path"),
        ("w\\..\\evil.py", "backslash or NUL in name"),
        ("w/a\0b.py", "backslash or NUL in name"),
        ("C:/evil.py", "drive letter"),
        ("C:evil.py", "drive letter"),
        ("w/../../evil.py", "`..` component"),
    ] {
        let err = extract_with(&[(name, b"x")], &ExtractLimits::default()).unwrap_err();
        assert_eq!(
            err,
            format!("member {name:?} has an unsafe name ({rule})"),
            "{name:?}"
        );
    }
}

#[test]
fn issue31_limits_refuse_before_anything_is_written() {
    let few = ExtractLimits {
        max_members: 2,
        ..ExtractLimits::default()
    };
    let err = extract_with(&[("a", b"1"), ("b", b"2"), ("c", b"3")], &few).unwrap_err();
    assert_eq!(err, "3 members, over the limit of 2");

    // The first member alone fits; the declared sizes together do not. Refused from the
    // declarations, before the first member is written (`extract_with` checks the directory).
    let small = ExtractLimits {
        max_total_bytes: 10,
        ..ExtractLimits::default()
    };
    let err = extract_with(&[("a", &[b'a'; 8]), ("b", &[b'b'; 8])], &small).unwrap_err();
    assert_eq!(
        err,
        "members add up to more than 10 bytes uncompressed (zip bomb?)"
    );
    // Within the limit, both are written.
    let enough = ExtractLimits {
        max_total_bytes: 16,
        ..ExtractLimits::default()
    };
    let files = extract_with(&[("a", &[b'a'; 8]), ("b", &[b'b'; 8])], &enough).unwrap();
    assert_eq!(files.len(), 2);
}

#[test]
fn issue31_extraction_needs_a_fresh_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let zip = tmp.path().join("a.zip");
    zip_of(&zip, &[("w.whl", b"wheel")]);
    let dir = tmp.path().join("x");
    // Someone made the directory first (and left a file in it).
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("planted"), b"p").unwrap();
    let err = extract_safely(&zip, &dir, &ExtractLimits::default()).unwrap_err();
    assert!(
        err.starts_with(&format!(
            "cannot create a fresh directory {}",
            dir.display()
        )),
        "{err}"
    );
    assert!(!dir.join("w.whl").exists());
}

#[test]
fn issue31_a_symlink_member_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let zip = tmp.path().join("a.zip");
    let mut w = zip::ZipWriter::new(std::fs::File::create(&zip).unwrap());
    w.add_symlink(
        "link",
        "/etc/passwd",
        zip::write::SimpleFileOptions::default(),
    )
    .unwrap();
    w.finish().unwrap();
    let dir = tmp.path().join("x");
    let err = extract_safely(&zip, &dir, &ExtractLimits::default()).unwrap_err();
    assert_eq!(err, "member \"link\" is a symbolic link");
    assert!(!dir.join("link").exists());
}

const SHA: &str = "1111111111111111111111111111111111111111";

fn expectation() -> Expectation {
    Expectation {
        repo: "cupy/cupy".into(),
        workflow: ".github/workflows/ci.yml".into(),
        signer_workflow: ".github/workflows/vouch-sign.yml".into(),
        event: "push".into(),
        sha: SHA.into(),
        pr: None,
        artifact_name: "a".into(),
        cell: None,
        wait_for_run: std::time::Duration::ZERO,
        checkout: None,
    }
}

/// A push build's successful run of workflow 7 in `cupy/cupy`, edited by `edit`.
fn run_with(edit: impl FnOnce(&mut serde_json::Value)) -> Run {
    let mut v = json!({
        "id": 500,
        "workflow_id": 7,
        "event": "push",
        "status": "completed",
        "conclusion": "success",
        "head_sha": SHA,
        "head_branch": "main",
        "repository": { "full_name": "cupy/cupy", "fork": false },
        "head_repository": { "full_name": "cupy/cupy", "fork": false },
    });
    edit(&mut v);
    serde_json::from_value(v).unwrap()
}

fn pinned(run: &Run) -> Result<(), String> {
    let artifact: Artifact =
        serde_json::from_value(json!({ "id": 1001, "name": "a", "workflow_run": { "id": 500 } }))
            .unwrap();
    let producer = Producer {
        workflow: serde_json::from_value(json!({ "id": 7 })).unwrap(),
        default_branch: None,
    };
    pin(run, &artifact, &expectation(), &producer).map_err(|e| e.to_string())
}

#[test]
fn issue31_pin_refuses_another_head_repository_even_when_not_a_fork() {
    pinned(&run_with(|_| {})).unwrap();
    // Not flagged as a fork, but another repository's code all the same.
    let err = pinned(&run_with(|v| {
        v["head_repository"] = json!({ "full_name": "someone/cupy", "fork": false })
    }))
    .unwrap_err();
    assert_eq!(
        err,
        "a push build's head repository is \"someone/cupy\", a fork or another repository"
    );
    let err = pinned(&run_with(|v| {
        v["head_repository"] = serde_json::Value::Null
    }))
    .unwrap_err();
    assert!(err.contains("head repository is \"\""), "{err}");
}

#[test]
fn issue31_pin_refuses_a_run_not_completed_whatever_its_conclusion_says() {
    let err = pinned(&run_with(|v| v["status"] = json!("in_progress"))).unwrap_err();
    assert_eq!(
        err,
        "run did not succeed (status \"in_progress\", conclusion \"success\")"
    );
}
