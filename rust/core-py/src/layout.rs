//! The per-request token arithmetic the driver runs under the GIL: placeholder search, the
//! expansion of placeholders into runs of one token, and Qwen's image-only MRoPE positions.
//!
//! Each function checks its inputs and answers `None` for anything it does not accept; the
//! caller then runs its general Python path, which raises the precise error. So the fast path
//! never has to reproduce those messages, and it cannot disagree with them.

/// Indices of `token` in `ids`, ascending.
pub fn token_indices(ids: &[i64], token: i64) -> Vec<usize> {
    ids.iter()
        .enumerate()
        .filter_map(|(i, &v)| (v == token).then_some(i))
        .collect()
}

/// The first `k` whose placeholder `ids[at[k]]` is not directly between `before` and `after`.
pub fn first_unwrapped(ids: &[i64], at: &[usize], before: i64, after: i64) -> Option<usize> {
    at.iter()
        .position(|&i| i == 0 || i + 1 >= ids.len() || ids[i - 1] != before || ids[i + 1] != after)
}

/// The expanded ids and each item's inclusive `(first, last)` offsets.
pub type Expansion = (Vec<i64>, Vec<(i64, i64)>);

/// The expansion when the placeholders at `at` (strictly
/// ascending, within `ids`) become `counts[k]` copies of `token` (each at least 1).
pub fn expand_repeats(ids: &[i64], at: &[usize], token: i64, counts: &[i64]) -> Option<Expansion> {
    if at.len() != counts.len() {
        return None;
    }
    let mut extra: usize = 0;
    let mut prev: Option<usize> = None;
    for (&i, &c) in at.iter().zip(counts) {
        if i >= ids.len() || prev.is_some_and(|p| i <= p) || c < 1 {
            return None;
        }
        extra = extra.checked_add(usize::try_from(c - 1).ok()?)?;
        prev = Some(i);
    }
    let total = ids.len().checked_add(extra)?;
    let mut out = Vec::with_capacity(total);
    let mut offsets = Vec::with_capacity(at.len());
    let mut start = 0;
    for (&i, &c) in at.iter().zip(counts) {
        out.extend_from_slice(&ids[start..i]);
        let first = out.len();
        out.resize(first + c as usize, token);
        offsets.push((first as i64, (out.len() - 1) as i64));
        start = i + 1;
    }
    out.extend_from_slice(&ids[start..]);
    Some((out, offsets))
}

/// One image block of `mrope_positions`: inclusive token range and merged grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Block {
    pub start: i64,
    pub end: i64,
    pub t: i64,
    pub h: i64,
    pub w: i64,
}

/// Image-only MRoPE: the `[3, length]` positions (row-major: t row, h row, w row) and the
/// delta. Text runs count on all three rows from a running position; an image block adds its
/// `(t, h, w)` index to it, and the running position then moves on by `max(t, h, w)`.
pub fn mrope_positions(length: usize, blocks: &mut [Block]) -> Option<(Vec<i64>, i64)> {
    blocks.sort_unstable();
    let len = i64::try_from(length).ok()?;
    let mut prev_end: i64 = -1;
    for b in blocks.iter() {
        let n =
            b.t.checked_mul(b.h)
                .and_then(|th| th.checked_mul(b.w))
                .filter(|_| b.t >= 1 && b.h >= 1 && b.w >= 1)?;
        if !(prev_end < b.start && b.start <= b.end && b.end < len) || b.end - b.start + 1 != n {
            return None;
        }
        prev_end = b.end;
    }
    let total = length.checked_mul(3)?;
    let mut pos = vec![0i64; total];
    let (rt, rest) = pos.split_at_mut(length);
    let (rh, rw) = rest.split_at_mut(length);
    let mut rows = Rows {
        t: rt,
        h: rh,
        w: rw,
    };
    let mut cursor: i64 = 0;
    let mut next: usize = 0; // the first token not yet written
    for b in blocks.iter() {
        let (s, e) = (b.start as usize, b.end as usize);
        rows.text(next, s, &mut cursor);
        let mut j = s;
        for ti in 0..b.t {
            for hi in 0..b.h {
                for wi in 0..b.w {
                    rows.t[j] = cursor + ti;
                    rows.h[j] = cursor + hi;
                    rows.w[j] = cursor + wi;
                    j += 1;
                }
            }
        }
        next = e + 1;
        cursor += b.t.max(b.h).max(b.w);
    }
    rows.text(next, length, &mut cursor);
    let delta = if length == 0 { 0 } else { cursor - len };
    Some((pos, delta))
}

/// The three rows of a positions array, written in token order.
struct Rows<'a> {
    t: &'a mut [i64],
    h: &'a mut [i64],
    w: &'a mut [i64],
}

impl Rows<'_> {
    /// Tokens `from..to` are text: the next positions, alike on every row.
    fn text(&mut self, from: usize, to: usize, cursor: &mut i64) {
        for j in from..to {
            let v = *cursor + (j - from) as i64;
            self.t[j] = v;
            self.h[j] = v;
            self.w[j] = v;
        }
        *cursor += (to - from) as i64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_and_offsets() {
        let ids = [1, 9, 2, 9];
        let (out, off) = expand_repeats(&ids, &[1, 3], 7, &[2, 3]).expect("valid");
        assert_eq!(out, vec![1, 7, 7, 2, 7, 7, 7]);
        assert_eq!(off, vec![(1, 2), (4, 6)]);
        assert_eq!(token_indices(&ids, 9), vec![1, 3]);
    }

    #[test]
    fn wrapped_placeholders() {
        let ids = [5, 9, 6, 5, 9, 6];
        assert_eq!(first_unwrapped(&ids, &[1, 4], 5, 6), None);
        assert_eq!(first_unwrapped(&ids, &[1, 4], 5, 7), Some(0));
        assert_eq!(first_unwrapped(&[9, 6], &[0], 5, 6), Some(0));
        assert_eq!(first_unwrapped(&[5, 9], &[1], 5, 6), Some(0));
        assert_eq!(first_unwrapped(&[5, 9, 6, 9], &[1, 3], 5, 6), Some(1));
    }

    #[test]
    fn expansion_refuses_what_the_general_path_reports() {
        assert!(expand_repeats(&[1, 9], &[1], 7, &[0]).is_none());
        assert!(expand_repeats(&[1, 9], &[2], 7, &[1]).is_none());
        assert!(expand_repeats(&[9, 9], &[1, 0], 7, &[1, 1]).is_none());
        assert!(expand_repeats(&[9], &[0], 7, &[]).is_none());
    }

    #[test]
    fn mrope_matches_the_documented_walk() {
        // text, a 1x2x3 block, text: 2 + 6 + 1 tokens.
        let mut blocks = [Block {
            start: 2,
            end: 7,
            t: 1,
            h: 2,
            w: 3,
        }];
        let (pos, delta) = mrope_positions(9, &mut blocks).expect("valid");
        assert_eq!(&pos[0..9], &[0, 1, 2, 2, 2, 2, 2, 2, 5]);
        assert_eq!(&pos[9..18], &[0, 1, 2, 2, 2, 3, 3, 3, 5]);
        assert_eq!(&pos[18..27], &[0, 1, 2, 3, 4, 2, 3, 4, 5]);
        assert_eq!(delta, 6 - 9);
    }

    #[test]
    fn mrope_refuses_blocks_that_do_not_fit() {
        let bad = [
            Block {
                start: 0,
                end: 5,
                t: 1,
                h: 2,
                w: 2,
            },
            Block {
                start: 0,
                end: 0,
                t: -1,
                h: -1,
                w: 1,
            },
            Block {
                start: 3,
                end: 9,
                t: 1,
                h: 1,
                w: 7,
            },
        ];
        for b in bad {
            assert!(mrope_positions(9, &mut [b]).is_none(), "{b:?}");
        }
        let mut overlap = [
            Block {
                start: 0,
                end: 1,
                t: 1,
                h: 1,
                w: 2,
            },
            Block {
                start: 1,
                end: 2,
                t: 1,
                h: 1,
                w: 2,
            },
        ];
        assert!(mrope_positions(4, &mut overlap).is_none());
    }
}
