//! Stack scratch space for the kernels' hot paths.

/// Runs `f` on a zeroed scratch slice of `len` values, taken from the stack when `len` is at
/// most 1024 and from the heap beyond (where the O(len²) or O(len³) work that needs it dwarfs
/// one allocation). Several size classes keep the zeroing cost proportional to `len` for the
/// common small dimensions.
#[inline(always)]
pub(crate) fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [f64]) -> R) -> R {
    if len <= 8 {
        let mut buf = [0.0f64; 8];
        f(&mut buf[..len])
    } else if len <= 64 {
        let mut buf = [0.0f64; 64];
        f(&mut buf[..len])
    } else if len <= 1024 {
        let mut buf = [0.0f64; 1024];
        f(&mut buf[..len])
    } else {
        let mut buf = vec![0.0f64; len];
        f(&mut buf)
    }
}

/// Calls `f` in a separate, never-inlined frame.
///
/// The general-dimension paths of the kernels' hot functions take up to 8 KiB of stack
/// scratch; run inline, that scratch would enlarge (and stack-probe) the frame of every call,
/// including the unrolled small-dimension calls that never use it.
#[inline(never)]
pub(crate) fn out_of_line<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_class_gives_the_requested_length() {
        for len in [0, 1, 8, 9, 64, 65, 1024, 1025, 5000] {
            let got = with_scratch(len, |b| {
                assert!(b.iter().all(|&v| v == 0.0));
                b.len()
            });
            assert_eq!(got, len);
        }
    }
}
