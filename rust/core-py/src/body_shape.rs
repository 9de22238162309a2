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

/// The index just past the string that starts at `text[i]` (a `"`), or `text.len()`.
fn skip_string(text: &[u8], mut i: usize) -> usize {
    i += 1;
    loop {
        i = skip_plain(text, i);
        match text.get(i) {
            Some(b'"') => return i + 1,
            None => return text.len(),
            Some(b'\\') => i += 2,
            Some(_) => i += 1,
        }
    }
}

fn skip_ws(text: &[u8], mut i: usize) -> usize {
    while matches!(text.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The byte span `[start, end)` of the value of the last `"input_ids"` member of the top-level
/// object (the one a parser keeps when the key repeats) when that value is an array: brackets
/// included. A key written with escapes is not recognised (the caller checks the result
/// against a real parse, so a miss only costs the fast path).
pub fn ids_span(text: &[u8]) -> Option<(usize, usize)> {
    let (mut i, n) = (0, text.len());
    let mut depth = 0usize;
    let mut span = None;
    while i < n {
        match text[i] {
            b'"' => {
                let end = skip_string(text, i);
                let content = text.get(i + 1..end.saturating_sub(1)).unwrap_or(&[]);
                let is_key = depth == 1 && content == b"input_ids";
                i = end;
                if !is_key {
                    continue;
                }
                let colon = skip_ws(text, i);
                if text.get(colon) != Some(&b':') {
                    continue;
                }
                let open = skip_ws(text, colon + 1);
                if text.get(open) != Some(&b'[') {
                    continue;
                }
                // The array's end: the bracket that closes it (strings inside are skipped).
                let (mut j, mut inner) = (open + 1, 1usize);
                while j < n && inner > 0 {
                    match text[j] {
                        b'"' => {
                            j = skip_string(text, j);
                            continue;
                        }
                        b'[' | b'{' => inner += 1,
                        b']' | b'}' => inner -= 1,
                        _ => {}
                    }
                    j += 1;
                }
                if inner > 0 {
                    return span; // unterminated: the parse will say so
                }
                span = Some((open, j));
                i = j;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    span
}

/// The token ids of an array's inside: JSON integers in `0..=i64::MAX` (no sign, no leading
/// zero, no fraction or exponent) separated by commas, with JSON whitespace around them; None
/// for anything else (an empty element, a trailing comma, no elements), which the caller
/// leaves to the full parse and its exact message.
pub fn parse_ids(inner: &[u8]) -> Option<Vec<i64>> {
    let mut out = Vec::with_capacity(inner.len() / 2 + 1);
    let mut i = skip_ws(inner, 0);
    loop {
        let start = i;
        let mut v: u64 = 0;
        while let Some(&d) = inner.get(i).filter(|d| d.is_ascii_digit()) {
            v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            i += 1;
        }
        let digits = i - start;
        if digits == 0 || (digits > 1 && inner[start] == b'0') {
            return None;
        }
        out.push(i64::try_from(v).ok()?);
        i = skip_ws(inner, i);
        match inner.get(i) {
            None => return Some(out),
            Some(b',') => i = skip_ws(inner, i + 1),
            Some(_) => return None,
        }
    }
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
    fn the_ids_span_is_the_last_top_level_input_ids_array() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"input_ids": [1, 2]}"#, Some("[1, 2]")),
            ("{\"input_ids\" :\n[1], \"images\": [\"]\"]}", Some("[1]")),
            (r#"{"input_ids": [1], "input_ids": [3, 4]}"#, Some("[3, 4]")),
            (
                r#"{"rid": "\"input_ids\": [9]", "input_ids": [5]}"#,
                Some("[5]"),
            ),
            (
                r#"{"videos": [{"input_ids": [7]}], "input_ids": [5]}"#,
                Some("[5]"),
            ),
            (r#"{"videos": [{"input_ids": [7]}]}"#, None),
            (r#"{"input_ids": 5}"#, None),
            (r#"{"input_ids": [1, ["]"], 2]}"#, Some(r#"[1, ["]"], 2]"#)),
            (r#"{"input_ids": [1, 2"#, None),
        ];
        for (body, want) in cases {
            let got = ids_span(body.as_bytes()).map(|(a, b)| &body[a..b]);
            assert_eq!(got, *want, "{body}");
        }
    }

    #[test]
    fn ids_parse_strictly() {
        assert_eq!(parse_ids(b" 1 , 2 ,\n3\t"), Some(vec![1, 2, 3]));
        assert_eq!(parse_ids(b"0,9223372036854775807"), Some(vec![0, i64::MAX]));
        for bad in [
            "9223372036854775808",
            "99999999999999999999",
            "007",
            "1,,2",
            "1 2",
            ",1",
            "1,",
            "",
            " ",
            "-1",
            "1.0",
            "1e3",
            "true",
            "\"5\"",
            "[1]",
        ] {
            assert_eq!(parse_ids(bad.as_bytes()), None, "{bad}");
        }
    }

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
