//! The Warzone 2100-style master server's state that is not wire format.
//!
//! - [`accounts`]: users and argon2id password hashes in SQLite, a password-verification
//!   worker thread (so a ~20 ms hash never stalls the event loop), and login sessions.
//!
//! The game table and the poll-loop integration live elsewhere; nothing here opens a socket.

pub mod accounts;
