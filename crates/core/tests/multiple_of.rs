//! The patched `jsonschema` checks a fractional `multipleOf` on wasm without big integers
//! (vendor/README.md). Its answers must be the published crate's for every number: both are
//! compared here, natively, where both are compiled.

use jsonschema::client_tools_multiple_of::{published, small};
use proptest::prelude::*;
use serde_json::Number;

fn agree(value: f64, multiple: f64) -> Result<(), TestCaseError> {
    let Some(number) = Number::from_f64(value) else {
        return Ok(());
    };
    prop_assert_eq!(
        small(&number, multiple),
        published(&number, multiple),
        "{} multipleOf {}",
        value,
        multiple
    );
    Ok(())
}

/// `mantissa * 10^exponent`, as a JSON number would be read.
fn decimal(mantissa: i64, exponent: i32) -> f64 {
    format!("{mantissa}e{exponent}").parse().unwrap()
}

#[test]
fn known_cases() {
    let cases: &[(f64, f64)] = &[
        (0.3, 0.1),
        (0.7, 0.01),
        (19.99, 0.01),
        (1070468.14, 0.01),
        (4.5, 1.5),
        (4.6, 1.5),
        (-0.03, 0.01),
        (0.0, 0.01),
        (1e-9, 1e-10),
        // Past `i128` in the decimal reading: the original's `fraction` fallback.
        (1.2345678901234567e30, 0.001),
        (1.2345678901234567e25, 1e-17),
        (1e300, 0.1),
        (1e300, 0.3),
        (-1.7976931348623157e308, 0.5),
        (123456789.123, 1e-30),
        (9007199254740993.0, 1e-25),
        (1e22, 1e-20),
        (3e-5, 1e-300),
        (-0.999_999_999_999_999_9, 1e-16),
        (0.5, f64::EPSILON),
        (1.0, f64::EPSILON / 2.0),
    ];
    for &(value, multiple) in cases {
        agree(value, multiple).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn same_answers_as_the_published_check(
        value_mantissa in prop_oneof![-1000_i64..1000, any::<i64>().prop_map(|m| m >> 10)],
        value_exponent in -40_i32..300,
        multiple_mantissa in prop_oneof![1_i64..100, 1_i64..(1 << 53)],
        multiple_exponent in -320_i32..3,
    ) {
        agree(decimal(value_mantissa, value_exponent), decimal(multiple_mantissa, multiple_exponent))?;
    }

    /// Large values and divisors above `f64::EPSILON`: the original's `fraction` arithmetic.
    #[test]
    fn same_answers_past_i128(
        value_mantissa in any::<i64>().prop_map(|m| m >> 8),
        value_exponent in 15_i32..300,
        multiple_mantissa in prop_oneof![1_i64..1000, 1_i64..(1 << 53)],
        multiple_exponent in -15_i32..0,
    ) {
        agree(decimal(value_mantissa, value_exponent), decimal(multiple_mantissa, multiple_exponent))?;
    }

    #[test]
    fn same_answers_for_any_floats(value in any::<f64>(), multiple in any::<f64>()) {
        let multiple = multiple.abs();
        if value.is_finite() && multiple.is_finite() && multiple > 0.0 && multiple.fract() != 0.0 {
            agree(value, multiple)?;
        }
    }

    #[test]
    fn same_answers_for_multiples(
        factor in -100_000_i64..100_000,
        multiple_mantissa in 1_i64..10_000,
        multiple_exponent in -40_i32..0,
        value_exponent in 0_i32..40,
    ) {
        let multiple = decimal(multiple_mantissa, multiple_exponent);
        agree(multiple * factor as f64, multiple)?;
        agree(decimal(factor * multiple_mantissa, multiple_exponent + value_exponent), multiple)?;
    }
}
