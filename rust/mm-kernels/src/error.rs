//! One error type for every kernel; the Python layers map each variant onto the typed
//! exceptions of `sglang_mm_core.errors`, with the structured fields as attributes.

use std::fmt;

/// What went wrong in a kernel, phrased for the person who sent the input.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The bytes are not one of the formats we decode (named when it can be detected).
    #[error("unsupported image format: {0}")]
    UnsupportedFormat(Unsupported),
    /// The format was recognised but the data is broken or uses an unsupported feature.
    #[error("cannot decode {format} image: {reason}")]
    Decode {
        /// The format's name (`JPEG`, `PNG`, ...).
        format: &'static str,
        /// What is wrong, as Pillow would say it where it can.
        reason: String,
    },
    /// A size limit without a name would be exceeded (an allocation, an internal cap).
    #[error("{0}")]
    Limit(String),
    /// A named limit of the spec would be exceeded; checked before the memory is allocated.
    #[error("{message}")]
    LimitExceeded {
        /// The limit's name as the spec writes it, e.g. `max_image_pixels`.
        limit: &'static str,
        /// The limit's value.
        max: u64,
        /// The offending value.
        value: u64,
        /// The whole message, naming the limit and both values.
        message: String,
    },
    /// An argument (size, option, array shape) is out of its domain.
    #[error("{0}")]
    InvalidArgument(String),
    /// The call's cancel flag ([`crate::Par::with_cancel`]) was set while it ran: its work
    /// stopped between bands and its partial output was dropped.
    #[error("stopped: the request was cancelled while its kernel ran")]
    Cancelled,
}

/// Why bytes were not decoded as any format: what was seen, and the format's name when the
/// magic bytes tell it (a format we recognise but do not decode, e.g. TIFF).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// The detected format's name, if any.
    pub detected: Option<&'static str>,
    /// The text of the error (the detected name, or what the input looked like).
    pub what: String,
}

impl Unsupported {
    /// A recognised format that we do not decode; the message is its name.
    pub fn detected(name: &'static str) -> Self {
        Self {
            detected: Some(name),
            what: name.to_string(),
        }
    }
}

impl From<&str> for Unsupported {
    fn from(what: &str) -> Self {
        Self {
            detected: None,
            what: what.to_string(),
        }
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl KernelError {
    /// The format the error is about, when known: the one being decoded, or the one detected
    /// but not supported.
    pub fn format(&self) -> Option<&'static str> {
        match self {
            KernelError::Decode { format, .. } => Some(format),
            KernelError::UnsupportedFormat(u) => u.detected,
            _ => None,
        }
    }
}

/// The result of every kernel.
pub type Result<T> = std::result::Result<T, KernelError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_fields() {
        let e = KernelError::UnsupportedFormat(Unsupported::detected("TIFF"));
        assert_eq!(e.to_string(), "unsupported image format: TIFF");
        assert_eq!(e.format(), Some("TIFF"));
        let e = KernelError::UnsupportedFormat("unknown format".into());
        assert_eq!(e.to_string(), "unsupported image format: unknown format");
        assert_eq!(e.format(), None);
        let e = KernelError::Decode {
            format: "PNG",
            reason: "bad CRC".into(),
        };
        assert_eq!(
            (e.to_string().as_str(), e.format()),
            ("cannot decode PNG image: bad CRC", Some("PNG"))
        );
        let e = KernelError::LimitExceeded {
            limit: "max_image_side",
            max: 4,
            value: 5,
            message: "too wide".into(),
        };
        assert_eq!((e.to_string().as_str(), e.format()), ("too wide", None));
    }
}
