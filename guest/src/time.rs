//! A timestamp as a model reads it: ISO 8601 in UTC, to the second
//! (`2026-01-01T09:30:00Z`), for the memory lines of an assembled prompt.
//! The engine holds no calendar library: the proleptic Gregorian calendar
//! is a few lines of arithmetic (H. Hinnant's `civil_from_days`), total
//! over every `i64` of milliseconds, and checked against `chrono` below.

/// `ms` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`; a year outside
/// 0000–9999 carries its sign and at least four digits (`+10000`,
/// `-0001`), as ISO 8601's expanded form does. Milliseconds are dropped.
pub fn iso8601_utc(ms: i64) -> String {
    let seconds = ms.div_euclid(1000);
    let days = seconds.div_euclid(86_400);
    let of_day = seconds.rem_euclid(86_400);
    // Days from 0000-03-01, in eras of 400 years (146,097 days); |days| is
    // at most about 1.1e11, far inside i64.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153; // 0 is March
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    let year = if (0..=9999).contains(&year) {
        format!("{year:04}")
    } else {
        format!("{year:+05}")
    };
    format!(
        "{year}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::iso8601_utc;

    /// chrono's rendering of the same instant, where chrono has it.
    fn chrono(ms: i64) -> Option<String> {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
    }

    #[test]
    fn known_instants() {
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601_utc(-1), "1969-12-31T23:59:59Z");
        assert_eq!(iso8601_utc(1_767_225_600_000), "2026-01-01T00:00:00Z");
        assert_eq!(iso8601_utc(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601_utc(253_402_300_799_999), "9999-12-31T23:59:59Z");
        assert_eq!(iso8601_utc(253_402_300_800_000), "+10000-01-01T00:00:00Z");
        assert_eq!(iso8601_utc(-62_167_219_200_001), "-0001-12-31T23:59:59Z");
    }

    #[test]
    fn agrees_with_chrono_wherever_chrono_has_the_instant() {
        let mut edges = vec![0, -1, 1, 999, -999, -1000, -1001];
        for year_ms in [951_782_400_000i64, 4_107_456_000_000, -2_203_891_200_000] {
            edges.extend([year_ms - 1, year_ms, year_ms + 1]);
        }
        // A fixed xorshift sequence: instants across chrono's whole range
        // (±262,000 years) and, more densely, around today.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let span = 8_200_000_000_000_000i64; // about 260,000 years in ms
        for _ in 0..200_000 {
            edges.push((next() % (2 * span as u64)) as i64 - span);
            edges.push((next() % 8_000_000_000_000) as i64 - 2_000_000_000_000);
        }
        for ms in edges {
            let expected = chrono(ms).expect("inside chrono's range");
            assert_eq!(iso8601_utc(ms), expected, "at {ms} ms");
        }
    }

    #[test]
    fn every_i64_has_a_rendering() {
        for ms in [i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1] {
            let text = iso8601_utc(ms);
            assert!(text.ends_with('Z') && text.contains('T'), "{ms}: {text}");
        }
        assert!(chrono(i64::MAX).is_none(), "chrono has no rendering here");
    }
}
