//! Figure 2, suspend: from the message POST to the `approval_request` event on the open SSE
//! feed (measured in the same loop as figure 1, see `round_trip.rs`).

use super::round_trip::{Cycles, ONE_GATE};
use super::{Figure, common_conditions, percentile};

pub fn figure(cycles: &Cycles, n: usize) -> Figure {
    let p50 = percentile(&cycles.suspend_ms, 50.0);
    let p99 = percentile(&cycles.suspend_ms, 99.0);
    Figure {
        id: 2,
        name: "suspend",
        values: vec![("p50", p50, "ms"), ("p99", p99, "ms")],
        target: "p50 <= 1.5 ms",
        met: Some(p50 <= 1.5),
        conditions: format!(
            "{n} turns in sequence on one session, message POST (`{ONE_GATE}`) -> \
             approval_request on the open SSE feed; two commits inside (`user_message`, then \
             `tool_call` + `approval_request`); {}; {}",
            cycles.suspend_cost.describe(),
            common_conditions()
        ),
    }
}
