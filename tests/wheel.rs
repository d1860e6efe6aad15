//! `vouch normalize`, `vouch diff` and `vouch name` on crafted wheels.

mod common;

use std::path::Path;

use common::*;

fn assert_dir_empty(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "output left behind: {left:?}");
}

/// Normalizes `wheel` into a fresh directory and expects failure: exit 3, no output at all.
fn reject(wheel: &Path) -> String {
    let out = tempdir();
    let r = run(vouch()
        .arg("normalize")
        .arg(wheel)
        .arg("--out")
        .arg(out.path()));
    assert_eq!(r.code, 3, "stderr: {}", r.stderr);
    assert!(r.stdout.is_empty());
    assert_dir_empty(out.path());
    filter(&r.stderr, &[wheel.parent().unwrap()])
}

#[test]
fn normalize_sorts_stamps_and_is_idempotent() {
    let dir = tempdir();
    let wheel = write_valid_wheel(
        dir.path(),
        &[
            Entry {
                name: "demo/tool.sh",
                data: b"#!/bin/sh\necho hi\n",
                mode: 0o775,
            },
            entry("demo/__init__.py", b"x = 1\n"),
            Entry {
                name: "demo/data.txt",
                data: b"data",
                mode: 0o600,
            },
        ],
    );
    let out1 = dir.path().join("n1");
    let r = run(vouch()
        .arg("normalize")
        .arg(&wheel)
        .arg("--out")
        .arg(&out1)
        .arg("--json")
        .env("SOURCE_DATE_EPOCH", "1700000000"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let report = &r.json()[0];
    assert_eq!(report["changed"], true);
    let n1 = out1.join(DEMO_WHEEL);

    let mut z = zip::ZipArchive::new(std::fs::File::open(&n1).unwrap()).unwrap();
    let names: Vec<String> = (0..z.len())
        .map(|i| z.by_index(i).unwrap().name().unwrap().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "demo/__init__.py",
            "demo/data.txt",
            "demo/tool.sh",
            "demo-1.0.dist-info/METADATA",
            "demo-1.0.dist-info/WHEEL",
            "demo-1.0.dist-info/RECORD"
        ]
    );
    for i in 0..z.len() {
        let f = z.by_index(i).unwrap();
        let name = f.name().unwrap().into_owned();
        let want = if name.ends_with(".sh") {
            0o100755
        } else {
            0o100644
        };
        assert_eq!(f.unix_mode(), Some(want), "{name}");
        assert_eq!(f.compression(), zip::CompressionMethod::Deflated);
        let t = f.last_modified().unwrap();
        assert_eq!(
            (
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            ),
            (2023, 11, 14, 22, 13, 20)
        );
    }
    let mut record = String::new();
    std::io::Read::read_to_string(
        &mut z.by_name("demo-1.0.dist-info/RECORD").unwrap(),
        &mut record,
    )
    .unwrap();
    assert!(
        record.starts_with(&format!("demo/__init__.py,{},6\n", record_hash(b"x = 1\n"))),
        "{record}"
    );
    assert!(record.ends_with("demo-1.0.dist-info/RECORD,,\n"));

    // Again, from the normalized wheel: not a byte changes.
    let out2 = dir.path().join("n2");
    let r = run(vouch()
        .arg("normalize")
        .arg(&n1)
        .arg("--out")
        .arg(&out2)
        .arg("--json")
        .env("SOURCE_DATE_EPOCH", "1700000000"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()[0]["changed"], false);
    assert_eq!(sha256_file(&n1), sha256_file(&out2.join(DEMO_WHEEL)));
}

#[test]
fn normalize_in_place_replaces_atomically() {
    let dir = tempdir();
    let wheel = write_valid_wheel(dir.path(), &[entry("demo/__init__.py", b"")]);
    let r = run(vouch()
        .arg("normalize")
        .arg(&wheel)
        .arg("--out")
        .arg(dir.path()));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [DEMO_WHEEL], "only the wheel, no temp file");
    assert!(r.stdout.contains(&sha256_file(&wheel)));
}

#[test]
fn rejects_bad_zip() {
    let dir = tempdir();
    let w = dir.path().join(DEMO_WHEEL);
    std::fs::write(&w, b"PK\x03\x04 this is not really a zip").unwrap();
    insta::assert_snapshot!(reject(&w), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl" is not a valid zip archive
      caused by: invalid Zip archive: Could not find EOCD
    "#);
}

#[test]
fn rejects_missing_record() {
    let dir = tempdir();
    let w = dir.path().join(DEMO_WHEEL);
    write_zip(
        &w,
        &[
            entry("demo/__init__.py", b""),
            entry("demo-1.0.dist-info/METADATA", b"Name: demo\n"),
        ],
    );
    insta::assert_snapshot!(reject(&w), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": missing member "demo-1.0.dist-info/RECORD"; every wheel must carry a RECORD
    "#);
}

#[test]
fn rejects_record_listing_absent_member() {
    let dir = tempdir();
    let w = dir.path().join(DEMO_WHEEL);
    let present = [entry("demo/__init__.py", b"")];
    let lying = [entry("demo/__init__.py", b""), entry("demo/gone.py", b"x")];
    let record = record_for(&lying, "demo-1.0.dist-info/RECORD");
    write_zip(
        &w,
        &[
            entry("demo/__init__.py", b""),
            entry("demo-1.0.dist-info/RECORD", &record),
        ],
    );
    let _ = present;
    insta::assert_snapshot!(reject(&w), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": RECORD lists "demo/gone.py", which is not in the archive
    "#);
}

#[test]
fn rejects_member_missing_from_record() {
    let dir = tempdir();
    let w = dir.path().join(DEMO_WHEEL);
    let listed = [entry("demo/__init__.py", b"")];
    let record = record_for(&listed, "demo-1.0.dist-info/RECORD");
    write_zip(
        &w,
        &[
            entry("demo/__init__.py", b""),
            entry("demo/smuggled.py", b"import os"),
            entry("demo-1.0.dist-info/RECORD", &record),
        ],
    );
    insta::assert_snapshot!(reject(&w), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/smuggled.py" is not listed in RECORD
    "#);
}

#[test]
fn rejects_hash_mismatch() {
    let dir = tempdir();
    let w = dir.path().join(DEMO_WHEEL);
    let claimed = [entry("demo/__init__.py", b"print('original')\n")];
    let record = record_for(&claimed, "demo-1.0.dist-info/RECORD");
    write_zip(
        &w,
        &[
            entry("demo/__init__.py", b"print('tampered')\n"),
            entry("demo-1.0.dist-info/RECORD", &record),
        ],
    );
    insta::assert_snapshot!(reject(&w), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/__init__.py" does not match RECORD: expected sha256=vBMBFAN2ukXYXyPag_ytLHipkx_anKdOjpaWAxsDPiQ, found sha256=LJ4SGrovOsrYZzKm57RsaySXlrXX4worokuATeONYeQ
    "#);
}

#[test]
fn rejects_path_traversal() {
    let dir = tempdir();
    let w = dir.path().join(DEMO_WHEEL);
    let members = [entry("demo/../../evil.py", b"x")];
    let record = record_for(&members, "demo-1.0.dist-info/RECORD");
    write_zip(
        &w,
        &[
            entry("demo/../../evil.py", b"x"),
            entry("demo-1.0.dist-info/RECORD", &record),
        ],
    );
    insta::assert_snapshot!(reject(&w), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/../../evil.py" has an unsafe name (`..` component); members must be relative paths without `..`
    "#);
}

#[test]
fn rejects_absolute_name() {
    let dir = tempdir();
    let w = dir.path().join(DEMO_WHEEL);
    let members = [entry("/etc/cron.d/evil", b"x")];
    let record = record_for(&members, "demo-1.0.dist-info/RECORD");
    write_zip(
        &w,
        &[
            entry("/etc/cron.d/evil", b"x"),
            entry("demo-1.0.dist-info/RECORD", &record),
        ],
    );
    insta::assert_snapshot!(reject(&w), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "/etc/cron.d/evil" has an unsafe name (absolute path); members must be relative paths without `..`
    "#);
}

#[test]
fn rejects_duplicate_names() {
    // The zip crate refuses to write duplicates; Python's zipfile only warns, as attackers' tools do.
    let dir = tempdir();
    let w = dir.path().join(DEMO_WHEEL);
    let record = format!(
        "demo/__init__.py,{},1\ndemo-1.0.dist-info/RECORD,,\n",
        record_hash(b"a")
    );
    let script = format!(
        "import zipfile,sys,warnings\nwarnings.simplefilter('ignore')\nz=zipfile.ZipFile(sys.argv[1],'w')\nz.writestr('demo/__init__.py','a')\nz.writestr('demo/__init__.py','b')\nz.writestr('demo-1.0.dist-info/RECORD',{record:?})\nz.close()"
    );
    let st = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&w)
        .status()
        .unwrap();
    assert!(st.success());
    insta::assert_snapshot!(reject(&w), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/__init__.py" appears more than once
    "#);
}

#[test]
fn rejects_bad_filename_and_foreign_dist_info() {
    let dir = tempdir();
    let w = dir.path().join("demo-1.0.whl");
    std::fs::write(&w, b"").unwrap();
    insta::assert_snapshot!(reject(&w), @r#"
    error: normalizing "[DIR0]/demo-1.0.whl"
      caused by: wheel filename "demo-1.0.whl" is invalid: expected {name}-{version}(-{build})?-{python}-{abi}-{platform}.whl (5 or 6 parts separated by `-`)
    "#);

    let w = dir.path().join(DEMO_WHEEL);
    let members = [entry("other-2.0.dist-info/METADATA", b"")];
    let record = record_for(&members, "other-2.0.dist-info/RECORD");
    write_zip(
        &w,
        &[
            entry("other-2.0.dist-info/METADATA", b""),
            entry("other-2.0.dist-info/RECORD", &record),
        ],
    );
    insta::assert_snapshot!(reject(&w), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": expected exactly one top-level `demo-1.0.dist-info` directory, found other-2.0.dist-info
    "#);
}

#[test]
fn failed_batch_keeps_earlier_outputs_but_writes_nothing_partial() {
    let dir = tempdir();
    let good_dir = dir.path().join("good");
    std::fs::create_dir(&good_dir).unwrap();
    let good = write_valid_wheel(&good_dir, &[entry("demo/__init__.py", b"")]);
    let bad = dir.path().join("broken-1.0-py3-none-any.whl");
    std::fs::write(&bad, b"garbage").unwrap();
    let out = dir.path().join("out");
    let r = run(vouch()
        .arg("normalize")
        .arg(&good)
        .arg(&bad)
        .arg("--out")
        .arg(&out));
    assert_eq!(r.code, 3);
    let names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        [DEMO_WHEEL],
        "the good wheel is complete; nothing of the bad one"
    );
}

#[test]
fn diff_reports_content_mode_and_time() {
    let dir = tempdir();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a_dir).unwrap();
    std::fs::create_dir_all(&b_dir).unwrap();
    let a = write_valid_wheel(
        &a_dir,
        &[
            entry("demo/x.py", b"1"),
            entry("demo/y.sh", b"sh"),
            entry("demo/gone.py", b""),
        ],
    );
    let b = write_valid_wheel(
        &b_dir,
        &[
            entry("demo/x.py", b"2"),
            Entry {
                name: "demo/y.sh",
                data: b"sh",
                mode: 0o755,
            },
            entry("demo/new.py", b""),
        ],
    );
    let r = run(vouch().arg("diff").arg(&a).arg(&b).arg("--json"));
    assert_eq!(r.code, 1, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["identical"], false);
    assert_eq!(j["only_in_a"], serde_json::json!(["demo/gone.py"]));
    assert_eq!(j["only_in_b"], serde_json::json!(["demo/new.py"]));
    let changed: Vec<(String, bool, bool)> = j["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["content"].as_bool().unwrap(),
                c.get("mode").is_some(),
            )
        })
        .collect();
    assert_eq!(
        changed,
        [
            ("demo-1.0.dist-info/RECORD".to_owned(), true, false),
            ("demo/x.py".to_owned(), true, false),
            ("demo/y.sh".to_owned(), false, true)
        ]
    );

    // Timestamps: normalize the same wheel with two epochs.
    let r1 = run(vouch()
        .arg("normalize")
        .arg(&a)
        .arg("--out")
        .arg(dir.path().join("t1"))
        .env("SOURCE_DATE_EPOCH", "1000000000"));
    let r2 = run(vouch()
        .arg("normalize")
        .arg(&a)
        .arg("--out")
        .arg(dir.path().join("t2"))
        .env("SOURCE_DATE_EPOCH", "1100000000"));
    assert_eq!((r1.code, r2.code), (0, 0));
    let r = run(vouch()
        .arg("diff")
        .arg(dir.path().join("t1").join(DEMO_WHEEL))
        .arg(dir.path().join("t2").join(DEMO_WHEEL)));
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .contains("differs: demo/x.py (time 2001-09-09T01:46:40 -> 2004-11-09T11:33:20)"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("content"), "{}", r.stdout);

    let r = run(vouch().arg("diff").arg(&a).arg(&a));
    assert_eq!(r.code, 0);
    assert!(r.stdout.starts_with("identical: sha256:"));
}

#[test]
fn artifact_names_render_parse_and_reject() {
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let r = run(vouch().args([
        "name",
        "render",
        "--dist",
        "cupy-cuda13x",
        "--python",
        "3.12",
        "--platform",
        "linux-64",
        "--pr",
        "123",
        "--sha",
        sha,
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout.trim(),
        format!("cupy-cuda13x-py3.12-linux-64-pr123-{sha}")
    );
    let r = run(vouch().args([
        "name",
        "parse",
        "--json",
        &format!("cupy-cuda12x-py3.14t-win-64-{sha}"),
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["python"], "3.14t");
    assert_eq!(r.json()["pr"], serde_json::Value::Null);
    let r = run(vouch().args([
        "name",
        "parse",
        "cupy-cuda13x-py3.12-linux-64-pr123-abc1234",
    ]));
    assert_eq!(r.code, 3);
    insta::assert_snapshot!(r.stderr, @r#"
    error: parsing artifact name "cupy-cuda13x-py3.12-linux-64-pr123-abc1234"
      caused by: commit "abc1234" is not a full 40-hex lowercase SHA (expected e.g. 0123456789abcdef0123456789abcdef01234567)
    "#);
}
