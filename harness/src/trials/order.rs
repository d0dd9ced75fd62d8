//! The order trials start in. libtest-mimic starts them in list order, as many at once as it has
//! threads; a long trial started last runs on alone while the other threads have nothing left, so
//! a binary's longest trials are listed first.

use libtest_mimic::Trial;

/// Moves the trials whose names start with one of `longest` to the front, in the order `longest`
/// gives; the others keep their order behind them.
pub fn longest_first(trials: &mut [Trial], longest: &[&str]) {
    trials.sort_by_key(|trial| {
        longest.iter().position(|prefix| trial.name().starts_with(prefix)).unwrap_or(longest.len())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_trials_go_first_in_the_order_given_and_the_others_keep_theirs() {
        let mut trials: Vec<Trial> =
            ["a", "b::slow", "c", "d::slower", "e"].map(|name| Trial::test(name, || Ok(()))).into_iter().collect();
        longest_first(&mut trials, &["d::", "b::"]);
        let names: Vec<&str> = trials.iter().map(Trial::name).collect();
        assert_eq!(names, ["d::slower", "b::slow", "a", "c", "e"]);
    }
}
