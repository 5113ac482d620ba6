//! `lobbyd user add|del|list` through the real binary: exit codes, stdin password, and that
//! the SQLite file never holds the password in clear.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

struct TempDb(std::path::PathBuf);

impl TempDb {
    fn new(tag: &str) -> TempDb {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        TempDb(std::env::temp_dir().join(format!(
            "lobbyd-user-cli-{tag}-{}-{nanos}.sqlite",
            std::process::id()
        )))
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("temp path is UTF-8")
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn lobbyd(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lobbyd"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lobbyd");
    // A usage error exits without reading stdin, so the write may meet a closed pipe.
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes());
    child.wait_with_output().expect("wait lobbyd")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn add_list_del() {
    let db = TempDb::new("flow");
    let password = "correct horse battery staple";
    let out = lobbyd(
        &["user", "add", "alice", "--db", db.path()],
        &format!("{password}\n"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let out = lobbyd(&["user", "--db", db.path(), "add", "bob"], "another one\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let out = lobbyd(&["user", "list", "--db", db.path()], "");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "alice\nbob\n");

    let file = std::fs::read(&db.0).expect("read db");
    let contains = |needle: &[u8]| file.windows(needle.len()).any(|w| w == needle);
    assert!(!contains(password.as_bytes()), "password stored in clear");
    assert!(contains(b"$argon2id$"), "no argon2id hash in the database");

    let out = lobbyd(&["user", "add", "alice", "--db", db.path()], "x\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("exists already"));

    let out = lobbyd(&["user", "del", "alice", "--db", db.path()], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = lobbyd(&["user", "del", "alice", "--db", db.path()], "");
    assert_eq!(out.status.code(), Some(1));
    let out = lobbyd(&["user", "list", "--db", db.path()], "");
    assert_eq!(text(&out.stdout), "bob\n");
}

#[test]
fn usage_errors_exit_2() {
    let db = TempDb::new("usage");
    for args in [
        &["user", "add", "--db", db.path()][..],
        &["user", "list", "extra", "--db", db.path()],
        &["user", "rename", "a", "--db", db.path()],
        &["user"],
    ] {
        let out = lobbyd(args, "pw\n");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains("usage"), "{args:?}");
    }
}
