//! User accounts, shared by every front end that takes logins and by `lobbyd user`:
//! the vocabulary here, the SQLite store in [`store`], the password-verification thread in
//! [`worker`], login sessions in [`sessions`], the source of their secret ids in [`tokens`].
//!
//! Implements docs/protocols/wz-v4.md "Login policy" and "Sessions" (the Warzone v4 protocol
//! was the first user; any later core asks the same way). A core never touches the store or
//! the thread: it emits a request, the driver's login bridge (`net::login`) checks the
//! password off the loop, and the core gets a [`VerifyResult`] back.
//!
//! What this module must not do: log or store a password in clear, touch a socket, or import
//! anything else of the crate (it is the ground floor the cores, the driver and the CLI
//! stand on). Only [`store`] reads the clock (an account's creation time) and only
//! [`worker`] starts a thread; [`sessions`] is sans-IO (the driver hands it
//! [`tokens::os_tokens`]).

use std::fmt;
use std::str::FromStr;

pub mod sessions;
pub mod store;
pub mod tokens;
pub mod worker;

/// Longest account name, in bytes.
pub const MAX_NAME: usize = 64;
/// Longest password, in bytes (the v4 wire bounds every string to 255 bytes).
pub const MAX_PASSWORD: usize = 255;
/// The database used when `--db` is not given: `lobbyd.sqlite` in the working directory.
pub const DEFAULT_DB: &str = "lobbyd.sqlite";

/// A user's database id (`users.id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserId(pub i64);

/// Checks an account name: 1..=[`MAX_NAME`] bytes, no control characters.
pub fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len()) && !name.chars().any(char::is_control)
}

/// Why an account operation failed.
#[derive(Debug)]
pub enum AccountError {
    /// The name is empty, longer than [`MAX_NAME`] bytes, or has a control character.
    InvalidName,
    /// The password is empty or longer than [`MAX_PASSWORD`] bytes.
    InvalidPassword,
    /// A user with this name exists already.
    Exists,
    /// SQLite failed (cannot open, corrupt file, disk full, ...).
    Storage(rusqlite::Error),
    /// argon2 refused its inputs or a stored hash.
    Hash(argon2::password_hash::Error),
    /// The OS random number generator failed.
    Random(getrandom::Error),
}

impl fmt::Display for AccountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountError::InvalidName => write!(
                f,
                "invalid user name (1 to {MAX_NAME} bytes, no control characters)"
            ),
            AccountError::InvalidPassword => {
                write!(f, "invalid password (1 to {MAX_PASSWORD} bytes)")
            }
            AccountError::Exists => write!(f, "a user with this name exists already"),
            AccountError::Storage(e) => write!(f, "account database: {e}"),
            AccountError::Hash(e) => write!(f, "password hashing: {e}"),
            AccountError::Random(e) => write!(f, "random number generator: {e}"),
        }
    }
}

impl std::error::Error for AccountError {}

impl From<rusqlite::Error> for AccountError {
    fn from(e: rusqlite::Error) -> AccountError {
        AccountError::Storage(e)
    }
}

/// Who must log in on a front end that takes logins (docs/protocols/wz-v4.md "Login
/// policy"). One type for every such flag (`--wz-login`, and the general lobby's to come),
/// parsed from and shown as its command-line spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginPolicy {
    /// Every call but `login` is refused until the connection logged in (v4: -405).
    Required,
    /// `login` works; other calls do not need it (v4 `addPlayer` still checks sessions).
    Optional,
    /// `login` is an unknown method; no session is checked.
    Off,
}

impl LoginPolicy {
    /// Every policy, in the order help texts list them.
    pub const ALL: [LoginPolicy; 3] = [
        LoginPolicy::Required,
        LoginPolicy::Optional,
        LoginPolicy::Off,
    ];

    /// The command-line spelling: `required`, `optional` or `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            LoginPolicy::Required => "required",
            LoginPolicy::Optional => "optional",
            LoginPolicy::Off => "off",
        }
    }
}

impl fmt::Display for LoginPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A text that is not one of [`LoginPolicy::as_str`]'s spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownLoginPolicy;

impl fmt::Display for UnknownLoginPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a login policy (required, optional or off)")
    }
}

impl std::error::Error for UnknownLoginPolicy {}

impl FromStr for LoginPolicy {
    type Err = UnknownLoginPolicy;

    /// The exact, lower-case spelling of [`LoginPolicy::as_str`].
    fn from_str(text: &str) -> Result<LoginPolicy, UnknownLoginPolicy> {
        LoginPolicy::ALL
            .into_iter()
            .find(|policy| policy.as_str() == text)
            .ok_or(UnknownLoginPolicy)
    }
}

/// The login bridge's verdict on one password check, as a core receives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyResult {
    /// The user exists and the password matches.
    Valid(UserId),
    /// No such user, or a wrong password (the two are not told apart).
    Invalid,
    /// The verification queue is full (or no database is available); try again later.
    Busy,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_policy_spellings_round_trip() {
        for policy in LoginPolicy::ALL {
            assert_eq!(policy.as_str().parse(), Ok(policy));
            assert_eq!(policy.to_string(), policy.as_str());
        }
        for bad in ["", "Required", "always", "on", "off "] {
            assert_eq!(
                bad.parse::<LoginPolicy>(),
                Err(UnknownLoginPolicy),
                "{bad:?}"
            );
        }
    }
}
