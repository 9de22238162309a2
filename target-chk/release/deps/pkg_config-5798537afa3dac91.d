/work/wt-merge/target-chk/release/deps/pkg_config-5798537afa3dac91.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pkg-config-0.3.34/src/lib.rs

/work/wt-merge/target-chk/release/deps/libpkg_config-5798537afa3dac91.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pkg-config-0.3.34/src/lib.rs

/work/wt-merge/target-chk/release/deps/libpkg_config-5798537afa3dac91.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pkg-config-0.3.34/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pkg-config-0.3.34/src/lib.rs:
