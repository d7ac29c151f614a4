//! Shares as the rules print and add them.

use crate::guarantee::Guarantee;
use hsched_core::Share;

/// A rate or share as the guarantees print it (`0.5`, `0.3333`).
pub fn rate_text(r: Share) -> String {
    crate::guarantee::share_down(r)
}

/// The sum of the shares of `gs` (NULL counts 0); `None` on overflow.
pub(crate) fn share_sum<'g>(gs: impl IntoIterator<Item = &'g Guarantee>) -> Option<Share> {
    gs.into_iter().try_fold(Share::ZERO, |acc, g| {
        acc.checked_add(g.share().unwrap_or(Share::ZERO))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_exactly_and_refuse_nonsense() {
        let parse_rate = |t| Share::parse(t, hsched_core::ShareRange::Rate);
        assert_eq!(parse_rate("0.5"), Ok(Share::new(1, 2).unwrap()));
        assert_eq!(parse_rate("1/3"), Ok(Share::new(1, 3).unwrap()));
        assert_eq!(parse_rate("1"), Ok(Share::ONE));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("1.5").unwrap_err().contains("more than 1"));
        assert!(parse_rate("fast").is_err());
    }
}
