//! `vouch normalize`, `vouch diff` and `vouch name` on crafted wheels.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::vouch_snapshot;

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
    // The digest printed is the normalized wheel's own.
    let digest = sha256_file(&wheel);
    vouch_snapshot!([(digest.as_str(), "[WHEEL_SHA256]")], vouch()
        .arg("normalize")
        .arg(&wheel)
        .arg("--out")
        .arg(dir.path()), @r#"
            success: true
            exit_code: 0
            ----- stdout -----
            sha256:[WHEEL_SHA256]  [TEMP]/demo-1.0-py3-none-any.whl

            ----- stderr -----
        "#);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [DEMO_WHEEL], "only the wheel, no temp file");
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
    let st = Command::new("python3")
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
    // Only the time differs, not the content.
    vouch_snapshot!(vouch()
        .arg("diff")
        .arg(dir.path().join("t1").join(DEMO_WHEEL))
        .arg(dir.path().join("t2").join(DEMO_WHEEL)), @r#"
            success: false
            exit_code: 1
            ----- stdout -----
            differs: demo-1.0.dist-info/METADATA (time 2001-09-09T01:46:40 -> 2004-11-09T11:33:20)
            differs: demo-1.0.dist-info/RECORD (time 2001-09-09T01:46:40 -> 2004-11-09T11:33:20)
            differs: demo-1.0.dist-info/WHEEL (time 2001-09-09T01:46:40 -> 2004-11-09T11:33:20)
            differs: demo/gone.py (time 2001-09-09T01:46:40 -> 2004-11-09T11:33:20)
            differs: demo/x.py (time 2001-09-09T01:46:40 -> 2004-11-09T11:33:20)
            differs: demo/y.sh (time 2001-09-09T01:46:40 -> 2004-11-09T11:33:20)

            ----- stderr -----
        "#);

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

/// Deterministic bytes for members too big to spell out: text-like, so that deflate has work.
fn lcg_text(len: usize, seed: u64) -> Vec<u8> {
    let words: [&[u8]; 8] = [
        b"import ", b"numpy ", b"def ", b"return ", b"self", b"\n    ", b"cupy.", b"0x7f3a",
    ];
    let mut out = Vec::with_capacity(len + 16);
    let mut x = seed;
    while out.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let w = words[(x >> 61) as usize];
        out.extend_from_slice(w);
        if x >> 58 & 7 == 0 {
            out.extend_from_slice(&x.to_le_bytes()[..(x >> 40 & 7) as usize]);
        }
    }
    out.truncate(len);
    out
}

/// Issue 12, item 8: members are streamed, not compressed from memory, and the output must not
/// change by a byte. The digest was produced by the in-memory implementation (commit 474b7ae);
/// the 45 MB member is larger than the spool's look-ahead, so the streaming path is the one
/// tested, and the zeros member reaches deflate's best ratio.
#[test]
fn issue12_normalize_output_bytes_unchanged_by_streaming() {
    let dir = tempdir();
    let big = lcg_text(45 << 20, 1);
    let medium = lcg_text(3 << 20, 2);
    let zeros = vec![0u8; 50 << 20];
    let mut mixed = vec![0u8; 41 << 20];
    mixed.extend_from_slice(&lcg_text(2 << 20, 3));
    let wheel = write_valid_wheel(
        dir.path(),
        &[
            entry("demo/big.txt", &big),
            entry("demo/medium.py", &medium),
            entry("demo/zeros.bin", &zeros),
            entry("demo/mixed.bin", &mixed),
            entry("demo/caf\u{e9}.py", b"x = 1\n"),
            Entry {
                name: "demo/tool.sh",
                data: b"#!/bin/sh\necho hi\n",
                mode: 0o755,
            },
            entry("demo/empty.py", b""),
        ],
    );
    let out = dir.path().join("out");
    let r = run(vouch()
        .arg("normalize")
        .arg(&wheel)
        .arg("--out")
        .arg(&out)
        .env("SOURCE_DATE_EPOCH", "1700000000"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        sha256_file(&out.join(DEMO_WHEEL)),
        "ed1289f89823647d7097cd842a0a69b77eecd2d7374687dbc22f48d9ccf1ea27",
        "normalize's output changed"
    );
}

/// Writes `demo-1.0` with `count` members of `size` zeros each: a few MB on disk that inflate
/// to `count * size` bytes.
fn write_zero_bomb(dir: &Path, count: usize, size: usize) -> std::path::PathBuf {
    use sha2::Digest as _;
    use std::io::Write as _;
    let chunk = vec![0u8; 1 << 20];
    let mut hasher = sha2::Sha256::new();
    for _ in 0..size / chunk.len() {
        hasher.update(&chunk);
    }
    let digest = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        hasher.finalize(),
    );
    // Compress the zeros once, then copy the compressed member under each name.
    let one = dir.join("one.zip");
    let mut w = zip::ZipWriter::new(std::fs::File::create(&one).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(9));
    w.start_file("zeros", opts).unwrap();
    for _ in 0..size / chunk.len() {
        w.write_all(&chunk).unwrap();
    }
    w.finish().unwrap();
    let mut src = zip::ZipArchive::new(std::fs::File::open(&one).unwrap()).unwrap();
    let path = dir.join(DEMO_WHEEL);
    let mut w = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let mut record = String::new();
    for i in 0..count {
        let name = format!("demo/zeros{i}.bin");
        w.raw_copy_file_rename(src.by_index_raw(0).unwrap(), &name)
            .unwrap();
        record.push_str(&format!("{name},sha256={digest},{size}\n"));
    }
    let meta = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n";
    w.start_file("demo-1.0.dist-info/METADATA", opts).unwrap();
    w.write_all(meta).unwrap();
    record.push_str(&format!(
        "demo-1.0.dist-info/METADATA,{},{}\n",
        record_hash(meta),
        meta.len()
    ));
    record.push_str("demo-1.0.dist-info/RECORD,,\n");
    w.start_file("demo-1.0.dist-info/RECORD", opts).unwrap();
    w.write_all(record.as_bytes()).unwrap();
    w.finish().unwrap();
    std::fs::remove_file(one).unwrap();
    path
}

/// Issue 12, item 8: a 2 MB wheel that inflates to 2 GiB once drove `normalize` to 2.1 GB of
/// resident memory. Measured on the real binary with `/usr/bin/time -v`.
#[test]
fn issue12_normalize_max_rss_under_256mb_on_a_high_ratio_wheel() {
    let time = Path::new("/usr/bin/time");
    assert!(
        time.exists(),
        "/usr/bin/time is missing (Debian package `time`); this test measures with it"
    );
    let dir = tempdir();
    let wheel = write_zero_bomb(dir.path(), 4, 512 << 20);
    let on_disk = std::fs::metadata(&wheel).unwrap().len();
    assert!(on_disk < 4 << 20, "the bomb is {on_disk} bytes");
    let out = dir.path().join("out");
    let r = run(Command::new(time)
        .arg("-v")
        .arg(env!("CARGO_BIN_EXE_vouch"))
        .arg("normalize")
        .arg(&wheel)
        .arg("--out")
        .arg(&out)
        .env("VOUCH_CACHE_DIR", cache_dir()));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let kb: u64 = r
        .stderr
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Maximum resident set size (kbytes): ")
        })
        .unwrap_or_else(|| panic!("no max RSS in /usr/bin/time's report:\n{}", r.stderr))
        .parse()
        .unwrap();
    assert!(
        kb < 256 * 1024,
        "normalize of a {on_disk}-byte wheel inflating to 2 GiB peaked at {kb} KiB of RSS; the limit is 256 MiB"
    );
    // And it did the whole job: every member is there, whole.
    let mut z = zip::ZipArchive::new(std::fs::File::open(out.join(DEMO_WHEEL)).unwrap()).unwrap();
    assert_eq!(z.len(), 6);
    assert_eq!(z.by_name("demo/zeros3.bin").unwrap().size(), 512 << 20);
}

/// Sets the CRC-32 of `member` to a wrong value in both its local and its central header, so
/// that the headers agree with each other and only the data can tell.
fn corrupt_crc(wheel: &Path, member: &str) {
    let (local, central) = {
        let mut z = zip::ZipArchive::new(std::fs::File::open(wheel).unwrap()).unwrap();
        let f = z.by_name(member).unwrap();
        (f.header_start() as usize, f.central_header_start() as usize)
    };
    let mut bytes = std::fs::read(wheel).unwrap();
    for at in [local + 14, central + 16] {
        for b in &mut bytes[at..at + 4] {
            *b ^= 0x5a;
        }
    }
    std::fs::write(wheel, bytes).unwrap();
}

/// Issue 12, item 9: the README says CRCs are checked; they were not (the declared-size bound
/// stopped the zip reader before the end of each stream, where it checks).
#[test]
fn issue12_rejects_a_member_whose_crc_does_not_match() {
    let dir = tempdir();
    let w = write_valid_wheel(dir.path(), &[entry("demo/__init__.py", b"print('hi')\n")]);
    corrupt_crc(&w, "demo/__init__.py");
    insta::assert_snapshot!(reject(&w), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/__init__.py" fails its CRC-32 check: the archive records a2c4fcf5, the data has f89ea6af
    "#);
    // diff reads through the same reader.
    vouch_snapshot!(vouch().arg("diff").arg(&w).arg(&w), @r#"
        success: false
        exit_code: 3
        ----- stdout -----

        ----- stderr -----
        error: "[TEMP]/demo-1.0-py3-none-any.whl": member "demo/__init__.py" fails its CRC-32 check: the archive records a2c4fcf5, the data has f89ea6af
    "#);
}

/// Normalizes a valid wheel holding `names` (RECORD lists them truthfully) and expects it
/// refused.
fn reject_names(names: &[&str]) -> String {
    let dir = tempdir();
    let entries: Vec<Entry<'_>> = names.iter().map(|n| entry(n, n.as_bytes())).collect();
    let w = write_valid_wheel(dir.path(), &entries);
    reject(&w)
}

/// Issue 12, item 10: names that collide or cannot be created on Windows or macOS.
#[test]
fn issue12_rejects_names_other_platforms_cannot_hold() {
    insta::assert_snapshot!(reject_names(&["demo/A.py", "demo/a.py"]), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": members "demo/A.py" and "demo/a.py" collide: names that differ only in case, one path on Windows and macOS
    "#);
    insta::assert_snapshot!(reject_names(&["demo/caf\u{e9}.py", "demo/cafe\u{301}.py"]), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": members "demo/café.py" and "demo/cafe\u{301}.py" collide: names that differ only in Unicode normalization (NFC/NFD), one path on Windows and macOS
    "#);
    insta::assert_snapshot!(reject_names(&["demo/con.py"]), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/con.py" cannot be unpacked under that name on Windows or macOS: component "con.py" is the Windows device name CON, reserved with any extension and in any case
    "#);
    insta::assert_snapshot!(reject_names(&["demo/x.py."]), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/x.py." cannot be unpacked under that name on Windows or macOS: component "x.py." ends with a dot or a space, which Windows strips from file names
    "#);
    insta::assert_snapshot!(reject_names(&["demo/a:b.py"]), @r#"
    error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
      caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/a:b.py" cannot be unpacked under that name on Windows or macOS: component "a:b.py" contains ':', which is not allowed in Windows file names (none of < > : " | ? * \)
    "#);
    let refused: Vec<String> = [
        &["demo/Sub/x.py", "demo/sub/y.py"][..],
        &["demo/x.py", "demo/X.PY"],
        &["demo/NUL"],
        &["demo/Aux.tar.gz"],
        &["demo/prn/x.py"],
        &["demo/com1.py"],
        &["demo/LPT9.h"],
        &["demo/x "],
        &["demo /x.py"],
        &["demo/a\tb.py"],
        &["demo/a\u{1f}b.py"],
        &["demo/a\u{7f}b.py"],
        &["demo/a<b.py"],
        &["demo/a>b.py"],
        &["demo/a\"b.py"],
        &["demo/a|b.py"],
        &["demo/a?b.py"],
        &["demo/a*b.py"],
    ]
    .iter()
    .map(|names| format!("===== {names:?}\n{}", reject_names(names)))
    .collect();
    insta::assert_snapshot!(refused.join("\n"), @r#"
        ===== ["demo/Sub/x.py", "demo/sub/y.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": members "demo/Sub" and "demo/sub" collide: names that differ only in case, one path on Windows and macOS

        ===== ["demo/x.py", "demo/X.PY"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": members "demo/x.py" and "demo/X.PY" collide: names that differ only in case, one path on Windows and macOS

        ===== ["demo/NUL"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/NUL" cannot be unpacked under that name on Windows or macOS: component "NUL" is the Windows device name NUL, reserved with any extension and in any case

        ===== ["demo/Aux.tar.gz"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/Aux.tar.gz" cannot be unpacked under that name on Windows or macOS: component "Aux.tar.gz" is the Windows device name AUX, reserved with any extension and in any case

        ===== ["demo/prn/x.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/prn/x.py" cannot be unpacked under that name on Windows or macOS: component "prn" is the Windows device name PRN, reserved with any extension and in any case

        ===== ["demo/com1.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/com1.py" cannot be unpacked under that name on Windows or macOS: component "com1.py" is the Windows device name COM1, reserved with any extension and in any case

        ===== ["demo/LPT9.h"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/LPT9.h" cannot be unpacked under that name on Windows or macOS: component "LPT9.h" is the Windows device name LPT9, reserved with any extension and in any case

        ===== ["demo/x "]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/x " cannot be unpacked under that name on Windows or macOS: component "x " ends with a dot or a space, which Windows strips from file names

        ===== ["demo /x.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo /x.py" cannot be unpacked under that name on Windows or macOS: component "demo " ends with a dot or a space, which Windows strips from file names

        ===== ["demo/a\tb.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/a\tb.py" cannot be unpacked under that name on Windows or macOS: component "a\tb.py" contains control character '\t' (U+0009)

        ===== ["demo/a\u{1f}b.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/a\u{1f}b.py" cannot be unpacked under that name on Windows or macOS: component "a\u{1f}b.py" contains control character '\u{1f}' (U+001F)

        ===== ["demo/a\u{7f}b.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/a\u{7f}b.py" cannot be unpacked under that name on Windows or macOS: component "a\u{7f}b.py" contains control character '\u{7f}' (U+007F)

        ===== ["demo/a<b.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/a<b.py" cannot be unpacked under that name on Windows or macOS: component "a<b.py" contains '<', which is not allowed in Windows file names (none of < > : " | ? * \)

        ===== ["demo/a>b.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/a>b.py" cannot be unpacked under that name on Windows or macOS: component "a>b.py" contains '>', which is not allowed in Windows file names (none of < > : " | ? * \)

        ===== ["demo/a\"b.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/a\"b.py" cannot be unpacked under that name on Windows or macOS: component "a\"b.py" contains '"', which is not allowed in Windows file names (none of < > : " | ? * \)

        ===== ["demo/a|b.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/a|b.py" cannot be unpacked under that name on Windows or macOS: component "a|b.py" contains '|', which is not allowed in Windows file names (none of < > : " | ? * \)

        ===== ["demo/a?b.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/a?b.py" cannot be unpacked under that name on Windows or macOS: component "a?b.py" contains '?', which is not allowed in Windows file names (none of < > : " | ? * \)

        ===== ["demo/a*b.py"]
        error: normalizing "[DIR0]/demo-1.0-py3-none-any.whl"
          caused by: "[DIR0]/demo-1.0-py3-none-any.whl": member "demo/a*b.py" cannot be unpacked under that name on Windows or macOS: component "a*b.py" contains '*', which is not allowed in Windows file names (none of < > : " | ? * \)
    "#);
}
