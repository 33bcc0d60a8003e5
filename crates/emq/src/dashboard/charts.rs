//! A queue's finished jobs over time, from the counters the server keeps
//! inside the transitions (protocol 1.4, COUNTS): right under any
//! retention, since no record is counted after the fact. A chart is SVG
//! drawn here, one bar a minute (or an hour), completed below and failed
//! or dead above; it reads without JavaScript, states its scale, and
//! carries each bar's figures (`data-*` attributes, and a `<title>` a
//! browser shows on hover).

use std::time::UNIX_EPOCH;

use echomq::{CountsReply, Span, Tally};
use maud::{html, Markup};

use super::html::{queue_path, when};

/// The chart's drawing area, in SVG units (it scales to the page's width).
const WIDTH: u64 = 720;
const HEIGHT: u64 = 120;

/// The jobs of the last `n` full slots (minutes or hours): the slot still
/// filling (now's) left out, so that a figure does not drop at each turn.
pub fn last_full(counts: &CountsReply, n: usize) -> Tally {
    let full = counts.slots.len().saturating_sub(1);
    sum(&counts.slots[full.saturating_sub(n)..full])
}

/// The jobs of every slot given.
pub fn sum(slots: &[Tally]) -> Tally {
    slots.iter().fold(Tally::default(), |all, t| Tally {
        enqueued: all.enqueued + t.enqueued,
        completed: all.completed + t.completed,
        failed: all.failed + t.failed,
        dead: all.dead + t.dead,
    })
}

/// A scale's top: the smallest of 1, 2 or 5 times a power of ten at or
/// above `max` (at least 1), so that the stated scale reads as a round number.
pub fn scale_top(max: u64) -> u64 {
    let mut power = 1u64;
    loop {
        for step in [1, 2, 5] {
            let top = step * power;
            if top >= max {
                return top;
            }
        }
        power = power.saturating_mul(10);
    }
}

/// The span's words: how one slot reads, and the whole.
fn words(span: Span) -> (&'static str, &'static str) {
    match span {
        Span::Minutes => ("a minute", "the last hour, by minute"),
        Span::Hours => ("an hour", "the last week, by hour"),
    }
}

/// The charts of queue `name` on its page: `counts` over `span`, the links
/// between the spans, and the totals; or why the counters could not be read.
pub fn section(name: &str, span: Span, counts: Result<&CountsReply, &str>) -> Markup {
    let (_, whole) = words(span);
    html! {
        section #charts data-queue=(name) {
            h2 { "Finished jobs" }
            p.bar {
                span { (whole) }
                @match span {
                    Span::Minutes => a #span-hours href=(queue_path(name, "?span=hours")) { "the last week, by hour" },
                    Span::Hours => a #span-minutes href=(queue_path(name, "")) { "the last hour, by minute" },
                }
            }
            @match counts {
                Ok(counts) => { (chart(span, counts)) (totals(span, counts)) }
                Err(why) => p.bad #no-counts { "The queue's counters cannot be read: " (why) }
            }
        }
    }
}

/// The bars: one `g.slot` per slot, oldest first, with its figures.
fn chart(span: Span, counts: &CountsReply) -> Markup {
    let (per, _) = words(span);
    let n = counts.slots.len().max(1) as u64;
    let top = scale_top(counts.slots.iter().map(|t| t.completed + t.failed + t.dead).max().unwrap_or(0));
    let height = |jobs: u64| jobs * HEIGHT / top;
    // Whole units a bar, the drawing as wide as the bars (it is stretched to the page).
    let step = (WIDTH / n).max(1);
    let width = step * n;
    let (first, last) = (counts.start(0), counts.start(counts.slots.len().saturating_sub(1)));
    let ms = |t: std::time::SystemTime| t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
    html! {
        svg.chart #chart data-span=(span_name(span)) data-top=(top) viewBox=(format!("0 0 {width} {HEIGHT}"))
            preserveAspectRatio="none" role="img"
            aria-label=(format!("jobs completed and failed {per}, scale 0 to {top}")) {
            line x1="0" y1=(HEIGHT) x2=(width) y2=(HEIGHT) class="axis" {}
            @for (i, tally) in counts.slots.iter().enumerate() {
                @let failed = tally.failed + tally.dead;
                @let (done_h, failed_h) = (height(tally.completed), height(failed));
                @let x = i as u64 * step;
                g.slot data-start=(ms(counts.start(i))) data-completed=(tally.completed)
                    data-failed=(tally.failed) data-dead=(tally.dead) {
                    title {
                        (when(ms(counts.start(i)))) ": " (tally.completed) " completed, "
                        (tally.failed) " failed, " (tally.dead) " dead"
                    }
                    // The whole column, so that a hover finds even an empty slot.
                    rect.hit x=(x) y="0" width=(step) height=(HEIGHT) {}
                    rect.completed x=(x) y=(HEIGHT - done_h) width=(step.saturating_sub(1)) height=(done_h) {}
                    rect.failed x=(x) y=(HEIGHT - done_h - failed_h) width=(step.saturating_sub(1)) height=(failed_h) {}
                }
            }
        }
        p.note #scale {
            "Scale: the chart's height is " (top) " jobs " (per) ". "
            span.key-completed { "■ completed" } ", " span.key-failed { "■ failed or dead" }
            ", from " (when(ms(first))) " to " (when(ms(last))) " (the last bar still filling)."
        }
    }
}

fn span_name(span: Span) -> &'static str {
    match span {
        Span::Minutes => "minutes",
        Span::Hours => "hours",
    }
}

/// The totals: since the queue began counting, and over the span shown.
fn totals(span: Span, counts: &CountsReply) -> Markup {
    let shown = sum(&counts.slots);
    let (_, whole) = words(span);
    html! {
        (super::html::scroll(&html! {
            table #totals {
                tr { th { "" } th.n { "enqueued" } th.n { "completed" } th.n { "failed" } th.n { "dead" } }
                tr #totals-span {
                    th { (whole) }
                    td.n { (shown.enqueued) } td.n { (shown.completed) } td.n { (shown.failed) } td.n { (shown.dead) }
                }
                tr #totals-all {
                    th { "in all" }
                    td.n { (counts.totals.enqueued) } td.n { (counts.totals.completed) }
                    td.n { (counts.totals.failed) } td.n.dead[counts.totals.dead > 0] { (counts.totals.dead) }
                }
            }
        }))
        p.note { "Failed counts the attempts that get another; a job out of attempts counts as dead instead." }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn tally(completed: u64, failed: u64) -> Tally {
        Tally { enqueued: completed + failed, completed, failed, dead: 0 }
    }

    fn reply(slots: Vec<Tally>) -> CountsReply {
        let totals = sum(&slots);
        let now = UNIX_EPOCH + Duration::from_millis(1_764_000_030_000);
        CountsReply { now, totals, slots, slot: Duration::from_secs(60) }
    }

    #[test]
    fn the_last_full_minutes_leave_out_the_one_filling() {
        let mut slots = vec![Tally::default(); 60];
        slots[53] = tally(1, 0);
        slots[54] = tally(10, 1);
        slots[58] = tally(100, 2);
        slots[59] = tally(1_000, 3);
        let counts = reply(slots);
        assert_eq!(last_full(&counts, 1), tally(100, 2));
        assert_eq!(last_full(&counts, 5), tally(110, 3));
        assert_eq!(last_full(&counts, 6), tally(111, 3));
        assert_eq!(last_full(&counts, 600), tally(111, 3), "no more than the ring holds");
        assert_eq!(last_full(&reply(vec![tally(5, 0)]), 1), Tally::default());
        assert_eq!(last_full(&reply(Vec::new()), 1), Tally::default());
    }

    #[test]
    fn the_scale_is_a_round_number_at_or_above_the_tallest_bar() {
        let tops: Vec<u64> = [0, 1, 2, 3, 7, 10, 11, 36_000, 50_001].into_iter().map(scale_top).collect();
        assert_eq!(tops, [1, 1, 2, 5, 10, 10, 20, 50_000, 100_000]);
    }

    #[test]
    fn each_bar_carries_its_figures_and_the_scale_is_said() {
        let mut slots = vec![Tally::default(); 60];
        slots[59] = Tally { enqueued: 40, completed: 30, failed: 4, dead: 2 };
        let counts = reply(slots);
        let drawn = section("emails", Span::Minutes, Ok(&counts)).into_string();
        assert_eq!(drawn.matches(r#"<g class="slot""#).count(), 60);
        assert!(drawn.contains(r#"data-completed="30" data-failed="4" data-dead="2""#), "{drawn}");
        assert!(drawn.contains("30 completed, 4 failed, 2 dead"), "{drawn}");
        assert!(drawn.contains("the chart's height is 50 jobs a minute"), "{drawn}");
        // 30 of 50 is three fifths of the height; 6 more above it.
        assert!(drawn.contains(r#"class="completed" x="708" y="48" width="11" height="72""#), "{drawn}");
        assert!(drawn.contains(r#"class="failed" x="708" y="34" width="11" height="14""#), "{drawn}");
        assert!(drawn.contains(r#"href="/queues/emails?span=hours""#));
        // A week's 168 bars fill the drawing as the hour's 60 do.
        let week = reply(vec![Tally::default(); 168]);
        assert!(chart(Span::Hours, &week).into_string().contains(r#"viewBox="0 0 672 120""#));
        assert!(drawn.contains(r#"viewBox="0 0 720 120""#));
        let failed = section("emails", Span::Hours, Err("WRONGTYPE")).into_string();
        assert!(
            failed.contains("counters cannot be read: WRONGTYPE") && !failed.contains("<svg"),
            "{failed}"
        );
    }
}
