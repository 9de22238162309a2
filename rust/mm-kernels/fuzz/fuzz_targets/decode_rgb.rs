//! Any bytes through `decode_rgb`, in both alpha modes: an image or a typed error, never a
//! panic, a hang or unbounded memory; and an image agrees with the header probe.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm_kernels::decode::{decode_rgb, image_dimensions, Alpha, DecodeOptions};

fuzz_target!(|data: &[u8]| {
    for (alpha, exif_orientation) in [(Alpha::White, true), (Alpha::Drop, false)] {
        // Limits far below the defaults keep one run in milliseconds and megabytes; the code
        // that checks them is the same.
        let opts = DecodeOptions {
            alpha,
            exif_orientation,
            max_pixels: 1 << 20,
            max_side: 4096,
        };
        let Ok(image) = decode_rgb(data, &opts) else {
            continue;
        };
        assert_eq!(image.data.len(), image.width * image.height * 3);
        let (w, h) = image_dimensions(data, exif_orientation).expect("decoded, yet no header");
        assert_eq!((w as usize, h as usize), (image.width, image.height));
    }
});
