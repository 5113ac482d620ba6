//! The README's example client, `examples/general_lobby_client.py`, run as the README shows
//! it against an in-process server on loopback: its exit status and every line it prints for
//! the sign-in, the chat line and the game it creates, and the server's counters for the
//! same. Needs `python3`: skipped, loudly, where it is missing, except under `CI=true`
//! (`.ci/run` installs it), where its absence fails the test.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lobbyd::wire::general::PROTOCOL_VERSION;

use super::client::start_lobby;
use crate::common::snapshot;

/// How long the client may run: it needs well under a second, a loaded machine far more.
const CLIENT_DEADLINE: Duration = Duration::from_secs(30);

/// Reads all of a child's pipe on a thread of its own, so a full pipe never stalls the child.
fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

/// Waits for `child` until [`CLIENT_DEADLINE`]; past it the child is killed and the test
/// fails.
fn wait_bounded(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + CLIENT_DEADLINE;
    loop {
        if let Some(status) = child.try_wait().expect("wait for the client") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the example client did not finish within {CLIENT_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The README's command: alice signs in, says hello, creates "alice's game", lists the games
/// and leaves with exit status 0, printing each frame it gets.
#[test]
fn the_readme_example_client_signs_in_chats_and_creates_a_game() {
    if !crate::common::tool_installed(
        "python3",
        "general_lobby::example_client::the_readme_example_client_signs_in_chats_and_creates_a_game",
    ) {
        return;
    }
    let (server, addr) = start_lobby(|config| {
        config.general.core.server_name = "example test".to_owned();
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/general_lobby_client.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .args(["--host", "127.0.0.1", "--port", &addr.port().to_string()])
        .args([
            "--name",
            "alice",
            "--say",
            "hello",
            "--game",
            "alice's game",
        ])
        .args(["--linger", "0.2"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    let stdout = drain(child.stdout.take().expect("stdout piped"));
    let stderr = drain(child.stderr.take().expect("stderr piped"));
    let status = wait_bounded(&mut child);
    let stdout = stdout.join().expect("stdout read");
    let stderr = stderr.join().expect("stderr read");
    assert!(
        status.success(),
        "the example client failed ({status}):\n{stdout}\n{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    // The frames the client prints, in the order the server must send them (the resume token
    // is random, so WELCOME is matched up to it).
    let game_info = "<- GAME_INFO [1, 1, 4, \"alice's game\", 'example', '1.0', 0, \
                     b'\\x01\\x00\\x00\\x00', b'\\x01\\x00\\x00\\x00']";
    let hello = format!("<- HELLO ['example test', {PROTOCOL_VERSION}]");
    let expected: [&str; 15] = [
        &hello,
        "<- CHALLENGE ['sign in', 0]",
        "-> SIGN_IN alice",
        "<- WELCOME [1, b'",
        "<- MEMBER_INFO [1, 0, 'alice', 'alice']",
        "<- SYNC_DONE []",
        "signed in as member 1 (resume token ",
        "-> CHAT 'hello'",
        "<- CHAT_FROM [0, 1, 'hello']",
        "-> CREATE_GAME \"alice's game\"",
        game_info,
        "-> LIST_GAMES",
        game_info,
        "<- GAME_LIST_END [1]",
        "<- PONG [b'bye']",
    ];
    assert_eq!(lines.len(), expected.len(), "the client printed:\n{stdout}");
    for (line, wanted) in lines.iter().zip(expected) {
        assert!(
            line.starts_with(wanted),
            "expected a line starting {wanted:?}, got {line:?}; the client printed:\n{stdout}"
        );
    }
    // The 16-byte resume token, printed in hex.
    let token = lines[6]
        .strip_prefix("signed in as member 1 (resume token ")
        .and_then(|rest| rest.strip_suffix(')'))
        .expect("the token line");
    assert!(
        token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()),
        "not a 16-byte token in hex: {token:?}"
    );
    assert!(stderr.is_empty(), "the client complained: {stderr}");
    let snap = snapshot(&server);
    assert_eq!(snap.counter("general_sign_ins_total", ""), Some(1));
    assert_eq!(snap.counter("general_games_created_total", ""), Some(1));
    assert_eq!(snap.counter("general_chat_lines_total", ""), Some(1));
}
