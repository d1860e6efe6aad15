//! The operating system vouch itself runs on: the one place that knows how a POSIX host and a
//! Windows host differ for vouch (a venv's `bin/python` or `Scripts\python.exe`, `.exe` names,
//! the `PATH` separator, which environment variables a child cannot start without, whether
//! environment names are case-sensitive, execute bits, file locks).
//!
//! This is not [`crate::Platform`]: that is a *target* a wheel is built for (`linux-64`,
//! `win-64`), profile data that a plan can name for any cell on any machine. A
//! [`HostLayout`] is the machine running vouch now. Everything here takes the layout as a value
//! ([`HostLayout::current`] in production) so that both layouts are unit-tested on any host;
//! only the functions that touch the file system ([`set_executable`], [`lock_exclusive`]) are
//! compiled per OS.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// How the host lays out programs and environments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostLayout {
    /// Linux, macOS: `venv/bin/python`, `:` between `PATH` entries, case-sensitive names.
    Posix,
    /// `venv\Scripts\python.exe`, `;` between `PATH` entries, case-insensitive names.
    Windows,
}

/// A `PATH`-like list vouch was asked to build holds an entry it cannot represent.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot put {entry:?} on a {layout:?} search path: it contains {separator:?}, the character \
     that separates entries there"
)]
pub struct PathListError {
    pub entry: PathBuf,
    pub layout: HostLayout,
    pub separator: char,
}

/// Variables a child on a POSIX host needs to find programs and a home and temp directory.
const POSIX_SYSTEM: &[&str] = &["PATH", "HOME", "TMPDIR", "LANG"];

/// Variables a child on a Windows host cannot do without. Sources, by name:
/// - `SYSTEMROOT`: Python's `subprocess` docs ("on Windows, in order to run a side-by-side
///   assembly the specified env must include a valid SystemRoot"); Winsock and CPython's
///   random-number initialization fail without it. `WINDIR` and `SystemDrive` are what `cmd.exe`
///   scripts (vcvarsall.bat) expand.
/// - `TEMP`, `TMP`: CPython `tempfile._candidate_tempdir_list` (pip and the build backend
///   unpack there). `USERPROFILE` (with `HOMEDRIVE`/`HOMEPATH`): `ntpath.expanduser`.
/// - `PATHEXT`: `shutil.which` and `cmd.exe` find `cl.exe`, `nvcc.exe`, `vswhere.exe` through it.
///   `COMSPEC`: setuptools runs `cmd /u /c vcvarsall.bat ... && set`
///   (`setuptools/_distutils/_msvccompiler.py`, `_get_vc_env`).
/// - `LOCALAPPDATA`, `APPDATA`: platformdirs' fallbacks for pip's cache and config directories.
/// - `ProgramFiles(x86)`, `ProgramFiles`: where `_find_vc2017` (same file) looks for
///   `Microsoft Visual Studio\Installer\vswhere.exe`; `ProgramW6432` and `CommonProgramFiles*`
///   are read by vcvarsall.bat. `ProgramData`: vswhere's instance store
///   (`%ProgramData%\Microsoft\VisualStudio\Packages\_Instances`).
/// - `NUMBER_OF_PROCESSORS`, `PROCESSOR_ARCHITECTURE`, `PROCESSOR_ARCHITEW6432`: CPython
///   `platform.uname` (hence `sysconfig.get_platform`, the wheel tag) and vcvarsall.bat's
///   host-architecture choice; build tools size their job pools from the first.
const WINDOWS_SYSTEM: &[&str] = &[
    "PATH",
    "SYSTEMROOT",
    "SystemDrive",
    "WINDIR",
    "TEMP",
    "TMP",
    "PATHEXT",
    "COMSPEC",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "APPDATA",
    "ProgramData",
    "ProgramFiles",
    "ProgramFiles(x86)",
    "ProgramW6432",
    "CommonProgramFiles",
    "CommonProgramFiles(x86)",
    "CommonProgramW6432",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
    "PROCESSOR_ARCHITEW6432",
    "OS",
];

/// The MSVC environment a CI step set up (a Developer Command Prompt, `vcvarsall.bat`): with
/// `DISTUTILS_USE_SDK` set, setuptools takes the compiler from these instead of running
/// vswhere itself (`_get_vc_env`); `INCLUDE`/`LIB`/`LIBPATH` are what `cl.exe` and `link.exe`
/// read, `CL`/`_CL_`/`LINK`/`_LINK_` their extra flags.
const WINDOWS_COMPILER: &[&str] = &[
    "DISTUTILS_USE_SDK",
    "MSSdk",
    "INCLUDE",
    "LIB",
    "LIBPATH",
    "CL",
    "_CL_",
    "LINK",
    "_LINK_",
    "VSINSTALLDIR",
    "VCINSTALLDIR",
    "VCToolsInstallDir",
    "VCToolsVersion",
    "VisualStudioVersion",
    "WindowsSdkDir",
    "WindowsSDKVersion",
    "WindowsSdkBinPath",
    "UniversalCRTSdkDir",
    "UCRTVersion",
    "VSCMD_ARG_HOST_ARCH",
    "VSCMD_ARG_TGT_ARCH",
];

impl HostLayout {
    /// The layout of the machine this binary was compiled for.
    pub const fn current() -> HostLayout {
        if cfg!(windows) {
            HostLayout::Windows
        } else {
            HostLayout::Posix
        }
    }

    /// The venv directory holding its interpreter and console scripts.
    pub fn venv_scripts_dir(self) -> &'static str {
        match self {
            HostLayout::Posix => "bin",
            HostLayout::Windows => "Scripts",
        }
    }

    /// A program's file name: `python` or `python.exe`.
    pub fn executable(self, stem: &str) -> String {
        match self {
            HostLayout::Posix => stem.to_owned(),
            HostLayout::Windows => format!("{stem}.exe"),
        }
    }

    /// The console script or interpreter `stem` of the venv at `root`.
    pub fn venv_program(self, root: &Path, stem: &str) -> PathBuf {
        root.join(self.venv_scripts_dir())
            .join(self.executable(stem))
    }

    /// The interpreter of the venv at `root`.
    pub fn venv_python(self, root: &Path) -> PathBuf {
        self.venv_program(root, "python")
    }

    /// What separates the entries of `PATH`, `LIBRARY_PATH`, `INCLUDE`.
    pub fn path_list_separator(self) -> char {
        match self {
            HostLayout::Posix => ':',
            HostLayout::Windows => ';',
        }
    }

    /// `dirs` as one search-path value. An entry holding the separator would silently become
    /// two entries, so it is refused (as [`std::env::join_paths`] does for the build host only).
    pub fn join_path_list<I, P>(self, dirs: I) -> Result<OsString, PathListError>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<OsStr>,
    {
        let sep = self.path_list_separator();
        let mut out = OsString::new();
        for (i, dir) in dirs.into_iter().enumerate() {
            let dir = dir.as_ref();
            // Windows also refuses `"`: cmd.exe and the C runtime treat it as quoting.
            let bad = |b: &u8| *b == sep as u8 || (self == HostLayout::Windows && *b == b'"');
            if dir.as_encoded_bytes().iter().any(bad) {
                return Err(PathListError {
                    entry: PathBuf::from(dir),
                    layout: self,
                    separator: sep,
                });
            }
            if i > 0 {
                out.push(sep.to_string());
            }
            out.push(dir);
        }
        Ok(out)
    }

    /// The entries of a search-path value; empty entries are dropped.
    pub fn split_path_list(self, value: &OsStr) -> Vec<PathBuf> {
        let sep = self.path_list_separator() as u8;
        value
            .as_encoded_bytes()
            .split(|b| *b == sep)
            .filter(|s| !s.is_empty())
            // Lossy: vouch only splits lists it shows or re-joins, never a path it must open.
            .map(|s| PathBuf::from(String::from_utf8_lossy(s).into_owned()))
            .collect()
    }

    /// Whether two environment variable names name one variable: Windows ignores case
    /// (`Path` is `PATH`), POSIX does not.
    pub fn same_env_name(self, a: &str, b: &str) -> bool {
        match self {
            HostLayout::Posix => a == b,
            HostLayout::Windows => a.eq_ignore_ascii_case(b),
        }
    }

    /// Whether `name` matches `pattern`, a name or a prefix ending in `*`, under this layout's
    /// case rule.
    pub fn env_name_matches(self, pattern: &str, name: &str) -> bool {
        match pattern.strip_suffix('*') {
            Some(prefix) => name
                .get(..prefix.len())
                .is_some_and(|head| self.same_env_name(head, prefix)),
            None => self.same_env_name(pattern, name),
        }
    }

    /// Variables every child inherits on this host: without them it cannot find programs,
    /// a temporary directory or (on Windows) start at all.
    pub fn system_env(self) -> &'static [&'static str] {
        match self {
            HostLayout::Posix => POSIX_SYSTEM,
            HostLayout::Windows => WINDOWS_SYSTEM,
        }
    }

    /// Host-specific variables that describe an already set-up C/C++ toolchain, beyond the
    /// portable `CC`/`CFLAGS` family.
    pub fn compiler_env(self) -> &'static [&'static str] {
        match self {
            HostLayout::Posix => &[],
            HostLayout::Windows => WINDOWS_COMPILER,
        }
    }
}

/// Gives `path` execute permission (`0o755`) or takes it away (`0o644`). Windows has no execute
/// bit (a program is runnable by its extension), so there this does nothing.
#[cfg(unix)]
pub fn set_executable(path: &Path, executable: bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Gives `path` execute permission (`0o755`) or takes it away (`0o644`). Windows has no execute
/// bit (a program is runnable by its extension), so there this does nothing.
#[cfg(not(unix))]
pub fn set_executable(_path: &Path, _executable: bool) -> std::io::Result<()> {
    Ok(())
}

/// An exclusive lock on `path` (created if missing, never truncated), held until the returned
/// file is dropped; blocks while another process holds it. `flock` on POSIX, `LockFileEx` on
/// Windows (both through [`std::fs::File::lock`]); on either, a process that dies releases it.
pub fn lock_exclusive(path: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    file.lock()?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: [HostLayout; 2] = [HostLayout::Posix, HostLayout::Windows];

    #[test]
    fn current_is_the_compile_host() {
        assert_eq!(HostLayout::current() == HostLayout::Windows, cfg!(windows));
    }

    #[test]
    fn venv_layouts() {
        let root = Path::new("venv");
        let got: Vec<_> = BOTH
            .iter()
            .map(|l| {
                (
                    l.venv_python(root),
                    l.venv_program(root, "auditwheel"),
                    l.executable("nvcc"),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    root.join("bin").join("python"),
                    root.join("bin").join("auditwheel"),
                    "nvcc".to_owned()
                ),
                (
                    root.join("Scripts").join("python.exe"),
                    root.join("Scripts").join("auditwheel.exe"),
                    "nvcc.exe".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn path_lists_join_and_split_per_layout() {
        let posix = HostLayout::Posix
            .join_path_list(["/opt/cuda/bin", "/usr/bin"])
            .unwrap();
        assert_eq!(posix, "/opt/cuda/bin:/usr/bin");
        let windows = HostLayout::Windows
            .join_path_list([r"C:\cuda\bin", r"C:\Windows\system32"])
            .unwrap();
        assert_eq!(windows, r"C:\cuda\bin;C:\Windows\system32");
        // A drive letter's colon is fine on Windows, and what splits a POSIX list.
        assert_eq!(
            HostLayout::Windows.split_path_list(&windows),
            [
                PathBuf::from(r"C:\cuda\bin"),
                PathBuf::from(r"C:\Windows\system32")
            ]
        );
        assert_eq!(
            HostLayout::Posix.split_path_list(OsStr::new("/a::/b:")),
            [PathBuf::from("/a"), PathBuf::from("/b")]
        );
        let err = HostLayout::Posix
            .join_path_list(["/ok", r"C:\cuda"])
            .unwrap_err();
        assert_eq!(err.entry, PathBuf::from(r"C:\cuda"));
        assert_eq!(
            err.to_string(),
            "cannot put \"C:\\\\cuda\" on a Posix search path: it contains ':', the character \
             that separates entries there"
        );
        assert!(HostLayout::Windows.join_path_list([r"C:\a;b"]).is_err());
        assert!(
            HostLayout::Windows
                .join_path_list([r#"C:\"quoted""#])
                .is_err()
        );
    }

    #[test]
    fn env_names_follow_the_host_case_rule() {
        assert!(HostLayout::Windows.env_name_matches("PATH", "Path"));
        assert!(!HostLayout::Posix.env_name_matches("PATH", "Path"));
        assert!(HostLayout::Windows.env_name_matches("PIP_*", "pip_index_url"));
        assert!(HostLayout::Posix.env_name_matches("PIP_*", "PIP_INDEX_URL"));
        assert!(!HostLayout::Posix.env_name_matches("PIP_*", "PIP"));
        assert!(!HostLayout::Windows.env_name_matches("PIP_*", "PI"));
        // A multi-byte name must not make the prefix test slice inside a character.
        assert!(!HostLayout::Windows.env_name_matches("PIP_*", "PIPé"));
    }

    #[test]
    fn windows_children_keep_what_windows_cannot_start_without() {
        let sys = HostLayout::Windows.system_env();
        for name in [
            "SYSTEMROOT",
            "TEMP",
            "TMP",
            "PATHEXT",
            "COMSPEC",
            "ProgramFiles(x86)",
        ] {
            assert!(sys.contains(&name), "{name}");
        }
        assert!(!sys.contains(&"HOME"));
        assert!(!HostLayout::Posix.system_env().contains(&"SYSTEMROOT"));
        assert!(HostLayout::Windows.compiler_env().contains(&"INCLUDE"));
        assert!(HostLayout::Posix.compiler_env().is_empty());
    }

    #[test]
    fn lock_is_exclusive_across_handles() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = lock_exclusive(&path).unwrap();
        let other = std::fs::File::options().write(true).open(&path).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(held);
        other.try_lock().unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn execute_bit_on_posix() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tool");
        std::fs::write(&path, "").unwrap();
        set_executable(&path, true).unwrap();
        assert_eq!(path.metadata().unwrap().permissions().mode() & 0o777, 0o755);
        set_executable(&path, false).unwrap();
        assert_eq!(path.metadata().unwrap().permissions().mode() & 0o777, 0o644);
    }
}
