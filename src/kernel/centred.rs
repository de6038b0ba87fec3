//! The data centred by a kernel's prior mean ξ, one copy for every kernel over the same values
//! and the same ξ.
//!
//! The Normal-Wishart and diagonal kernels evaluate every density on `x_i - ξ`, stored once
//! at construction. A run builds several kernels over the same points: both kernels while a
//! pilot weighs them, and a new kernel each time a scale is set or a hyperparameter moves.
//! Each holding its own centred copy (the data's size again, 100 MB for 10⁵ points in 128
//! dimensions) is what made a run's peak memory several times its data; this registry hands
//! every such kernel the copy already made.

use std::sync::{Arc, Mutex, Weak};

use crate::data::DenseData;

/// A centred copy of the points, as the kernels share it. The values sit behind the `Arc` in
/// a `Vec` of their own, so that the registry's weak references keep only the `Arc`'s small
/// header alive once the last kernel drops a copy, never the copy itself.
pub(crate) type Centred = Arc<Vec<f64>>;

/// A copy made and still held by some kernel: the values it was made from (to know them while
/// they are alive), ξ bit for bit, and the copy.
struct Entry {
    values: Weak<Vec<f64>>,
    xi: Vec<u64>,
    centred: Weak<Vec<f64>>,
}

/// The copies alive, the dead ones dropped at each look-up.
static COPIES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// `data`'s rows less `xi`, row-major: the copy already made for the same values (the same
/// allocation, alive) and the same `xi` bit for bit, while a kernel holds it, otherwise a new
/// one. The copy is the same either way, so a kernel's results never
/// depend on which kernels exist. Cost: O(n d) for a new copy, O(copies alive) for a look-up.
pub(crate) fn centred(data: &DenseData, xi: &[f64]) -> Centred {
    let values = data.shared_values();
    let bits: Vec<u64> = xi.iter().map(|v| v.to_bits()).collect();
    {
        let mut copies = COPIES.lock().unwrap_or_else(|e| e.into_inner());
        copies.retain(|e| e.centred.strong_count() > 0 && e.values.strong_count() > 0);
        if let Some(found) = alive(&copies, values, &bits) {
            return found;
        }
    }
    let d = xi.len();
    let made: Centred = Arc::new(
        values
            .iter()
            .enumerate()
            .map(|(k, &v)| v - xi[k % d])
            .collect(),
    );
    let mut copies = COPIES.lock().unwrap_or_else(|e| e.into_inner());
    // Another thread may have made the same copy meanwhile: keep one.
    if let Some(found) = alive(&copies, values, &bits) {
        return found;
    }
    copies.push(Entry {
        values: Arc::downgrade(values),
        xi: bits,
        centred: Arc::downgrade(&made),
    });
    made
}

/// The copy of `copies` made from `values` (the same allocation, alive) with ξ of the bits
/// `xi`, if some kernel still holds it. Cost: O(copies).
fn alive(copies: &[Entry], values: &Arc<Vec<f64>>, xi: &[u64]) -> Option<Centred> {
    copies
        .iter()
        .find(|e| {
            // While the weak reference upgrades, its allocation is alive, so an equal address
            // is the same values (an address is reused only after a free).
            e.xi == xi
                && std::ptr::addr_eq(e.values.as_ptr(), Arc::as_ptr(values))
                && e.values.upgrade().is_some()
        })
        .and_then(|e| e.centred.upgrade())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> DenseData {
        DenseData::from_rows(&[vec![1.0, 2.0], vec![3.5, -1.0], vec![0.25, 8.0]]).unwrap()
    }

    /// The copy holds `x - ξ`; kernels over the same values and ξ share it, another ξ or
    /// other values (even equal ones) get their own, and a copy no one holds is made again.
    #[test]
    fn one_copy_per_values_and_xi() {
        let x = data();
        let a = centred(&x, &[1.0, 1.0]);
        assert_eq!(&a[..], &[0.0, 1.0, 2.5, -2.0, -0.75, 7.0]);
        let b = centred(&x.clone(), &[1.0, 1.0]);
        assert!(
            Arc::ptr_eq(&a, &b),
            "clones share their values, hence the copy"
        );
        let other_xi = centred(&x, &[1.0, 0.0]);
        assert!(!Arc::ptr_eq(&a, &other_xi));
        assert_eq!(&other_xi[..], &[0.0, 2.0, 2.5, -1.0, -0.75, 8.0]);
        let equal_values = data();
        let c = centred(&equal_values, &[1.0, 1.0]);
        assert!(
            !Arc::ptr_eq(&a, &c),
            "equal values elsewhere are other data"
        );
        assert_eq!(a, c);
        let weak = Arc::downgrade(&a);
        drop((a, b));
        assert!(
            weak.upgrade().is_none(),
            "the registry holds no copy alive once its kernels drop it"
        );
        let again = centred(&x, &[1.0, 1.0]);
        assert_eq!(&again[..], &[0.0, 1.0, 2.5, -2.0, -0.75, 7.0]);
    }
}
