//! One error type for every kernel; the Python layers map each variant onto the typed
//! exceptions of `sglang_mm_core.errors`.

/// What went wrong in a kernel, phrased for the person who sent the input.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The bytes are not one of the formats we decode (named when it can be detected).
    #[error("unsupported image format: {0}")]
    UnsupportedFormat(String),
    /// The format was recognised but the data is broken or uses an unsupported feature.
    #[error("cannot decode {format} image: {reason}")]
    Decode {
        format: &'static str,
        reason: String,
    },
    /// A size limit would be exceeded; checked before the memory is allocated.
    #[error("{0}")]
    Limit(String),
    /// An argument (size, option, array shape) is out of its domain.
    #[error("{0}")]
    InvalidArgument(String),
}

pub type Result<T> = std::result::Result<T, KernelError>;
