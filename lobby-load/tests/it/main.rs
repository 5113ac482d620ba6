//! The load tool's integration tests, in one test binary: every mode against an in-process
//! lobbyd (`load`), and the hostile attackers against the `lobbyd` binary (`hostile`).
//!
//! The server's test helpers (an in-process server on loopback, the raw-socket clients) are
//! the server's own, `tests/it/common/` at the workspace root, included rather than copied.

#[path = "../../../tests/it/common/mod.rs"]
mod common;

mod hostile;
mod load;
