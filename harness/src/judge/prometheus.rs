//! The Prometheus text reader for the metrics cross-check: samples, and the sum of a family.

/// One sample of the Prometheus text format: `name{label="value",…} value`.
#[derive(Debug, PartialEq)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// The samples of a Prometheus text exposition; comments and lines that do not parse are skipped
/// (a missing signal is reported by name where it is needed).
fn prometheus_samples(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else { continue };
        let Ok(value) = value.parse::<f64>() else { continue };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let inner = rest.trim_end_matches('}');
                let labels = inner
                    .split(',')
                    .filter_map(|pair| {
                        let (k, v) = pair.split_once('=')?;
                        Some((k.trim().to_owned(), v.trim().trim_matches('"').to_owned()))
                    })
                    .collect();
                (name, labels)
            }
            None => (series, Vec::new()),
        };
        samples.push(Sample { name: name.to_owned(), labels, value });
    }
    samples
}

/// A Prometheus text exposition, read: its samples, and the families its `# TYPE` lines declare.
pub(super) struct Exposition<'a> {
    text: &'a str,
    samples: Vec<Sample>,
}

impl<'a> Exposition<'a> {
    pub(super) fn read(text: &'a str) -> Self {
        Exposition { text, samples: prometheus_samples(text) }
    }

    // A family with no series yet (no delivery, no destination) is served by its `# TYPE` line;
    // a counter's is declared without `_total`.
    fn declared(&self, name: &str) -> bool {
        self.text.lines().any(|l| {
            l.strip_prefix("# TYPE ")
                .and_then(|rest| rest.split_whitespace().next())
                .is_some_and(|n| n == name || n == name.trim_end_matches("_total"))
        })
    }

    /// The sum of the series of `name` (only those carrying `label`, if given); `None` when the
    /// exposition neither declares nor serves `name`.
    pub(super) fn sum(&self, name: &str, label: Option<(&str, &str)>) -> Option<f64> {
        if !self.declared(name) && !self.samples.iter().any(|s| s.name == name) {
            return None;
        }
        let matching = self.samples.iter().filter(|s| s.name == name);
        Some(
            matching
                .filter(|s| label.is_none_or(|(k, v)| s.labels.iter().any(|(lk, lv)| lk == k && lv == v)))
                .map(|s| s.value)
                .sum(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_text_is_read_sample_by_sample() {
        let text = "# HELP killpoint_dead_letters Deliveries dead-lettered.\n# TYPE killpoint_dead_letters gauge\nkillpoint_dead_letters{destination=\"mailer\"} 1\nkillpoint_reconciliations_total{outcome=\"found\"} 2\nnot a sample\n# EOF\n";
        let samples = prometheus_samples(text);
        assert_eq!(
            samples,
            vec![
                Sample {
                    name: "killpoint_dead_letters".into(),
                    labels: vec![("destination".into(), "mailer".into())],
                    value: 1.0
                },
                Sample {
                    name: "killpoint_reconciliations_total".into(),
                    labels: vec![("outcome".into(), "found".into())],
                    value: 2.0
                },
            ]
        );
    }
}
