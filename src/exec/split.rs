//! One launch split between executors by a ratio (issue 25, seed 002): the split mode
//! ([`SplitMode`]: `ARRAYFLOW_SPLIT` or a `Runtime::split` scope) and, for one splittable fused
//! kernel, which executors take a part and what share of the rows each gets ([`Splitter::plan`]).
//! The scheduler (`scheduler/split_tasks.rs`) turns the plan into part tasks and the tasks that
//! join their outputs; `proggen::part` builds each part's kernel.
//!
//! The candidates are the executors that can run the kernel, devices in order, then the CPU.
//! A ratio splits between the first two candidates (the first device and the second device, or
//! the CPU when only one device runs: 002's GPU and CPU), the ratio being the first one's share
//! (002's `partition` / 10). The cost mode gives every candidate a share proportional to its
//! throughput in the cost model (`exec::placement::Profile`); the forced mode splits every
//! splittable kernel, whatever its size, in equal shares over every candidate (to run the op
//! suite split). Kernels below [`SPLIT_MIN_ELEMENTS`] are never split unless forced.

/// Domain elements below which a kernel is not split (unless forced): a part's launch and moves
/// would cost more than the work it takes off the other executor.
pub const SPLIT_MIN_ELEMENTS: usize = 1 << 18;

/// How fused kernels' launches are split between executors (`ARRAYFLOW_SPLIT`,
/// `Runtime::split`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum SplitMode {
    /// Each launch runs whole on one executor (the default).
    #[default]
    Off,
    /// Large kernels split between the first two candidate executors, the first taking this share
    /// of the rows (0.0 to 1.0; 002's `partition` / 10).
    Ratio(f64),
    /// Large kernels split over every candidate by the cost model's throughputs.
    Cost,
    /// Every splittable kernel splits in equal shares over every candidate (for tests).
    Force,
}

impl SplitMode {
    /// `partition` 0-10 of seed 002: the first executor's share in tenths.
    pub fn partition(tenths: u32) -> SplitMode {
        SplitMode::Ratio(f64::from(tenths.min(10)) / 10.0)
    }

    /// Parses `off`, `cost`, `force`, a ratio with a decimal point (`0.3`) or a partition `0`-`10`.
    pub fn parse(s: &str) -> Option<SplitMode> {
        match s.trim() {
            "" | "off" => Some(SplitMode::Off),
            "cost" | "auto" => Some(SplitMode::Cost),
            "force" => Some(SplitMode::Force),
            v if v.contains('.') => v
                .parse::<f64>()
                .ok()
                .filter(|r| (0.0..=1.0).contains(r))
                .map(SplitMode::Ratio),
            v => v
                .parse::<u32>()
                .ok()
                .filter(|&p| p <= 10)
                .map(SplitMode::partition),
        }
    }

    /// `ARRAYFLOW_SPLIT`; a bad value is reported and ignored.
    pub fn from_env() -> SplitMode {
        let v = std::env::var("ARRAYFLOW_SPLIT").unwrap_or_default();
        SplitMode::parse(&v).unwrap_or_else(|| {
            tracing::warn!(target: "arrayflow::exec",
                "ARRAYFLOW_SPLIT=`{v}` is not off, cost, force, a ratio 0.0-1.0 or a partition \
                 0-10; not splitting");
            SplitMode::Off
        })
    }

    /// The mode as 64 bits (for an atomic); [`SplitMode::decode`] reverses it.
    pub(crate) fn encode(self) -> u64 {
        match self {
            SplitMode::Off => 0,
            SplitMode::Cost => 1,
            SplitMode::Force => 2,
            SplitMode::Ratio(r) => 3 << 32 | u64::from((r as f32).to_bits()),
        }
    }

    /// The mode [`SplitMode::encode`] gave these bits; `None` for any other value.
    pub(crate) fn decode(bits: u64) -> Option<SplitMode> {
        match bits >> 32 {
            0 => match bits {
                0 => Some(SplitMode::Off),
                1 => Some(SplitMode::Cost),
                2 => Some(SplitMode::Force),
                _ => None,
            },
            3 => Some(SplitMode::Ratio(f64::from(f32::from_bits(bits as u32)))),
            _ => None,
        }
    }
}

/// What the scheduler knows to split launches: the default mode and each executor's throughput.
#[derive(Debug, Clone)]
pub struct Splitter {
    /// The mode without a `Runtime::split` scope (`ARRAYFLOW_SPLIT`).
    pub default: SplitMode,
    /// Instructions per second of each executor (index 0 the CPU), from the cost model.
    pub throughput: Vec<f64>,
    /// The CPU takes parts beside two or more devices (the device list names it or is `all`).
    pub cpu_candidate: bool,
}

impl Splitter {
    /// The executors that take a part of a kernel of `elements` domain elements, with their
    /// shares, under `mode`, among `allowed` (bit `i` for executor `i`); fewer than two: no split.
    pub fn plan(&self, mode: SplitMode, allowed: u32, elements: usize) -> Vec<(usize, f64)> {
        let n = self.throughput.len();
        let devices: Vec<usize> = (1..n).filter(|&e| allowed & (1 << e) != 0).collect();
        let mut candidates = devices.clone();
        if self.cpu_candidate || devices.len() < 2 {
            candidates.push(0);
        }
        match mode {
            SplitMode::Off => Vec::new(),
            _ if elements < SPLIT_MIN_ELEMENTS && mode != SplitMode::Force => Vec::new(),
            SplitMode::Ratio(r) => {
                let r = r.clamp(0.0, 1.0);
                match candidates[..] {
                    [a, b, ..] => vec![(a, r), (b, 1.0 - r)],
                    _ => Vec::new(),
                }
            }
            SplitMode::Cost => candidates
                .iter()
                .map(|&e| (e, self.throughput[e]))
                .collect(),
            SplitMode::Force => candidates.iter().map(|&e| (e, 1.0)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_round_trip() {
        assert_eq!(SplitMode::parse("0.3"), Some(SplitMode::Ratio(0.3)));
        assert_eq!(SplitMode::parse("7"), Some(SplitMode::Ratio(0.7)));
        assert_eq!(SplitMode::parse("force"), Some(SplitMode::Force));
        assert_eq!(SplitMode::parse("11"), None);
        assert_eq!(SplitMode::parse("1.5"), None);
        for m in [
            SplitMode::Off,
            SplitMode::Cost,
            SplitMode::Force,
            SplitMode::Ratio(0.25),
        ] {
            assert_eq!(SplitMode::decode(m.encode()), Some(m));
        }
    }

    #[test]
    fn a_ratio_takes_the_first_two_candidates_devices_first() {
        let s = Splitter {
            default: SplitMode::Off,
            throughput: vec![1.0, 2.0, 3.0],
            cpu_candidate: true,
        };
        let big = SPLIT_MIN_ELEMENTS;
        assert_eq!(
            s.plan(SplitMode::Ratio(0.3), 0b111, big),
            vec![(1, 0.3), (2, 0.7)]
        );
        assert_eq!(
            s.plan(SplitMode::Ratio(0.3), 0b011, big),
            vec![(1, 0.3), (0, 0.7)]
        );
        assert!(s.plan(SplitMode::Ratio(0.3), 0b111, big - 1).is_empty());
        assert_eq!(s.plan(SplitMode::Force, 0b111, 2).len(), 3);
        assert_eq!(
            s.plan(SplitMode::Cost, 0b111, big),
            vec![(1, 2.0), (2, 3.0), (0, 1.0)]
        );
    }
}
