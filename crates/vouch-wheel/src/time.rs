//! Unix time to the MS-DOS date/time zip stores, without a calendar dependency.

/// A zip timestamp: 2-second resolution, 1980-01-01 to 2107-12-31, no time zone (we use UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DosTime {
    pub year: u16,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
}

/// 1980-01-01T00:00:00Z, the earliest time zip can store.
pub const DOS_EPOCH: u64 = 315_532_800;
/// 2107-12-31T23:59:58Z, the latest.
const DOS_MAX: u64 = 4_354_819_198;

impl DosTime {
    /// Converts seconds since the Unix epoch, clamped to what zip can store and rounded down to
    /// an even second (zip cannot store odd seconds; rounding here keeps the value we report
    /// equal to the value written).
    pub fn from_unix(secs: u64) -> Self {
        let secs = secs.clamp(DOS_EPOCH, DOS_MAX) & !1;
        let days = (secs / 86_400) as i64;
        let rem = secs % 86_400;
        let (year, month, day) = civil_from_days(days);
        DosTime {
            year: year as u16,
            month,
            day,
            hour: (rem / 3600) as u8,
            minute: (rem % 3600 / 60) as u8,
            second: (rem % 60) as u8,
        }
    }

    pub(crate) fn to_zip(self) -> zip::DateTime {
        zip::DateTime::from_date_and_time(
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
        )
        .expect("clamped to the zip range")
    }

    pub(crate) fn from_zip(t: zip::DateTime) -> Self {
        DosTime {
            year: t.year(),
            month: t.month(),
            day: t.day(),
            hour: t.hour(),
            minute: t.minute(),
            second: t.second(),
        }
    }
}

impl std::fmt::Display for DosTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian).
fn civil_from_days(z: i64) -> (i64, u8, u8) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts() {
        assert_eq!(DosTime::from_unix(0).to_string(), "1980-01-01T00:00:00");
        assert_eq!(
            DosTime::from_unix(1_700_000_001).to_string(),
            "2023-11-14T22:13:20"
        );
        assert_eq!(
            DosTime::from_unix(951_782_400).to_string(),
            "2000-02-29T00:00:00"
        );
        assert_eq!(
            DosTime::from_unix(u64::MAX).to_string(),
            "2107-12-31T23:59:58"
        );
    }
}
