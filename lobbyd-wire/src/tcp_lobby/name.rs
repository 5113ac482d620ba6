//! The 32-byte name field of CONNECT_REQ, PLAYER_JOIN and PlayerInfo, and the text ERROR_MSG
//! carries (RFC R-Type-TCP-001 sections 5.2 and 5.12; the name rules are lobbyd's, in
//! `docs/protocols/tcp-lobby.md`).
//!
//! [`validate_name`] checks a received field; [`name_field`] and [`error_text`] cut our own
//! text to what the wire can carry, at a char boundary. Nothing here allocates, and nothing
//! here decides whether a valid name is free in a party: that is the R-Type core's call.

use super::{NameError, MAX_ERROR_TEXT, MAX_NAME_BYTES, NAME_LEN};

/// Checks a name field and returns the name: the bytes before the first NUL, 1 to 31 of them,
/// valid UTF-8, without control characters. Bytes after the first NUL are padding and ignored.
pub fn validate_name(field: &[u8; NAME_LEN]) -> Result<&str, NameError> {
    let end = field
        .iter()
        .position(|&b| b == 0)
        .ok_or(NameError::TooLong)?;
    let bytes = field.get(..end).ok_or(NameError::TooLong)?;
    if bytes.is_empty() {
        return Err(NameError::Empty);
    }
    let name = core::str::from_utf8(bytes).map_err(|_| NameError::NotUtf8)?;
    if name.chars().any(char::is_control) {
        return Err(NameError::ControlChar);
    }
    Ok(name)
}

/// Builds a name field: `name` cut to at most 31 bytes at a char boundary, then NUL-padded.
pub fn name_field(name: &str) -> [u8; NAME_LEN] {
    let name = truncate_at_char_boundary(name, MAX_NAME_BYTES);
    let mut field = [0u8; NAME_LEN];
    field[..name.len()].copy_from_slice(name.as_bytes());
    field
}

/// The longest prefix of `text` of at most `max` bytes that ends on a char boundary.
fn truncate_at_char_boundary(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The text ERROR_MSG actually carries for `message`: up to its first NUL (the wire text is
/// NUL-terminated), then at most [`MAX_ERROR_TEXT`] bytes cut at a char boundary.
pub fn error_text(message: &str) -> &str {
    let before_nul = message.split('\0').next().unwrap_or("");
    truncate_at_char_boundary(before_nul, MAX_ERROR_TEXT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{quickcheck, TestResult};

    #[test]
    fn names() {
        assert_eq!(validate_name(&name_field("Alice")), Ok("Alice"));
        assert_eq!(validate_name(&[0u8; 32]), Err(NameError::Empty));
        assert_eq!(validate_name(&[b'a'; 32]), Err(NameError::TooLong));
        let mut field = [b'a'; 32];
        field[31] = 0;
        assert_eq!(validate_name(&field), Ok("a".repeat(31).as_str()));
        let mut field = name_field("ab");
        field[1] = 0xFF;
        assert_eq!(validate_name(&field), Err(NameError::NotUtf8));
        assert_eq!(
            validate_name(&name_field("a\tb")),
            Err(NameError::ControlChar)
        );
        assert_eq!(
            validate_name(&name_field("a\u{85}")),
            Err(NameError::ControlChar)
        );
        assert_eq!(validate_name(&name_field("Zoë 🚀")), Ok("Zoë 🚀"));
        // Bytes after the first NUL are padding, whatever they hold.
        let mut field = name_field("Bob");
        field[10] = 0x07;
        assert_eq!(validate_name(&field), Ok("Bob"));
        // name_field cuts at 31 bytes, backing off to a char boundary.
        assert_eq!(
            validate_name(&name_field(&"x".repeat(40))),
            Ok("x".repeat(31).as_str())
        );
        let thirty_then_e_acute = format!("{}é", "x".repeat(30));
        assert_eq!(
            validate_name(&name_field(&thirty_then_e_acute)),
            Ok("x".repeat(30).as_str())
        );
        assert_eq!(name_field(""), [0u8; 32]);
    }

    quickcheck! {
        fn name_field_round_trip(name: String) -> TestResult {
            let field = name_field(&name);
            let prefix = truncate_at_char_boundary(&name, MAX_NAME_BYTES);
            if prefix.is_empty() || prefix.contains('\0') || prefix.chars().any(char::is_control) {
                return TestResult::discard();
            }
            TestResult::from_bool(validate_name(&field) == Ok(prefix))
        }

    }
}
