//! A bounded record of a scalar series of unknown length, for the effective sample sizes and
//! plots of long chains.
//!
//! Every value is kept until the buffer is full; then every second kept value is dropped and
//! the stride doubles. Memory stays fixed however long a chain runs (a time budget on a tiny
//! data set can mean billions of sweeps), and the kept values stay evenly spaced over the whole
//! series, so its second half is still the second half of the chain.

/// Values `0, s, 2s, …` of a series, for a stride `s` that doubles whenever the buffer fills.
#[derive(Clone, Debug)]
pub struct Thinned {
    values: Vec<f64>,
    capacity: usize,
    stride: u64,
    seen: u64,
}

impl Thinned {
    /// An empty record holding at most `capacity` values (rounded up to an even number, at
    /// least 2). Allocates once; [`Thinned::push`] never allocates.
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(2).next_multiple_of(2);
        Thinned {
            values: Vec::with_capacity(capacity),
            capacity,
            stride: 1,
            seen: 0,
        }
    }

    /// Appends the next value of the series. Amortised O(1): a full buffer is halved in one
    /// pass, after which it takes as many pushes again to fill it.
    pub fn push(&mut self, value: f64) {
        if self.seen.is_multiple_of(self.stride) {
            if self.values.len() == self.capacity {
                // Kept index j is series index j·stride; keeping even j gives stride 2·stride,
                // and the current index, capacity·stride, is a multiple of the new stride.
                for j in 0..self.capacity / 2 {
                    self.values[j] = self.values[2 * j];
                }
                self.values.truncate(self.capacity / 2);
                self.stride *= 2;
            }
            self.values.push(value);
        }
        self.seen += 1;
    }

    /// The kept values, in series order.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The second half of the kept values: the draws after a burn-in of half the chain.
    pub fn second_half(&self) -> &[f64] {
        &self.values[self.values.len() / 2..]
    }

    /// Distance in the series between consecutive kept values.
    pub fn stride(&self) -> u64 {
        self.stride
    }

    /// Number of values pushed so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_until_full() {
        let mut t = Thinned::new(8);
        for i in 0..8 {
            t.push(i as f64);
        }
        assert_eq!(t.values(), &[0., 1., 2., 3., 4., 5., 6., 7.]);
        assert_eq!(t.stride(), 1);
        assert_eq!(t.second_half(), &[4., 5., 6., 7.]);
    }

    #[test]
    fn kept_values_are_evenly_spaced_and_bounded() {
        for total in [9u64, 16, 17, 100, 1000, 4097] {
            let mut t = Thinned::new(8);
            for i in 0..total {
                t.push(i as f64);
            }
            let s = t.stride();
            assert!(t.values().len() <= 8 && t.values().len() >= 4, "{total}");
            for (j, &v) in t.values().iter().enumerate() {
                assert_eq!(v, (j as u64 * s) as f64, "total {total}");
            }
            // The last kept value is within one stride of the end of the series.
            let last = *t.values().last().unwrap() as u64;
            assert!(total - 1 - last < s, "total {total}");
        }
    }

    #[test]
    fn capacity_is_even_and_at_least_two() {
        let mut t = Thinned::new(3);
        for i in 0..5 {
            t.push(i as f64);
        }
        assert_eq!(t.values(), &[0., 2., 4.]);
        let mut t = Thinned::new(0);
        for i in 0..4 {
            t.push(i as f64);
        }
        assert_eq!(t.values(), &[0., 2.]);
    }
}
