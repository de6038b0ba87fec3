//! The integration tests, compiled and linked as one binary (`cargo test --release --test
//! integration`): each file under `tests/` is a module of this crate, named after the file, so
//! a fresh test build links once instead of once per file.
//!
//! A new test file goes next to the others and gets its `mod` line below; `suite` fails while
//! a `.rs` file under `tests/` is not part of this binary. Run one file's tests with its module
//! name as the filter, e.g. `cargo test --release --test integration sampler_tv::`, and its
//! `#[ignore]`d long runs with `cargo test --release --test integration sampler_tv:: --
//! --ignored --nocapture`.

// Helpers shared by several test modules.
mod exact_check;
mod kernel_support;
mod prior_support;
mod support;
mod tree_support;

mod cli;
mod constant_columns;
mod data_formats;
mod data_fuzz;
mod data_generate;
mod data_generate_nggp;
mod data_load;
mod data_parallel_cli;
mod data_pca;
mod data_real;
mod diag_cli;
mod diagnostics_agreement;
mod diagnostics_density;
mod diagnostics_estimates;
mod diagnostics_loo;
mod docs_links;
mod dpmm_cli;
mod dpmm_determinism;
mod dpmm_params;
mod dpmm_proposals;
mod dpmm_tv;
mod exact_compare;
mod exact_enumeration;
mod exact_posterior;
mod gibbs_type_cli;
mod kernel_beta_bernoulli;
mod kernel_diagonal;
mod kernel_hyper;
mod kernel_hyper_cli;
mod kernel_hyper_geweke;
mod kernel_mixed;
mod kernel_multinomial_dirichlet;
mod kernel_normal_wishart;
mod layering;
mod mixed_block_exact;
mod prior_eppf;
mod prior_gibbs_type;
mod prior_gibbs_type_hyper;
mod prior_hyper_invariance;
mod prior_ln_v;
mod prior_slice;
mod prior_validation;
mod run_auto;
mod run_checkpoint;
mod run_determinism;
mod run_pilot;
mod safety_cli;
mod sampler_exact_gibbs_type;
mod sampler_exact_kernels;
mod sampler_fast_paths;
mod sampler_geweke;
mod sampler_proposals;
mod sampler_toy;
mod sampler_tv;
mod scale;
mod suite;
mod sva_cli;
mod sva_fit;
mod sva_soft;
mod tempering_cli;
mod tempering_exact;
mod tgmcmc_cli;
mod tgmcmc_exact;
mod tgmcmc_paper_golden;
mod tgmcmc_paper_toy_cli;
mod tgmcmc_resume;
mod tgmcmc_toy;
mod tgmcmc_tv;
mod tree_build;
mod tree_ops;
mod tree_sample;
