//! `lobbyd user add|del|list [NAME] [--db PATH]`: manage the accounts of the Warzone v4
//! master server's and the general lobby's logins.
//!
//! Implements the account administration of docs/protocols/wz-v4.md ("Login policy") and
//! docs/protocols/general-lobby.md (sign-in). `lobbyd user --help` prints the usage.
//! The password of `user add` comes from standard input (one line) or, on a terminal, from a
//! prompt without echo; it is never taken from the command line, where other users could read
//! it in the process list. Exit codes: 0 success, 1 the operation failed (name taken, no such
//! user, database error), 2 usage error.
//! Everything is passed in (arguments, streams, whether stdin is a terminal) so tests can
//! drive it; this module must not call `process::exit`.

use std::io::{BufRead, Write};

use crate::accounts::store::AccountStore;
use crate::accounts::{DEFAULT_DB, MAX_PASSWORD};

const USAGE: &str = "usage: lobbyd user add NAME [--db PATH]   (password on stdin)\n       lobbyd user del NAME [--db PATH]\n       lobbyd user list [--db PATH]";

/// A parsed `user` command.
#[derive(Debug, Clone, PartialEq, Eq)]
enum UserCommand {
    Add(String),
    Del(String),
    List,
    Help,
}

/// Parses the arguments after `user`; `Err` carries the message for stderr.
fn parse(args: &[String]) -> Result<(UserCommand, String), String> {
    let mut db = DEFAULT_DB.to_owned();
    let mut words = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--help" || arg == "-h" {
            return Ok((UserCommand::Help, db));
        } else if arg == "--db" {
            db = iter.next().ok_or("--db needs a PATH")?.clone();
        } else if let Some(path) = arg.strip_prefix("--db=") {
            db = path.to_owned();
        } else if arg.starts_with('-') && arg.len() > 1 {
            return Err(format!("unknown option {arg:?}"));
        } else {
            words.push(arg.as_str());
        }
    }
    let command = match words.as_slice() {
        ["add", name] => UserCommand::Add((*name).to_owned()),
        ["del", name] => UserCommand::Del((*name).to_owned()),
        ["list"] => UserCommand::List,
        ["add" | "del"] => return Err("missing NAME".into()),
        ["add" | "del" | "list", _, ..] => return Err("too many arguments".into()),
        [] => return Err("missing subcommand".into()),
        [other, ..] => return Err(format!("unknown subcommand {other:?}")),
    };
    Ok((command, db))
}

/// Reads the password: a no-echo prompt on a terminal, else the first line of `stdin`.
fn read_password(name: &str, mut stdin: impl BufRead, is_tty: bool) -> Result<String, String> {
    let line = if is_tty {
        rpassword::prompt_password(format!("Password for {name}: "))
            .map_err(|e| format!("cannot read the password: {e}"))?
    } else {
        let mut line = String::new();
        // The limit keeps a stray binary file on stdin from being read whole.
        let limit = u64::try_from(MAX_PASSWORD + 2).unwrap_or(u64::MAX);
        std::io::Read::take(&mut stdin, limit)
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the password: {e}"))?;
        line
    };
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    if password.is_empty() {
        return Err("empty password (give it on stdin, one line)".into());
    }
    Ok(password.to_owned())
}

/// Runs `lobbyd user ...` (with `args` the words after `user`); returns the exit code.
pub fn run_user_command(
    args: &[String],
    stdin: impl BufRead,
    mut stdout: impl Write,
    mut stderr: impl Write,
    is_tty: bool,
) -> i32 {
    // Failing to print to stderr leaves nothing better to do than return the code.
    let (command, db) = match parse(args) {
        Ok(parsed) => parsed,
        Err(message) => {
            let _ = writeln!(stderr, "lobbyd user: {message}\n{USAGE}");
            return 2;
        }
    };
    if command == UserCommand::Help {
        let _ = writeln!(
            stdout,
            "{USAGE}\n\nAccounts of Warzone v4 and general lobby logins, in the SQLite file \
             --db (default {DEFAULT_DB}).\nThe password of `add` is read from stdin (one line), \
             or prompted for without echo on a terminal."
        );
        return 0;
    }
    let store = match AccountStore::open(&db) {
        Ok(store) => store,
        Err(e) => {
            let _ = writeln!(stderr, "lobbyd user: {db}: {e}");
            return 1;
        }
    };
    let outcome = match command {
        UserCommand::Add(name) => read_password(&name, stdin, is_tty).and_then(|password| {
            store
                .add_user(&name, &password)
                .map(|_| ())
                .map_err(|e| format!("cannot add {name:?}: {e}"))
        }),
        UserCommand::Del(name) => match store.del_user(&name) {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!("no user {name:?}")),
            Err(e) => Err(format!("cannot delete {name:?}: {e}")),
        },
        UserCommand::Help => Ok(()),
        UserCommand::List => store
            .list_users()
            .map_err(|e| format!("cannot list users: {e}"))
            .and_then(|users| {
                users
                    .iter()
                    .try_for_each(|(_, name)| writeln!(stdout, "{name}"))
                    .map_err(|e| format!("cannot write the list: {e}"))
            }),
    };
    match outcome {
        Ok(()) => 0,
        Err(message) => {
            let _ = writeln!(stderr, "lobbyd user: {message}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    struct TempDb(String);

    impl TempDb {
        fn new(tag: &str) -> TempDb {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let path = std::env::temp_dir().join(format!(
                "lobbyd-cli-{tag}-{}-{nanos}.sqlite",
                std::process::id()
            ));
            TempDb(path.to_string_lossy().into_owned())
        }
    }

    impl Drop for TempDb {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn run(args: &[&str], stdin: &str) -> (i32, String, String) {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_user_command(&args, stdin.as_bytes(), &mut out, &mut err, false);
        (
            code,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    #[test]
    fn parse_arguments() {
        let s = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            parse(&s(&["add", "alice"])),
            Ok((UserCommand::Add("alice".into()), DEFAULT_DB.into()))
        );
        assert_eq!(
            parse(&s(&["--db", "x.db", "del", "bob"])),
            Ok((UserCommand::Del("bob".into()), "x.db".into()))
        );
        assert_eq!(
            parse(&s(&["list", "--db=y.db"])),
            Ok((UserCommand::List, "y.db".into()))
        );
        for bad in [
            &["add"][..],
            &["list", "x"],
            &["add", "a", "b"],
            &["frob"],
            &[],
            &["list", "--db"],
            &["list", "--verbose"],
        ] {
            assert!(parse(&s(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn help_prints_the_usage_and_touches_no_database() {
        let db = TempDb::new("help");
        for args in [&["--help"][..], &["-h"], &["add", "--help"]] {
            let args = [args, &["--db", db.0.as_str()]].concat();
            let (code, out, err) = run(&args, "");
            assert_eq!(code, 0, "{args:?}: {err}");
            assert!(out.starts_with("usage: lobbyd user add NAME"), "{out}");
            assert_eq!(err, "");
        }
        assert!(
            !std::path::Path::new(&db.0).exists(),
            "help created the database"
        );
    }

    #[test]
    fn add_list_del() {
        let db = TempDb::new("unit");
        let d = db.0.as_str();
        assert_eq!(run(&["add", "alice", "--db", d], "pw one\n").0, 0);
        assert_eq!(run(&["add", "bob", "--db", d], "pw two\r\n").0, 0);
        let (code, _, err) = run(&["add", "alice", "--db", d], "again\n");
        assert_eq!(code, 1);
        assert!(err.contains("exists already"), "{err}");
        assert_eq!(
            run(&["list", "--db", d], ""),
            (0, "alice\nbob\n".into(), String::new())
        );
        let store = AccountStore::open(d).expect("open");
        let (_, hash) = store.find("bob").expect("find").expect("bob");
        assert!(crate::accounts::store::verify_password(&hash, "pw two"));
        assert_eq!(run(&["del", "alice", "--db", d], "").0, 0);
        let (code, _, err) = run(&["del", "alice", "--db", d], "");
        assert_eq!(code, 1);
        assert!(err.contains("no user"), "{err}");
        assert_eq!(run(&["list", "--db", d], "").1, "bob\n");
    }

    #[test]
    fn refusals() {
        let db = TempDb::new("refusals");
        let d = db.0.as_str();
        let (code, _, err) = run(&["add", "carol", "--db", d], "");
        assert_eq!(code, 1);
        assert!(err.contains("empty password"), "{err}");
        assert_eq!(run(&["add", "bad\u{7}name", "--db", d], "pw\n").0, 1);
        let (code, _, err) = run(&["frob", "--db", d], "");
        assert_eq!(code, 2);
        assert!(err.contains("usage"), "{err}");
        assert_eq!(run(&["list", "--db", d], "").1, "");
    }
}
