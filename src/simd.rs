//! Run-time dispatch of the samplers' vectorised hot loops on the CPU's features.
//!
//! The release build targets the baseline of its architecture (for x86-64: SSE2, no FMA, no
//! AVX), so a loop compiled once runs on every machine but uses neither fused multiply-adds
//! nor wide vectors. Each hot loop is therefore compiled several times from one body (the
//! [`multiversion`] macro): once per [`Level`], each copy with that level's target features,
//! and [`level`] picks the copy once per call.
//!
//! Every copy makes **identical draws**: the body is the same source, Rust never reassociates
//! or contracts floating-point operations, and every multiply-add in these bodies is an
//! explicit `mul_add`, which is correctly rounded on every level (a fused instruction where
//! the CPU has one, the C library's `fma` otherwise). The levels differ in speed only; the
//! tests force each level a CPU has ([`with_level`]) and compare chains bit for bit.

use std::cell::Cell;
use std::sync::OnceLock;

/// A set of CPU features a hot loop can be compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The build's baseline target; `mul_add` may be a library call.
    Portable,
    /// x86-64 with AVX2 and FMA (256-bit vectors, fused multiply-adds).
    Avx2Fma,
    /// x86-64 with AVX-512F (512-bit vectors), AVX2 and FMA.
    Avx512,
}

impl Level {
    /// Every level, from the most portable.
    pub const ALL: [Level; 3] = [Level::Portable, Level::Avx2Fma, Level::Avx512];

    /// Whether this CPU can run code compiled for the level.
    pub fn available(self) -> bool {
        match self {
            Level::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Level::Avx2Fma => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => {
                Level::Avx2Fma.available() && std::arch::is_x86_feature_detected!("avx512f")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
}

/// The best level this CPU supports, detected once.
pub fn detected() -> Level {
    static BEST: OnceLock<Level> = OnceLock::new();
    *BEST.get_or_init(|| {
        Level::ALL
            .into_iter()
            .rev()
            .find(|l| l.available())
            .unwrap_or(Level::Portable)
    })
}

thread_local! {
    static FORCED: Cell<Option<Level>> = const { Cell::new(None) };
}

/// The level the hot loops of this thread run at: the one forced by [`with_level`], else
/// [`detected`]. Cost: one thread-local read.
#[inline]
pub fn level() -> Level {
    FORCED.with(Cell::get).unwrap_or_else(detected)
}

/// Runs `f` with this thread's hot loops at `level` (for tests and benchmarks that compare
/// levels; loops on other threads, such as a rayon pool's, keep their own). A level this CPU
/// cannot run falls back to [`detected`], so forcing never executes an illegal instruction.
pub fn with_level<R>(level: Level, f: impl FnOnce() -> R) -> R {
    let level = if level.available() { level } else { detected() };
    let before = FORCED.with(|c| c.replace(Some(level)));
    struct Restore(Option<Level>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(before);
    f()
}

/// Defines `fn $name(args) -> R` that runs `$body` compiled for the current [`level`]: the
/// body is an `#[inline(always)]` function, instantiated inside one `#[target_feature]`
/// function per x86-64 level and once without, and the dispatcher calls the copy for the
/// level. Everything the body calls must be `#[inline(always)]` (or generic and inlined) to
/// be compiled with the level's features.
macro_rules! multiversion {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident $(<$($gen:tt),*>)? ($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)?
        $body:block
    ) => {
        $(#[$meta])*
        $vis fn $name $(<$($gen),*>)? ($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body $(<$($gen),*>)? ($($arg: $ty),*) $(-> $ret)? $body

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn avx2 $(<$($gen),*>)? ($($arg: $ty),*) $(-> $ret)? {
                body($($arg),*)
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx2,fma")]
            fn avx512 $(<$($gen),*>)? ($($arg: $ty),*) $(-> $ret)? {
                body($($arg),*)
            }

            match $crate::simd::level() {
                // SAFETY: `level()` returns a level only when `Level::available` found its
                // features on this CPU.
                #[cfg(target_arch = "x86_64")]
                $crate::simd::Level::Avx512 => unsafe { avx512($($arg),*) },
                #[cfg(target_arch = "x86_64")]
                $crate::simd::Level::Avx2Fma => unsafe { avx2($($arg),*) },
                _ => body($($arg),*),
            }
        }
    };
}
pub(crate) use multiversion;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forcing_a_level_is_scoped_and_never_beyond_the_cpu() {
        let outer = level();
        with_level(Level::Portable, || {
            assert_eq!(level(), Level::Portable);
            with_level(Level::Avx512, || {
                assert!(level().available());
                assert!(level() == Level::Avx512 || level() == detected());
            });
            assert_eq!(level(), Level::Portable);
        });
        assert_eq!(level(), outer);
        assert!(detected().available());
    }
}
