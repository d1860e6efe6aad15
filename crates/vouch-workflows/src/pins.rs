//! The third-party actions the generated workflows use, each pinned to the commit its release
//! tag points at (a tag can be moved; a commit cannot).

/// One action at one release, by commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActionPin {
    /// `owner/repo`.
    pub action: &'static str,
    /// The full 40-hex commit the release tag points at.
    pub sha: &'static str,
    /// The release tag, written as the `# vX.Y.Z` comment after the pin.
    pub version: &'static str,
    /// `runs.using` of the action.yml at that commit, as checked when the pin was made.
    pub runs_using: &'static str,
}

impl ActionPin {
    /// `owner/repo@<sha> # <version>`: the value of a `uses:` key.
    pub fn uses(&self) -> String {
        format!("{}@{} # {}", self.action, self.sha, self.version)
    }

    /// A sub-action at the same commit: `owner/repo/<path>@<sha> # <version>`.
    pub fn sub(&self, path: &str) -> String {
        format!("{}/{path}@{} # {}", self.action, self.sha, self.version)
    }
}

// Checked on 2026-12-01 against each action's repository: the commit the tag points at, and
// `runs.using` in that commit's action.yml. GitHub forced Node 24 on every runner on
// 2026-06-02 and removed Node 20 on 2026-09-16
// (https://github.blog/changelog/2025-09-19-deprecation-of-node-20-on-github-actions-runners/),
// so every JavaScript action here must say `node24`; the test below holds that line.

pub const CHECKOUT: ActionPin = ActionPin {
    action: "actions/checkout",
    sha: "3d3c42e5aac5ba805825da76410c181273ba90b1",
    version: "v7.0.1",
    runs_using: "node24",
};

pub const SETUP_PYTHON: ActionPin = ActionPin {
    action: "actions/setup-python",
    sha: "5fda3b95a4ea91299a34e894583c3862153e4b97",
    version: "v7.0.0",
    runs_using: "node24",
};

pub const UPLOAD_ARTIFACT: ActionPin = ActionPin {
    action: "actions/upload-artifact",
    sha: "bbbca2ddaa5d8feaa63e36b76fdaad77386f024f",
    version: "v7.0.0",
    runs_using: "node24",
};

pub const DOWNLOAD_ARTIFACT: ActionPin = ActionPin {
    action: "actions/download-artifact",
    sha: "3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c",
    version: "v8.0.1",
    runs_using: "node24",
};

/// v3 names the App by `client-id` (`app-id` is deprecated).
pub const CREATE_APP_TOKEN: ActionPin = ActionPin {
    action: "actions/create-github-app-token",
    sha: "1b10c78c7865c340bc4f6099eb2f838309f1e8c3",
    version: "v3.1.1",
    runs_using: "node24",
};

pub const CACHE: ActionPin = ActionPin {
    action: "actions/cache",
    sha: "27d5ce7f107fe9357f9df03efb73ab90386fccae",
    version: "v5.0.5",
    runs_using: "node24",
};

/// Hands the runner's cache-service URL and token (given to JavaScript actions only) to the
/// build step of `store = "gha"`.
pub const GITHUB_SCRIPT: ActionPin = ActionPin {
    action: "actions/github-script",
    sha: "ed597411d8f924073f98dfc5c65a23a2325f34cd",
    version: "v8.0.0",
    runs_using: "node24",
};

/// Every action the generated workflows use.
pub const PINS: &[ActionPin] = &[
    CHECKOUT,
    SETUP_PYTHON,
    UPLOAD_ARTIFACT,
    DOWNLOAD_ARTIFACT,
    CREATE_APP_TOKEN,
    CACHE,
    GITHUB_SCRIPT,
];

/// The actions vouch's own release workflow (`.github/workflows/release.yml`) uses besides
/// [`PINS`]; a test compares that file's `uses:` lines with these.
pub const RELEASE_PINS: &[ActionPin] = &[
    ActionPin {
        action: "PyO3/maturin-action",
        sha: "e83996d129638aa358a18fbd1dfb82f0b0fb5d3b",
        version: "v1.51.0",
        runs_using: "node24",
    },
    ActionPin {
        action: "actions/attest-build-provenance",
        sha: "a2bbfa25375fe432b6a289bc6b6cd05ecd0c4c32",
        version: "v4.1.0",
        runs_using: "composite",
    },
];

/// twine, for `twine check --strict` on the sdist and every wheel, with exactly the
/// distributions that command imports (installed `--no-deps --require-hashes`: keyring and its
/// cryptography are for uploads, which the workflows never do). Each hash is the wheel pip picks
/// on `ubuntu-24.04` (x86_64, its Python 3.12), the only runner the check runs on; nh3 is the one
/// with native code. Read with `pip download` from PyPI on 2026-12-07 (twine 7.0.0 of 2026-07).
pub const TWINE: &[(&str, &str)] = &[
    (
        "twine==7.0.0",
        "b854164df26db268af05f49aa5c0344b10e27a494343ff05b1e0bad3b135f5a7",
    ),
    (
        "readme-renderer==46.0",
        "d0dae1f74bb273b534770cb4cccb6bb78735540afdb03c2146f4e19dcd412560",
    ),
    (
        "docutils==0.23",
        "25d013af9bf23bc1c7b2b093dff4208166c53a94786c9e447808335ef1185fea",
    ),
    // cp38-abi3-manylinux_2_17_x86_64
    (
        "nh3==0.3.7",
        "70f5ac8626e899a4bab0ef74ca2f5bd602f49c7b739e6e5026b4afc6d63dac42",
    ),
    (
        "pygments==2.21.0",
        "2363c69b61c4a97c838da3b130dcd6468f4848992b21a82f2a63ec34377137d9",
    ),
    (
        "rich==15.0.0",
        "33bd4ef74232fb73fe9279a257718407f169c09b78a87ad3d296f548e27de0bb",
    ),
    (
        "markdown-it-py==4.3.0",
        "7aa1511a46c39138de78d9eba92ce47e63124d8003fc98b3a351909e04239efa",
    ),
    (
        "mdurl==0.1.2",
        "84008a41e51615a49fc9966191ff91509e3c40b939176e643fd50a5c2196b8f8",
    ),
    (
        "packaging==26.3",
        "d7193f7c8e4e93f444fde0262bf90af30e16fa0ad0ad44cb553c87339b23cd1c",
    ),
    (
        "requests==2.34.2",
        "2a0d60c172f83ac6ab31e4554906c0f3b3588d37b5cb939b1c061f4907e278e0",
    ),
    (
        "urllib3==2.8.0",
        "0cf3cae568d36aa9576b28dfb35f11328f1cb974ca7647d9475ebb86c75ac6e3",
    ),
    (
        "idna==3.21",
        "387ab0bbea1ee7a196ea5b24eb007bad0242cc3127fe96713939942bc9e720d7",
    ),
    (
        "certifi==2026.10.19.post1",
        "1324c476b4811eff41a8bc2122cd0bbd4d9c7234c725446d99ab1612b3a7fdd2",
    ),
    // py3-none-any (requests warns without a charset detector)
    (
        "charset-normalizer==3.5.3",
        "96e268b0cbda016ac519513294fcd17032264085b600abaac58b93049477e132",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_are_full_commits_with_a_version() {
        for p in PINS.iter().chain(RELEASE_PINS) {
            assert_eq!(p.sha.len(), 40, "{}", p.action);
            assert!(
                p.sha
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "{}",
                p.action
            );
            assert!(p.version.starts_with('v'), "{}", p.action);
        }
    }

    #[test]
    fn twine_pins_are_exact_with_a_hash() {
        for (req, sha) in TWINE {
            assert!(
                req.split_once("==")
                    .is_some_and(|(n, v)| !n.is_empty() && !v.is_empty()),
                "{req}"
            );
            assert!(
                sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
                "{req}"
            );
        }
    }

    /// Node 20 is gone from the runners: a JavaScript action pinned to a node20 release fails.
    #[test]
    fn javascript_pins_run_on_node24() {
        for p in PINS.iter().chain(RELEASE_PINS) {
            assert!(
                ["node24", "composite", "docker"].contains(&p.runs_using),
                "{} {} runs on {}",
                p.action,
                p.version,
                p.runs_using
            );
        }
    }
}
