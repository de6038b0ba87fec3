//! Exact posteriors over set partitions for small data sets (MATH §7.1).
