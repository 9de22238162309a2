//! The thread policy of the crate, observed from outside through `/proc/self/task`:
//! - without the `parallel` feature no kernel ever runs on a thread of its own, even when asked
//!   for 8 (the host keeps full control of threading);
//! - with it, `Par` really fans out, and every thread it starts is gone when the call returns.
//!
//! This file holds a single test so that no other test thread comes or goes while it counts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mm_kernels::resize::{resize_rgb, PassOrder, Resample};
use mm_kernels::{b64, dims, hash, Par, RgbView};

fn threads_now() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Threads still listed after the call: a joined thread can linger in `/proc` for a moment
/// after `join` returns, so wait (bounded) for the count to come back to `base`.
fn settled(base: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let n = threads_now();
        if n <= base || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(feature = "decode")]
/// A 2x2 24-bit BMP, written by hand so that this test needs no encoder.
fn tiny_bmp() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"BM");
    b.extend_from_slice(&(54u32 + 16).to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&54u32.to_le_bytes());
    b.extend_from_slice(&40u32.to_le_bytes());
    b.extend_from_slice(&2i32.to_le_bytes());
    b.extend_from_slice(&2i32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&24u16.to_le_bytes());
    b.extend_from_slice(&[0u8; 24]);
    for row in [[0u8, 0, 255, 0, 255, 0], [255, 0, 0, 255, 255, 255]] {
        b.extend_from_slice(&row);
        b.extend_from_slice(&[0, 0]); // rows pad to 4 bytes
    }
    b
}

#[test]
fn kernels_start_no_threads_unless_parallel_and_join_all_they_start() {
    let base = threads_now();
    assert!(base >= 1, "cannot read /proc/self/task");
    let par = Par::new(8);
    let parallel = cfg!(feature = "parallel");
    assert_eq!(par.threads(), if parallel { 8 } else { 1 });

    // Inside `Par`'s callbacks: how many threads exist while a kernel runs.
    let peak = AtomicUsize::new(0);
    let observe = |_: usize, _: &mut [u8]| {
        peak.fetch_max(threads_now(), Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut rows = vec![0u8; 64 * 4];
    par.for_each_band(&mut rows, 4, observe);
    let items: Vec<u32> = (0..64).collect();
    let mapped = par.map(&items, |i, &x| {
        peak.fetch_max(threads_now(), Ordering::SeqCst);
        x + i as u32
    });
    assert_eq!(mapped.len(), 64);
    let peak = peak.load(Ordering::SeqCst);
    if parallel {
        assert!(
            peak > base,
            "Par::new(8) never ran on a second thread ({peak} <= {base})"
        );
    } else {
        assert_eq!(peak, base, "a thread appeared without the parallel feature");
    }
    assert_eq!(settled(base), base, "Par left threads behind");

    // Every kernel, with the widest fan-out the caller can ask for.
    let check = |what: &str, call: &dyn Fn()| {
        call();
        let after = if parallel {
            settled(base)
        } else {
            threads_now()
        };
        assert_eq!(
            after, base,
            "{what} changed the thread count {base} -> {after}"
        );
    };
    let pixels: Vec<u8> = (0..640 * 480 * 3).map(|i| (i % 253) as u8).collect();
    let img = RgbView::new(640, 480, &pixels).expect("valid view");
    for resample in [
        Resample::PilLanczos,
        Resample::PilBicubic,
        Resample::PilBilinear,
        Resample::AtenU8,
        Resample::AtenU8Bilinear,
    ] {
        for order in [PassOrder::Pillow13, PassOrder::Pillow12] {
            for (w, h) in [(320, 240), (700, 100), (100, 700), (640, 33), (1, 1)] {
                check("resize_rgb", &|| {
                    let out = resize_rgb(img, w, h, resample, order, &par).expect("resize");
                    assert_eq!(out.data.len(), w * h * 3);
                });
            }
        }
    }
    check("content_hash", &|| {
        hash::content_hash(&pixels);
        hash::blake3_hex(&pixels);
    });
    check("base64", &|| {
        let _ = b64::base64_decode(b"aGVsbG8=");
        let _ = b64::base64_decode(b"not base64!");
        b64::decoded_len(b"aGVsbG8=");
    });
    check("scaled_dims", &|| {
        dims::scaled_dims(80, 60, 0.5, None);
    });
    #[cfg(feature = "decode")]
    {
        use mm_kernels::decode::{decode_rgb, image_dimensions, DecodeOptions};
        let bmp = tiny_bmp();
        check("decode", &|| {
            // Outcomes are the decode tests' business; only the threads are counted here.
            let _ = decode_rgb(&bmp, &DecodeOptions::default());
            let _ = image_dimensions(&bmp, true);
            let _ = decode_rgb(b"\xff\xd8\xff garbage", &DecodeOptions::default());
            let _ = decode_rgb(&pixels[..1000], &DecodeOptions::default());
        });
    }
}
