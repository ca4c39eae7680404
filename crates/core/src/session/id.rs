//! Entry ids.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// An entry id: text from the input, or one of the eight-hex-digit ids the v1
/// migration assigns, kept inline so migrating a file allocates nothing per entry.
/// Compares, hashes and derefs as the `str` it is.
#[derive(Clone)]
pub enum Id<'a> {
    Str(Cow<'a, str>),
    Hex(HexDigits),
}

/// Eight ASCII hex digits. The field is private: only [`Id::hex`] makes one, so the
/// bytes are always ASCII and deref to `str` without a UTF-8 check. (A v1 session
/// derefs every migrated id several times — index, lookups, the path walk — and
/// `str::from_utf8` cost ~80 instructions each: 2 % of the core on large-session.)
#[derive(Clone, Copy)]
pub struct HexDigits([u8; 8]);

impl Default for Id<'_> {
    fn default() -> Self {
        Id::Str(Cow::Borrowed(""))
    }
}

impl Deref for Id<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Id::Str(s) => s,
            // SAFETY: a `HexDigits` is only made by `Id::hex`, from ASCII hex digits.
            Id::Hex(h) => unsafe { std::str::from_utf8_unchecked(&h.0) },
        }
    }
}

impl Id<'_> {
    /// `h` as 8 lowercase hex digits.
    pub fn hex(h: u32) -> Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 8];
        for (i, d) in out.iter_mut().enumerate() {
            *d = HEX[((h >> ((7 - i) * 4)) & 0xF) as usize];
        }
        Id::Hex(HexDigits(out))
    }

    /// The id's bytes, without the UTF-8 check a deref of a hex id costs.
    fn as_bytes(&self) -> &[u8] {
        match self {
            Id::Str(s) => s.as_bytes(),
            Id::Hex(h) => &h.0,
        }
    }
}

impl<'a> From<Cow<'a, str>> for Id<'a> {
    fn from(s: Cow<'a, str>) -> Self {
        Id::Str(s)
    }
}

impl Borrow<str> for Id<'_> {
    fn borrow(&self) -> &str {
        self
    }
}

impl PartialEq for Id<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Id<'_> {}

impl Hash for Id<'_> {
    // As `str` hashes, so a map keyed by `Id` can be searched with a `&str`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self).hash(state)
    }
}

impl fmt::Debug for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ids_are_eight_lowercase_digits() {
        assert_eq!(&*Id::hex(0xe40c292c), "e40c292c");
        assert_eq!(&*Id::hex(0x0000000f), "0000000f");
        assert_eq!(Id::hex(0xab), Id::Str(Cow::Borrowed("000000ab")));
    }
}
