//! The platforms vouch builds for, named as CuPy's CI names them (`linux-64`).
//!
//! Adding a platform is a variant here, its arm in [`Platform::as_str`] and its place in
//! [`Platform::ALL`]; the compiler finds every other match. What differs per project for a
//! platform (the runner label, the toolchain, auditwheel's `--plat`) is profile data keyed by
//! [`Platform::as_str`], not code.

use std::fmt;
use std::str::FromStr;

use crate::NameError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Platform {
    Linux64,
    LinuxAarch64,
    Win64,
}

impl Platform {
    /// Every platform, in the order messages list them.
    pub const ALL: &'static [Platform] =
        &[Platform::Linux64, Platform::LinuxAarch64, Platform::Win64];

    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Linux64 => "linux-64",
            Platform::LinuxAarch64 => "linux-aarch64",
            Platform::Win64 => "win-64",
        }
    }

    /// Whether a wheel's platform tag (`manylinux_2_28_x86_64`, `win_amd64`) is one this
    /// platform's runners build: the machine must match, and the system family.
    pub fn accepts_wheel_platform(self, tag: &str) -> bool {
        let linux = |machine: &str| {
            tag.strip_suffix(machine).is_some_and(|head| {
                head.strip_suffix('_').is_some_and(|family| {
                    family == "linux"
                        || family.starts_with("manylinux")
                        || family.starts_with("musllinux")
                })
            })
        };
        match self {
            Platform::Linux64 => linux("x86_64"),
            Platform::LinuxAarch64 => linux("aarch64"),
            Platform::Win64 => tag == "win_amd64",
        }
    }

    /// The platform of the machine vouch runs on, when it is one a profile can name.
    pub fn host() -> Option<Platform> {
        if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            Some(Platform::Linux64)
        } else if cfg!(all(target_os = "linux", target_arch = "aarch64")) {
            Some(Platform::LinuxAarch64)
        } else if cfg!(all(target_os = "windows", target_arch = "x86_64")) {
            Some(Platform::Win64)
        } else {
            None
        }
    }

    /// `linux-64, linux-aarch64, win-64`: what a message says a platform must be.
    pub fn names() -> String {
        Platform::ALL
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so table columns (`{:<18}`) line up.
        f.pad(self.as_str())
    }
}

impl FromStr for Platform {
    type Err = NameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Platform::ALL
            .iter()
            .copied()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| NameError::Platform(s.to_owned()))
    }
}

impl serde::Serialize for Platform {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Platform {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Platform::ALL {
            assert_eq!(p.as_str().parse::<Platform>().unwrap(), *p);
            let json = serde_json::to_string(p).unwrap();
            assert_eq!(serde_json::from_str::<Platform>(&json).unwrap(), *p);
        }
        assert_eq!(
            "mac-64".parse::<Platform>().unwrap_err().to_string(),
            "platform \"mac-64\" is not one of linux-64, linux-aarch64, win-64"
        );
        assert_eq!(format!("{:<10}|", Platform::Win64), "win-64    |");
    }

    #[test]
    fn wheel_platform_tags() {
        let cases = [
            (Platform::Linux64, "linux_x86_64", true),
            (Platform::Linux64, "manylinux_2_28_x86_64", true),
            (Platform::Linux64, "manylinux2014_x86_64", true),
            (Platform::Linux64, "musllinux_1_2_x86_64", true),
            (Platform::Linux64, "manylinux_2_28_aarch64", false),
            (Platform::Linux64, "macosx_11_0_x86_64", false),
            (Platform::Linux64, "x86_64", false),
            (Platform::Linux64, "any", false),
            (Platform::LinuxAarch64, "manylinux_2_28_aarch64", true),
            (Platform::LinuxAarch64, "linux_x86_64", false),
            (Platform::Win64, "win_amd64", true),
            (Platform::Win64, "win32", false),
            (Platform::Win64, "win_arm64", false),
        ];
        for (p, tag, want) in cases {
            assert_eq!(p.accepts_wheel_platform(tag), want, "{p} {tag}");
        }
    }
}
