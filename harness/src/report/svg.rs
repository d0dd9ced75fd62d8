//! A scenario's timeline as inline SVG for the HTML report: one lane per party on the shared
//! clock, kills and restarts across every lane, and each violation marked where its proof is.

use crate::report::markup::esc;
use crate::report::outcome::ScenarioEntry;
use crate::report::timeline::{Kind, Lane, Timeline, TimelineEvent};
use std::fmt::Write as _;

/// Geometry of the timeline: one column per event on the logical clock, one row per lane.
const LABEL: u64 = 120;
const STEP: u64 = 16;
const ROW: u64 = 26;
const TOP: u64 = 30;

/// Draws `timeline` with the violations of `entry` marked: `proven` pairs an event's `seq` with
/// the violation it proves; `id` is the scenario's anchor, which the marks link under.
pub(super) fn svg(out: &mut String, id: &str, entry: &ScenarioEntry, timeline: &Timeline, proven: &[(u64, usize)]) {
    let lanes = timeline.lanes();
    let width = LABEL + STEP * (timeline.events.len() as u64 + 1);
    let height = TOP + ROW * lanes.len() as u64 + 8;
    let _ = writeln!(
        out,
        "<div class=\"scroll\"><svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"monospace\" font-size=\"11\">"
    );
    let y_of = |lane: &Lane| TOP + ROW * lanes.iter().position(|l| l == lane).unwrap_or(0) as u64 + ROW / 2;
    for lane in &lanes {
        let y = y_of(lane);
        let _ = writeln!(
            out,
            "<text x=\"4\" y=\"{}\">{}</text><line x1=\"{LABEL}\" y1=\"{y}\" x2=\"{width}\" y2=\"{y}\" stroke=\"#ccc\"/>",
            y + 4,
            esc(&lane.label())
        );
    }
    let bottom = height - 4;
    for (i, e) in timeline.events.iter().enumerate() {
        let x = LABEL + STEP * (i as u64 + 1);
        let y = y_of(&e.lane);
        event(out, e, x, y, bottom);
        // Every row has its own number: the evidence's `#N` marks one event.
        for (_, n) in proven.iter().filter(|(seq, _)| *seq == e.seq) {
            proof(out, id, entry, *n, x, y);
        }
    }
    // Violations with no ledger line to point at (a report that disagrees, an unsettled
    // operation) are marked at the end of the timeline.
    let end = LABEL + STEP * (timeline.events.len() as u64 + 1) - 6;
    for (n, v) in entry.violations.iter().enumerate() {
        if !proven.iter().any(|(_, m)| *m == n) {
            let _ = writeln!(
                out,
                "<a href=\"#v-{id}-{n}\"><g class=\"violation-marker\" data-invariant=\"{}\"><title>{}: {}</title><text x=\"{end}\" y=\"{}\" fill=\"#e00\" font-weight=\"bold\">✗</text></g></a>",
                v.invariant.as_str(),
                v.invariant.as_str(),
                esc(&v.message),
                y_of(&Lane::Runtime) + 4
            );
        }
    }
    out.push_str("</svg></div>\n");
}

/// One event at column `x` of its lane's row `y`: kills and restarts as lines down to `bottom`.
fn event(out: &mut String, e: &TimelineEvent, x: u64, y: u64, bottom: u64) {
    let title = format!("#{} at {:.1} ms: {}", e.seq, e.at_micros as f64 / 1000.0, e.text);
    match e.kind {
        Kind::Kill => {
            let _ = writeln!(
                out,
                "<g class=\"kill\"><title>{}</title><line x1=\"{x}\" y1=\"{TOP}\" x2=\"{x}\" y2=\"{bottom}\" stroke=\"#d00\" stroke-width=\"2\"/><text x=\"{}\" y=\"12\" fill=\"#d00\">KILL</text></g>",
                esc(&title),
                x - 12
            );
        }
        Kind::Restart => {
            let _ = writeln!(
                out,
                "<g class=\"restart\"><title>{}</title><line x1=\"{x}\" y1=\"{TOP}\" x2=\"{x}\" y2=\"{bottom}\" stroke=\"#090\" stroke-width=\"2\" stroke-dasharray=\"4 2\"/><text x=\"{}\" y=\"25\" fill=\"#090\">restart</text></g>",
                esc(&title),
                x - 16
            );
        }
        Kind::Retry => {
            let _ = writeln!(
                out,
                "<g class=\"retry\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"8\" height=\"8\" fill=\"#c80\"/></g>",
                esc(&title),
                x - 4,
                y - 4
            );
        }
        Kind::Plain => {
            let _ = writeln!(
                out,
                "<g class=\"event\"><title>{}</title><circle cx=\"{x}\" cy=\"{y}\" r=\"4\" fill=\"#36c\"/></g>",
                esc(&title)
            );
        }
    }
}

/// The mark of violation `n` of `entry` on the event at (`x`, `y`) that proves it, linked to its
/// explanation.
fn proof(out: &mut String, id: &str, entry: &ScenarioEntry, n: usize, x: u64, y: u64) {
    let invariant = entry.violations[n].invariant.as_str();
    let _ = writeln!(
        out,
        "<a href=\"#v-{id}-{n}\"><g class=\"violation-marker\" data-invariant=\"{invariant}\"><title>{invariant}: {}</title><circle cx=\"{x}\" cy=\"{y}\" r=\"8\" fill=\"none\" stroke=\"#e00\" stroke-width=\"3\"/><text x=\"{}\" y=\"{}\" fill=\"#e00\" font-weight=\"bold\">✗</text></g></a>",
        esc(&entry.violations[n].message),
        x + 6,
        y - 6
    );
}
