//! `vouch cache serve|env|stats|check|grant`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::Context as _;
use vouch_cache::{GatewayStats, GatewayUrl, RunningGateway, Scope, ToolStats};

use crate::cli::{CacheCommand, EnvFormat, UrlArgs};
use crate::common::{CacheCmdError, store_spec, usage};
use crate::output;

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

pub fn markdown(stats: &GatewayStats, tool: Option<&ToolStats>) -> String {
    let mut s = String::from("| scope | hits | bytes |\n|---|---:|---:|\n");
    for l in &stats.layers {
        s.push_str(&format!(
            "| `{}` (read) | {} | {} |\n",
            l.scope, l.hits, l.bytes
        ));
    }
    let writes = match &stats.write_scope {
        Some(scope) => format!(
            "writes {} to `{scope}` ({} bytes)",
            stats.writes, stats.bytes_written
        ),
        None => "read-only".to_owned(),
    };
    s.push_str(&format!(
        "\nmisses {} · {writes} · refused writes {} · hit rate {}\n",
        stats.misses,
        stats.refused_writes,
        stats
            .hit_rate()
            .map_or("-".to_owned(), |r| format!("{:.1}%", r * 100.0))
    ));
    if stats.unauthenticated > 0 {
        s.push_str(&format!(
            "\n{} entries passed over: not signed by the trusted builds' key\n",
            stats.unauthenticated
        ));
    }
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
            seal_key_file,
            public_key,
        } => {
            let store = store_spec(&store, password_file.as_deref())?;
            let policy = scope.policy()?;
            let keys =
                crate::common::entry_keys(seal_key_file.as_deref(), public_key.as_ref(), &policy)?;
            output::note(format!(
                "scope: {} (write {}; read {:?})",
                policy.reason,
                policy.write.as_ref().map_or("-".into(), Scope::to_string),
                policy.read.iter().map(Scope::as_str).collect::<Vec<_>>()
            ));
            let gw = RunningGateway::start(&store, policy, keys, listen, max_entry_bytes)?;
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
            let mut env = vouch_cache::tool_env(tool, &url, &local_dir, port, None);
            env.push(("VOUCH_COMPILER_LAUNCHER".into(), tool.name().into()));
            output::data(render_env(&env, format)?.trim_end_matches('\n'));
            Ok(ExitCode::SUCCESS)
        }
        CacheCommand::PublicKey { seal_key_file } => {
            let seal =
                crate::common::read_seal_key(Some(&seal_key_file))?.expect("a path was given");
            output::data(vouch_cache::EntrySigner::from_seal_key(&seal).verifier());
            Ok(ExitCode::SUCCESS)
        }
        CacheCommand::Stats {
            url,
            tool,
            markdown: md,
        } => {
            let url = url.get()?;
            let rt = crate::common::runtime()?;
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
            common,
        } => {
            let store = store_spec(&store, password_file.as_deref())?;
            let policy = scope.policy()?;
            let t = scope.trigger()?;
            let rt = crate::common::runtime()?;
            let forbidden = vouch_cache::forbidden_scopes(&t)?;
            let report = rt
                .block_on(vouch_cache::check_fence(&store, &policy, &t, &forbidden))
                .context("probing the cache store")?;
            if common.json() {
                output::json(&report);
            } else {
                for p in &report.probes {
                    let verdict = match (p.may_write, p.can_write) {
                        (false, true) => "OPEN (must not write)",
                        (false, false) => "fenced",
                        (true, true) => "writable (own scope)",
                        (true, false) => "not writable (own scope; builds will not fill the cache)",
                    };
                    let verdict = if p.inconclusive && !p.may_write {
                        "NO VERDICT (counted as open)"
                    } else {
                        verdict
                    };
                    output::data(format!("{:<24} {verdict}: {}", p.scope, p.detail));
                }
            }
            if report.fenced {
                Ok(ExitCode::SUCCESS)
            } else {
                let open = report.probes.iter().any(|p| !p.may_write && p.can_write);
                output::note(if open {
                    "error: this credential can write a scope this build must not; failing closed"
                } else {
                    "error: no verdict (a probe neither landed nor was refused, or the build's own scope refused its probe); failing closed"
                });
                Ok(crate::exit::Status::FenceOpen.into())
            }
        }
        CacheCommand::Grant {
            store,
            password_file,
            pr,
            base_ref,
            default_branch,
            ttl,
            out,
        } => grant(
            &store_spec(&store, password_file.as_deref())?,
            pr,
            &base_ref,
            &default_branch,
            ttl,
            out.as_deref(),
        ),
    }
}

fn grant(
    store: &vouch_cache::StoreSpec,
    pr: u64,
    base_ref: &str,
    default_branch: &str,
    ttl: std::time::Duration,
    out: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let policy = vouch_cache::ScopePolicy::for_trigger(&vouch_cache::Trigger {
        event: "pull_request".into(),
        git_ref: format!("refs/pull/{pr}/merge"),
        pr: Some(pr),
        base_ref: Some(base_ref.to_owned()),
        default_branch: default_branch.to_owned(),
        from_fork: false,
    })?;
    if store.backend() == "redis" && out.is_none() {
        return Err(usage(
            "a redis:// grant needs --out FILE for the new user's password",
        ));
    }
    let rt = crate::common::runtime()?;
    match rt.block_on(vouch_cache::grant(store, pr, &policy, ttl))? {
        vouch_cache::Grant::Redis {
            user,
            store,
            password,
            expires_in,
        } => {
            let out = out.expect("checked above");
            vouch_fs::write_atomically(
                out,
                secrecy::ExposeSecret::expose_secret(&password).as_bytes(),
                vouch_fs::Mode::Private,
            )
            .with_context(|| format!("writing the password of {user} to {out:?}"))?;
            output::note(format!(
                "granted {user}: writes {}, reads {:?}; expires in {}s; password in {out:?}",
                policy.write.as_ref().map_or("-", Scope::as_str),
                policy.read.iter().map(Scope::as_str).collect::<Vec<_>>(),
                expires_in.as_secs()
            ));
            output::data(store);
        }
        vouch_cache::Grant::Policy(doc) => {
            output::note(format!(
                "attach this policy to the identity pull request #{pr}'s build assumes; vouch changed nothing"
            ));
            output::json(&doc);
        }
    }
    Ok(ExitCode::SUCCESS)
}
