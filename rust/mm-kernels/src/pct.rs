//! Percent-decoding as `urllib.parse.unquote_to_bytes` does it (a `%` followed by two hex
//! digits is one byte, anything else is kept as it is), with the decoded size known exactly
//! before anything is decoded, so a budget can be enforced without allocating.

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The escape at `text[i..]` (a `%` and two hex digits), as its byte.
fn escape_at(text: &[u8], i: usize) -> Option<u8> {
    match text.get(i..i + 3) {
        Some(&[b'%', h, l]) => Some(hex(h)? << 4 | hex(l)?),
        _ => None,
    }
}

/// The exact size of `percent_decode(text)`.
pub fn decoded_len(text: &[u8]) -> usize {
    let mut n = text.len();
    let mut i = 0;
    while let Some(k) = text[i..].iter().position(|&b| b == b'%') {
        i += k;
        if escape_at(text, i).is_some() {
            n -= 2;
            i += 3;
        } else {
            i += 1;
        }
    }
    n
}

/// Decode `text` into `out` from its start, stopping when `out` is full; returns how many bytes
/// of `text` were consumed (whole escapes only) and how many of `out` were written. Decoding
/// the rest later from the consumed offset continues exactly where this stopped.
pub fn percent_decode_into(text: &[u8], out: &mut [u8]) -> (usize, usize) {
    let (mut i, mut o) = (0, 0);
    while o < out.len() && i < text.len() {
        let room = out.len() - o;
        // Copy the literal run up to the next escape (or as far as `out` has room).
        let run = text[i..]
            .iter()
            .take(room)
            .position(|&b| b == b'%')
            .unwrap_or(room.min(text.len() - i));
        out[o..o + run].copy_from_slice(&text[i..i + run]);
        i += run;
        o += run;
        if o < out.len() && i < text.len() {
            // text[i] is '%': an escape, or a literal '%'.
            match escape_at(text, i) {
                Some(b) => {
                    out[o] = b;
                    i += 3;
                }
                None => {
                    out[o] = b'%';
                    i += 1;
                }
            }
            o += 1;
        }
    }
    (i, o)
}

/// Decode all of `text` (see the module docs).
pub fn percent_decode(text: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; decoded_len(text)];
    let (_, written) = percent_decode_into(text, &mut out);
    debug_assert_eq!(written, out.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_as_unquote_to_bytes() {
        // Each case: what Python's urllib.parse.unquote_to_bytes gives (checked by hand).
        let cases: &[(&[u8], &[u8])] = &[
            (b"", b""),
            (b"abc", b"abc"),
            (b"%41%42c", b"ABc"),
            (b"%4", b"%4"),
            (b"%", b"%"),
            (b"%%41", b"%A"),
            (b"%zz%41", b"%zzA"),
            (b"%fF%00", b"\xff\x00"),
            (b"a%4g", b"a%4g"),
            (b"x%", b"x%"),
        ];
        for (text, want) in cases {
            assert_eq!(decoded_len(text), want.len(), "{text:?}");
            assert_eq!(percent_decode(text), *want, "{text:?}");
        }
    }

    #[test]
    fn a_prefix_then_the_rest_is_the_whole() {
        let text = b"%89PNG%0D%0A%1A%0A%00%00%00%0DIHDR%zz tail %4";
        let whole = percent_decode(text);
        for cut in 0..=whole.len() {
            let mut head = vec![0u8; cut];
            let (used, wrote) = percent_decode_into(text, &mut head);
            assert_eq!(wrote, cut);
            let mut joined = head;
            joined.extend(percent_decode(&text[used..]));
            assert_eq!(joined, whole, "cut at {cut}");
        }
    }
}
