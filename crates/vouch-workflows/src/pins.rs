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
}

impl ActionPin {
    /// `owner/repo@<sha> # <version>`: the value of a `uses:` key.
    pub fn uses(&self) -> String {
        format!("{}@{} # {}", self.action, self.sha, self.version)
    }
}

pub const CHECKOUT: ActionPin = ActionPin {
    action: "actions/checkout",
    sha: "11bd71901bbe5b1630ceea73d27597364c9af683",
    version: "v4.2.2",
};

pub const SETUP_PYTHON: ActionPin = ActionPin {
    action: "actions/setup-python",
    sha: "a26af69be951a213d495a4c3e4e4022e16d87065",
    version: "v5.6.0",
};

pub const UPLOAD_ARTIFACT: ActionPin = ActionPin {
    action: "actions/upload-artifact",
    sha: "ea165f8d65b6e75b540449e92b4886f43607fa02",
    version: "v4.6.2",
};

pub const DOWNLOAD_ARTIFACT: ActionPin = ActionPin {
    action: "actions/download-artifact",
    sha: "d3f86a106a0bac45b974a628896c90dbdf5c8093",
    version: "v4.3.0",
};

pub const CREATE_APP_TOKEN: ActionPin = ActionPin {
    action: "actions/create-github-app-token",
    sha: "df432ceedc7162793a195dd1713ff69aefc7379e",
    version: "v2.0.6",
};

/// Every action the generated workflows use.
pub const PINS: &[ActionPin] = &[
    CHECKOUT,
    SETUP_PYTHON,
    UPLOAD_ARTIFACT,
    DOWNLOAD_ARTIFACT,
    CREATE_APP_TOKEN,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_are_full_commits_with_a_version() {
        for p in PINS {
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
}
