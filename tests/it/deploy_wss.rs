//! `scripts/deploy/nginx-lobby-ws.conf`: the shipped nginx snippet, run by a private nginx
//! (Debian package `nginx-light`; `.ci/run` installs it) on its own loopback port with a
//! self-signed certificate made here by `openssl`, carries `wss://` to the general lobby's
//! WebSocket port: a TLS client (`openssl s_client`) upgrades through it on `/lobby` and gets
//! the RFC's accept value and the lobby's golden greeting as binary messages, and the page
//! path reaches lobbyd's static files. A machine without nginx fails it unless
//! `LOBBYD_SKIP_NGINX=1`.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::general_lobby::client::{golden, start_lobby};

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const SKIP: &str = "LOBBYD_SKIP_NGINX";

/// The nginx master this test started, stopped when the test ends: SIGTERM (a SIGKILL
/// would leave its worker running), then waited for.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let stopped = Command::new("kill")
            .arg("-TERM")
            .arg(self.0.id().to_string())
            .status();
        if !stopped.is_ok_and(|s| s.success()) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// The snippet made runnable: its server block inside a minimal main config, listening on
/// `port` with the test's certificate, proxying to `lobby`, with every file under `dir`.
fn config(dir: &Path, port: u16, lobby: SocketAddr) -> String {
    let snippet =
        std::fs::read_to_string(Path::new(REPO).join("scripts/deploy/nginx-lobby-ws.conf"))
            .expect("the snippet");
    assert!(snippet.contains("listen 443 ssl;") && snippet.contains("127.0.0.1:4244"));
    let d = dir.display();
    let server = snippet
        .replace("listen 443 ssl;", &format!("listen 127.0.0.1:{port} ssl;"))
        .replace(
            "/etc/ssl/certs/lobby.example.org.pem",
            &format!("{d}/cert.pem"),
        )
        .replace(
            "/etc/ssl/private/lobby.example.org.key",
            &format!("{d}/key.pem"),
        )
        .replace("127.0.0.1:4244", &lobby.to_string());
    format!(
        "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 64; }}\nhttp {{\n  access_log off;\n\
         client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n\
         scgi_temp_path {d}/scgi;\n{server}\n}}\n"
    )
}

/// Writes `request` through a TLS connection to `port` and returns what came back within
/// a second of quiet (or the close), at most 10 s.
fn through_tls(port: u16, request: &[u8]) -> Vec<u8> {
    let mut client = Command::new("openssl")
        .args([
            "s_client",
            "-quiet",
            "-connect",
            &format!("127.0.0.1:{port}"),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl s_client");
    let mut stdout = client.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut chunk) {
            if n == 0 || tx.send(chunk[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut stdin = client.stdin.take().expect("stdin");
    stdin.write_all(request).expect("write");
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(bytes) => got.extend(bytes),
            Err(mpsc::RecvTimeoutError::Timeout) if !got.is_empty() => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    drop(stdin);
    let _ = client.kill();
    let _ = client.wait();
    got
}

#[test]
fn the_nginx_snippet_carries_wss_to_the_lobby() {
    if Command::new("nginx").arg("-v").output().is_err() {
        if std::env::var_os(SKIP).is_some_and(|v| v == "1") {
            eprintln!("nginx not runnable: skipped, {SKIP}=1");
            return;
        }
        panic!(
            "nginx not runnable: install it (Debian: apt-get install nginx-light) or set {SKIP}=1"
        );
    }
    let dir = std::env::temp_dir().join(format!("lobbyd-nginx-{}", std::process::id()));
    let site = dir.join("site");
    std::fs::create_dir_all(&site).expect("dir");
    std::fs::write(site.join("index.html"), "<p>lobby page</p>").expect("page");
    let (server, _tcp) = start_lobby(|config| {
        config.lobby_ws.port = Some(0);
        config.lobby_ws.web_dir = Some(site.clone());
    });
    let lobby = server.general_ws_addr().expect("ws port");
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
        ])
        .arg("/CN=localhost")
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .output()
        .expect("openssl req");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let port = crate::common::free_port();
    let conf: PathBuf = dir.join("nginx.conf");
    std::fs::write(&conf, config(&dir, port, lobby)).expect("conf");
    let _nginx = Running(
        Command::new("nginx")
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx"),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nginx did not listen: {:?}",
            std::fs::read_to_string(dir.join("error.log"))
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let upgrade = "GET /lobby HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
                   Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
                   Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
    let got = through_tls(port, upgrade.as_bytes());
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
        "{text}"
    );
    assert!(
        text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
        "{text}"
    );
    let head_end = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    let mut greeting = vec![0x82, 0x18];
    greeting.extend(golden(
        "01000000 10000000  03 0600 'lobbyd'  02 0400 01000000",
    ));
    greeting.extend([0x82, 0x19]);
    greeting.extend(golden(
        "02000000 11000000  03 0700 'sign in'  02 0400 00000000",
    ));
    assert_eq!(&got[head_end..], &greeting[..]);

    let page = through_tls(port, b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let page = String::from_utf8_lossy(&page);
    assert!(
        page.starts_with("HTTP/1.1 200 OK\r\n") && page.ends_with("<p>lobby page</p>"),
        "{page}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
