//! Any bytes through `image_dimensions` (the header probe token accounting uses): a non-empty
//! size or a typed error, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm_kernels::decode::image_dimensions;

fuzz_target!(|data: &[u8]| {
    for exif_orientation in [true, false] {
        if let Ok((w, h)) = image_dimensions(data, exif_orientation) {
            assert!(w > 0 && h > 0, "empty image {w}x{h} accepted");
        }
    }
});
