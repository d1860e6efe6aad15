//! The marker environment (PEP 508 "Environment Markers") of the interpreter pip installs
//! into, asked of that interpreter: markers must be evaluated for where the requirements
//! land, not for the machine vouch runs on.

use std::path::Path;

use pep508_rs::MarkerEnvironment;

use super::{InstallError, user_python};

/// Prints the marker variables as one JSON object, computed as PEP 508 defines each one. The
/// `+` of a development build's version gets a local label, as `packaging` does, so that the
/// version parses.
const QUERY: &str = r#"
import json, os, platform, sys
def full(info):
    v = "%d.%d.%d" % (info.major, info.minor, info.micro)
    if info.releaselevel != "final":
        v += info.releaselevel[0] + str(info.serial)
    return v
python_full = platform.python_version()
if python_full.endswith("+"):
    python_full += "local"
print(json.dumps({
    "implementation_name": sys.implementation.name,
    "implementation_version": full(sys.implementation.version),
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_python_implementation": platform.python_implementation(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": python_full,
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
}))
"#;

pub(crate) fn marker_environment(python: &Path) -> Result<MarkerEnvironment, InstallError> {
    let failed = |detail: String| InstallError::MarkerEnvironment {
        python: python.to_owned(),
        detail,
    };
    // -I: no user site or PYTHON* variables, whose startup code could print first.
    let out = user_python(python)
        .args(["-I", "-c", QUERY])
        .output()
        .map_err(|source| InstallError::Spawn {
            python: python.to_owned(),
            source,
        })?;
    if !out.status.success() {
        return Err(failed(format!(
            "it exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).map_err(|e| {
        failed(format!(
            "its answer {:?} is not a marker environment: {e}",
            text.trim()
        ))
    })
}
