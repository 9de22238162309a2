//! Compiles the small libjpeg shim (src/decode/jpeg_shim.c) against the libjpeg-turbo that
//! turbojpeg-sys builds from source; only with the `decode` feature.

fn main() {
    println!("cargo:rerun-if-changed=src/decode/jpeg_shim.c");
    if std::env::var_os("CARGO_FEATURE_DECODE").is_none() {
        return;
    }
    warn_without_nasm();
    build_jpeg_shim();
}

/// libjpeg-turbo's SIMD code is assembled by nasm (or yasm); without one its cmake build falls
/// back to the C code paths, which decode to the same bits, only slower. Say so once instead
/// of failing, so that a plain `pip install` of an sdist works on a machine without nasm.
fn warn_without_nasm() {
    println!("cargo:rerun-if-env-changed=ASM_NASM");
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
    };
    let explicit = std::env::var_os("ASM_NASM").is_some();
    if !explicit && !on_path("nasm") && !on_path("yasm") {
        println!(
            "cargo:warning=nasm not found: libjpeg-turbo is built without SIMD (identical \
             output, slower JPEG decode); install nasm for full speed"
        );
    }
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
