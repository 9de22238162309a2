/work/wt-merge/target-chk/release/deps/turbojpeg_sys-634210eec1f4995f.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/turbojpeg-sys-1.2.0/src/lib.rs /work/wt-merge/target-chk/release/build/turbojpeg-sys-d42c9449030cf6be/out/bindings.rs

/work/wt-merge/target-chk/release/deps/libturbojpeg_sys-634210eec1f4995f.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/turbojpeg-sys-1.2.0/src/lib.rs /work/wt-merge/target-chk/release/build/turbojpeg-sys-d42c9449030cf6be/out/bindings.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/turbojpeg-sys-1.2.0/src/lib.rs:
/work/wt-merge/target-chk/release/build/turbojpeg-sys-d42c9449030cf6be/out/bindings.rs:

# env-dep:OUT_DIR=/work/wt-merge/target-chk/release/build/turbojpeg-sys-d42c9449030cf6be/out
