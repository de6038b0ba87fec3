//! Diagnostics computed from traces and draws after (or beside) a run: effective sample size
//! and R-hat, agreement with known labels, posterior similarity, point estimates by loss, credible
//! balls and pointwise credible bands of the predictive density.

pub mod agreement;
pub mod credible_ball;
pub mod density;
pub mod draw_set;
pub mod ess;
pub mod loo;
pub mod partition_loss;
pub mod predictive;
pub mod salso;
pub mod similarity;
pub mod summary;
pub mod thinned;

pub use agreement::{adjusted_rand_index, normalized_mutual_information};
pub use credible_ball::{BallBound, CredibleBall};
pub use density::{pointwise_bands, PointwiseBands};
pub use draw_set::{DrawSet, DrawSetBuilder};
pub use ess::{effective_sample_size, ess_bulk, ess_chains, ess_tail, split_rhat};
pub use loo::{predictive_fit, psis_smooth, PredictiveFit, PARETO_K_LIMIT};
pub use partition_loss::PartitionLoss;
pub use predictive::{
    cluster_log_probabilities, ln_loo_predictives, ln_predictive_density, ln_predictive_of_draw,
    predict_labels, PredictiveKernel,
};
pub use salso::{minimise_expected_loss, search_expected_loss, LossEstimate, SearchSettings};
pub use similarity::{map_draw, PairSample, SimilarityMatrix};
pub use summary::{common_spacing, SeriesSummary};
pub use thinned::Thinned;
