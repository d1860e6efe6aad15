//! The compiler caches: the environment that points them at the gateway, and their own stats.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::{GatewayUrl, UrlError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    Ccache,
    Sccache,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::Ccache => "ccache",
            Tool::Sccache => "sccache",
        }
    }
}

impl std::str::FromStr for Tool {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ccache" => Ok(Tool::Ccache),
            "sccache" => Ok(Tool::Sccache),
            _ => Err(format!("{s:?}: expected ccache or sccache")),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{0} is not on PATH")]
    NotFound(&'static str),
    #[error("running {what} failed")]
    Spawn {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} failed: {output}")]
    Failed { what: String, output: String },
    #[error("the gateway URL is not one a compiler cache may be given")]
    Url(#[source] UrlError),
}

/// Variables that send `tool` to the gateway at `url` (its secret path included), with its
/// local state in `local_dir`. The remote is the only cache: nothing is kept locally that
/// another build could read.
///
/// `toolkit` is the pinned toolkit's key (`vouch_toolchain::toolchain_key`), when the build
/// has one: every compile is keyed on it, so nvcc, cicc, ptxas and the headers count by their
/// pins. The compiler itself counts by its content. ccache's default (`mtime`) keys the
/// driver's install time, and every runner installs the toolkit afresh: no nvcc compile of one
/// job would ever hit another job's entries (issue 32, measured: 82/85 hits, the 3 misses all
/// nvcc). sccache already hashes the compiler's content.
pub fn tool_env(
    tool: Tool,
    url: &GatewayUrl,
    local_dir: &Path,
    sccache_port: u16,
    toolkit: Option<&str>,
) -> Vec<(String, String)> {
    let dir = local_dir.display().to_string();
    let mut env: Vec<(String, String)> = match tool {
        // ccache's HTTP backend keeps the URL's path and puts its keys below it.
        Tool::Ccache => vec![
            ("CCACHE_DIR".into(), dir),
            ("CCACHE_REMOTE_STORAGE".into(), url.join("ccache")),
            ("CCACHE_REMOTE_ONLY".into(), "true".into()),
            ("CCACHE_COMPILERCHECK".into(), "content".into()),
        ],
        // sccache's WebDAV operator roots every request at the endpoint's path.
        Tool::Sccache => vec![
            ("SCCACHE_DIR".into(), dir),
            ("SCCACHE_WEBDAV_ENDPOINT".into(), url.join("sccache")),
            ("SCCACHE_SERVER_PORT".into(), sccache_port.to_string()),
            ("SCCACHE_IDLE_TIMEOUT".into(), "0".into()),
        ],
    };
    if let Some(key) = toolkit {
        // Both are hashed into every compile's key and nothing else: ccache's `namespace`
        // (4.8+), sccache's cache buster for C-family compilers (nvcc included).
        let var = match tool {
            Tool::Ccache => "CCACHE_NAMESPACE",
            Tool::Sccache => "SCCACHE_C_CUSTOM_CACHE_BUSTER",
        };
        env.push((var.into(), format!("vouch-toolkit-{key}")));
    }
    env
}

/// The compiler cache's own counters, as it reports them.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct ToolStats {
    pub tool: Tool,
    pub hits: Option<u64>,
    pub misses: Option<u64>,
    pub raw: serde_json::Value,
}

/// Runs the tool's stats command through `run` and reads its counters.
fn parse_stats(
    tool: Tool,
    run: impl Fn(&[&str]) -> Result<String, ToolError>,
) -> Result<ToolStats, ToolError> {
    match tool {
        Tool::Sccache => {
            let text = run(&["--show-stats", "--stats-format", "json"])?;
            let raw: serde_json::Value =
                serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
            let count = |v: &serde_json::Value| -> Option<u64> {
                v.as_object().map(|m| {
                    m.values()
                        .filter_map(|x| x["num"].as_u64().or_else(|| x.as_u64()))
                        .sum()
                })
            };
            let hits = count(&raw["stats"]["cache_hits"]["counts"]);
            let misses = count(&raw["stats"]["cache_misses"]["counts"]);
            Ok(ToolStats {
                tool,
                hits,
                misses,
                raw,
            })
        }
        Tool::Ccache => {
            // `--print-stats`: one `name<TAB>value` per line.
            let text = run(&["--print-stats"])?;
            let map: serde_json::Map<String, serde_json::Value> = text
                .lines()
                .filter_map(|l| l.split_once('\t'))
                .map(|(k, v)| {
                    (
                        k.to_owned(),
                        v.trim()
                            .parse::<u64>()
                            .map(Into::into)
                            .unwrap_or_else(|_| v.trim().into()),
                    )
                })
                .collect();
            let get = |k: &str| map.get(k).and_then(|v| v.as_u64());
            let hits = Some(
                get("remote_storage_hit")
                    .or(get("direct_cache_hit")
                        .map(|d| d + get("preprocessed_cache_hit").unwrap_or(0)))
                    .unwrap_or(0),
            );
            let misses = get("cache_miss");
            Ok(ToolStats {
                tool,
                hits,
                misses,
                raw: map.into(),
            })
        }
    }
}

/// The tool's own counters, asked with this process's environment (the one `cache env` set
/// up), not a session's. The one child vouch starts unscrubbed on purpose: which counters are
/// read depends on the tool's whole configuration (`CCACHE_*`, `SCCACHE_*`, `XDG_CACHE_HOME`),
/// and nothing but the tool runs.
pub fn read_tool_stats(tool: Tool) -> Result<ToolStats, ToolError> {
    let binary = which::which(tool.name()).map_err(|_| ToolError::NotFound(tool.name()))?;
    parse_stats(tool, |args| {
        let mut cmd = Command::new(&binary);
        cmd.args(args);
        stdout_of(cmd, format!("{} {}", tool.name(), args.join(" ")))
    })
}

/// Runs `cmd`; its stdout, or its stderr in the error when it fails.
fn stdout_of(mut cmd: Command, what: String) -> Result<String, ToolError> {
    let out = cmd.output().map_err(|source| ToolError::Spawn {
        what: what.clone(),
        source,
    })?;
    if !out.status.success() {
        return Err(ToolError::Failed {
            what,
            output: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One build's use of a compiler cache: for sccache, a private server on its own port, with
/// exactly this environment, stopped at the end.
pub struct ToolSession {
    pub tool: Tool,
    pub binary: PathBuf,
    pub env: Vec<(String, String)>,
    _local: tempfile::TempDir,
    started: bool,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(4226)
}

impl ToolSession {
    /// `toolkit`: see [`tool_env`].
    pub fn start(
        tool: Tool,
        gateway_url: &str,
        toolkit: Option<&str>,
    ) -> Result<ToolSession, ToolError> {
        let url = GatewayUrl::parse(gateway_url).map_err(ToolError::Url)?;
        let binary = which::which(tool.name()).map_err(|_| ToolError::NotFound(tool.name()))?;
        let local = tempfile::Builder::new()
            .prefix(&format!("vouch-{}-", tool.name()))
            .tempdir()
            .map_err(|source| ToolError::Spawn {
                what: "tempdir".into(),
                source,
            })?;
        let env = tool_env(tool, &url, local.path(), free_port(), toolkit);
        let mut session = ToolSession {
            tool,
            binary,
            env,
            _local: local,
            started: false,
        };
        if tool == Tool::Sccache {
            session.run(&["--start-server"])?;
            session.started = true;
        }
        Ok(session)
    }

    /// Only the session's own settings: the cache tool never sees the caller's credentials.
    fn command(&self) -> Command {
        let mut cmd = vouch_core::command::scrubbed(&self.binary, &[]);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    fn run(&self, args: &[&str]) -> Result<String, ToolError> {
        let mut cmd = self.command();
        cmd.args(args);
        stdout_of(cmd, format!("{} {}", self.tool.name(), args.join(" ")))
    }

    /// Reads the tool's own stats.
    pub fn stats(&self) -> Result<ToolStats, ToolError> {
        parse_stats(self.tool, |args| self.run(args))
    }

    /// Stops a private sccache server.
    pub fn finish(mut self) -> Result<(), ToolError> {
        if self.started {
            self.started = false;
            self.run(&["--stop-server"])?;
        }
        Ok(())
    }
}

impl Drop for ToolSession {
    fn drop(&mut self) {
        if self.started {
            let _ = self.command().arg("--stop-server").output();
        }
    }
}
