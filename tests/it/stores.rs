//! The stores the cache tests run against, each a real server on 127.0.0.1 started and
//! stopped by the test: a directory, redis-server, moto in server mode (an S3-API stand-in for
//! AWS, which CI cannot reach), gcp-storage-emulator (a GCS-API stand-in), and the GitHub
//! cache double from `vouch-testgh`. vouch's code has no case for any of them: each gets the
//! URL, password file and environment a real deployment would.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::common::*;
use sha2::Digest as _;

/// A bucket both object-store stand-ins create.
const BUCKET: &str = "vouch-cache";
/// The S3 stand-in's admin key (moto checks signatures once IAM is switched on).
pub const S3_ADMIN: (&str, &str) = ("AKIAVOUCHADMIN000001", "admin-secret-key");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for(port: u16, what: &str, child: &mut Child) {
    for _ in 0..300 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited before it listened: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{what} did not listen on {port}");
}

/// The Python of the emulators' venv (scripts/test.sh installs it; boto3 comes with moto).
pub fn emulator_python() -> PathBuf {
    let moto = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("moto_server"))
        .find(|p| p.is_file())
        .expect("moto_server must be on PATH (scripts/test.sh installs it into target/test-tools)");
    let real = std::fs::canonicalize(moto).unwrap();
    real.parent().unwrap().join("python")
}

/// Runs `script` with the emulators' Python; returns its stdout.
pub fn py(script: &str, args: &[&str]) -> String {
    let out = Command::new(emulator_python())
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A server child, killed and reaped on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// moto in server mode with one bucket.
pub struct Moto {
    pub port: u16,
    /// The key the tests' own calls sign with: any before [`Moto::enforce_iam`], an IAM
    /// user's after.
    admin: std::sync::Mutex<(String, String)>,
    _child: Server,
}

const BOTO: &str = r#"
import sys, json, boto3, botocore
E = "http://127.0.0.1:" + sys.argv[1]
kw = dict(endpoint_url=E, region_name="us-east-1",
          aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3])
s3 = boto3.client("s3", **kw)
iam = boto3.client("iam", **kw)
"#;

impl Moto {
    pub fn start() -> Moto {
        let port = free_port();
        let mut child = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server must be installed (scripts/test.sh installs it)");
        wait_for(port, "moto_server", &mut child);
        let m = Moto {
            port,
            admin: std::sync::Mutex::new((S3_ADMIN.0.into(), S3_ADMIN.1.into())),
            _child: Server(child),
        };
        m.boto(&format!("s3.create_bucket(Bucket={BUCKET:?})"), &[]);
        m
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Runs `code` with `s3` and `iam` clients signed as the admin.
    pub fn boto(&self, code: &str, args: &[&str]) -> String {
        let port = self.port.to_string();
        let (id, secret) = self.admin.lock().unwrap().clone();
        let mut all = vec![port.as_str(), id.as_str(), secret.as_str()];
        all.extend(args);
        py(&format!("{BOTO}{code}"), &all)
    }

    /// The URL of the store under `prefix`, signed with `key_id`.
    pub fn spec(&self, key_id: &str) -> String {
        format!(
            "s3://{BUCKET}/vouch?region=us-east-1&endpoint={}&access_key_id={key_id}",
            self.endpoint()
        )
    }

    /// An IAM user with `policy` inline; returns its (key id, secret).
    pub fn user(&self, name: &str, policy: &str) -> (String, String) {
        let out = self.boto(
            r#"
iam.create_user(UserName=sys.argv[4])
iam.put_user_policy(UserName=sys.argv[4], PolicyName="vouch", PolicyDocument=sys.argv[5])
k = iam.create_access_key(UserName=sys.argv[4])["AccessKey"]
print(k["AccessKeyId"], k["SecretAccessKey"])
"#,
            &[name, policy],
        );
        let (id, secret) = out.trim().split_once(' ').unwrap();
        (id.to_owned(), secret.to_owned())
    }

    /// From here on moto checks signatures and IAM policies on every request (it does not
    /// by default). The tests' own calls then sign as an IAM user with `s3:*`.
    pub fn enforce_iam(&self) {
        let admin = self.user(
            "admin",
            r#"{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:*", "iam:*"], "Resource": "*"}]}"#,
        );
        *self.admin.lock().unwrap() = admin;
        let out = py(
            r#"
import sys, urllib.request
E = "http://127.0.0.1:" + sys.argv[1]
r = urllib.request.Request(E + "/moto-api/reset-auth", data=b"0", method="POST",
                           headers={"Content-Type": "text/plain"})
print(urllib.request.urlopen(r).status)
"#,
            &[&self.port.to_string()],
        );
        assert_eq!(out.trim(), "200");
    }

    pub fn keys(&self) -> Vec<String> {
        self.boto(
            &format!(
                r#"
for o in s3.list_objects_v2(Bucket={BUCKET:?}, Prefix="vouch/").get("Contents", []):
    print(o["Key"][len("vouch/"):])
"#
            ),
            &[],
        )
        .lines()
        .map(str::to_owned)
        .collect()
    }
}

/// gcp-storage-emulator, in memory, with one bucket.
pub struct GcsEmulator {
    pub port: u16,
    _child: Server,
}

impl GcsEmulator {
    pub fn start() -> GcsEmulator {
        let port = free_port();
        let mut child = Command::new("gcp-storage-emulator")
            .args(["start", "--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--in-memory", "--default-bucket", BUCKET, "-q"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gcp-storage-emulator must be installed (scripts/test.sh installs it)");
        wait_for(port, "gcp-storage-emulator", &mut child);
        GcsEmulator {
            port,
            _child: Server(child),
        }
    }

    pub fn spec(&self) -> String {
        format!(
            "gs://{BUCKET}/vouch?endpoint=http://127.0.0.1:{}",
            self.port
        )
    }

    pub fn keys(&self) -> Vec<String> {
        py(
            r#"
import sys, json, urllib.request
u = "http://127.0.0.1:%s/storage/v1/b/%s/o?prefix=vouch/" % (sys.argv[1], sys.argv[2])
for o in json.load(urllib.request.urlopen(u)).get("items", []):
    print(o["name"][len("vouch/"):])
"#,
            &[&self.port.to_string(), BUCKET],
        )
        .lines()
        .map(str::to_owned)
        .collect()
    }
}

/// A store for the poisoning and counter tests, with what a build needs to reach it.
pub enum Backing {
    Dir(PathBuf),
    Redis(RedisServer),
    S3(Moto, PathBuf),
    Gcs(GcsEmulator, PathBuf),
    Gha(vouch_testgh::cache::GhaCache),
}

/// GitHub's refs for the test scopes: PR #7's merge ref and the default branch.
pub const PR7_REF: &str = "refs/pull/7/merge";
pub const MAIN_REF: &str = "refs/heads/main";

impl Backing {
    /// `kind` is `directory`, `redis`, `s3` or `gcs`; files go under `dir`.
    pub fn start(kind: &str, dir: &Path) -> Backing {
        let secret_file = |name: &str, secret: &str| {
            let f = dir.join(name);
            std::fs::write(&f, secret).unwrap();
            f
        };
        match kind {
            "directory" => Backing::Dir(dir.join("store")),
            "redis" => Backing::Redis(RedisServer::start()),
            "s3" => Backing::S3(Moto::start(), secret_file("s3-secret", S3_ADMIN.1)),
            // An OAuth2 access token, as `gcloud auth print-access-token` gives (the emulator
            // accepts any).
            "gcs" => Backing::Gcs(
                GcsEmulator::start(),
                secret_file("gcs-token", "ya29.test-token"),
            ),
            "gha" => Backing::Gha(vouch_testgh::cache::GhaCache::start()),
            other => panic!("no test store {other:?}"),
        }
    }

    /// Points `cmd` at the store for a build with the scope flags `scope`: `--cache-store`,
    /// the password file where the store has a credential, and for the GitHub cache the
    /// environment a job gets (its runtime token scoped as GitHub scopes a run's: a
    /// pull_request run writes its merge ref and reads the default branch).
    pub fn apply(&self, cmd: &mut Command, scope: &[&str]) {
        cmd.args(self.build_args());
        cache_keys(cmd, scope);
        if let Backing::Gha(g) = self {
            let token = if scope.contains(&"pull_request") {
                g.token(Some(PR7_REF), &[PR7_REF, MAIN_REF])
            } else {
                g.token(Some(MAIN_REF), &[MAIN_REF])
            };
            cmd.env("ACTIONS_CACHE_SERVICE_V2", "1")
                .env("ACTIONS_RESULTS_URL", g.url())
                .env("ACTIONS_RUNTIME_TOKEN", token)
                .env_remove("GITHUB_SERVER_URL");
        }
    }

    /// `--cache-store` and, where the store has a credential, `--password-file`.
    pub fn build_args(&self) -> Vec<String> {
        let (spec, file) = match self {
            Backing::Gha(_) => ("gha".to_owned(), None),
            Backing::Dir(d) => (d.display().to_string(), None),
            Backing::Redis(r) => (r.url(), None),
            Backing::S3(m, f) => (m.spec(S3_ADMIN.0), Some(f)),
            Backing::Gcs(g, f) => (g.spec(), Some(f)),
        };
        let mut args = vec!["--cache-store".to_owned(), spec];
        if let Some(f) = file {
            args.push("--password-file".into());
            args.push(f.display().to_string());
        }
        args
    }

    /// Writes `data` at `path` (`<scope>/@/<key>`) straight into the store, through the
    /// service's own API and not vouch's, as anyone who can write there would: any run of a
    /// PR on the GitHub cache (with `as_ref`'s token: a `pull_request` run writes its merge
    /// ref's scope, under whatever key it likes), a holder of a leaked credential elsewhere.
    pub fn plant(&self, path: &str, data: &[u8], as_ref: &str) {
        match self {
            Backing::Dir(d) => {
                let f = d.join(path);
                std::fs::create_dir_all(f.parent().unwrap()).unwrap();
                std::fs::write(f, data).unwrap();
            }
            Backing::Redis(r) => {
                let mut child = Command::new("redis-cli")
                    .args(["-p", &r.port.to_string(), "-x", "SET", path])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap();
                std::io::Write::write_all(&mut child.stdin.take().unwrap(), data).unwrap();
                let out = child.wait_with_output().unwrap();
                assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
            }
            Backing::S3(m, _) => {
                let file = tempfile::NamedTempFile::new().unwrap();
                std::fs::write(file.path(), data).unwrap();
                m.boto(
                    &format!(
                        "s3.put_object(Bucket={BUCKET:?}, Key='vouch/' + sys.argv[4], Body=open(sys.argv[5], 'rb').read())"
                    ),
                    &[path, file.path().to_str().unwrap()],
                );
            }
            Backing::Gcs(g, _) => {
                let file = tempfile::NamedTempFile::new().unwrap();
                std::fs::write(file.path(), data).unwrap();
                py(
                    r#"
import sys, urllib.request, urllib.parse
u = "http://127.0.0.1:%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (
    sys.argv[1], sys.argv[2], urllib.parse.quote("vouch/" + sys.argv[3], safe=""))
req = urllib.request.Request(u, data=open(sys.argv[4], "rb").read(), method="POST",
                             headers={"Content-Type": "application/octet-stream"})
urllib.request.urlopen(req).read()
"#,
                    &[
                        &g.port.to_string(),
                        BUCKET,
                        path,
                        file.path().to_str().unwrap(),
                    ],
                );
            }
            Backing::Gha(g) => {
                // OpenDAL's v2 client sends the SHA-256 (hex) of the version vouch names.
                let version: String = sha2::Sha256::digest(b"vouch-cache-1")
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                let token = g.token(Some(as_ref), &[as_ref]);
                g.plant(&token, &format!("vouch/{path}"), &version, data);
            }
        }
    }

    /// Every key the store holds, as `<scope>/<tool>/...`.
    pub fn keys(&self) -> Vec<String> {
        let mut keys = match self {
            Backing::Dir(d) => walk(d)
                .into_iter()
                .map(|p| p.strip_prefix(d).unwrap().display().to_string())
                .filter(|k| !k.starts_with(".vouch-tmp"))
                .collect(),
            Backing::Redis(r) => r
                .cli(&["--raw", "KEYS", "*"])
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect(),
            Backing::S3(m, _) => m.keys(),
            Backing::Gcs(g, _) => g.keys(),
            Backing::Gha(g) => g
                .entries()
                .into_iter()
                .map(|e| {
                    e.key
                        .trim_start_matches('/')
                        .trim_start_matches("vouch/")
                        .to_owned()
                })
                .collect(),
        };
        keys.sort();
        keys
    }
}
