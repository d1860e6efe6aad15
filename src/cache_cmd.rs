//! `vouch cache serve|env|stats|check`, and the scope flags `vouch build --cache` shares.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use vouch_cache::{
    GatewayStats, GatewayUrl, RunningGateway, Scope, ScopePolicy, Tool, ToolStats, Trigger,
};

use crate::output;

/// Errors of the scope flags and `cache` subcommands that are not usage errors.
#[derive(Debug, thiserror::Error)]
pub enum CacheCmdError {
    #[error(
        "--scope-from-github: {0} is not set; run inside GitHub Actions, or give --event (and --ref, --pr, --base-ref)"
    )]
    NotInActions(&'static str),
    #[error("--scope-from-github: the event payload {path:?} is not JSON")]
    EventPayload {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    /// The URL is shown without its path: that is the gateway's secret.
    #[error("cannot read the gateway's counters from {url}")]
    Stats {
        url: String,
        #[source]
        source: reqwest::Error,
    },
}

use crate::verify_cmd::usage;

/// `--listen`: loopback only, so neither the network nor a container next door reaches it.
fn loopback_listen(s: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = s
        .parse()
        .map_err(|e| format!("{s:?} is not an IP:PORT address ({e})"))?;
    if addr.ip().is_loopback() {
        Ok(addr)
    } else {
        Err(format!(
            "{addr} is not a loopback address; the gateway listens on 127.0.0.0/8 or [::1] only"
        ))
    }
}

/// `cache env` output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EnvFormat {
    /// `export NAME=value` lines, each value quoted for POSIX sh where it needs it.
    Sh,
    /// `NAME=value` lines for `$GITHUB_ENV`.
    GithubEnv,
    Json,
}

/// Where a `cache env`/`cache stats` command finds the gateway.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct UrlArgs {
    /// The gateway URL `cache serve` printed (it carries the gateway's secret; on a shared
    /// host prefer --url-file, since a command line is visible to every local user).
    #[arg(long, value_name = "URL")]
    pub url: Option<GatewayUrl>,
    /// File holding the gateway URL (what `cache serve --url-file` wrote).
    #[arg(long, value_name = "FILE")]
    pub url_file: Option<PathBuf>,
}

impl UrlArgs {
    fn get(&self) -> anyhow::Result<GatewayUrl> {
        if let Some(u) = &self.url {
            return Ok(u.clone());
        }
        let file = self
            .url_file
            .as_ref()
            .expect("clap requires --url or --url-file");
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading the gateway URL from {file:?}"))?;
        GatewayUrl::parse(text.trim_end_matches(['\n', '\r']))
            .map_err(|e| usage(format!("--url-file {file:?}: {e}")))
    }
}

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
        .ok_or_else(|| usage("a password file only applies to redis:// stores"))?;
    let (user, host) = match rest.split_once('@') {
        Some((u, _)) if u.contains(':') => {
            return Err(usage(
                "the store URL already has a password; give it only in the file",
            ));
        }
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
    /// The repository's default branch (with --scope-from-github: when the event payload
    /// does not name it).
    #[arg(long, default_value = "main", value_name = "BRANCH")]
    pub default_branch: String,
}

impl ScopeArgs {
    pub fn trigger(&self) -> anyhow::Result<Trigger> {
        if self.scope_from_github {
            let env: BTreeMap<String, String> = std::env::vars().collect();
            let get = |k: &str| env.get(k).cloned().filter(|v| !v.is_empty());
            let event =
                get("GITHUB_EVENT_NAME").ok_or(CacheCmdError::NotInActions("GITHUB_EVENT_NAME"))?;
            let git_ref = get("GITHUB_REF").unwrap_or_default();
            let payload: serde_json::Value = match get("GITHUB_EVENT_PATH") {
                Some(p) => serde_json::from_str(
                    &std::fs::read_to_string(&p).with_context(|| format!("reading {p:?}"))?,
                )
                .map_err(|source| CacheCmdError::EventPayload { path: p, source })?,
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
        let event = self.event.clone().ok_or_else(|| {
            usage("give --event (and --ref, --pr, --base-ref) or --scope-from-github")
        })?;
        self.check_consistent(&event)?;
        Ok(Trigger {
            event,
            git_ref: self.git_ref.clone().unwrap_or_default(),
            pr: self.pr,
            base_ref: self.base_ref.clone(),
            default_branch: self.default_branch.clone(),
            from_fork: false,
        })
    }

    /// Refuses flags the event's policy would ignore: `--event push --pr 7` must not quietly
    /// become a trusted build that writes `branch/<name>`.
    fn check_consistent(&self, event: &str) -> anyhow::Result<()> {
        let push_like = matches!(
            event,
            "push" | "workflow_dispatch" | "schedule" | "merge_group"
        );
        if push_like && (self.pr.is_some() || self.base_ref.is_some()) {
            return Err(usage(format!(
                "--pr and --base-ref describe a pull request; a {event} build's scope comes from --ref alone"
            )));
        }
        if let ("pull_request", Some(r)) = (event, self.git_ref.as_deref()) {
            let n = r
                .strip_prefix("refs/pull/")
                .and_then(|rest| rest.split_once('/'))
                .and_then(|(n, _)| n.parse::<u64>().ok());
            if n.is_none() || n != self.pr {
                return Err(usage(format!(
                    "--ref {r:?} is not refs/pull/<N>/… for --pr {}",
                    self.pr.map_or("(none)".into(), |n| n.to_string())
                )));
            }
        }
        Ok(())
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
        /// A loopback address (127.0.0.0/8 or [::1]); any other is refused.
        #[arg(long, default_value = "127.0.0.1:0", value_parser = loopback_listen)]
        listen: SocketAddr,
        /// Also write the URL to this file (mode 0600: the URL carries the gateway's secret).
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
        #[command(flatten)]
        url: UrlArgs,
        /// The tool's local state directory.
        #[arg(long, value_name = "DIR", default_value = ".vouch-cache-local")]
        local_dir: PathBuf,
        #[arg(long, value_enum, default_value_t = EnvFormat::Sh)]
        format: EnvFormat,
    },
    /// Print a gateway's counters (and the compiler cache's own, with --tool).
    Stats {
        #[command(flatten)]
        url: UrlArgs,
        /// Also the compiler cache's own counters (asked in this environment).
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

pub fn markdown(stats: &GatewayStats, tool: Option<&ToolStats>) -> String {
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
    if stats.unauthorized > 0 {
        s.push_str(&format!(
            "\n{} requests refused for a missing or wrong gateway secret\n",
            stats.unauthorized
        ));
    }
    if let Some(t) = tool {
        let n = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
        s.push_str(&format!(
            "\n{}: {} hits, {} misses\n",
            t.tool.name(),
            n(t.hits),
            n(t.misses)
        ));
    }
    s
}

/// `cache env` output. Every value is quoted for its format, or refused where the format
/// cannot carry it.
fn render_env(env: &[(String, String)], format: EnvFormat) -> anyhow::Result<String> {
    let mut out = String::new();
    match format {
        EnvFormat::Sh => {
            for (k, v) in env {
                let quoted = shlex::try_quote(v)
                    .map_err(|_| usage(format!("{k}: {v:?} holds a NUL byte")))?;
                out.push_str(&format!("export {k}={quoted}\n"));
            }
        }
        EnvFormat::GithubEnv => {
            for (k, v) in env {
                // One `NAME=value` per line: a line break would start a variable of the
                // value's choosing.
                if v.contains(['\n', '\r', '\0']) {
                    return Err(usage(format!(
                        "{k}: {v:?} holds a line break or NUL, which $GITHUB_ENV cannot carry"
                    )));
                }
                out.push_str(&format!("{k}={v}\n"));
            }
        }
        EnvFormat::Json => {
            let map: BTreeMap<&str, &str> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            out = serde_json::to_string_pretty(&map)? + "\n";
        }
    }
    Ok(out)
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
            // Checked here, not by clap, whose message would repeat a password in the spec.
            vouch_cache::check_store_spec(&store).map_err(|e| usage(e.to_string()))?;
            let store = store_with_password(&store, password_file.as_deref())?;
            let policy = scope.policy()?;
            output::note(format!(
                "scope: {} (write {}; read {:?})",
                policy.reason,
                policy.write.as_ref().map_or("-".into(), Scope::to_string),
                policy.read.iter().map(Scope::as_str).collect::<Vec<_>>()
            ));
            let gw = RunningGateway::start(&store, policy, listen, max_entry_bytes)?;
            if let Some(f) = url_file {
                vouch_fs::write_atomically(&f, gw.url.as_bytes(), vouch_fs::Mode::Private)
                    .with_context(|| format!("writing the gateway URL to {f:?}"))?;
            }
            // The URL carries the run's secret: masked in Actions logs from here on.
            output::mask(&gw.url);
            output::data(&gw.url);
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
            let url = url.get()?;
            // A lossy rendering would point the tool at some other directory.
            if local_dir.to_str().is_none() {
                return Err(usage(format!("--local-dir {local_dir:?} is not UTF-8")));
            }
            let port = std::net::TcpListener::bind("127.0.0.1:0")?
                .local_addr()?
                .port();
            let mut env = vouch_cache::tool_env(tool, &url, &local_dir, port);
            env.push(("VOUCH_COMPILER_LAUNCHER".into(), tool.name().into()));
            output::data(render_env(&env, format)?.trim_end_matches('\n'));
            Ok(ExitCode::SUCCESS)
        }
        CacheCommand::Stats {
            url,
            tool,
            markdown: md,
        } => {
            let url = url.get()?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let stats: GatewayStats = rt
                .block_on(async {
                    reqwest::get(url.join("_vouch/stats"))
                        .await?
                        .error_for_status()?
                        .json()
                        .await
                })
                .map_err(|source| CacheCmdError::Stats {
                    url: url.redacted(),
                    // reqwest would print the whole URL, secret included.
                    source: source.without_url(),
                })?;
            let tool_stats = tool.map(vouch_cache::read_tool_stats).transpose()?;
            if md {
                output::data(markdown(&stats, tool_stats.as_ref()));
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
            vouch_cache::check_redis_spec(&store).map_err(|e| usage(e.to_string()))?;
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
                Ok(crate::exit::Status::FenceOpen.into())
            }
        }
    }
}
