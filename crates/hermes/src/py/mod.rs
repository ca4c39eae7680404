//! Python's text semantics, because every length, cut and count hermes produces comes
//! from Python string operations (contract §2).
//!
//! * [`text`]: code-point lengths and slices, `str.isspace` and the stripping and
//!   splitting built on it, `str.upper`, `{n:,}`.
//! * [`repr`](mod@repr): `repr(str)`, with CPython 3.11's printable table.
//! * [`value`]: `PyValue`, a JSON value as Python holds it after `json.loads`, with
//!   `str()`, `repr()` and truthiness; `str()` and `repr()` of `serde_json::Value`s.
//! * [`float`](mod@float): `repr(float)`.
//! * [`json`]: `json.loads` and `json.dumps(ensure_ascii=False)`.
//! * [`re`]: Python `re` patterns compiled with CPython's `\s`, `\d`, `\w` classes.
//!
//! Design decision: the Unicode classes are tables generated from CPython 3.11 itself
//! (`scripts/gen-python-unicode-tables.py`), not Rust's own predicates: Rust follows a
//! newer Unicode and other definitions (`\w` takes marks, whitespace misses U+001C–1F).

pub mod float;
pub mod json;
pub mod re;
pub mod repr;
pub mod tables;
pub mod text;
pub mod value;

pub use json::{dumps, dumps_json, loads};
pub use repr::repr_str;
pub use text::{
    collapse_spaces, head, is_space, last, len, lstrip, rstrip, strip, thousands, upper,
};
pub use value::{is_truthy, repr_of, str_of, PyValue};

use md5::{Digest, Md5};

/// The first 12 hex digits of the MD5 of the text's UTF-8 bytes (hermes's key for
/// duplicate tool outputs). Strings here hold no lone surrogates (H11), so hermes's
/// `?` replacement never applies.
pub(crate) fn md5_key(s: &str) -> String {
    let digest = Md5::digest(s.as_bytes());
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `c` is in one of the generated range tables.
pub(crate) fn in_table(table: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_keys_are_twelve_hex_digits_of_the_utf8_bytes() {
        // hashlib.md5("héllo".encode()).hexdigest()[:12]
        assert_eq!(md5_key("héllo"), "be50e8478cf2");
        assert_eq!(md5_key(""), "d41d8cd98f00");
    }
}
