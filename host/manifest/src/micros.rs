//! Costs as integer millionths ("micros"), so that sums are exact.
//!
//! It lives here because the config's budget caps (`[budgets.role.<role>] cost`)
//! are read into micros; the host's budgets and billing use the same conversion
//! (re-exported as `glovebox::budget::{to_micros, units}`).

/// Why a cost cannot be counted in micros; each quotes the cost (the caller
/// names where it came from: a config key, a flag, a usage report).
#[derive(thiserror::Error, Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum CostError {
    /// Negative, NaN or infinite.
    #[error("cost {cost} is not a non-negative number")]
    Negative { cost: f64 },
    /// More micros than a `u64` holds.
    #[error("cost {cost} is too large")]
    TooLarge { cost: f64 },
}

/// Decimal cost units → micros; refuses negative and non-finite costs.
pub fn to_micros(cost: f64) -> Result<u64, CostError> {
    if !cost.is_finite() || cost < 0.0 {
        return Err(CostError::Negative { cost });
    }
    let micros = (cost * 1e6).round();
    if micros >= u64::MAX as f64 {
        return Err(CostError::TooLarge { cost });
    }
    Ok(micros as u64)
}

/// Micros → decimal cost units.
pub fn units(micros: u64) -> f64 {
    micros as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cap;

    #[test]
    fn micros_round_trip_and_refuse_bad_costs() {
        assert_eq!(to_micros(0.25).unwrap(), 250_000);
        assert_eq!(to_micros(20.0).unwrap(), 20_000_000);
        assert!(to_micros(-1.0).is_err());
        assert!(to_micros(f64::NAN).is_err());
        assert!((units(1_500_000) - 1.5).abs() < 1e-12);
        assert_eq!(Cap::Cost.show(1_500_000), "1.5");
        assert_eq!(Cap::Cost.show(20_000_000), "20");
    }
}
