//! `scripts/deploy/`: the install script stages the binary, unit, flags file and README under
//! a DESTDIR; the unit carries the hardening the operator relies on; every flag the unit and
//! the flags file pass is one `lobbyd` knows; and the staged unit verifies with
//! `systemd-analyze` (Debian package `systemd`; `.ci/run` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("lobbyd-deploy-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs install.sh staged under `destdir` with the test build of lobbyd.
fn install_into(destdir: &Path) -> std::process::Output {
    Command::new("bash")
        .arg(Path::new(REPO).join("scripts/deploy/install.sh"))
        .env("DESTDIR", destdir)
        .env("LOBBYD_BIN", env!("CARGO_BIN_EXE_lobbyd"))
        .output()
        .expect("run install.sh")
}

/// The value(s) of `key=` lines in a unit file, in order.
fn directives<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines()
        .filter_map(|line| line.strip_prefix(key)?.strip_prefix('='))
        .collect()
}

#[test]
fn install_script_stages_every_file_and_keeps_an_edited_flags_file() {
    let dir = TempDir::new();
    let out = install_into(&dir.0);
    assert!(out.status.success(), "install.sh failed: {out:?}");
    let bin = dir.0.join("usr/local/bin/lobbyd");
    let version = Command::new(&bin).arg("--version").output().expect("run");
    assert!(
        String::from_utf8_lossy(&version.stdout).starts_with("lobbyd "),
        "{version:?}"
    );
    // Stripped: far smaller than the test build it came from.
    let installed = std::fs::metadata(&bin).expect("binary").len();
    let built = std::fs::metadata(env!("CARGO_BIN_EXE_lobbyd"))
        .expect("built")
        .len();
    assert!(installed < built, "{installed} >= {built}: not stripped");
    let unit = dir.0.join("etc/systemd/system/lobbyd.service");
    assert_eq!(
        read(&unit),
        read(&Path::new(REPO).join("scripts/deploy/lobbyd.service"))
    );
    assert!(dir.0.join("usr/local/share/doc/lobbyd/README.md").is_file());
    let template = dir.0.join("etc/systemd/system/lobbyd@.service");
    assert_eq!(
        read(&template),
        read(&Path::new(REPO).join("scripts/deploy/lobbyd@.service"))
    );
    assert!(dir
        .0
        .join("usr/local/share/doc/lobbyd/lobbyd-node.example")
        .is_file());

    // A second install keeps the operator's flags.
    let flags = dir.0.join("etc/default/lobbyd");
    std::fs::write(&flags, "LOBBYD_OPTS=\"--port 5000\"\n").expect("edit flags");
    let again = install_into(&dir.0);
    assert!(again.status.success(), "{again:?}");
    assert_eq!(read(&flags), "LOBBYD_OPTS=\"--port 5000\"\n");
}

#[test]
fn unit_is_hardened_and_restarts_on_failure() {
    let unit = read(&Path::new(REPO).join("scripts/deploy/lobbyd.service"));
    for (key, value) in [
        ("DynamicUser", "yes"),
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("PrivateDevices", "yes"),
        ("StateDirectory", "lobbyd"),
        ("Restart", "on-failure"),
        ("CapabilityBoundingSet", ""),
        ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
        ("MemoryDenyWriteExecute", "yes"),
        ("KillSignal", "SIGTERM"),
        ("ExecReload", "/bin/kill -HUP $MAINPID"),
    ] {
        assert_eq!(directives(&unit, key), [value], "{key}");
    }
    // Enough descriptors for the default --max-conns (10000) plus Warzone (4096) and
    // instances.
    let nofile: u64 = directives(&unit, "LimitNOFILE")[0].parse().expect("number");
    assert!(nofile >= 10_000 + 4096 + 1000, "{nofile}");
    // The SQLite file lives in the state directory, the only writable place.
    let exec = directives(&unit, "ExecStart");
    assert_eq!(exec.len(), 1);
    assert!(
        exec[0].starts_with("/usr/local/bin/lobbyd --db /var/lib/lobbyd/"),
        "{exec:?}"
    );
}

/// Every `--flag` the unit and the shipped flags file pass appears in `lobbyd --help`, so a
/// renamed flag cannot leave the service failing at start.
#[test]
fn flags_of_the_unit_and_flags_file_exist() {
    let help = Command::new(env!("CARGO_BIN_EXE_lobbyd"))
        .arg("--help")
        .output()
        .expect("run");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let unit = read(&Path::new(REPO).join("scripts/deploy/lobbyd.service"));
    let defaults = read(&Path::new(REPO).join("scripts/deploy/lobbyd.default"));
    let exec = directives(&unit, "ExecStart").concat();
    let opts = directives(&defaults, "LOBBYD_OPTS").concat();
    let flags: Vec<&str> = exec
        .split_whitespace()
        .chain(opts.trim_matches('"').split_whitespace())
        .filter(|word| word.starts_with("--"))
        .collect();
    assert!(flags.len() >= 3, "{flags:?}");
    for flag in flags {
        assert!(
            help.contains(&format!("{flag} ")),
            "{flag} is not a lobbyd flag"
        );
    }
}

/// Set to 1 to let `unit_verifies_with_systemd_analyze` pass on a machine without
/// `systemd-analyze` (a container without systemd); otherwise a missing tool is a failure,
/// because a check that passes without running hides a broken unit.
const SKIP_SYSTEMD_ANALYZE: &str = "LOBBYD_SKIP_SYSTEMD_ANALYZE";

/// `systemd-analyze verify` on the unit (with ExecStart pointing at the test build, which
/// exists): catches misspelt directives. A machine without `systemd-analyze` fails it unless
/// the operator opts out with `LOBBYD_SKIP_SYSTEMD_ANALYZE=1`.
#[test]
fn unit_verifies_with_systemd_analyze() {
    verify_unit("lobbyd.service", "lobbyd.service");
}

/// The same check on the template of a group's nodes, as the file and as an instance.
#[test]
fn node_template_verifies_with_systemd_analyze() {
    verify_unit("lobbyd@.service", "lobbyd@.service");
    verify_unit("lobbyd@.service", "lobbyd@2.service");
}

/// `systemd-analyze verify` on `scripts/deploy/{source}` written as `{name}`.
fn verify_unit(source: &str, name: &str) {
    let probe = match Command::new("systemd-analyze").arg("--version").output() {
        Ok(probe) => probe,
        Err(e) if std::env::var_os(SKIP_SYSTEMD_ANALYZE).is_some_and(|v| v == "1") => {
            eprintln!("systemd-analyze not runnable ({e}): skipped, {SKIP_SYSTEMD_ANALYZE}=1");
            return;
        }
        Err(e) => panic!(
            "systemd-analyze not runnable ({e}): install it (Debian: apt-get install systemd) \
             or set {SKIP_SYSTEMD_ANALYZE}=1 to skip the unit's verification"
        ),
    };
    assert!(probe.status.success());
    let dir = TempDir::new();
    let unit = read(&Path::new(REPO).join("scripts/deploy").join(source))
        .replace("/usr/local/bin/lobbyd", env!("CARGO_BIN_EXE_lobbyd"));
    let path = dir.0.join(name);
    std::fs::write(&path, unit).expect("write unit");
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .expect("run systemd-analyze");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "systemd-analyze verify {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every node of a group runs under one named user (SO_REUSEPORT shares a port among one
/// user's sockets only; a dynamic user differs per instance), reads its own flags file,
/// and the example flags name a node id, an instance range, a metrics port, the shared
/// directory and --reuse-port, all real flags.
#[test]
fn node_template_runs_every_node_as_one_user_with_its_own_flags() {
    let unit = read(&Path::new(REPO).join("scripts/deploy/lobbyd@.service"));
    assert_eq!(directives(&unit, "User"), ["lobbyd"]);
    assert!(directives(&unit, "DynamicUser").is_empty());
    assert_eq!(
        directives(&unit, "EnvironmentFile"),
        ["/etc/lobbyd/node-%i"]
    );
    let example = read(&Path::new(REPO).join("scripts/deploy/lobbyd-node.example"));
    let opts = directives(&example, "LOBBYD_OPTS").concat();
    let help = Command::new(env!("CARGO_BIN_EXE_lobbyd"))
        .arg("--help")
        .output()
        .expect("run");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let flags: Vec<&str> = opts
        .trim_matches('"')
        .split_whitespace()
        .filter(|word| word.starts_with("--"))
        .collect();
    for needed in [
        "--node-id",
        "--instance-ports",
        "--metrics",
        "--directory",
        "--reuse-port",
    ] {
        assert!(flags.contains(&needed), "{needed} missing from {opts}");
    }
    for flag in flags {
        assert!(
            help.contains(&format!("{flag} ")),
            "{flag} is not a lobbyd flag"
        );
    }
}
