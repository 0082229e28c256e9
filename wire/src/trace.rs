//! The W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header):
//! the one trace a job's spans share, carried by the trigger's request header, the manifest and
//! the webhook's request header. Only read and written here; the spans are the services' own.

use std::fmt;

/// A parsed `traceparent`: `00-{trace-id: 32 hex}-{parent-id: 16 hex}-{flags: 2 hex}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traceparent {
    pub trace_id: [u8; 16],
    pub parent_id: [u8; 8],
    pub flags: u8,
}

/// The sampled flag: the caller recorded its span, so should the callee.
pub const SAMPLED: u8 = 0x01;

impl Traceparent {
    /// The header's value, or `None` when it is not one (the spec's rule: a value that does not
    /// parse is ignored and a new trace starts). Version `00` is exactly 55 characters; a later
    /// version may append `-…` after them, which is ignored; version `ff` is invalid; an all-zero
    /// trace or parent id is invalid; hex is lowercase.
    pub fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim_matches([' ', '\t']);
        let b = raw.as_bytes();
        // Bytes, never `str` slices: a non-ASCII character would put a slice off a boundary.
        if b.len() < 55 || (b.len() > 55 && (&b[..2] == b"00" || b[55] != b'-')) {
            return None;
        }
        if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let version = hex::<1>(&b[..2])?[0];
        if version == 0xff {
            return None;
        }
        let trace_id = hex::<16>(&b[3..35])?;
        let parent_id = hex::<8>(&b[36..52])?;
        let flags = hex::<1>(&b[53..55])?[0];
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(Self { trace_id, parent_id, flags })
    }

    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }
}

/// Version 00, as every caller writes it.
impl fmt::Display for Traceparent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("00-")?;
        self.trace_id.iter().try_for_each(|b| write!(f, "{b:02x}"))?;
        f.write_str("-")?;
        self.parent_id.iter().try_for_each(|b| write!(f, "{b:02x}"))?;
        write!(f, "-{:02x}", self.flags)
    }
}

/// `N` bytes from `2N` lowercase hex digits.
fn hex<const N: usize>(s: &[u8]) -> Option<[u8; N]> {
    if s.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0; N];
    for (i, pair) in s.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_header_parses_and_prints_back() {
        let t = Traceparent::parse(GOOD).unwrap();
        assert_eq!(t.to_string(), GOOD);
        assert!(t.sampled());
        assert_eq!(t.parent_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        // A later version with more after the 55 characters: read, the rest ignored.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-whatever";
        assert_eq!(Traceparent::parse(later).unwrap().to_string(), GOOD.replace("-01", "-00"));
    }

    #[test]
    fn anything_else_is_ignored() {
        for bad in [
            "",
            "garbage",
            &GOOD[..54],
            &format!("{GOOD}-extra"),
            &GOOD.replace("00-4b", "ff-4b"),
            &GOOD.to_uppercase(),
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\u{e9}",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b\u{e9}01",
            "0\u{e9}4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\u{e9}",
        ] {
            assert_eq!(Traceparent::parse(bad), None, "{bad:?}");
        }
    }
}
