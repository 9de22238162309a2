//! Compiles the small libjpeg shim (src/decode/jpeg_shim.c) against the libjpeg-turbo that
//! turbojpeg-sys builds from source; only with the `decode` feature.

fn main() {
    println!("cargo:rerun-if-changed=src/decode/jpeg_shim.c");
    if std::env::var_os("CARGO_FEATURE_DECODE").is_none() {
        return;
    }
    build_jpeg_shim();
}

#[cfg(feature = "decode")]
fn build_jpeg_shim() {
    // turbojpeg-sys (`links = "turbojpeg"`) exports its include directories, comma separated.
    let includes = std::env::var("DEP_TURBOJPEG_INCLUDE")
        .expect("turbojpeg-sys did not export its include directory (DEP_TURBOJPEG_INCLUDE)");
    let mut build = cc::Build::new();
    build.file("src/decode/jpeg_shim.c").warnings(true);
    for dir in includes.split(',').filter(|d| !d.is_empty()) {
        build.include(dir);
    }
    build.compile("mm_jpeg_shim");
}

#[cfg(not(feature = "decode"))]
fn build_jpeg_shim() {}
