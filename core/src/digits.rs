//! Numbers written as text digit by digit, where the control plane writes
//! many of them (timestamps, uids, resourceVersions, field paths) and the
//! formatting machinery cost more than the rest of the work.

/// Appends `n` in decimal, zero-padded to at least `width` digits.
pub(crate) fn push_decimal(text: &mut String, n: u64, width: usize) {
    let digits = n.checked_ilog10().unwrap_or(0) as usize + 1;
    push_digits(text, n, 10, digits.max(width));
}

/// Appends `n` in lower-case hexadecimal, zero-padded to at least `width`
/// digits.
pub(crate) fn push_hex(text: &mut String, n: u64, width: usize) {
    let digits = (n.checked_ilog2().unwrap_or(0) / 4) as usize + 1;
    push_digits(text, n, 16, digits.max(width));
}

/// Appends the lowest `count` digits of `n` in `radix` (at most 16).
fn push_digits(text: &mut String, n: u64, radix: u64, count: usize) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [b'0'; 64];
    let mut rest = n;
    for slot in buf[..count.min(64)].iter_mut().rev() {
        *slot = DIGITS[(rest % radix) as usize];
        rest /= radix;
    }
    // Every byte is an ASCII digit.
    text.push_str(std::str::from_utf8(&buf[..count.min(64)]).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_match_the_formatting_machinery() {
        let widths = [0, 1, 2, 4, 12, 20];
        let samples = [
            0,
            1,
            9,
            10,
            15,
            16,
            99,
            100,
            255,
            4096,
            999_999,
            1 << 40,
            u64::MAX - 1,
            u64::MAX,
        ];
        for n in samples {
            for width in widths {
                let mut decimal = String::new();
                push_decimal(&mut decimal, n, width);
                assert_eq!(decimal, format!("{n:0width$}"));
                let mut hex = String::new();
                push_hex(&mut hex, n, width);
                assert_eq!(hex, format!("{n:0width$x}"));
            }
        }
    }
}
