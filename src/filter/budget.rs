//! One filter memory budget spread over the runs of the tree (Monkey:
//! Dayan, Athanassoulis, Idreos, "Monkey: Optimal Navigable Key-Value
//! Store", SIGMOD 2017).
//!
//! # The cost
//!
//! An absent-key lookup probes one filter per sorted run (every level-0
//! table is a run, every deeper level one run) and reads a data block for
//! each false positive, so its expected data-block reads are the sum of the
//! runs' false-positive rates, `R = Σ p_i` (Monkey, section 3). The filter
//! memory of a run of `n_i` keys at `b_i` bits per key is `n_i · b_i`, and
//! the budget is `M` bits in all: minimise `R` subject to `Σ n_i · b_i ≤ M`.
//!
//! # The closed form, and where [`allocate`] departs from it
//!
//! For the classic Bloom filter at its best `k`, `p = e^(−b · ln²2)`. With
//! a Lagrange multiplier the optimum has `∂p_i/∂b_i = −λ · n_i`, that is
//! `p_i = λ · n_i / ln²2`: *each run's rate is proportional to its number of
//! entries* (Monkey, section 4, the rates `p_i ∝ n_i`; with size ratio `T`,
//! each level's rate is `T` times the one above it). The budget fixes `λ`.
//! A run whose `p_i` would exceed 1 gets no filter (rate 1, no memory), and
//! the others share the budget by the same rule: the largest runs lose
//! their filters first.
//!
//! [`allocate`] solves the same problem for every kind, from the kind's own
//! rate curve `p(b)` (its theory at the best `k` or `r`, the curves
//! [`rate_at`] gives): the classic Bloom's integer `k` departs a little from
//! `e^(−b ln²2)`, the blocked Bloom's curve lies above it, and the Ribbon
//! filter moves in whole steps of `r` (`2^−r` for about `1.04 · r` bits per
//! key). Each run starts with no filter; the budget then buys, in order of
//! false positives saved per bit, the next step along each run's curve
//! (the steps of its lower convex hull, so that a run's steps come in
//! order). This is the greedy solution of the Lagrangian relaxation: on the
//! classic Bloom's curve it reproduces the closed form (the unit tests
//! check it against the hand-computed cases), and it is exact at every
//! breakpoint of the convex hulls. What a step too large to fit leaves
//! unspent (at most one step of one run: 0.05 bits per key of it for the
//! Bloom kinds, one `r` for Ribbon) is not spent.
//!
//! Runs too small to matter need no special case: their steps are cheap,
//! so they are bought early and reach low rates (a 1,000-key level-0 table
//! in a 10-million-key tree gets about 30 bits per key). A run's rate never
//! exceeds 1 (no filter), and its bits per key never exceed
//! [`MAX_BITS_PER_KEY`].

use std::sync::OnceLock;

use super::level_filter::{FilterKind, LevelFilter};
use super::{blocked_bloom, bloom, ribbon};

/// The most bits per key a run gets: at 40 bits per key the classic Bloom
/// filter's rate is about `4 · 10^−9`.
pub const MAX_BITS_PER_KEY: f64 = 40.0;

/// Spacing of the Bloom kinds' rate curves, in bits per key.
const BITS_STEP: f64 = 0.05;

/// The filter memory of the whole tree, which [`crate::Options::filter_budget`]
/// spreads over its runs.
///
/// ```
/// use siftdb::filter::FilterBudget;
/// let b = FilterBudget::bits_per_key(10.0).with_max_bytes(64 << 20);
/// // 10 bits per key, but never more than 64 MiB of filters.
/// assert_eq!(b.total_bits(1_000_000), 10_000_000.0);
/// assert_eq!(b.total_bits(1_000_000_000), (64u64 << 23) as f64);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterBudget {
    /// Average filter bits per key over every table of the tree (keys
    /// counted per table: a key in two runs counts twice). Above 0, at
    /// most 40.
    pub bits_per_key: f64,
    /// An absolute cap on the filter memory, in bytes, whatever the number
    /// of keys. `None`: no cap.
    pub max_bytes: Option<u64>,
}

impl FilterBudget {
    /// A budget of `bits_per_key` bits per key on average, uncapped.
    pub fn bits_per_key(bits_per_key: f64) -> FilterBudget {
        FilterBudget {
            bits_per_key,
            max_bytes: None,
        }
    }

    /// The same budget, capped at `max_bytes` bytes.
    pub fn with_max_bytes(self, max_bytes: u64) -> FilterBudget {
        FilterBudget {
            max_bytes: Some(max_bytes),
            ..self
        }
    }

    /// The filter bits a tree of `keys` keys (summed over its tables) may
    /// hold: `bits_per_key · keys`, at most `8 · max_bytes`.
    pub fn total_bits(&self, keys: u64) -> f64 {
        let bits = self.bits_per_key * keys as f64;
        match self.max_bytes {
            Some(cap) => bits.min(cap as f64 * 8.0),
            None => bits,
        }
    }

    /// Checks the fields.
    ///
    /// # Errors
    /// What is wrong, for [`crate::Error::InvalidArgument`]: bits per key
    /// not in `(0, 40]`.
    pub fn validate(&self) -> Result<(), String> {
        if self.bits_per_key > 0.0 && self.bits_per_key <= MAX_BITS_PER_KEY {
            Ok(())
        } else {
            Err(format!(
                "filter_budget: bits per key must be above 0 and at most 40, not {}",
                super::shown(self.bits_per_key)
            ))
        }
    }
}

/// One sorted run as the allocator sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunShape {
    /// Distinct keys in the run (summed over its tables).
    pub keys: u64,
    /// The kind its filters are built with; `None`: the run gets no filter
    /// (rate 1) and no memory.
    pub kind: Option<FilterKind>,
    /// Keys of the run's largest filter (each table has its own): a
    /// Ribbon filter's slot overhead grows with its keys
    /// ([`ribbon::slot_factor`]), so a run of several tables reaches a
    /// given `r` with fewer bits per key than one filter over all its keys
    /// would. [`RunShape::new`] sets it to `keys`.
    pub filter_keys: u64,
}

impl RunShape {
    /// A run of `keys` keys whose filters are of `kind`, sized as one
    /// filter over them all (`filter_keys = keys`).
    pub fn new(keys: u64, kind: Option<FilterKind>) -> RunShape {
        RunShape {
            keys,
            kind,
            filter_keys: keys,
        }
    }
}

/// What one run gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunFilter {
    /// The setting its new tables are built with ([`LevelFilter::None`] for
    /// no filter).
    pub setting: LevelFilter,
    /// Bits per key the setting costs by the kind's curve (0 for none).
    pub bits_per_key: f64,
    /// The setting's false-positive rate by the kind's theory (1 for none).
    pub fpr: f64,
}

/// An allocation of filter memory over runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// One entry per run, in the order given.
    pub runs: Vec<RunFilter>,
}

impl Allocation {
    /// Expected false positives, so data-block reads, of an absent-key
    /// lookup that probes every run: `Σ p_i`.
    pub fn expected_false_positives(&self) -> f64 {
        // (An empty sum of floats is −0.0; adding 0.0 makes it 0.)
        self.runs.iter().map(|r| r.fpr).sum::<f64>() + 0.0
    }

    /// Filter bits the allocation spends on `runs` (the shapes it was
    /// computed for): `Σ n_i · b_i`.
    pub fn total_bits(&self, runs: &[RunShape]) -> f64 {
        self.runs
            .iter()
            .zip(runs)
            .map(|(f, r)| f.bits_per_key * r.keys as f64)
            .sum()
    }
}

/// A point of a rate curve: a setting, its bits per key and its rate.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    bits_per_key: f64,
    fpr: f64,
    setting: LevelFilter,
}

const NO_FILTER: Point = Point {
    bits_per_key: 0.0,
    fpr: 1.0,
    setting: LevelFilter::None,
};

/// The false-positive rate `kind` reaches at `bits_per_key` bits per key,
/// by its theory at the parameter its policy picks there: classic Bloom
/// [`bloom::theoretical_fpr`] with `k = round(b · ln 2)`; blocked Bloom
/// [`blocked_bloom::theoretical_fpr`] at [`blocked_bloom::best_hashes`];
/// Ribbon `2^−r` for the largest `r` whose stored size, `r ·`
/// [`ribbon::slot_factor`]`(keys)`, fits. 1 when the bits buy no filter.
pub fn rate_at(kind: FilterKind, bits_per_key: f64, keys: u64) -> f64 {
    if bits_per_key.is_nan() || bits_per_key <= 0.0 {
        return 1.0;
    }
    match kind {
        FilterKind::Bloom => {
            let k = (bits_per_key * std::f64::consts::LN_2)
                .round()
                .clamp(1.0, 30.0);
            bloom::theoretical_fpr(bits_per_key, k as u32)
        }
        FilterKind::BlockedBloom => {
            blocked_bloom::theoretical_fpr(bits_per_key, blocked_bloom::best_hashes(bits_per_key))
        }
        FilterKind::Ribbon => {
            let r = (bits_per_key / ribbon::slot_factor(keys as usize) + 1e-9).floor();
            if r < 1.0 {
                1.0
            } else {
                ribbon::theoretical_fpr(r.min(32.0) as u32)
            }
        }
    }
}

/// The lower convex hull of the points (sorted by bits per key, the first
/// being "no filter"): the settings worth buying, each cheaper per false
/// positive saved than the next.
fn lower_hull(points: impl IntoIterator<Item = Point>) -> Vec<Point> {
    let mut hull: Vec<Point> = Vec::new();
    for p in points {
        if hull.last().is_some_and(|l| p.fpr >= l.fpr) {
            continue; // more bits for no gain
        }
        while hull.len() >= 2 {
            let (a, b) = (hull[hull.len() - 2], hull[hull.len() - 1]);
            // Drop `b` if it lies on or above the segment from `a` to `p`.
            let cross = (b.bits_per_key - a.bits_per_key) * (p.fpr - a.fpr)
                - (b.fpr - a.fpr) * (p.bits_per_key - a.bits_per_key);
            if cross <= 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    hull
}

/// The hull of a Bloom kind's curve, on a grid of [`BITS_STEP`] bits per
/// key; the same for every run, so computed once.
fn bloom_hull(kind: FilterKind) -> &'static [Point] {
    static CLASSIC: OnceLock<Vec<Point>> = OnceLock::new();
    static BLOCKED: OnceLock<Vec<Point>> = OnceLock::new();
    let cell = if kind == FilterKind::Bloom {
        &CLASSIC
    } else {
        &BLOCKED
    };
    cell.get_or_init(|| {
        let steps = (MAX_BITS_PER_KEY / BITS_STEP).round() as u32;
        let grid = (1..=steps).map(|i| {
            let b = f64::from(i) * BITS_STEP;
            Point {
                bits_per_key: b,
                fpr: rate_at(kind, b, 0),
                setting: LevelFilter::BitsPerKey(kind, b),
            }
        });
        lower_hull(std::iter::once(NO_FILTER).chain(grid))
    })
}

/// The hull of a run's curve.
fn hull_for(run: &RunShape) -> Vec<Point> {
    match run.kind {
        None => vec![NO_FILTER],
        Some(kind @ (FilterKind::Bloom | FilterKind::BlockedBloom)) => bloom_hull(kind).to_vec(),
        Some(FilterKind::Ribbon) => {
            let per_r = ribbon::slot_factor(run.filter_keys as usize);
            let steps = (1..=32u32)
                .map(|r| Point {
                    bits_per_key: f64::from(r) * per_r,
                    fpr: ribbon::theoretical_fpr(r),
                    setting: LevelFilter::FalsePositiveRate(
                        FilterKind::Ribbon,
                        ribbon::theoretical_fpr(r),
                    ),
                })
                .take_while(|p| p.bits_per_key <= MAX_BITS_PER_KEY);
            lower_hull(std::iter::once(NO_FILTER).chain(steps))
        }
    }
}

fn run_filter(p: &Point) -> RunFilter {
    RunFilter {
        setting: p.setting,
        bits_per_key: p.bits_per_key,
        fpr: p.fpr,
    }
}

/// The allocation of at most `total_bits` filter bits over `runs` that
/// minimises the expected false positives of an absent-key lookup, `Σ p_i`
/// (see the module docs for the method and its source), or [`uniform`]'s
/// if that is lower (equal runs whose steps the budget falls between). A
/// run of 0 keys gets the rate its first step buys.
pub fn allocate(runs: &[RunShape], total_bits: f64) -> Allocation {
    let hulls: Vec<Vec<Point>> = runs.iter().map(hull_for).collect();
    // Every step of every hull: (run, index of the point it reaches,
    // false positives saved per bit).
    let mut steps: Vec<(usize, usize, f64)> = Vec::new();
    for (i, hull) in hulls.iter().enumerate() {
        let keys = runs[i].keys.max(1) as f64;
        for j in 1..hull.len() {
            let saved = hull[j - 1].fpr - hull[j].fpr;
            let cost = (hull[j].bits_per_key - hull[j - 1].bits_per_key) * keys;
            steps.push((i, j, saved / cost));
        }
    }
    // Best value first; a run's own steps are already in that order (its
    // hull is convex), and ties keep it.
    steps.sort_by(|a, b| b.2.total_cmp(&a.2));
    let mut at = vec![0usize; runs.len()];
    // Runs whose next step did not fit, in the order they stopped.
    let mut stopped: Vec<usize> = Vec::new();
    let mut left = total_bits;
    for (i, j, _) in steps {
        if stopped.contains(&i) || at[i] + 1 != j {
            continue;
        }
        let hull = &hulls[i];
        let cost = (hull[j].bits_per_key - hull[j - 1].bits_per_key) * runs[i].keys as f64;
        if cost <= left {
            left -= cost;
            at[i] = j;
        } else {
            stopped.push(i);
        }
    }
    let mut out: Vec<Point> = at.iter().zip(&hulls).map(|(&j, h)| h[j]).collect();
    // What is left buys part of a stopped run's next step, where its kind
    // takes any bits per key on the grid (the Bloom kinds): the grid
    // points between two hull points lie a little above the hull, but
    // below the point the run stopped at.
    for i in stopped {
        let Some(kind @ (FilterKind::Bloom | FilterKind::BlockedBloom)) = runs[i].kind else {
            continue;
        };
        let keys = runs[i].keys.max(1) as f64;
        let from = out[i].bits_per_key;
        let steps = (left / keys / BITS_STEP).floor();
        let to = ((from / BITS_STEP).round() + steps) * BITS_STEP;
        if steps < 1.0 || to > MAX_BITS_PER_KEY {
            continue;
        }
        let fpr = rate_at(kind, to, runs[i].keys);
        if fpr < out[i].fpr {
            left -= (to - from) * keys;
            out[i] = Point {
                bits_per_key: to,
                fpr,
                setting: LevelFilter::BitsPerKey(kind, to),
            };
        }
    }
    let greedy = Allocation {
        runs: out.iter().map(run_filter).collect(),
    };
    // Where the hulls' steps are coarse (Ribbon's whole `r`, the Bloom
    // kinds' jumps of `k`) and the runs equal, what the walk leaves unspent
    // can cost more than spreading the budget evenly: keep the better.
    let even = uniform(runs, total_bits);
    if even.expected_false_positives() < greedy.expected_false_positives() {
        even
    } else {
        greedy
    }
}

/// The setting of `kind` at `bits_per_key` for a run of `keys` keys, with
/// the bits it costs and its rate by [`rate_at`]: the Bloom kinds at those
/// bits exactly; Ribbon at the largest `r` that fits (none below `r = 1`).
fn setting_at(kind: FilterKind, bits_per_key: f64, keys: u64) -> RunFilter {
    let b = bits_per_key.min(MAX_BITS_PER_KEY);
    if b.is_nan() || b <= 0.0 {
        return run_filter(&NO_FILTER);
    }
    match kind {
        FilterKind::Bloom | FilterKind::BlockedBloom => RunFilter {
            setting: LevelFilter::BitsPerKey(kind, b),
            bits_per_key: b,
            fpr: rate_at(kind, b, keys),
        },
        FilterKind::Ribbon => {
            let per_r = ribbon::slot_factor(keys as usize);
            let r = (b / per_r + 1e-9).floor().min(32.0);
            if r < 1.0 {
                return run_filter(&NO_FILTER);
            }
            let fpr = ribbon::theoretical_fpr(r as u32);
            RunFilter {
                setting: LevelFilter::FalsePositiveRate(FilterKind::Ribbon, fpr),
                bits_per_key: r * per_r,
                fpr,
            }
        }
    }
}

/// The allocation that gives every run with a filter kind the same bits
/// per key, `total_bits / Σ n_i` over those runs (at most
/// [`MAX_BITS_PER_KEY`]; Ribbon at the largest `r` that fits), for
/// comparison with [`allocate`] at the same memory.
pub fn uniform(runs: &[RunShape], total_bits: f64) -> Allocation {
    let keys: u64 = runs
        .iter()
        .filter(|r| r.kind.is_some())
        .map(|r| r.keys)
        .sum();
    let b = if keys == 0 {
        0.0
    } else {
        total_bits / keys as f64
    };
    Allocation {
        runs: runs
            .iter()
            .map(|r| match r.kind {
                Some(kind) => setting_at(kind, b, r.filter_keys),
                None => run_filter(&NO_FILTER),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LN2_SQ: f64 = std::f64::consts::LN_2 * std::f64::consts::LN_2;

    fn bloom_runs(keys: &[u64]) -> Vec<RunShape> {
        keys.iter()
            .map(|&keys| RunShape::new(keys, Some(FilterKind::Bloom)))
            .collect()
    }

    /// Monkey's closed form for continuous-k Bloom filters (no run
    /// clamped): `p_i = c · n_i` with `Σ n_i · ln(1/p_i) / ln²2 = M`.
    fn closed_form(keys: &[u64], total_bits: f64) -> Vec<f64> {
        let n: f64 = keys.iter().map(|&k| k as f64).sum();
        let weighted_ln: f64 = keys.iter().map(|&k| k as f64 * (k as f64).ln()).sum();
        // Σ n_i (−ln c − ln n_i) = M · ln²2  ⇒  ln c = −(M ln²2 + Σ n_i ln n_i) / N
        let ln_c = -(total_bits * LN2_SQ + weighted_ln) / n;
        keys.iter().map(|&k| ln_c.exp() * k as f64).collect()
    }

    #[test]
    fn five_levels_at_size_ratio_ten_match_the_closed_form() {
        let keys = [1_000u64, 10_000, 100_000, 1_000_000, 10_000_000];
        let runs = bloom_runs(&keys);
        let total = 10.0 * keys.iter().sum::<u64>() as f64;
        let a = allocate(&runs, total);
        assert!(a.total_bits(&runs) <= total);
        assert!(
            a.total_bits(&runs) > 0.999 * total,
            "{}",
            a.total_bits(&runs)
        );
        let want = closed_form(&keys, total);
        // Each level's rate is about ten times the one above it.
        // (The integer k departs from the continuous optimum most at the
        // top levels' 24 to 29 bits per key, whose rates, 10^−5 and
        // 10^−6, add almost nothing.)
        for (got, want) in a.runs.iter().zip(&want).skip(2) {
            let ratio = got.fpr / want;
            assert!((0.85..1.15).contains(&ratio), "{got:?} against {want}");
        }
        // Σ p: 0.0118 by the closed form (the last level at 0.0106, each
        // level above at a tenth of the one below), against 5 × 0.0082 =
        // 0.041 uniform: 71% fewer false positives for the same memory.
        let sum: f64 = want.iter().sum();
        assert!((sum - 0.01176).abs() < 0.00005, "{sum}");
        assert!((want[4] - 0.01058).abs() < 0.00005, "{want:?}");
        let got = a.expected_false_positives();
        assert!((got / sum - 1.0).abs() < 0.03, "{got} against {sum}");
        let u = uniform(&runs, total);
        assert!((u.expected_false_positives() - 5.0 * 0.008_194).abs() < 0.0001);
        // The bits go to the small runs: the last level gets a little
        // under 10 bits per key, the first about 4 · ln 10 / ln²2 = 19.2
        // bits more (20 with the integer k).
        let last = a.runs[4].bits_per_key;
        assert!((9.4..9.9).contains(&last), "{last}");
        let first = a.runs[0].bits_per_key;
        assert!(
            ((first - last) - 4.0 * 10f64.ln() / LN2_SQ).abs() < 1.0,
            "{first}"
        );
    }

    #[test]
    fn eight_level0_runs_and_a_last_level_as_in_slatedb_163() {
        // Eight runs of n and one of 80·n, at 10 bits per key: the
        // level-0 runs get about 18.3 bits per key and the last level
        // 9.17 (rates 1.5e-4 and 0.0122), Σ p ≈ 0.0135, against 9 ×
        // 0.0082 = 0.073 for 10 bits everywhere.
        let mut keys = vec![100_000u64; 8];
        keys.push(8_000_000);
        let runs = bloom_runs(&keys);
        let total = 10.0 * keys.iter().sum::<u64>() as f64;
        let a = allocate(&runs, total);
        let got = a.expected_false_positives();
        assert!((got - 0.0135).abs() < 0.0005, "{got}");
        let u = uniform(&runs, total).expected_false_positives();
        assert!((u - 0.0737).abs() < 0.0005, "{u}");
        for r in &a.runs[..8] {
            assert!((r.bits_per_key - 18.3).abs() < 0.6, "{r:?}");
            // Equal runs get equal settings, but for what is left over.
            assert!((r.bits_per_key - a.runs[7].bits_per_key).abs() <= 0.1);
        }
        assert!(
            (a.runs[8].bits_per_key - 9.17).abs() < 0.15,
            "{:?}",
            a.runs[8]
        );
        assert!(a.total_bits(&runs) <= total);
    }

    #[test]
    fn a_single_run_gets_the_whole_budget_as_uniform_would() {
        let runs = bloom_runs(&[1_000_000]);
        for bits in [2.0, 6.5, 10.0, 16.0] {
            let a = allocate(&runs, bits * 1e6);
            let u = uniform(&runs, bits * 1e6);
            // The greedy walk stops within one grid step of the budget.
            assert!(
                (a.runs[0].bits_per_key - bits).abs() <= BITS_STEP + 1e-9,
                "{bits}: {:?}",
                a.runs[0]
            );
            let ratio = a.expected_false_positives() / u.expected_false_positives();
            assert!((0.97..1.04).contains(&ratio), "{bits}: {ratio}");
        }
    }

    #[test]
    fn a_small_budget_drops_the_largest_runs_filters_first() {
        let keys = [10_000u64, 100_000, 1_000_000, 10_000_000];
        let runs = bloom_runs(&keys);
        // 0.5 bits per key overall: 5.55 million bits. The last level
        // alone would need 10 million for one bit per key.
        let total = 0.5 * keys.iter().sum::<u64>() as f64;
        let a = allocate(&runs, total);
        assert_eq!(a.runs[3].setting, LevelFilter::None);
        assert_eq!(a.runs[3].fpr, 1.0);
        assert!(a.runs[2].fpr < 1.0 && a.runs[0].fpr < a.runs[1].fpr);
        // What the smaller runs got is what they get with the same bits
        // and no last level: the rest is still optimal.
        let rest = allocate(&runs[..3], total);
        for (a, b) in a.runs[..3].iter().zip(&rest.runs) {
            assert!((a.fpr - b.fpr).abs() < 0.01 * b.fpr, "{a:?} against {b:?}");
        }
        // No budget at all: no filters.
        let none = allocate(&runs, 0.0);
        assert!(none.runs.iter().all(|r| r.setting == LevelFilter::None));
        assert_eq!(none.expected_false_positives(), 4.0);
    }

    #[test]
    fn runs_without_a_kind_get_nothing_and_ribbon_moves_in_steps_of_r() {
        let runs = [
            RunShape::new(1_000, Some(FilterKind::BlockedBloom)),
            RunShape::new(10_000, None),
            RunShape::new(100_000, Some(FilterKind::Ribbon)),
        ];
        let total = 10.0 * 111_000.0;
        let a = allocate(&runs, total);
        assert_eq!(a.runs[1].setting, LevelFilter::None);
        let LevelFilter::FalsePositiveRate(FilterKind::Ribbon, p) = a.runs[2].setting else {
            panic!("{:?}", a.runs[2]);
        };
        let r = (1.0 / p).log2();
        assert_eq!(r, r.round());
        assert_eq!(a.runs[2].fpr, p);
        // 100,000 keys: 1.038 slots per key per result bit.
        let per_r = ribbon::slot_factor(100_000);
        assert!((a.runs[2].bits_per_key - r * per_r).abs() < 1e-9);
        assert!(a.total_bits(&runs) <= total);
        // The blocked run is tiny: it is bought far down its curve.
        assert!(a.runs[0].bits_per_key > 15.0, "{:?}", a.runs[0]);
        // Every setting is one its kind can build.
        for r in &a.runs {
            r.setting.validate().unwrap();
        }
    }

    #[test]
    fn rates_follow_each_kinds_theory() {
        assert!((rate_at(FilterKind::Bloom, 10.0, 0) - 0.008_194).abs() < 1e-5);
        assert!((rate_at(FilterKind::BlockedBloom, 10.0, 0) - 0.009_66).abs() < 1e-4);
        // 1M keys: 1.055 slots per key, so 10 bits buy r = 9.
        assert_eq!(rate_at(FilterKind::Ribbon, 10.0, 1 << 20), 1.0 / 512.0);
        assert_eq!(rate_at(FilterKind::Ribbon, 1.0, 1 << 20), 1.0);
        assert_eq!(rate_at(FilterKind::Bloom, 0.0, 10), 1.0);
        assert_eq!(rate_at(FilterKind::Bloom, f64::NAN, 10), 1.0);
        // Every hull falls and is convex.
        for kind in FilterKind::ALL {
            let hull = hull_for(&RunShape::new(50_000, Some(kind)));
            assert!(hull.len() > 10, "{kind:?}");
            for w in hull.windows(3) {
                let s1 = (w[1].fpr - w[0].fpr) / (w[1].bits_per_key - w[0].bits_per_key);
                let s2 = (w[2].fpr - w[1].fpr) / (w[2].bits_per_key - w[1].bits_per_key);
                assert!(s1 < 0.0 && s1 <= s2, "{kind:?}: {w:?}");
            }
        }
    }

    #[test]
    fn budgets_are_validated_and_capped() {
        assert!(FilterBudget::bits_per_key(10.0).validate().is_ok());
        for bad in [0.0, -1.0, 41.0, f64::NAN] {
            assert!(FilterBudget::bits_per_key(bad).validate().is_err(), "{bad}");
        }
        // A huge value is echoed in scientific notation, not 301 digits.
        let e = FilterBudget::bits_per_key(1e300).validate().unwrap_err();
        assert!(e.ends_with("at most 40, not 1e300"), "{e}");
        let e = FilterBudget::bits_per_key(41.5).validate().unwrap_err();
        assert!(e.ends_with("not 41.5"), "{e}");
        let b = FilterBudget::bits_per_key(8.0).with_max_bytes(1000);
        assert_eq!(b.total_bits(100), 800.0);
        assert_eq!(b.total_bits(10_000), 8000.0);
    }
}
