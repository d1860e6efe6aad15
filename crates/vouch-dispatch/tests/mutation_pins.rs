//! Issue 31's mutation pass: the cap on what the test farm's (or GitHub's) reply may be. A
//! reply past it is refused, not read on into memory.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;

use vouch_dispatch::DispatchError;
use vouch_dispatch::endpoint::post_once;

/// The reply cap `post_once` holds a body to (1 MiB).
const MAX_REPLY: usize = 1 << 20;

/// A one-request HTTP server on loopback that answers 200 with `body`; returns its URL.
fn answers_with(body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/x/github_webhook", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        // The request: headers, then the body its Content-Length gives.
        let mut req = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = conn.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            req.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&req).to_ascii_lowercase();
            if let Some(end) = text.find("\r\n\r\n") {
                let len = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                if req.len() >= end + 4 + len {
                    break;
                }
            }
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = conn.write_all(head.as_bytes());
        let _ = conn.write_all(&body);
    });
    url
}

/// `{"job_ids": []}` padded with spaces to `len` bytes: valid JSON of any length.
fn reply_of(len: usize) -> Vec<u8> {
    let mut body = br#"{"job_ids": []}"#.to_vec();
    body.resize(len, b' ');
    body
}

#[tokio::test]
async fn issue31_a_reply_over_the_cap_is_refused() {
    let url = answers_with(reply_of(MAX_REPLY + 4096));
    match post_once(&url, &[], b"{}".to_vec()).await {
        Err(DispatchError::Reply { status, reason, .. }) => {
            assert_eq!(status, 200);
            assert_eq!(reason, format!("the reply exceeds {MAX_REPLY} bytes"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn issue31_a_reply_at_the_cap_is_read() {
    let url = answers_with(reply_of(MAX_REPLY));
    let reply = post_once(&url, &[], b"{}".to_vec()).await.unwrap();
    assert_eq!((reply.status, reply.body.len()), (200, MAX_REPLY));
}
