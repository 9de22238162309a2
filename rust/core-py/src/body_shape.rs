//! The shape of a JSON request body, measured without building it and with the GIL released:
//! what the server needs to refuse a pathological body (a million keys, nested arrays, floats)
//! before a parser holds the GIL for seconds building Python objects for it. It tokenizes
//! only; the parse that follows still validates the document.

/// Counts over one JSON text.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Object members (each `:` outside a string).
    pub members: u64,
    /// Deepest container nesting (a top-level object of arrays is 2).
    pub depth: u64,
    /// Array elements that are plain non-negative integer literals (token ids).
    pub ids: u64,
    /// Array elements of any other kind (strings, other numbers, literals, containers).
    pub others: u64,
    /// Byte offset of the first such element, if any.
    pub first_other: Option<u64>,
}

/// Tokenize `text`; malformed JSON is measured as far as it goes (the parser reports it).
pub fn shape(text: &[u8]) -> Shape {
    let mut s = Shape::default();
    // Per open container: whether it is an array.
    let mut stack: Vec<bool> = Vec::new();
    let mut i = 0;
    let n = text.len();
    while i < n {
        let c = text[i];
        let in_array = stack.last().copied().unwrap_or(false);
        let start = i;
        let element = match c {
            b'"' => {
                i += 1;
                loop {
                    i = skip_plain(text, i);
                    match text.get(i) {
                        Some(b'"') | None => break,
                        Some(b'\\') => i += 2,
                        Some(_) => i += 1,
                    }
                }
                i += 1;
                Some(false)
            }
            b'{' | b'[' => {
                stack.push(c == b'[');
                s.depth = s.depth.max(stack.len() as u64);
                i += 1;
                Some(false)
            }
            b'}' | b']' => {
                stack.pop();
                i += 1;
                None
            }
            b':' => {
                s.members += 1;
                i += 1;
                None
            }
            b'-' | b'0'..=b'9' => {
                let mut plain = c != b'-';
                while i < n && matches!(text[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                    plain &= text[i].is_ascii_digit();
                    i += 1;
                }
                Some(plain)
            }
            b't' | b'f' | b'n' => {
                while i < n && text[i].is_ascii_alphabetic() {
                    i += 1;
                }
                Some(false)
            }
            _ => {
                i += 1;
                None
            }
        };
        if let (Some(is_id), true) = (element, in_array) {
            if is_id {
                s.ids += 1;
            } else {
                s.others += 1;
                s.first_other.get_or_insert(start as u64);
            }
        }
    }
    s
}

/// The first index at or after `i` that may hold a `"` or a `\\`, eight bytes at a time (a
/// base64 image is most of a big body, and none of its bytes is either).
fn skip_plain(text: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = text.get(i..i + 8) {
        let Ok(bytes) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let w = u64::from_le_bytes(bytes);
        let (quote, slash) = (w ^ (ONES * 0x22), w ^ (ONES * 0x5C));
        // A zero byte in either word: the classic "has zero byte" test.
        let hit = (quote.wrapping_sub(ONES) & !quote) | (slash.wrapping_sub(ONES) & !slash);
        if hit & HIGH != 0 {
            break;
        }
        i += 8;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_and_its_pathologies() {
        let ok = shape(br#"{"input_ids": [1, 2, 30], "images": ["a\"]b", "c"], "rid": null}"#);
        assert_eq!(
            ok,
            Shape {
                members: 3,
                depth: 2,
                ids: 3,
                others: 2,
                first_other: Some(37)
            }
        );
        let bad = shape(br#"{"k": {"x": [[1.5, -2, true, {}]]}}"#);
        assert_eq!((bad.members, bad.depth, bad.ids, bad.others), (2, 5, 0, 5));
        assert_eq!(shape(b"[[[[[").depth, 5);
        assert_eq!(shape(br#""unterminated \"#), Shape::default());
        // Long strings with quotes and escapes at every alignment.
        for pad in 0..17 {
            let body = format!(
                r#"{{"images": ["{}\"x\\", "{}"], "input_ids": [1, 2]}}"#,
                "A".repeat(pad),
                "B".repeat(40 + pad)
            );
            let s = shape(body.as_bytes());
            assert_eq!(
                (s.members, s.depth, s.ids, s.others),
                (2, 2, 2, 2),
                "{body}"
            );
        }
    }
}
