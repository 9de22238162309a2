/work/wt-merge/target-chk/release/deps/libwebp_sys-fd266038b9bb6795.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/libwebp-sys-0.14.4/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/libwebp-sys-0.14.4/src/ffi.rs

/work/wt-merge/target-chk/release/deps/liblibwebp_sys-fd266038b9bb6795.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/libwebp-sys-0.14.4/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/libwebp-sys-0.14.4/src/ffi.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/libwebp-sys-0.14.4/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/libwebp-sys-0.14.4/src/ffi.rs:
