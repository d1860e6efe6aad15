//! `vouch audit --pypi NAME==VERSION`: a release's files as an index lists them (PEP 691 JSON
//! simple API), each with its PEP 740 provenance from the integrity API, audited by the same
//! [`Auditor`] as a local directory.
//!
//! Provenance is fetched before the file: a file the index has no provenance for can only be
//! "no evidence", so it is not downloaded at all (CUDA wheels run to 70 MB each, a release to
//! over a gigabyte). A file that is downloaded is checked against the index's published sha256
//! and size while it streams; one that does not match is refused and never reaches the
//! Auditor. Everything lands in a private scratch directory that is gone when the audit
//! returns, and rows name files by their index file name, never by a scratch path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use vouch_core::Sha256Digest;
use vouch_http::{Client, HttpError, Redirects, redact};
use vouch_verify::ErrorKind;

use crate::{Auditor, Row, Verdict, dist_name, with_causes};

/// PyPI's simple index.
pub const DEFAULT_INDEX: &str = "https://pypi.org/simple/";
const SIMPLE_JSON: &str = "application/vnd.pypi.simple.v1+json";
const INTEGRITY_JSON: &str = "application/vnd.pypi.integrity.v1+json";
/// The first simple API version with per-file `provenance` URLs (PEP 740).
const PROVENANCE_API: (u64, u64) = (1, 3);
/// A project page lists every file of every release: CuPy's run to a few MB.
const MAX_PAGE: u64 = 64 << 20;
const MAX_PROVENANCE: u64 = 16 << 20;
/// For a file the index gives no size for.
const MAX_FILE: u64 = 4 << 30;
/// Bounds one whole request, body included: a 70 MB wheel over a slow link.
const TIMEOUT: Duration = Duration::from_secs(900);

/// `NAME==VERSION`, as given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    pub name: String,
    pub version: String,
}

impl FromStr for Release {
    type Err = PypiError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || PypiError::Spec {
            given: s.to_owned(),
        };
        let (name, version) = s.split_once("==").ok_or_else(bad)?;
        let (name, version) = (name.trim(), version.trim());
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        // A version is one path segment of the integrity URL and part of file names.
        let valid_version = !version.is_empty()
            && version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '!' | '-' | '_'));
        if !valid_name || !valid_version {
            return Err(bad());
        }
        Ok(Release {
            name: name.to_owned(),
            version: version.to_owned(),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PypiError {
    #[error("{given:?} is not NAME==VERSION (for example cupy-cuda13x==14.2.0)")]
    Spec { given: String },
    #[error("index URL {url:?}: {problem}")]
    IndexUrl { url: String, problem: &'static str },
    #[error("cannot read the index page {url}")]
    Index {
        url: String,
        #[source]
        source: HttpError,
    },
    #[error("{project} is not on the index (GET {url} answered 404)")]
    NoProject { project: String, url: String },
    #[error("the index page {url} is not a PEP 691 JSON project page: {reason}")]
    Page { url: String, reason: String },
    #[error(
        "{project} {version}: the index page {url} lists no wheel or sdist of that version{others}"
    )]
    NoFiles {
        project: String,
        version: String,
        url: String,
        /// `; it has 1.0, 1.1` or empty.
        others: String,
    },
    #[error("cannot make a scratch directory for the downloads")]
    Scratch(#[source] std::io::Error),
    #[error("cannot run the downloads")]
    Runtime(#[source] HttpError),
}

/// What `audit --pypi` found: one row per file of the release, in file-name order.
#[derive(Debug)]
pub struct PypiAudit {
    /// The project page read, redacted.
    pub page: String,
    /// The index's `meta.api-version`.
    pub api_version: String,
    pub rows: Vec<Row>,
    /// Things a reader needs to understand the rows (an old API, skipped files).
    pub notes: Vec<String>,
}

/// The PEP 503 normalized form of a project name.
pub fn normalize(name: &str) -> String {
    vouch_core::normalize_dist_name(name)
}

/// Whether `filename` is a wheel or sdist of `project` (normalized) at `version`. Other kinds
/// (eggs, `.exe` installers, `.tar.bz2` sdists) are not audited.
pub fn is_release_file(filename: &str, project: &str, version: &str) -> bool {
    if filename.ends_with(".whl") {
        return filename
            .parse::<vouch_wheel::WheelFilename>()
            .is_ok_and(|w| w.normalized_name() == project && same_version(&w.version, version));
    }
    let Some(stem) = [".tar.gz", ".zip"]
        .iter()
        .find_map(|s| filename.strip_suffix(s))
    else {
        return false;
    };
    // Versions never hold a `-`; old sdists' names may (`cupy-cuda13x-14.2.0.tar.gz`).
    stem.rsplit_once('-')
        .is_some_and(|(n, v)| normalize(n) == project && same_version(v, version))
}

/// Versions as PyPI spells them in file names: case-insensitively, and a wheel writes a
/// local version's separators as `_`.
fn same_version(in_name: &str, wanted: &str) -> bool {
    let norm = |v: &str| v.to_ascii_lowercase().replace(['-', '_'], ".");
    norm(in_name) == norm(wanted)
}

/// The index URL, checked: https, or plain http on loopback only (the tests' fake index).
pub fn index_url(given: &str) -> Result<url::Url, PypiError> {
    let bad = |problem| PypiError::IndexUrl {
        url: redact(given),
        problem,
    };
    let mut u = url::Url::parse(given).map_err(|_| bad("not a URL"))?;
    match u.scheme() {
        "https" => {}
        "http" if vouch_http::is_loopback(&u) => {}
        "http" => {
            return Err(bad(
                "plain http is refused off loopback: the file list and digests must come over https",
            ));
        }
        _ => return Err(bad("must be https")),
    }
    if u.query().is_some() || u.fragment().is_some() {
        return Err(bad("must not carry a query or fragment"));
    }
    // `join` replaces the last segment unless the path ends with `/`.
    if !u.path().ends_with('/') {
        let path = format!("{}/", u.path());
        u.set_path(&path);
    }
    Ok(u)
}

fn secure(u: &url::Url) -> bool {
    u.scheme() == "https" || (u.scheme() == "http" && vouch_http::is_loopback(u))
}

#[derive(Deserialize)]
struct Page {
    meta: Meta,
    files: Vec<PageFile>,
    #[serde(default)]
    versions: Vec<String>,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(rename = "api-version")]
    api_version: String,
}

#[derive(Deserialize)]
struct PageFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: BTreeMap<String, String>,
    #[serde(default)]
    size: Option<u64>,
    /// `false`, `true` or the reason (a string).
    #[serde(default)]
    yanked: Value,
    #[serde(default)]
    provenance: Option<String>,
}

fn parse_api_version(v: &str) -> Option<(u64, u64)> {
    let (major, minor) = v.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// One file of the release, as the index describes it.
struct Listed {
    filename: String,
    url: url::Url,
    sha256: Result<Sha256Digest, String>,
    size: Option<u64>,
    provenance: Option<url::Url>,
}

/// What became of one listed file before the Auditor.
enum Outcome {
    /// The file and its provenance are in the scratch directory.
    Ready {
        path: PathBuf,
        provenance: String,
        url: String,
    },
    /// A finished row (no evidence, or refused).
    Row(Box<Row>),
}

/// A body read whole, capped while it streams.
async fn read_capped(
    mut resp: reqwest::Response,
    url: &str,
    max: u64,
) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk);
                if body.len() as u64 > max {
                    return Err(HttpError::Transfer {
                        url: redact(url),
                        reason: format!("the answer exceeds {max} bytes"),
                    });
                }
            }
            Ok(None) => return Ok(body),
            Err(_) => {
                return Err(HttpError::Transfer {
                    url: redact(url),
                    reason: "the answer was cut off".into(),
                });
            }
        }
    }
}

/// `GET url` asking for `accept`; a 404 is `None`, for the caller to explain.
async fn get_accepting(
    client: &Client,
    url: &url::Url,
    accept: &'static str,
) -> Result<Option<reqwest::Response>, HttpError> {
    match client
        .get_with(url.as_str(), |c| {
            c.get(url.as_str()).header("accept", accept)
        })
        .await
    {
        Ok(r) => Ok(Some(r)),
        Err(HttpError::Status { status: 404, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// PyPI's integrity API for one file: `<origin>/integrity/<project>/<version>/<file>/provenance`,
/// where the origin is the index's scheme, host and port (a mirror's credentials kept).
pub fn integrity_url(index: &url::Url, project: &str, version: &str, filename: &str) -> url::Url {
    let mut u = index.clone();
    u.set_query(None);
    u.set_fragment(None);
    if let Ok(mut path) = u.path_segments_mut() {
        path.clear()
            .extend(["integrity", project, version, filename, "provenance"]);
    }
    u
}

/// A name safe to create in the scratch directory: PyPI's file names never need more.
fn plain_file_name(name: &str) -> bool {
    !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | '!'))
}

/// The release's files from the project page, sorted by name, and what to tell the reader.
struct Listing {
    page: String,
    api_version: String,
    api: (u64, u64),
    files: Vec<Result<Listed, Box<Row>>>,
    notes: Vec<String>,
}

async fn read_page(
    client: &Client,
    release: &Release,
    index: &url::Url,
) -> Result<Listing, PypiError> {
    let project = normalize(&release.name);
    let page_url = index
        .join(&format!("{project}/"))
        .map_err(|_| PypiError::IndexUrl {
            url: redact(index.as_str()),
            problem: "cannot hold a project page under it",
        })?;
    let page = redact(page_url.as_str());
    let index_err = |source| PypiError::Index {
        url: page.clone(),
        source,
    };
    let resp = match get_accepting(client, &page_url, SIMPLE_JSON).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            return Err(PypiError::NoProject { project, url: page });
        }
        Err(e) => return Err(index_err(e)),
    };
    // Relative file URLs are relative to the page as finally served (after redirects).
    let base = resp.url().clone();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("no content type")
        .to_owned();
    let bad_page = |reason: String| PypiError::Page {
        url: page.clone(),
        reason,
    };
    if !content_type.contains("json") {
        return Err(bad_page(format!(
            "it answered {content_type}, not {SIMPLE_JSON}: the index does not serve the JSON simple API"
        )));
    }
    let body = read_capped(resp, page_url.as_str(), MAX_PAGE)
        .await
        .map_err(index_err)?;
    let parsed: Page = serde_json::from_slice(&body).map_err(|e| bad_page(e.to_string()))?;
    let api_version = parsed.meta.api_version;
    let api = parse_api_version(&api_version)
        .filter(|(major, _)| *major == 1)
        .ok_or_else(|| {
            bad_page(format!(
                "meta.api-version is {api_version:?}; this client reads version 1.x"
            ))
        })?;
    tracing::info!(page = %page, api_version = %api_version, files = parsed.files.len(), "read the project page");
    let mut notes = vec![format!("index page {page}: simple API {api_version}")];
    if api < PROVENANCE_API {
        notes.push(format!(
            "the index (API {api_version}) lists no provenance URLs (API 1.3 added them): asking {} for each file",
            redact(integrity_url(index, &project, &release.version, "FILE").as_str())
        ));
    }
    let mut chosen: Vec<PageFile> = parsed
        .files
        .into_iter()
        .filter(|f| is_release_file(&f.filename, &project, &release.version))
        .collect();
    if chosen.is_empty() {
        let mut versions = parsed.versions;
        versions.retain(|v| !v.is_empty());
        let tail = versions.len().saturating_sub(10);
        let others = if versions.is_empty() {
            String::new()
        } else {
            format!(
                "; its {}versions: {}",
                if tail > 0 { "latest " } else { "" },
                versions[tail..].join(", ")
            )
        };
        return Err(PypiError::NoFiles {
            project,
            version: release.version.clone(),
            url: page,
            others,
        });
    }
    chosen.sort_by(|a, b| a.filename.cmp(&b.filename));
    if let Some(w) = chosen.windows(2).find(|w| w[0].filename == w[1].filename) {
        return Err(bad_page(format!("it lists {} twice", w[0].filename)));
    }
    let files = chosen
        .into_iter()
        .map(|f| {
            let refuse = |reason: String| {
                let mut row = Row::new(
                    Path::new(&f.filename),
                    dist_name(&f.filename),
                    Verdict::Failed,
                );
                row.reason = Some(reason);
                Box::new(row)
            };
            if !plain_file_name(&f.filename) {
                return Err(refuse(format!(
                    "the index names the file {:?}, which is not a plain file name",
                    f.filename
                )));
            }
            let url = base
                .join(&f.url)
                .map_err(|_| refuse(format!("the index gives it the URL {:?}", f.url)))?;
            let provenance =
                match f.provenance.as_deref() {
                    None => None,
                    Some(p) => Some(base.join(p).map_err(|_| {
                        refuse(format!("the index gives it the provenance URL {p:?}"))
                    })?),
                };
            if f.yanked != Value::Bool(false) && !f.yanked.is_null() {
                notes.push(format!("{} is yanked", f.filename));
            }
            let sha256 = match f.hashes.get("sha256") {
                None => Err("the index publishes no sha256 for it".to_owned()),
                Some(h) => Sha256Digest::from_hex(h).map_err(|_| {
                    format!("the index publishes the sha256 {h:?}, not 64 hex digits")
                }),
            };
            Ok(Listed {
                filename: f.filename,
                url,
                sha256,
                size: f.size,
                provenance,
            })
        })
        .collect();
    Ok(Listing {
        page,
        api_version,
        api,
        files,
        notes,
    })
}

/// Fetches one file's provenance, then the file, into `dir`.
async fn fetch_one(
    client: &Client,
    l: &Listed,
    integrity: url::Url,
    api_version: &str,
    old_api: bool,
    dir: &Path,
) -> Outcome {
    let mut row = Row::new(
        Path::new(&l.filename),
        dist_name(&l.filename),
        Verdict::Failed,
    );
    row.url = Some(redact(l.url.as_str()));
    let from_index = l.provenance.is_some();
    let prov_url = l.provenance.clone().unwrap_or(integrity);
    let prov = redact(prov_url.as_str());
    let failed = |mut row: Row, kind: Option<ErrorKind>, reason: String| {
        row.kind = kind;
        row.reason = Some(reason);
        Outcome::Row(Box::new(row))
    };
    if !secure(&prov_url) {
        return failed(
            row,
            Some(ErrorKind::Bundle),
            format!("refusing its provenance URL {prov}: plain http off loopback"),
        );
    }
    tracing::info!(file = %l.filename, url = %prov, "fetching the provenance");
    let resp = match get_accepting(client, &prov_url, INTEGRITY_JSON).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            let why = if from_index {
                format!("the index's provenance URL {prov} answered 404")
            } else if old_api {
                format!(
                    "the index (API {api_version}) publishes no provenance, and {prov} answered 404"
                )
            } else {
                format!("the index lists no provenance for it, and {prov} answered 404")
            };
            row.verdict = Verdict::NoEvidence;
            row.reason = Some(format!("no provenance: {why}; not downloaded"));
            return Outcome::Row(Box::new(row));
        }
        Err(e) => {
            return failed(
                row,
                None,
                format!("cannot fetch its provenance: {}", with_causes(&e)),
            );
        }
    };
    let prov_path = dir.join(format!("{}.provenance", l.filename));
    if let Err(e) = vouch_http::save(
        resp,
        prov_url.as_str(),
        &prov_path,
        Some(MAX_PROVENANCE),
        None,
    )
    .await
    {
        return failed(
            row,
            None,
            format!("cannot fetch its provenance: {}", with_causes(&e)),
        );
    }
    row.evidence = vec![PathBuf::from(&prov)];
    let published = match &l.sha256 {
        Ok(d) => *d,
        Err(why) => {
            return failed(
                row,
                Some(ErrorKind::Digest),
                format!("{why}: not downloaded"),
            );
        }
    };
    let url = redact(l.url.as_str());
    if !secure(&l.url) {
        return failed(
            row,
            None,
            format!("refusing to download it from {url}: plain http off loopback"),
        );
    }
    tracing::info!(file = %l.filename, url = %url, size = ?l.size, "downloading");
    let path = dir.join(&l.filename);
    let saved = match client.get(l.url.as_str()).await {
        Ok(resp) => {
            vouch_http::save(
                resp,
                l.url.as_str(),
                &path,
                Some(l.size.unwrap_or(MAX_FILE)),
                None,
            )
            .await
        }
        Err(e) => Err(e),
    };
    let refuse = |mut row: Row, kind, reason| {
        // Bytes that failed a check are never left where anything could pick them up.
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&prov_path);
        row.kind = kind;
        row.reason = Some(reason);
        Outcome::Row(Box::new(row))
    };
    match saved {
        Err(e) => refuse(row, None, format!("download failed: {}", with_causes(&e))),
        Ok(d) if d.sha256 != published => {
            row.sha256 = Some(d.sha256);
            refuse(
                row,
                Some(ErrorKind::Digest),
                format!(
                    "digest check failed: the bytes from {url} are {}, but the index publishes {published}",
                    d.sha256
                ),
            )
        }
        Ok(d) if l.size.is_some_and(|s| s != d.bytes) => refuse(
            row,
            Some(ErrorKind::Digest),
            format!(
                "{url} served {} bytes, but the index publishes {}",
                d.bytes,
                l.size.unwrap_or_default()
            ),
        ),
        Ok(_) => Outcome::Ready {
            path,
            provenance: prov,
            url,
        },
    }
}

impl Auditor {
    /// Audits every wheel and sdist of `release` on the index at `index` (see [`index_url`]):
    /// one row per file, in file-name order, as [`Auditor::audit`] gives for a directory.
    pub fn audit_pypi(&self, release: &Release, index: &url::Url) -> Result<PypiAudit, PypiError> {
        let scratch = tempfile::Builder::new()
            .prefix("vouch-pypi-")
            .tempdir()
            .map_err(PypiError::Scratch)?;
        let (listing, outcomes) = vouch_http::block_on(async {
            let client = Client::new(Redirects::FollowSecure, TIMEOUT).map_err(|source| {
                PypiError::Index {
                    url: redact(index.as_str()),
                    source,
                }
            })?;
            let mut listing = read_page(&client, release, index).await?;
            let project = normalize(&release.name);
            let old_api = listing.api < PROVENANCE_API;
            let mut outcomes = Vec::new();
            for f in std::mem::take(&mut listing.files) {
                outcomes.push(match f {
                    Err(row) => Outcome::Row(row),
                    Ok(l) => {
                        let integrity =
                            integrity_url(index, &project, &release.version, &l.filename);
                        fetch_one(
                            &client,
                            &l,
                            integrity,
                            &listing.api_version,
                            old_api,
                            scratch.path(),
                        )
                        .await
                    }
                });
            }
            Ok::<_, PypiError>((listing, outcomes))
        })
        .map_err(PypiError::Runtime)??;
        let ready: Vec<PathBuf> = outcomes
            .iter()
            .filter_map(|o| match o {
                Outcome::Ready { path, .. } => Some(path.clone()),
                Outcome::Row(_) => None,
            })
            .collect();
        let mut audited = self.audit(&ready).into_iter();
        // Evidence errors name the scratch path; the reader knows the file by its name.
        let scratch_prefix = format!("{}{}", scratch.path().display(), std::path::MAIN_SEPARATOR);
        let rows = outcomes
            .into_iter()
            .map(|o| {
                let mut row = match o {
                    Outcome::Row(row) => *row,
                    Outcome::Ready {
                        path,
                        provenance,
                        url,
                    } => {
                        let mut row = audited.next().expect("one row per file audited");
                        row.file = PathBuf::from(path.file_name().unwrap_or_default());
                        row.evidence = vec![PathBuf::from(provenance)];
                        row.url = Some(url);
                        row
                    }
                };
                row.reason = row.reason.map(|r| r.replace(&scratch_prefix, ""));
                row
            })
            .collect();
        if let Err(e) = scratch.close() {
            tracing::warn!(error = %e, "could not remove the scratch directory");
        }
        Ok(PypiAudit {
            page: listing.page,
            api_version: listing.api_version,
            rows,
            notes: listing.notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalize_as_pep_503_says() {
        for (given, want) in [
            ("pypi-attestations", "pypi-attestations"),
            ("pypi_attestations", "pypi-attestations"),
            ("PyPI.Attestations", "pypi-attestations"),
            ("cupy-cuda13x", "cupy-cuda13x"),
            ("Friendly--_.Bard", "friendly-bard"),
        ] {
            assert_eq!(normalize(given), want, "{given}");
        }
    }

    #[test]
    fn release_specs() {
        assert_eq!(
            "pypi-attestations==0.0.19".parse::<Release>().unwrap(),
            Release {
                name: "pypi-attestations".into(),
                version: "0.0.19".into()
            }
        );
        for bad in [
            "cupy",
            "cupy==",
            "==1.0",
            "cupy>=1.0",
            "a/b==1",
            "cupy==1/../2",
            "cupy==1 2",
        ] {
            assert!(bad.parse::<Release>().is_err(), "{bad}");
        }
    }

    #[test]
    fn files_of_a_version_are_chosen_by_their_names() {
        let p = "cupy-cuda13x";
        for (file, version, chosen) in [
            (
                "cupy_cuda13x-14.2.0-cp312-cp312-manylinux2014_x86_64.whl",
                "14.2.0",
                true,
            ),
            (
                "cupy_cuda13x-14.2.0-cp314-cp314t-win_arm64.whl",
                "14.2.0",
                true,
            ),
            ("cupy_cuda13x-14.2.0.tar.gz", "14.2.0", true),
            ("cupy-cuda13x-14.2.0.tar.gz", "14.2.0", true),
            ("cupy_cuda13x-14.2.0.zip", "14.2.0", true),
            ("CuPy_CUDA13x-14.2.0rc1.tar.gz", "14.2.0RC1", true),
            (
                "cupy_cuda13x-14.2.1-cp312-cp312-manylinux2014_x86_64.whl",
                "14.2.0",
                false,
            ),
            ("cupy_cuda13x-14.2.0.1.tar.gz", "14.2.0", false),
            (
                "cupy_cuda13x-14.2.0-1-cp312-cp312-win_amd64.whl",
                "14.2.0",
                true,
            ),
            (
                "cupy_cuda12x-14.2.0-cp312-cp312-manylinux2014_x86_64.whl",
                "14.2.0",
                false,
            ),
            ("cupy-14.2.0.tar.gz", "14.2.0", false),
            ("cupy_cuda13x-14.2.0.tar.bz2", "14.2.0", false),
            ("cupy_cuda13x-14.2.0-py3.12.egg", "14.2.0", false),
            ("cupy_cuda13x-14.2.0.tar.gz.provenance", "14.2.0", false),
        ] {
            assert_eq!(
                is_release_file(file, p, version),
                chosen,
                "{file} {version}"
            );
        }
        assert!(is_release_file(
            "pypi_attestations-0.0.19.tar.gz",
            "pypi-attestations",
            "0.0.19"
        ));
        assert!(is_release_file(
            "pypi_attestations-0.0.19-py3-none-any.whl",
            "pypi-attestations",
            "0.0.19"
        ));
    }

    #[test]
    fn index_urls() {
        assert_eq!(
            index_url("https://pypi.org/simple").unwrap().as_str(),
            "https://pypi.org/simple/"
        );
        assert_eq!(
            index_url("http://127.0.0.1:8080/simple/").unwrap().as_str(),
            "http://127.0.0.1:8080/simple/"
        );
        for bad in [
            "http://mirror.example/simple/",
            "ftp://mirror.example/simple/",
            "https://pypi.org/simple/?x=1",
            "not a url",
        ] {
            assert!(index_url(bad).is_err(), "{bad}");
        }
        let err = index_url("http://user:secret@mirror.example/simple/").unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
        let pypi = index_url(DEFAULT_INDEX).unwrap();
        assert_eq!(
            integrity_url(
                &pypi,
                "pypi-attestations",
                "0.0.19",
                "pypi_attestations-0.0.19.tar.gz"
            )
            .as_str(),
            "https://pypi.org/integrity/pypi-attestations/0.0.19/pypi_attestations-0.0.19.tar.gz/provenance"
        );
        let mirror = index_url("https://mirror.example:8443/pypi/simple/").unwrap();
        assert_eq!(
            integrity_url(&mirror, "a", "1.0+local", "a-1.0+local.tar.gz").as_str(),
            "https://mirror.example:8443/integrity/a/1.0+local/a-1.0+local.tar.gz/provenance"
        );
    }

    #[test]
    fn api_versions() {
        assert_eq!(parse_api_version("1.1"), Some((1, 1)));
        assert_eq!(parse_api_version("1.3"), Some((1, 3)));
        assert!(parse_api_version("1.1") < Some(PROVENANCE_API));
        assert!(parse_api_version("1.4") >= Some(PROVENANCE_API));
        assert_eq!(parse_api_version("2"), None);
    }
}
