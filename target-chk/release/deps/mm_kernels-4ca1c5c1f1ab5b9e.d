/work/wt-merge/target-chk/release/deps/mm_kernels-4ca1c5c1f1ab5b9e.d: rust/mm-kernels/src/lib.rs rust/mm-kernels/src/b64.rs rust/mm-kernels/src/decode/mod.rs rust/mm-kernels/src/decode/bmp.rs rust/mm-kernels/src/decode/convert.rs rust/mm-kernels/src/decode/exif.rs rust/mm-kernels/src/decode/gif.rs rust/mm-kernels/src/decode/jpeg.rs rust/mm-kernels/src/decode/limits.rs rust/mm-kernels/src/decode/orient.rs rust/mm-kernels/src/decode/png/mod.rs rust/mm-kernels/src/decode/png/adam7.rs rust/mm-kernels/src/decode/png/chunks.rs rust/mm-kernels/src/decode/png/inflate.rs rust/mm-kernels/src/decode/png/meta.rs rust/mm-kernels/src/decode/png/unfilter.rs rust/mm-kernels/src/decode/probe.rs rust/mm-kernels/src/decode/webp.rs rust/mm-kernels/src/dims.rs rust/mm-kernels/src/error.rs rust/mm-kernels/src/feed.rs rust/mm-kernels/src/hash.rs rust/mm-kernels/src/image.rs rust/mm-kernels/src/limits.rs rust/mm-kernels/src/par.rs rust/mm-kernels/src/resize/mod.rs rust/mm-kernels/src/resize/coeffs.rs rust/mm-kernels/src/resize/passes.rs rust/mm-kernels/src/../README.md

/work/wt-merge/target-chk/release/deps/libmm_kernels-4ca1c5c1f1ab5b9e.rmeta: rust/mm-kernels/src/lib.rs rust/mm-kernels/src/b64.rs rust/mm-kernels/src/decode/mod.rs rust/mm-kernels/src/decode/bmp.rs rust/mm-kernels/src/decode/convert.rs rust/mm-kernels/src/decode/exif.rs rust/mm-kernels/src/decode/gif.rs rust/mm-kernels/src/decode/jpeg.rs rust/mm-kernels/src/decode/limits.rs rust/mm-kernels/src/decode/orient.rs rust/mm-kernels/src/decode/png/mod.rs rust/mm-kernels/src/decode/png/adam7.rs rust/mm-kernels/src/decode/png/chunks.rs rust/mm-kernels/src/decode/png/inflate.rs rust/mm-kernels/src/decode/png/meta.rs rust/mm-kernels/src/decode/png/unfilter.rs rust/mm-kernels/src/decode/probe.rs rust/mm-kernels/src/decode/webp.rs rust/mm-kernels/src/dims.rs rust/mm-kernels/src/error.rs rust/mm-kernels/src/feed.rs rust/mm-kernels/src/hash.rs rust/mm-kernels/src/image.rs rust/mm-kernels/src/limits.rs rust/mm-kernels/src/par.rs rust/mm-kernels/src/resize/mod.rs rust/mm-kernels/src/resize/coeffs.rs rust/mm-kernels/src/resize/passes.rs rust/mm-kernels/src/../README.md

rust/mm-kernels/src/lib.rs:
rust/mm-kernels/src/b64.rs:
rust/mm-kernels/src/decode/mod.rs:
rust/mm-kernels/src/decode/bmp.rs:
rust/mm-kernels/src/decode/convert.rs:
rust/mm-kernels/src/decode/exif.rs:
rust/mm-kernels/src/decode/gif.rs:
rust/mm-kernels/src/decode/jpeg.rs:
rust/mm-kernels/src/decode/limits.rs:
rust/mm-kernels/src/decode/orient.rs:
rust/mm-kernels/src/decode/png/mod.rs:
rust/mm-kernels/src/decode/png/adam7.rs:
rust/mm-kernels/src/decode/png/chunks.rs:
rust/mm-kernels/src/decode/png/inflate.rs:
rust/mm-kernels/src/decode/png/meta.rs:
rust/mm-kernels/src/decode/png/unfilter.rs:
rust/mm-kernels/src/decode/probe.rs:
rust/mm-kernels/src/decode/webp.rs:
rust/mm-kernels/src/dims.rs:
rust/mm-kernels/src/error.rs:
rust/mm-kernels/src/feed.rs:
rust/mm-kernels/src/hash.rs:
rust/mm-kernels/src/image.rs:
rust/mm-kernels/src/limits.rs:
rust/mm-kernels/src/par.rs:
rust/mm-kernels/src/resize/mod.rs:
rust/mm-kernels/src/resize/coeffs.rs:
rust/mm-kernels/src/resize/passes.rs:
rust/mm-kernels/src/../README.md:
