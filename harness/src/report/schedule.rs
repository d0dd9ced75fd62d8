//! A scheduled run's decisions, for a failing case: which thread's call went at each step of each
//! incarnation (the order a controlled schedule chose, `crate::tracer`'s `schedule`). Its story
//! quotes the last few before each kill, its certificate entry holds them all (`schedule`), and
//! its HTML report draws them as a table with a column per thread.

use super::markup::esc;
use crate::run::driver::{Happening, Run};
use crate::tracer::When;
use serde::Serialize;
use std::fmt::Write as _;

/// Every decision of a scheduled run, by incarnation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScheduleView {
    pub incarnations: Vec<Incarnation>,
}

/// One incarnation's decisions, in the order they were taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Incarnation {
    pub incarnation: u32,
    /// The harness killed this incarnation (after its last decision here).
    pub killed: bool,
    /// The threads that made a decided call, in the order each first did (`main`, `main.2`: the
    /// n-th thread its parent started, stable across runs).
    pub threads: Vec<String>,
    pub decisions: Vec<Decision>,
}

/// One decision: the held call it let go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub step: u64,
    pub thread: String,
    /// The call and what it touched: `fsync runtime.sqlite3-wal`, `writev provider`.
    pub call: String,
}

impl ScheduleView {
    /// The run's decisions; `None` for a run under no schedule (no point names its decision).
    pub fn of(run: &Run) -> Option<ScheduleView> {
        let killed = |n: u32| {
            run.timeline.iter().any(|m| match &m.happening {
                Happening::Killed { incarnation } | Happening::SyscallKill { incarnation, .. } => *incarnation == n,
                _ => false,
            })
        };
        let mut incarnations: Vec<Incarnation> = Vec::new();
        for point in run.syscall_points.iter().filter(|p| p.when == When::Before) {
            let (Some(step), Some(thread)) = (point.step, point.thread.as_ref()) else { continue };
            if incarnations.last().is_none_or(|i| i.incarnation != point.incarnation) {
                let incarnation = point.incarnation;
                incarnations.push(Incarnation {
                    incarnation,
                    killed: killed(incarnation),
                    threads: Vec::new(),
                    decisions: Vec::new(),
                });
            }
            let current = incarnations.last_mut().expect("pushed above");
            if !current.threads.contains(thread) {
                current.threads.push(thread.clone());
            }
            current.decisions.push(Decision { step, thread: thread.clone(), call: point.what.clone() });
        }
        (!incarnations.is_empty()).then_some(ScheduleView { incarnations })
    }

    /// For the story: the last `last` decisions of each incarnation, a line each.
    pub fn story(&self, last: usize) -> String {
        let mut out = String::from(
            "  schedule (which thread's call went, decision by decision; the last of each incarnation):\n",
        );
        for i in &self.incarnations {
            let end = if i.killed { "killed after its last" } else { "its last" };
            let _ = writeln!(
                out,
                "    incarnation {} ({} crash-point call(s) decided), {end}:",
                i.incarnation,
                i.decisions.len()
            );
            let width = i.threads.iter().map(String::len).max().unwrap_or(4);
            for d in &i.decisions[i.decisions.len().saturating_sub(last)..] {
                let _ = writeln!(out, "      step {:<5} {:<width$}  {}", d.step, d.thread, d.call);
            }
        }
        out
    }

    /// For the HTML report: per incarnation, a row per decision and a column per thread.
    pub(super) fn html(&self, out: &mut String) {
        let total: usize = self.incarnations.iter().map(|i| i.decisions.len()).sum();
        let _ = writeln!(
            out,
            "<details class=\"schedule\"><summary>schedule: which thread went when ({total} decisions)</summary>"
        );
        for i in &self.incarnations {
            let _ = write!(
                out,
                "<table class=\"schedule\"><caption>incarnation {}{}</caption><tr><th>step</th>",
                i.incarnation,
                if i.killed { ", killed after its last decision" } else { "" }
            );
            for t in &i.threads {
                let _ = write!(out, "<th>{}</th>", esc(t));
            }
            out.push_str("</tr>\n");
            for d in &i.decisions {
                let _ = write!(out, "<tr><td>{}</td>", d.step);
                for t in &i.threads {
                    match *t == d.thread {
                        true => {
                            let _ = write!(out, "<td>{}</td>", esc(&d.call));
                        }
                        false => out.push_str("<td></td>"),
                    }
                }
                out.push_str("</tr>\n");
            }
            out.push_str("</table>\n");
        }
        out.push_str("</details>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> ScheduleView {
        let decision = |step, thread: &str, call: &str| Decision { step, thread: thread.into(), call: call.into() };
        ScheduleView {
            incarnations: vec![
                Incarnation {
                    incarnation: 1,
                    killed: true,
                    threads: vec!["main".into(), "main.2".into()],
                    decisions: vec![
                        decision(1, "main", "pwrite64 runtime.sqlite3-wal"),
                        decision(2, "main.2", "writev provider"),
                        decision(3, "main", "fsync runtime.sqlite3-wal"),
                    ],
                },
                Incarnation {
                    incarnation: 2,
                    killed: false,
                    threads: vec!["main".into()],
                    decisions: vec![decision(1, "main", "connect world")],
                },
            ],
        }
    }

    #[test]
    fn the_story_quotes_the_last_decisions_of_each_incarnation_and_says_which_was_killed() {
        let story = view().story(2);
        assert!(story.contains("incarnation 1 (3 crash-point call(s) decided), killed after its last:"), "{story}");
        assert!(!story.contains("pwrite64"), "only the last two of incarnation 1: {story}");
        assert!(story.contains("step 2     main.2  writev provider"), "{story}");
        assert!(story.contains("incarnation 2 (1 crash-point call(s) decided), its last:"), "{story}");
    }

    #[test]
    fn the_html_puts_each_call_in_its_thread_s_column() {
        let mut html = String::new();
        view().html(&mut html);
        assert!(html.contains("<th>step</th><th>main</th><th>main.2</th>"), "{html}");
        assert!(html.contains("<tr><td>2</td><td></td><td>writev provider</td></tr>"), "{html}");
        assert!(html.contains("incarnation 1, killed after its last decision"), "{html}");
        assert!(html.contains("(4 decisions)"), "{html}");
    }
}
