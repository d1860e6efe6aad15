//! Install: hand exactly the verified files to pip, each pinned to the digest that was
//! verified, so pip cannot substitute anything on the way.

use std::path::{Path, PathBuf};

use crate::FetchReport;

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("resolving {path:?}")]
    Resolve {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0:?} cannot be a file URL")]
    FileUrl(PathBuf),
    #[error("writing {path:?}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("running {} -m pip", .python.display())]
    Spawn {
        python: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("pip install of the verified wheels failed ({0})")]
    Failed(std::process::ExitStatus),
}

/// `pip install --no-deps --require-hashes` of the report's wheels, with no GitHub token in
/// pip's environment. `scratch` holds the requirements file.
pub fn pip_install_verified(
    python: &Path,
    report: &FetchReport,
    scratch: &Path,
    pip_args: &[String],
) -> Result<(), InstallError> {
    let mut req = String::new();
    for w in &report.wheels {
        let name = w
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let dist = name.split('-').next().unwrap_or(name);
        // An absolute, percent-encoded URL: a relative output directory or a `#` in a path
        // must not change what pip reads.
        let abs = std::path::absolute(&w.path).map_err(|source| InstallError::Resolve {
            path: w.path.clone(),
            source,
        })?;
        let url = url::Url::from_file_path(&abs).map_err(|()| InstallError::FileUrl(abs))?;
        req.push_str(&format!(
            "{dist} @ {url} --hash=sha256:{}\n",
            w.sha256.hex()
        ));
    }
    let req_file = scratch.join("requirements.txt");
    vouch_fs::write_atomically(&req_file, req.as_bytes(), vouch_fs::Mode::Private).map_err(
        |source| InstallError::Write {
            path: req_file.clone(),
            source,
        },
    )?;
    let mut pip = std::process::Command::new(python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--require-hashes",
        "-r",
    ])
    .arg(&req_file)
    .args(pip_args);
    for var in ["GH_TOKEN", "GITHUB_TOKEN", "GH_TOKEN_FILE"] {
        pip.env_remove(var);
    }
    let status = pip.status().map_err(|source| InstallError::Spawn {
        python: python.to_owned(),
        source,
    })?;
    if !status.success() {
        return Err(InstallError::Failed(status));
    }
    Ok(())
}
