//! Fuzzing the two parsers that read what others wrote: scenario files and probe lines. No input
//! may make them panic or hang; errors must point inside the text they came from.

use killpoint::Scenario;
use killpoint::run::probe::{self, ProbeConnection};
use proptest::prelude::*;
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

const GOOD: &str = include_str!("../../scenarios/after_delivery_send.toml");

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn scenario_parser_survives_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = Scenario::parse(Path::new("fuzz.toml"), &text)
            && let Some((line, _)) = e.line_col
        {
            prop_assert!(line >= 1 && line <= text.lines().count().max(1) + 1, "{e}");
        }
    }

    /// Near misses of a real file find the deeper checks, not just the TOML syntax errors.
    #[test]
    fn scenario_parser_survives_mutations_of_a_real_file(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<char>(), any::<bool>()), 1..8)
    ) {
        let mut text: Vec<char> = GOOD.chars().collect();
        for (at, c, insert) in edits {
            let i = at.index(text.len());
            if insert { text.insert(i, c) } else { text[i] = c }
        }
        let text: String = text.into_iter().collect();
        let _ = Scenario::parse(Path::new("fuzz.toml"), &text);
    }

    #[test]
    fn probe_line_parser_survives_arbitrary_text(line in ".{0,300}") {
        let _ = probe::parse(&line);
    }

    #[test]
    fn probe_line_parser_survives_near_misses(
        boundary in "[a-z_]{0,30}", op in ".{0,20}", attempt in any::<i64>(), extra in "[a-z]{0,5}"
    ) {
        let line = format!(r#"{{"boundary":"{boundary}","operation_id":{op:?},"attempt":{attempt}{extra}}}"#);
        let _ = probe::parse(&line);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The connection reader, fed arbitrary chunks then EOF, always ends: a message, an error
    /// (garbage, an oversized line) or the end of the stream — never a hang or a panic.
    #[test]
    fn probe_connection_ends_on_any_stream(
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20_000), 0..6)
    ) {
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        tokio.block_on(async {
            let (ours, mut theirs) = tokio::net::UnixStream::pair().unwrap();
            let writer = tokio::spawn(async move {
                for chunk in chunks {
                    if theirs.write_all(&chunk).await.is_err() {
                        break;
                    }
                }
            });
            let mut connection = ProbeConnection::new(ours);
            // Read until the stream ends or errors; each read must finish (the writer closes).
            let outcome = tokio::time::timeout(Duration::from_secs(10), async {
                while let Ok(Some(_)) = connection.next().await {}
            })
            .await;
            drop(connection);
            let _ = writer.await;
            assert!(outcome.is_ok(), "the probe reader did not end within 10 s");
        });
    }
}
