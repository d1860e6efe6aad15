//! `vouch cache serve|env|stats|check`, and the scope flags `vouch build --cache` shares.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use vouch_cache::{GatewayStats, RunningGateway, Scope, ScopePolicy, Tool, Trigger};

use crate::output;

/// Exit code when a credential can write a scope it must not.
pub const FENCE_OPEN: u8 = 20;

/// Puts the password from `file` into a `redis://[user@]host…` spec, so it never appears on a
/// command line or in the environment. The file is read, not removed: a long-lived runner
/// credential may be reused by later steps.
pub fn store_with_password(spec: &str, file: Option<&std::path::Path>) -> anyhow::Result<String> {
    let Some(file) = file else {
        return Ok(spec.to_owned());
    };
    let password = std::fs::read_to_string(file)
        .with_context(|| format!("reading the store password file {file:?}"))?;
    let password: String = password
        .trim_end_matches(['\n', '\r'])
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let (scheme, rest) = spec
        .split_once("://")
        .filter(|(s, _)| s.starts_with("redis"))
        .context("a password file only applies to redis:// stores")?;
    let (user, host) = match rest.split_once('@') {
        Some((u, _)) if u.contains(':') => anyhow::bail!(crate::verify_cmd::UsageError(
            "the store URL already has a password; give it only in the file".into()
        )),
        Some((u, h)) => (u, h),
        None => ("", rest),
    };
    Ok(format!("{scheme}://{user}:{password}@{host}"))
}

#[derive(Args, Debug, Clone)]
pub struct ScopeArgs {
    /// Take the trigger from GitHub Actions (`GITHUB_EVENT_NAME`, `GITHUB_REF`,
    /// `GITHUB_BASE_REF`, the event payload's PR number and default branch).
    #[arg(long)]
    pub scope_from_github: bool,
    /// Event that triggered the build (push, pull_request, ...).
    #[arg(long, value_name = "EVENT", conflicts_with = "scope_from_github")]
    pub event: Option<String>,
    #[arg(long = "ref", value_name = "REF", conflicts_with = "scope_from_github")]
    pub git_ref: Option<String>,
    #[arg(long, value_name = "N", conflicts_with = "scope_from_github")]
    pub pr: Option<u64>,
    #[arg(long, value_name = "BRANCH", conflicts_with = "scope_from_github")]
    pub base_ref: Option<String>,
    #[arg(long, default_value = "main", value_name = "BRANCH")]
    pub default_branch: String,
}

impl ScopeArgs {
    pub fn trigger(&self) -> anyhow::Result<Trigger> {
        if self.scope_from_github {
            let env: BTreeMap<String, String> = std::env::vars().collect();
            let get = |k: &str| env.get(k).cloned().filter(|v| !v.is_empty());
            let event = get("GITHUB_EVENT_NAME").context("GITHUB_EVENT_NAME is not set")?;
            let git_ref = get("GITHUB_REF").unwrap_or_default();
            let payload: serde_json::Value = match get("GITHUB_EVENT_PATH") {
                Some(p) => serde_json::from_str(
                    &std::fs::read_to_string(&p).with_context(|| format!("reading {p:?}"))?,
                )
                .with_context(|| format!("{p:?} is not JSON"))?,
                None => serde_json::Value::Null,
            };
            let pr = payload["pull_request"]["number"].as_u64().or_else(|| {
                git_ref
                    .strip_prefix("refs/pull/")
                    .and_then(|r| r.split('/').next())
                    .and_then(|n| n.parse().ok())
            });
            let default_branch = payload["repository"]["default_branch"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| self.default_branch.clone());
            let from_fork = payload["workflow_run"]["head_repository"]["fork"]
                .as_bool()
                .unwrap_or(false);
            return Ok(Trigger {
                event,
                git_ref,
                pr,
                base_ref: get("GITHUB_BASE_REF"),
                default_branch,
                from_fork,
            });
        }
        Ok(Trigger {
            event: self
                .event
                .clone()
                .context("give --event (and --ref, --pr, --base-ref) or --scope-from-github")?,
            git_ref: self.git_ref.clone().unwrap_or_default(),
            pr: self.pr,
            base_ref: self.base_ref.clone(),
            default_branch: self.default_branch.clone(),
            from_fork: false,
        })
    }

    pub fn policy(&self) -> anyhow::Result<ScopePolicy> {
        Ok(ScopePolicy::for_trigger(&self.trigger()?)?)
    }
}

#[derive(Subcommand, Debug)]
pub enum CacheCommand {
    /// Run the scoped gateway on loopback until killed; prints its URL.
    Serve {
        /// A directory, or redis://[user@]host:port.
        #[arg(long, value_name = "DIR|URL")]
        store: String,
        /// File holding the Redis password.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Also write the URL to this file.
        #[arg(long, value_name = "FILE")]
        url_file: Option<PathBuf>,
        /// Largest entry accepted (bytes); larger PUTs get 413.
        #[arg(long, default_value_t = vouch_cache::DEFAULT_MAX_ENTRY)]
        max_entry_bytes: usize,
    },
    /// Print the environment that points a compiler cache at a gateway.
    Env {
        #[arg(long)]
        tool: Tool,
        #[arg(long, value_name = "URL")]
        url: String,
        /// The tool's local state directory.
        #[arg(long, value_name = "DIR", default_value = ".vouch-cache-local")]
        local_dir: PathBuf,
        /// sh (export lines), github-env (for $GITHUB_ENV), json.
        #[arg(long, default_value = "sh")]
        format: String,
    },
    /// Print a gateway's counters (and the compiler cache's own, with --tool).
    Stats {
        #[arg(long, value_name = "URL")]
        url: String,
        #[arg(long)]
        tool: Option<Tool>,
        /// Markdown table for $GITHUB_STEP_SUMMARY.
        #[arg(long)]
        markdown: bool,
    },
    /// Probe whether the store credential can write scopes this build must not; fail closed.
    Check {
        /// redis://user@host:port — the credential this job holds (password in --password-file).
        #[arg(long, value_name = "URL")]
        store: String,
        /// File holding the store password.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long)]
        json: bool,
    },
}

pub fn markdown(stats: &GatewayStats) -> String {
    let mut s = String::from("| scope | hits | bytes |\n|---|---:|---:|\n");
    for l in &stats.layers {
        s.push_str(&format!(
            "| `{}` (read) | {} | {} |\n",
            l.scope, l.hits, l.bytes
        ));
    }
    s.push_str(&format!(
        "\nmisses {} · writes {} to `{}` ({} bytes) · refused writes {} · hit rate {}\n",
        stats.misses,
        stats.writes,
        stats.write_scope.as_deref().unwrap_or("-"),
        stats.bytes_written,
        stats.refused_writes,
        stats
            .hit_rate()
            .map_or("-".to_owned(), |r| format!("{:.1}%", r * 100.0))
    ));
    s
}

pub fn run(cmd: CacheCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        CacheCommand::Serve {
            store,
            password_file,
            scope,
            listen,
            url_file,
            max_entry_bytes,
        } => {
            let store = store_with_password(&store, password_file.as_deref())?;
            let policy = scope.policy()?;
            output::note(format!(
                "scope: {} (write {}; read {:?})",
                policy.reason,
                policy.write.as_ref().map_or("-".into(), Scope::to_string),
                policy.read.iter().map(Scope::as_str).collect::<Vec<_>>()
            ));
            let gw = RunningGateway::start(&store, policy, listen, max_entry_bytes)?;
            output::data(&gw.url);
            if let Some(f) = url_file {
                crate::attest_cmd::write_atomically(&f, gw.url.as_bytes())?;
            }
            loop {
                std::thread::park();
            }
        }
        CacheCommand::Env {
            tool,
            url,
            local_dir,
            format,
        } => {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?
                .local_addr()?
                .port();
            let mut env = vouch_cache::tool_env(tool, &url, &local_dir, port);
            env.push(("VOUCH_COMPILER_LAUNCHER".into(), tool.name().into()));
            match format.as_str() {
                "sh" => env
                    .iter()
                    .for_each(|(k, v)| output::data(format!("export {k}='{v}'"))),
                "github-env" => env
                    .iter()
                    .for_each(|(k, v)| output::data(format!("{k}={v}"))),
                "json" => output::json(&env.into_iter().collect::<BTreeMap<_, _>>()),
                other => anyhow::bail!(crate::verify_cmd::UsageError(format!(
                    "--format {other:?}: expected sh, github-env or json"
                ))),
            }
            Ok(ExitCode::SUCCESS)
        }
        CacheCommand::Stats {
            url,
            tool,
            markdown: md,
        } => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let stats: GatewayStats = rt
                .block_on(async {
                    let resp = reqwest::get(format!("{url}/_vouch/stats"))
                        .await?
                        .error_for_status()?;
                    anyhow::Ok(resp.json().await?)
                })
                .with_context(|| format!("reading the gateway's counters from {url}"))?;
            let tool_stats = match tool {
                Some(Tool::Sccache) => Some(run_tool(&[
                    "sccache",
                    "--show-stats",
                    "--stats-format",
                    "json",
                ])?),
                Some(Tool::Ccache) => Some(run_tool(&["ccache", "--print-stats"])?),
                None => None,
            };
            if md {
                output::data(markdown(&stats));
            } else {
                output::json(&serde_json::json!({ "gateway": stats, "tool": tool_stats }));
            }
            Ok(ExitCode::SUCCESS)
        }
        CacheCommand::Check {
            store,
            password_file,
            scope,
            json,
        } => {
            let store = store_with_password(&store, password_file.as_deref())?;
            let policy = scope.policy()?;
            let t = scope.trigger()?;
            let mut forbidden = vec![Scope::branch(&t.default_branch)?];
            if let Some(b) = &t.base_ref {
                forbidden.push(Scope::branch(b.strip_prefix("refs/heads/").unwrap_or(b))?);
            }
            forbidden.push(Scope::pr(t.pr.map_or(1, |n| n + 1)));
            // Any other branch or tag: a credential fenced only for the default branch would
            // still let a PR pre-fill the scope of the next release tag.
            forbidden.push(Scope::branch("vouch-fence-probe")?);
            forbidden.push("tag/vouch-fence-probe".parse()?);
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let report = rt
                .block_on(vouch_cache::check_redis_fence(&store, &policy, &forbidden))
                .context("probing the cache store")?;
            if json {
                output::json(&report);
            } else {
                for p in &report.probes {
                    let verdict = match (p.may_write, p.can_write) {
                        (false, true) => "OPEN (must not write)",
                        (false, false) => "fenced",
                        (true, true) => "writable (own scope)",
                        (true, false) => "not writable (own scope; builds will not fill the cache)",
                    };
                    output::data(format!("{:<24} {verdict}: {}", p.scope, p.detail));
                }
            }
            if report.fenced {
                Ok(ExitCode::SUCCESS)
            } else {
                output::note(
                    "error: this credential can write a scope this build must not; failing closed",
                );
                Ok(ExitCode::from(FENCE_OPEN))
            }
        }
    }
}

fn run_tool(argv: &[&str]) -> anyhow::Result<serde_json::Value> {
    let out = std::process::Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .with_context(|| format!("running {}", argv.join(" ")))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Ok(serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
}
