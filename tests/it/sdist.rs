//! Issue 16: `vouch sdist` on the bundled sample (real CPython, build, setuptools), the
//! normalized archive read back field by field, bad input, and the sdist as a provenance
//! subject (attest, audit, rebuild).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

/// `vouch sdist` of `source` into `out`, its work directory next to the source.
fn sdist_cmd(source: &Path, out: &Path) -> Command {
    let mut cmd = vouch();
    cmd.arg("sdist")
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out)
        .arg("--work-dir")
        .arg(source.with_extension("work"))
        .arg("--json");
    cmd
}

fn built(r: &Run) -> (PathBuf, serde_json::Value) {
    assert_eq!(r.code, 0, "sdist failed:\n{}", r.stderr);
    let json = r.json();
    (PathBuf::from(json["sdist"].as_str().unwrap()), json)
}

/// Every file under `dir` gets `mtime` and has group and other bits cleared (what a checkout
/// under `umask 077` at another time looks like); exec bits stay.
fn age_and_restrict(dir: &Path, mtime: std::time::SystemTime) {
    use std::os::unix::fs::PermissionsExt as _;
    for f in walk(dir) {
        let mode = std::fs::metadata(&f).unwrap().permissions().mode();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode & 0o700)).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    }
}

fn make_executable(file: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Issue 16 acceptance: two sources at two paths, with other mtimes and modes, built at two
/// times under two umasks, give one sdist; its tar and gzip headers carry nothing of either.
#[test]
fn sample_sdist_is_byte_identical_across_paths_times_and_umasks() {
    let dir = tempdir();
    let a = dir.path().join("a/sample");
    let b = dir.path().join("some/much/deeper/other-checkout/sample");
    copy_sample(&a);
    copy_sample(&b);
    // One executable in both: the exec bit is content, and must survive as 0755.
    make_executable(&a.join("setup.py"));
    make_executable(&b.join("setup.py"));
    age_and_restrict(
        &b,
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000),
    );

    let (first, json) = built(&run(&mut sdist_cmd(&a, &dir.path().join("out-a"))));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    // The same command under `umask 077`: the backend's tar would record 0600/0700 modes.
    let mut umasked = Command::new("sh");
    umasked
        .arg("-c")
        .arg("umask 077 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_vouch"))
        .args(sdist_cmd(&b, &dir.path().join("out-b")).get_args())
        .env("VOUCH_CACHE_DIR", cache_dir())
        .env_remove("SOURCE_DATE_EPOCH");
    let (second, json_b) = built(&run(&mut umasked));
    assert_eq!(json["sha256"], json_b["sha256"]);
    assert_eq!(
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap()
    );
    assert_eq!(
        format!("sha256:{}", sha256_file(&first)),
        json["sha256"].as_str().unwrap()
    );
    assert_eq!(first.file_name().unwrap(), "vouch_sample-0.1.0.tar.gz");
    assert_eq!(json["epoch_source"], "default", "copies are not in git");
    let epoch = json["source_date_epoch"].as_u64().unwrap();

    let bytes = std::fs::read(&first).unwrap();
    // gzip: magic, deflate, no flags (so no file name), mtime 0, XFL 2 (level 9), OS unknown.
    assert_eq!(bytes[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff]);
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .read_to_end(&mut raw)
        .unwrap();
    for leaked in [a.to_str().unwrap(), b.to_str().unwrap(), "/tmp/"] {
        assert!(
            !raw.windows(leaked.len()).any(|w| w == leaked.as_bytes()),
            "{leaked} leaked into the sdist"
        );
    }
    let mut archive = tar::Archive::new(raw.as_slice());
    let mut names = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = String::from_utf8(entry.path_bytes().into_owned()).unwrap();
        let keys: Vec<String> = entry
            .pax_extensions()
            .unwrap()
            .map(|exts| exts.map(|e| e.unwrap().key().unwrap().to_owned()).collect())
            .unwrap_or_default();
        let h = entry.header();
        assert!(h.as_ustar().is_some(), "{name}: not a ustar header");
        assert!(keys.is_empty(), "{name}: pax records {keys:?}");
        assert_eq!(h.mtime().unwrap(), epoch, "{name}");
        assert_eq!((h.uid().unwrap(), h.gid().unwrap()), (0, 0), "{name}");
        assert_eq!(h.username_bytes(), Some(&b""[..]), "{name}");
        assert_eq!(h.groupname_bytes(), Some(&b""[..]), "{name}");
        let kind = h.entry_type();
        let want = if kind.is_dir() || name.ends_with("/setup.py") {
            0o755
        } else {
            assert!(kind.is_file(), "{name}: {kind:?}");
            0o644
        };
        assert_eq!(h.mode().unwrap(), want, "{name}");
        names.push(name);
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "members are sorted by name");
    for must in [
        "vouch_sample-0.1.0/PKG-INFO",
        "vouch_sample-0.1.0/csrc/checksum.c",
        "vouch_sample-0.1.0/setup.py",
    ] {
        assert!(names.iter().any(|n| n == must), "{must} missing: {names:?}");
    }

    // Every cell builds from the sdist: the wheel is the one the checkout gives.
    let wheel = |source: &Path, out: &str| {
        let r = run(vouch()
            .arg("build")
            .arg("--source")
            .arg(source)
            .arg("--out")
            .arg(dir.path().join(out))
            .arg("--work-dir")
            .arg(dir.path().join("wheel-work"))
            .arg("--json"));
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.json()
    };
    let from_sdist = wheel(&first, "wheel-from-sdist");
    assert_eq!(from_sdist["epoch_source"], "sdist");
    assert_eq!(from_sdist["source_date_epoch"], epoch);
    let from_checkout = wheel(&a, "wheel-from-checkout");
    assert_eq!(from_sdist["sha256"], from_checkout["sha256"]);
}

/// What is not an sdist, or one that would unpack outside its directory, is refused by name,
/// and nothing is written.
#[test]
fn bad_sdists_are_refused_clearly() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let normalize = |file: &Path| run(vouch().arg("normalize").arg(file).arg("--out").arg(&out));
    let plain = dir.path().join("plain-1.0.tar.gz");
    std::fs::write(&plain, b"plain text").unwrap();
    assert_exit(
        &normalize(&plain),
        3,
        "is not a gzip-compressed tar archive; an sdist is a `.tar.gz`",
    );

    // A real tar.gz whose member climbs out of the top directory.
    let escaping = dir.path().join("escape-1.0.tar.gz");
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        std::fs::File::create(&escaping).unwrap(),
        flate2::Compression::default(),
    ));
    let mut header = tar::Header::new_gnu();
    header.set_size(1);
    header.set_mode(0o644);
    let name = b"escape-1.0/../../evil";
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.set_cksum();
    tar.append(&header, &b"x"[..]).unwrap();
    let mut link = tar::Header::new_gnu();
    link.set_entry_type(tar::EntryType::Symlink);
    link.set_size(0);
    link.set_path("escape-1.0/passwd").unwrap();
    link.set_link_name("/etc/passwd").unwrap();
    link.set_cksum();
    tar.append(&link, &b""[..]).unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    assert_exit(
        &normalize(&escaping),
        32,
        "member \"escape-1.0/../../evil\" contains `..`: it would land outside the archive's directory",
    );
    assert!(!out.exists() || walk(&out).is_empty(), "nothing written");

    // `vouch sdist` makes sdists from source directories only.
    let r = run(&mut sdist_cmd(&plain, &out));
    assert_exit(
        &r,
        3,
        "is a file; an sdist is built from a source directory",
    );
}

/// Issue 16: the sdist is a provenance subject like a wheel: attest signs it, audit verifies
/// it, rebuild makes it again from the checkout and names the member that differs.
#[test]
fn sdist_is_attested_audited_and_rebuilt() {
    let dir = tempdir();
    let src = dir.path().join("sample");
    copy_sample(&src);
    let release = dir.path().join("release");
    let (sdist, json) = built(&run(
        sdist_cmd(&src, &release).args(["--source-date-epoch", "1700000000"])
    ));
    assert_eq!(json["epoch_source"], "given");
    let (key, public) = keygen(dir.path(), "k.pem");
    let bundle = PathBuf::from(format!("{}.sigstore.json", sdist.display()));
    let r = run(attest_with_key(&sdist, &bundle, &key).args([
        "--local",
        "--repo",
        "vouch-build/vouch-sample",
        "--sha",
        SHA,
        "--runner",
        "github-hosted",
        "--source-date-epoch",
        "1700000000",
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains(&format!(
            "{}  vouch_sample-0.1.0.tar.gz",
            json["sha256"].as_str().unwrap()
        )),
        "{}",
        r.stdout
    );

    let r = run(vouch()
        .arg("audit")
        .arg(&release)
        .arg("--key")
        .arg(&public)
        .args(["--repo", "vouch-build/vouch-sample", "--json"]));
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let rows = r.json();
    let [row] = rows.as_array().unwrap().as_slice() else {
        panic!("one row expected: {rows}");
    };
    assert_eq!(row["verdict"], "verified", "{row}");
    assert_eq!(row["dist"], "vouch-sample");
    assert_eq!(row["sha256"], json["sha256"]);

    let checkout = dir.path().join("auditor/checkout");
    copy_sample(&checkout);
    let rebuild = || {
        run(vouch()
            .arg("rebuild")
            .arg(&sdist)
            .arg("--bundle")
            .arg(&bundle)
            .arg("--source")
            .arg(&checkout)
            .arg("--key")
            .arg(&public)
            .args(["--repo", "vouch-build/vouch-sample", "--json"]))
    };
    let r = rebuild();
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json()["reproduced"], true);
    assert_eq!(r.json()["rebuilt"], json["sha256"]);
    assert_eq!(r.json()["source_date_epoch"], 1_700_000_000);

    let c = checkout.join("csrc/checksum.c");
    let text = std::fs::read_to_string(&c).unwrap();
    std::fs::write(&c, text.replacen("65521u", "65520u", 1)).unwrap();
    let r = rebuild();
    assert_eq!(r.code, 1, "{}", r.stderr);
    let changed: Vec<String> = r.json()["diff"]["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(changed, ["vouch_sample-0.1.0/csrc/checksum.c"]);
}

/// Issue 32: the profile's flavor says which CUDA it builds and where the project's checkout
/// names its own (CuPy's `ci/versions.yml`). `vouch sdist`, the one step that has the checkout,
/// refuses a checkout that moved to another version, naming both and the fix, and writes
/// nothing; the same checkout with the profile's version packs; a missing file is refused.
#[test]
fn issue32_sdist_refuses_a_checkout_whose_cuda_version_the_profile_does_not_build() {
    let dir = tempdir();
    let src = dir.path().join("src");
    copy_sample(&src);
    let profile = src.join("vouch.toml");
    let text = std::fs::read_to_string(&profile).unwrap();
    std::fs::write(
        &profile,
        format!(
            "{text}\n[flavors.cuda13x]\npackage = \"vouch-sample-cuda13x\"\ncuda = \"13.3.1\"\n\
             cuda_follows = \"ci/versions.yml#cuda.build.version\"\n"
        ),
    )
    .unwrap();
    let versions = src.join("ci/versions.yml");
    std::fs::create_dir_all(versions.parent().unwrap()).unwrap();
    let names = |v: &str| {
        std::fs::write(
            &versions,
            format!(
                "cuda:\n  build:\n    version: \"{v}\"\n  prev_build:\n    version: \"12.9.2\"\n"
            ),
        )
        .unwrap()
    };
    let out = dir.path().join("out");
    let sdist = |out: &Path| run(sdist_cmd(&src, out).arg("--profile").arg(&profile));

    names("13.2.1");
    let r = sdist(&out);
    assert_exit(
        &r,
        3,
        "names CUDA 13.2.1 at `cuda.build.version`, but flavors.cuda13x.cuda is \"13.3.1\"",
    );
    assert!(
        r.stderr
            .contains("Set `cuda = \"13.2.1\"` in [flavors.cuda13x]"),
        "{}",
        r.stderr
    );
    let written: Vec<_> = std::fs::read_dir(&out)
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(written.is_empty(), "{written:?}");

    names("13.3.1");
    built(&sdist(&out));

    std::fs::remove_file(&versions).unwrap();
    let r = sdist(&dir.path().join("out2"));
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(r.stderr.contains("ci/versions.yml"), "{}", r.stderr);
}
