//! The parsing leaf of the command line: [`UsageError`] and the helpers every flag file
//! uses to turn a flag's text into a checked value (numbers within a range, durations in
//! seconds, `FromStr` values, login policies) or a one-line error naming the flag and the
//! value.
//!
//! `config.rs` and each front end's flag file (`wz.rs`, ...) import from here; this file
//! imports nothing of `config`, so no flag file ever depends on its parent. Like the rest of
//! `config`, it must not touch the environment, the terminal or the network.

use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;
use std::time::Duration;

use getopts::{Fail, Matches, Options};

use crate::accounts::LoginPolicy;

/// A rejected command line: one line naming the flag and the offending value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// The one-line reason, e.g. `--port: "abc" is not a port number (0-65535)`.
    pub reason: String,
}

impl UsageError {
    /// An error with this one-line reason.
    pub(super) fn new(reason: String) -> UsageError {
        UsageError { reason }
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for UsageError {}

/// The longest timeout any flag accepts (`--idle-timeout`, `--wz-silence-timeout`, ...:
/// one day): longer values are almost certainly typos and would only pin resources.
pub(super) const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// The shortest non-zero timeout accepted (one millisecond), below the timer resolution.
pub(super) const MIN_TIMEOUT_SECS: f64 = 0.001;

/// Adds a table of flags `(long name, value hint, help)` to `options`: a flag with no hint
/// takes no value; `--help` and `--version` also answer to `-h` and `-V`.
pub(super) fn declare_flags(options: &mut Options, flags: &[(&str, &str, String)]) {
    for (name, hint, desc) in flags {
        let short = match *name {
            "help" => "h",
            "version" => "V",
            _ => "",
        };
        if hint.is_empty() {
            options.optflag(short, name, desc);
        } else {
            options.optopt(short, name, desc, hint);
        }
    }
}

/// Formats a duration as plain seconds, the unit the flags take.
pub(super) fn secs(duration: Duration) -> String {
    format!("{}", duration.as_secs_f64())
}

/// Turns a getopts syntax failure into our one-line wording.
pub(super) fn syntax_error(fail: Fail) -> UsageError {
    let flag = |name: &str| {
        if name.chars().count() == 1 {
            format!("-{name}")
        } else {
            format!("--{name}")
        }
    };
    UsageError::new(match fail {
        Fail::ArgumentMissing(name) => format!("{} needs a value", flag(&name)),
        Fail::UnrecognizedOption(name) => format!("unknown flag {}", flag(&name)),
        Fail::OptionMissing(name) => format!("{} is required", flag(&name)),
        Fail::OptionDuplicated(name) => format!("{} given more than once", flag(&name)),
        Fail::UnexpectedArgument(name) => format!("{} does not take a value", flag(&name)),
    })
}

/// A number a flag can take. An upper bound equal to `UNBOUNDED` is left out of error
/// messages ("1 or more") rather than quoting a meaningless `18446744073709551615`.
pub(super) trait Number: FromStr + PartialOrd + fmt::Display + Copy {
    /// `None` for types whose whole range is meaningful to quote (ports, seat counts).
    const UNBOUNDED: Option<Self>;
}

macro_rules! impl_number {
    ($unbounded:expr; $($t:ty),*) => {
        $(impl Number for $t {
            const UNBOUNDED: Option<Self> = $unbounded;
        })*
    };
}

impl_number!(None; u8, u16);
impl_number!(Some(Self::MAX); u32, u64, usize, f64);

/// What a port flag takes, as error messages name it.
pub(super) const PORT: &str = "a port number";
/// What a count flag takes.
pub(super) const WHOLE: &str = "a whole number";
/// What a duration flag in seconds takes.
pub(super) const SECONDS: &str = "a number of seconds";
/// What a duration flag in milliseconds takes.
pub(super) const MILLIS: &str = "a number of milliseconds";

/// Parses `text` as a number within `range`, else names the flag, the value and what
/// was expected. `text` is quoted with `{:?}` so control characters cannot split the line.
pub(super) fn parse_number<T: Number>(
    flag: &str,
    text: &str,
    kind: &str,
    range: &RangeInclusive<T>,
) -> Result<T, UsageError> {
    match text.parse::<T>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => {
            let bounds = if T::UNBOUNDED == Some(*range.end()) {
                format!("{} or more", range.start())
            } else {
                format!("{}-{}", range.start(), range.end())
            };
            Err(UsageError::new(format!(
                "--{flag}: {text:?} is not {kind} ({bounds})"
            )))
        }
    }
}

/// The value of numeric flag `flag`, or `default` if it was not given.
pub(super) fn number<T: Number>(
    m: &Matches,
    flag: &str,
    kind: &str,
    range: RangeInclusive<T>,
    default: T,
) -> Result<T, UsageError> {
    match m.opt_str(flag) {
        Some(text) => parse_number(flag, &text, kind, &range),
        None => Ok(default),
    }
}

/// The value of a seconds flag (decimals allowed), or `default` if it was not given.
pub(super) fn seconds(
    m: &Matches,
    flag: &str,
    range: RangeInclusive<f64>,
    default: Duration,
) -> Result<Duration, UsageError> {
    let secs = m
        .opt_str(flag)
        .map(|text| parse_number(flag, &text, SECONDS, &range))
        .transpose()?;
    // The range check already rejected NaN, infinities and negatives; `abs` folds -0.
    Ok(secs.map_or(default, |secs| Duration::from_secs_f64(secs.abs())))
}

/// The value of a flag that parses with `FromStr` and needs no range, or `None`.
pub(super) fn parsed<T: FromStr>(
    m: &Matches,
    flag: &str,
    kind: &str,
) -> Result<Option<T>, UsageError> {
    m.opt_str(flag)
        .map(|text| {
            text.parse::<T>()
                .map_err(|_| UsageError::new(format!("--{flag}: {text:?} is not {kind}")))
        })
        .transpose()
}

/// The value hint of a login-policy flag in `--help`: every [`LoginPolicy`] spelling.
pub(super) const LOGIN_POLICIES: &str = "required|optional|off";

/// The value of a login-policy flag (`--wz-login`, ...), or `default` if it was not given.
pub(super) fn login_policy(
    m: &Matches,
    flag: &str,
    default: LoginPolicy,
) -> Result<LoginPolicy, UsageError> {
    match m.opt_str(flag) {
        None => Ok(default),
        Some(text) => text.parse().map_err(|_| {
            UsageError::new(format!(
                "--{flag}: {text:?} is not required, optional or off"
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_hint_lists_every_policy() {
        let spellings: Vec<&str> = LoginPolicy::ALL.iter().map(|p| p.as_str()).collect();
        assert_eq!(LOGIN_POLICIES, spellings.join("|"));
    }
}
