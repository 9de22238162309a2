//! The orientation `ImageOps.exif_transpose` reads: tag 0x0112 of the EXIF IFD0 as Pillow's
//! `Exif`/`ImageFileDirectory_v2` parse it, else `tiff:Orientation` in the XMP packet.
//!
//! Malformed EXIF never fails a decode. Tags read before the data broke still count and the XMP
//! fallback is then skipped, which is what Pillow ends up with for a JPEG (it loads the EXIF
//! while opening and swallows the error there).

/// The orientation to apply (1..=8; 1 also for absent, unreadable or out-of-range values).
pub(crate) fn orientation(exif: Option<&[u8]>, xmp: Option<&[u8]>) -> u8 {
    let parsed = exif.map(parse_ifd0_orientation);
    match parsed {
        Some(Parsed {
            tag: Some(value), ..
        }) => value.as_orientation(),
        Some(Parsed {
            tag: None,
            complete: false,
        }) => 1,
        _ => xmp.and_then(xmp_orientation).unwrap_or(1),
    }
}

/// The value stored for the Orientation tag, as Pillow would type it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Value {
    Int(i128),
    Float(f64),
    /// A RATIONAL / SRATIONAL; matches an orientation only if it is a whole number.
    Ratio(i64, i64),
    /// BYTE, ASCII, UNDEFINED: Pillow keeps bytes/str, which match no orientation.
    Opaque,
}

impl Value {
    fn as_orientation(self) -> u8 {
        let whole = match self {
            Value::Int(v) => Some(v),
            Value::Float(f) if f.fract() == 0.0 && (1.0..=8.0).contains(&f) => Some(f as i128),
            Value::Ratio(n, d) if d != 0 && n % d == 0 => Some(i128::from(n / d)),
            _ => None,
        };
        match whole {
            Some(v @ 1..=8) => v as u8,
            _ => 1,
        }
    }
}

#[derive(Debug, PartialEq)]
struct Parsed {
    /// The Orientation entry, if IFD0 had one Pillow would keep.
    tag: Option<Value>,
    /// False when the data broke (bad header, short IFD) before IFD0 was fully read.
    complete: bool,
}

const ORIENTATION: u16 = 0x0112;
const PREFIXES: [&[u8]; 6] = [
    b"MM\x00\x2a",
    b"II\x2a\x00",
    b"MM\x2a\x00",
    b"II\x00\x2a",
    b"MM\x00\x2b",
    b"II\x2b\x00",
];

/// Pillow's `Exif.load` + `ImageFileDirectory_v2.load`, reduced to tag 0x0112.
fn parse_ifd0_orientation(data: &[u8]) -> Parsed {
    let broken = Parsed {
        tag: None,
        complete: false,
    };
    // `re.sub(b"^(Exif\x00\x00){1,2}", b"", data)`
    let mut data = data;
    for _ in 0..2 {
        data = data.strip_prefix(b"Exif\x00\x00").unwrap_or(data);
    }
    if data.is_empty() {
        return Parsed {
            tag: None,
            complete: true,
        };
    }
    let head = &data[..data.len().min(8)];
    if !PREFIXES.iter().any(|p| head.starts_with(p)) {
        return broken;
    }
    let big_endian = head.starts_with(b"MM");
    // BigTIFF (byte 2 == 43) needs a 16-byte header that an 8-byte read cannot give.
    if head.len() < 8 || head[2] == 43 {
        return broken;
    }
    let rd = Reader { data, big_endian };
    let Some(next) = rd.u32(4) else { return broken };
    let mut pos = next as usize;
    let Some(count) = rd.u16(pos) else {
        return broken;
    };
    pos += 2;

    let limit = data.len() as u64;
    let mut total_size = 0u64;
    let mut seen: Vec<u16> = Vec::new();
    let mut found: Option<Value> = None;
    for _ in 0..count {
        let Some(entry) = data.get(pos..pos + 12) else {
            return Parsed {
                tag: found,
                complete: false,
            };
        };
        pos += 12;
        let tag = rd.u16_of(&entry[0..2]);
        let typ = rd.u16_of(&entry[2..4]);
        let n = u64::from(rd.u32_of(&entry[4..8]));
        if seen.contains(&tag) {
            continue;
        }
        let Some(unit) = unit_size(typ) else { continue };
        let size = n * unit;
        let value_bytes: &[u8] = if size > 4 {
            total_size += size;
            if total_size > limit {
                continue;
            }
            // Pillow's `_safe_read` raises on a short read, which ends the IFD there.
            let offset = rd.u32_of(&entry[8..12]) as usize;
            match data
                .get(offset..)
                .map(|rest| &rest[..rest.len().min(size as usize)])
            {
                Some(bytes) if bytes.len() as u64 == size => bytes,
                _ => {
                    return Parsed {
                        tag: found,
                        complete: false,
                    }
                }
            }
        } else {
            &entry[8..8 + size as usize]
        };
        if value_bytes.is_empty() {
            continue;
        }
        seen.push(tag);
        if tag == ORIENTATION {
            found = Some(first_value(&rd, typ, value_bytes));
        }
    }
    Parsed {
        tag: found,
        complete: true,
    }
}

/// Bytes per value of the TIFF types Pillow loads (others are skipped).
fn unit_size(typ: u16) -> Option<u64> {
    Some(match typ {
        1 | 2 | 6 | 7 => 1,
        3 | 8 => 2,
        4 | 9 | 11 | 13 => 4,
        5 | 10 | 12 | 16 | 17 | 18 => 8,
        _ => return None,
    })
}

/// The first value of an entry (Pillow keeps the first when a single value is expected).
fn first_value(rd: &Reader<'_>, typ: u16, b: &[u8]) -> Value {
    let u = |n: usize| -> u64 {
        let bytes = &b[..n];
        let mut v = 0u64;
        if rd.big_endian {
            for &x in bytes {
                v = (v << 8) | u64::from(x);
            }
        } else {
            for &x in bytes.iter().rev() {
                v = (v << 8) | u64::from(x);
            }
        }
        v
    };
    match typ {
        3 => Value::Int(i128::from(u(2))),
        4 | 13 => Value::Int(i128::from(u(4))),
        16 | 18 => Value::Int(i128::from(u(8))),
        6 => Value::Int(i128::from(b[0] as i8)),
        8 => Value::Int(i128::from(u(2) as u16 as i16)),
        9 => Value::Int(i128::from(u(4) as u32 as i32)),
        17 => Value::Int(i128::from(u(8) as i64)),
        11 => Value::Float(f64::from(f32::from_bits(u(4) as u32))),
        12 => Value::Float(f64::from_bits(u(8))),
        5 | 10 => {
            let (num, den) = if rd.big_endian {
                (u(4) as u32, (u(8) & 0xffff_ffff) as u32)
            } else {
                ((u(8) & 0xffff_ffff) as u32, (u(8) >> 32) as u32)
            };
            if typ == 5 {
                Value::Ratio(i64::from(num), i64::from(den))
            } else {
                Value::Ratio(i64::from(num as i32), i64::from(den as i32))
            }
        }
        _ => Value::Opaque,
    }
}

struct Reader<'a> {
    data: &'a [u8],
    big_endian: bool,
}

impl Reader<'_> {
    fn u16_of(&self, b: &[u8]) -> u16 {
        let a = [b[0], b[1]];
        if self.big_endian {
            u16::from_be_bytes(a)
        } else {
            u16::from_le_bytes(a)
        }
    }

    fn u32_of(&self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        if self.big_endian {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    }

    fn u16(&self, pos: usize) -> Option<u16> {
        self.data
            .get(pos..pos.checked_add(2)?)
            .map(|b| self.u16_of(b))
    }

    fn u32(&self, pos: usize) -> Option<u32> {
        self.data
            .get(pos..pos.checked_add(4)?)
            .map(|b| self.u32_of(b))
    }
}

/// `re.search(rb'tiff:Orientation(="|>)([0-9])', xmp)`: the first match decides.
fn xmp_orientation(xmp: &[u8]) -> Option<u8> {
    const KEY: &[u8] = b"tiff:Orientation";
    let mut start = 0;
    while let Some(i) = find(&xmp[start..], KEY) {
        let rest = &xmp[start + i + KEY.len()..];
        let digit = match rest {
            [b'=', b'"', d, ..] | [b'>', d, ..] if d.is_ascii_digit() => Some(*d),
            _ => None,
        };
        if let Some(d) = digit {
            return match d - b'0' {
                v @ 1..=8 => Some(v),
                _ => Some(1),
            };
        }
        start += i + 1;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little- or big-endian TIFF header + IFD0 with the given (tag, type, count, value) entries.
    fn tiff(big: bool, entries: &[(u16, u16, u32, [u8; 4])]) -> Vec<u8> {
        let mut d = Vec::new();
        let p16 = |d: &mut Vec<u8>, v: u16| {
            d.extend_from_slice(&if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        let p32 = |d: &mut Vec<u8>, v: u32| {
            d.extend_from_slice(&if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        d.extend_from_slice(if big { b"MM" } else { b"II" });
        p16(&mut d, 42);
        p32(&mut d, 8);
        p16(&mut d, entries.len() as u16);
        for &(tag, typ, count, value) in entries {
            p16(&mut d, tag);
            p16(&mut d, typ);
            p32(&mut d, count);
            d.extend_from_slice(&value);
        }
        p32(&mut d, 0);
        d
    }

    fn short(v: u16, big: bool) -> [u8; 4] {
        let b = if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        [b[0], b[1], 0, 0]
    }

    #[test]
    fn reads_short_orientation_in_both_byte_orders() {
        for big in [false, true] {
            for o in 1..=8u16 {
                let data = tiff(
                    big,
                    &[
                        (0x0100, 3, 1, short(640, big)),
                        (0x0112, 3, 1, short(o, big)),
                    ],
                );
                assert_eq!(orientation(Some(&data), None), o as u8);
                let mut with_header = b"Exif\x00\x00".to_vec();
                with_header.extend_from_slice(&data);
                assert_eq!(orientation(Some(&with_header), None), o as u8);
            }
        }
    }

    #[test]
    fn other_integer_types_count_and_byte_types_do_not() {
        let long = 6u32.to_le_bytes();
        assert_eq!(
            orientation(Some(&tiff(false, &[(0x0112, 4, 1, long)])), None),
            6
        );
        // BYTE: Pillow keeps bytes, which match no orientation; XMP is not consulted either.
        let xmp = b"<x tiff:Orientation=\"8\"/>";
        assert_eq!(
            orientation(
                Some(&tiff(false, &[(0x0112, 1, 1, [6, 0, 0, 0])])),
                Some(xmp)
            ),
            1
        );
        // First duplicate wins.
        let data = tiff(
            false,
            &[
                (0x0112, 3, 1, short(3, false)),
                (0x0112, 3, 1, short(6, false)),
            ],
        );
        assert_eq!(orientation(Some(&data), None), 3);
        // Count 0: not stored, so XMP decides.
        let data = tiff(false, &[(0x0112, 3, 0, [0; 4])]);
        assert_eq!(orientation(Some(&data), Some(xmp)), 8);
        // Out-of-range values apply nothing.
        assert_eq!(
            orientation(Some(&tiff(false, &[(0x0112, 3, 1, short(9, false))])), None),
            1
        );
    }

    #[test]
    fn malformed_exif_is_ignored() {
        assert_eq!(orientation(Some(b"Exif\x00\x00garbage!"), None), 1);
        assert_eq!(orientation(Some(b""), Some(b"tiff:Orientation>6")), 6);
        assert_eq!(orientation(Some(b"II*\x00\xff\xff\x00\x00"), None), 1);
        // IFD0 promising more entries than the data holds: entries read before still count.
        let mut data = tiff(false, &[(0x0112, 3, 1, short(6, false))]);
        data[8] = 5;
        assert_eq!(orientation(Some(&data), None), 6);
        // An out-of-line value pointing outside the data ends the IFD (and skips XMP).
        let off = tiff(false, &[(0x0112, 3, 3, 4000u32.to_le_bytes())]);
        assert_eq!(orientation(Some(&off), Some(b"tiff:Orientation>6")), 1);
        for cut in 0..30 {
            let data = tiff(true, &[(0x0112, 3, 1, short(5, true))]);
            let _ = orientation(Some(&data[..cut.min(data.len())]), None);
        }
    }

    #[test]
    fn xmp_fallback() {
        assert_eq!(xmp_orientation(b"<rdf tiff:Orientation=\"6\"/>"), Some(6));
        assert_eq!(
            xmp_orientation(b"<tiff:Orientation>3</tiff:Orientation>"),
            Some(3)
        );
        assert_eq!(
            xmp_orientation(b"tiff:Orientation= tiff:Orientation>5"),
            Some(5)
        );
        assert_eq!(xmp_orientation(b"tiff:Orientation=\"0\""), Some(1));
        assert_eq!(xmp_orientation(b"nothing"), None);
        assert_eq!(orientation(None, Some(b"tiff:Orientation=\"7\"")), 7);
    }

    #[test]
    fn rational_and_float_values() {
        // 8 header + 2 count + 12 entry + 4 next-IFD = 26: the rational follows at 26.
        let mut data = tiff(false, &[(0x0112, 5, 1, 26u32.to_le_bytes())]);
        data.extend_from_slice(&[0; 8]);
        data[26..30].copy_from_slice(&12u32.to_le_bytes());
        data[30..34].copy_from_slice(&2u32.to_le_bytes());
        assert_eq!(orientation(Some(&data), None), 6);
        let float = 3.0f32.to_bits().to_le_bytes();
        assert_eq!(
            orientation(Some(&tiff(false, &[(0x0112, 11, 1, float)])), None),
            3
        );
    }
}
