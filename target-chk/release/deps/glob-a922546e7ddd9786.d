/work/wt-merge/target-chk/release/deps/glob-a922546e7ddd9786.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/glob-0.3.4/src/lib.rs

/work/wt-merge/target-chk/release/deps/libglob-a922546e7ddd9786.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/glob-0.3.4/src/lib.rs

/work/wt-merge/target-chk/release/deps/libglob-a922546e7ddd9786.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/glob-0.3.4/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/glob-0.3.4/src/lib.rs:
