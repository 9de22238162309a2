/work/wt-merge/target-chk/release/deps/cmake-9b8e90737add9046.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cmake-0.1.58/src/lib.rs

/work/wt-merge/target-chk/release/deps/libcmake-9b8e90737add9046.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cmake-0.1.58/src/lib.rs

/work/wt-merge/target-chk/release/deps/libcmake-9b8e90737add9046.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cmake-0.1.58/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cmake-0.1.58/src/lib.rs:
