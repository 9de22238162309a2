//! The one TurboJPEG encoder the decode tests build their JPEG inputs with.

use turbojpeg_sys as tj;

/// Encode `px` (`w x h`, pixel format `pf`) at `quality` with subsampling `samp`.
pub(crate) fn encode_jpeg(
    px: &[u8],
    w: usize,
    h: usize,
    pf: i32,
    quality: i32,
    samp: i32,
    progressive: bool,
) -> Vec<u8> {
    // SAFETY: plain TurboJPEG compression of a valid buffer; the output is freed below.
    unsafe {
        let handle = tj::tj3Init(tj::TJINIT_TJINIT_COMPRESS as _);
        assert!(!handle.is_null());
        tj::tj3Set(handle, tj::TJPARAM_TJPARAM_QUALITY as _, quality);
        tj::tj3Set(handle, tj::TJPARAM_TJPARAM_SUBSAMP as _, samp);
        tj::tj3Set(
            handle,
            tj::TJPARAM_TJPARAM_PROGRESSIVE as _,
            i32::from(progressive),
        );
        let mut buf: *mut u8 = std::ptr::null_mut();
        let mut size = 0;
        let rc = tj::tj3Compress8(
            handle,
            px.as_ptr(),
            w as _,
            0,
            h as _,
            pf,
            &mut buf,
            &mut size,
        );
        assert_eq!(rc, 0);
        let out = std::slice::from_raw_parts(buf, size as usize).to_vec();
        tj::tj3Free(buf.cast());
        tj::tj3Destroy(handle);
        out
    }
}
