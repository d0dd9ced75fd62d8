//! Independent pieces of one test run side by side. A test whose runs each wait (a deadline, a
//! runtime's start-up) and that ran them one after another often ran on alone at its binary's end;
//! side by side they take as long as the longest. A panic in a piece is raised again in the test,
//! with its own message, once every piece has ended.

/// `f(0)`, …, `f(n - 1)`, each on a thread of its own; their results in order.
pub fn each<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    std::thread::scope(|scope| {
        let f = &f;
        let pieces: Vec<_> = (0..n).map(|i| scope.spawn(move || f(i))).collect();
        pieces.into_iter().map(|piece| piece.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    })
}

/// `a` on a thread of its own and `b` on this one; both results.
pub fn both<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    std::thread::scope(|scope| {
        let a = scope.spawn(a);
        let b = b();
        (a.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order_and_a_panic_is_raised_again() {
        assert_eq!(each(4, |i| i * 10), [0, 10, 20, 30]);
        assert_eq!(both(|| "a", || 2), ("a", 2));
        let raised = std::panic::catch_unwind(|| each(2, |i| if i == 1 { panic!("piece {i} failed") } else { i }));
        let panic = raised.expect_err("the piece's panic");
        assert_eq!(panic.downcast_ref::<String>().map(String::as_str), Some("piece 1 failed"));
    }
}
