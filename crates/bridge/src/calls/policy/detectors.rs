//! The built-in detectors of common personal data: e-mail addresses, phone numbers, payment card
//! numbers (with the Luhn check) and IBANs (with their mod-97 check). Each finds the spans of its
//! matches in a text; conditions call them as `has_email(x)`, …, and `redact` rules replace what
//! they find.
//!
//! They are heuristics, tuned to find what a person would call one and to leave ordinary numbers
//! alone: a card number must pass the Luhn check, an IBAN its check digits, a phone number must
//! start with `+` or be written in groups.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// One kind of personal data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Detector {
    Email,
    Phone,
    Card,
    Iban,
}

static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")
        .expect("a valid pattern")
});
/// `+` and 7 to 15 digits with optional separators; `(415) 555-0100`, `415-555-0100`; a national
/// number starting with 0 in pairs (`06 12 34 56 78`). Groups of four digits are left to the card
/// detector: a number that fails the Luhn check is not called a phone either.
static PHONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\+\d(?:[ .\-]?\(?\d\)?){6,14}\b",
        r"|\(\d{3}\)[ .\-]?\d{3}[ .\-]\d{4}\b",
        r"|\b\d{3}[.\-]\d{3}[.\-]\d{4}\b",
        r"|\b0\d(?:[ .\-]?\d{2}){4}\b",
    ))
    .expect("a valid pattern")
});
/// 13 to 19 digits, optionally in groups separated by one space or dash.
static CARD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\d(?:[ \-]?\d){12,18}\b").expect("a valid pattern"));
/// Two letters, two check digits, then 11 to 30 letters or digits, optionally in groups of four.
static IBAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b").expect("a valid pattern")
});

impl Detector {
    pub const ALL: [Detector; 4] = [
        Detector::Card,
        Detector::Iban,
        Detector::Email,
        Detector::Phone,
    ];

    /// Its name in a policy file (`redact = ["email", …]`).
    pub fn name(self) -> &'static str {
        match self {
            Detector::Email => "email",
            Detector::Phone => "phone",
            Detector::Card => "card",
            Detector::Iban => "iban",
        }
    }

    /// Its function in conditions.
    pub fn function(self) -> &'static str {
        match self {
            Detector::Email => "has_email",
            Detector::Phone => "has_phone",
            Detector::Card => "has_card",
            Detector::Iban => "has_iban",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Whether `text` holds one.
    pub fn finds(self, text: &str) -> bool {
        !self.spans(text).is_empty()
    }

    /// Where in `text` its matches are (byte ranges, in order, not overlapping).
    pub fn spans(self, text: &str) -> Vec<Range<usize>> {
        let (pattern, valid): (&Regex, fn(&str) -> bool) = match self {
            Detector::Email => (&EMAIL, |_| true),
            Detector::Phone => (&PHONE, |found| digits(found).len() >= 8),
            Detector::Card => (&CARD, |found| luhn(&digits(found))),
            Detector::Iban => (&IBAN, iban_checks),
        };
        // The cheap test first: most texts have no `@` or digit at all.
        let possible = match self {
            Detector::Email => text.contains('@'),
            _ => text.bytes().any(|b| b.is_ascii_digit()),
        };
        if !possible {
            return Vec::new();
        }
        pattern
            .find_iter(text)
            .filter(|found| valid(found.as_str()))
            .map(|found| found.range())
            .collect()
    }
}

fn digits(text: &str) -> Vec<u8> {
    text.bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect()
}

/// The Luhn check of a card number's digits.
pub fn luhn(digits: &[u8]) -> bool {
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(at, &digit)| {
            let digit = u32::from(digit);
            match at % 2 {
                1 if digit * 2 > 9 => digit * 2 - 9,
                1 => digit * 2,
                _ => digit,
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// The ISO 13616 check of an IBAN (spaces ignored): the first four characters moved to the end,
/// letters as numbers (A = 10 … Z = 35), the whole mod 97 is 1.
pub fn iban_checks(text: &str) -> bool {
    let compact: Vec<u8> = text.bytes().filter(|b| *b != b' ').collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut remainder = 0u32;
    for &c in tail.iter().chain(head) {
        let value = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return false,
        };
        remainder = if value >= 10 {
            (remainder * 100 + value) % 97
        } else {
            (remainder * 10 + value) % 97
        };
    }
    remainder == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(detector: Detector, text: &str) -> Vec<&str> {
        detector
            .spans(text)
            .into_iter()
            .map(|span| &text[span])
            .collect()
    }

    #[test]
    fn cards_pass_the_luhn_check_and_other_numbers_do_not() {
        assert_eq!(
            found(Detector::Card, "card 4111 1111 1111 1111 ok"),
            ["4111 1111 1111 1111"]
        );
        assert_eq!(
            found(Detector::Card, "4242-4242-4242-4242"),
            ["4242-4242-4242-4242"]
        );
        assert_eq!(
            found(Detector::Card, "5500005555555559"),
            ["5500005555555559"]
        );
        // One digit off: not a card.
        assert!(found(Detector::Card, "4111 1111 1111 1112").is_empty());
        // Too short, or an order number that fails the check.
        assert!(found(Detector::Card, "order 123456789012").is_empty());
        assert!(found(Detector::Card, "1234567890123456").is_empty());
        assert!(!luhn(&digits("79927398713")), "11 digits is no card");
        assert!(luhn(&digits("4012888888881881")));
    }

    #[test]
    fn ibans_pass_their_check_digits() {
        assert_eq!(
            found(Detector::Iban, "pay to DE89 3704 0044 0532 0130 00 today"),
            ["DE89 3704 0044 0532 0130 00"]
        );
        assert_eq!(
            found(Detector::Iban, "GB82WEST12345698765432"),
            ["GB82WEST12345698765432"]
        );
        assert!(found(Detector::Iban, "GB82WEST12345698765433").is_empty());
        assert!(found(Detector::Iban, "DE00 3704 0044 0532 0130 00").is_empty());
        assert!(iban_checks("FR1420041010050500013M02606"));
    }

    #[test]
    fn emails_and_phones() {
        assert_eq!(
            found(Detector::Email, "write to ada.l+x@example.co.uk, thanks"),
            ["ada.l+x@example.co.uk"]
        );
        assert!(found(Detector::Email, "not @ an address, a@b").is_empty());
        assert_eq!(
            found(Detector::Phone, "call +1 415 555 0100 now"),
            ["+1 415 555 0100"]
        );
        assert_eq!(found(Detector::Phone, "(415) 555-0100"), ["(415) 555-0100"]);
        assert_eq!(found(Detector::Phone, "415-555-0100"), ["415-555-0100"]);
        for detector in Detector::ALL {
            assert!(
                found(detector, "4242 4242 4242 4241").is_empty(),
                "{detector:?}"
            );
        }
        assert_eq!(found(Detector::Phone, "06 12 34 56 78"), ["06 12 34 56 78"]);
        assert!(found(Detector::Phone, "3 items at 12.50").is_empty());
        assert!(found(Detector::Phone, "order 12345678").is_empty());
    }
}
