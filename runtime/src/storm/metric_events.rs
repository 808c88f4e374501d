//! The breakers' metric events, as the core emits them (target `agentic::metrics`): what an exporter
//! (`agentic-otel`) turns into the `agentic.breaker.transitions` counter and the
//! `agentic.breaker.open` up-down counter. Read here by a layer that adds up each metric's values
//! by its attributes, as a counter does. (That these names are `observe::semconv`'s is checked in
//! `target.rs`, whose tests may look up at `observe`.)

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};

use super::target::{METRICS, OPEN, TRANSITIONS};
use super::test_store::TestStore;
use super::{BreakerSettings, CallOutcome, Governor};

/// A metric's name and its attributes (sorted by key), as `key=value`.
type Series = (String, Vec<String>);

/// Adds up the values of the metric events by series.
#[derive(Clone, Default)]
struct Sums(Arc<Mutex<BTreeMap<Series, i64>>>);

#[derive(Default)]
struct MetricEvent {
    metric: String,
    value: i64,
    attributes: Vec<String>,
}

impl Visit for MetricEvent {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "metric" => self.metric = value.to_owned(),
            name => self.attributes.push(format!("{name}={value}")),
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        match field.name() {
            "value" => self.value = value,
            name => self.attributes.push(format!("{name}={value}")),
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.record_i64(field, i64::try_from(value).unwrap());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }
}

impl<S: Subscriber> Layer<S> for Sums {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == METRICS {
            let mut read = MetricEvent::default();
            event.record(&mut read);
            read.attributes.sort();
            *self.0.lock().unwrap().entry((read.metric, read.attributes)).or_default() += read.value;
        }
    }
}

/// The sums of the metric events `work` emits, on a paused clock.
fn sums_of<F: Future<Output = ()>>(work: impl FnOnce() -> F) -> BTreeMap<Series, i64> {
    let sums = Sums::default();
    let subscriber = tracing_subscriber::registry().with(sums.clone());
    tracing::subscriber::with_default(subscriber, || {
        tracing::callsite::rebuild_interest_cache();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        runtime.block_on(work());
    });
    sums.0.lock().unwrap().clone()
}

fn series(metric: &str, attributes: &[&str]) -> Series {
    (metric.to_owned(), attributes.iter().map(|attribute| (*attribute).to_owned()).collect())
}

#[test]
fn a_breakers_transitions_are_counted_by_new_state_and_its_openings_add_up() {
    let sums = sums_of(|| async {
        let governor =
            Governor::unlimited().with_breaker("openai/gpt-x".to_owned(), "gpt-x", BreakerSettings::standard());
        let open_for = BreakerSettings::standard().open_for();
        let governor = &governor;
        let fail = |times| async move {
            for _ in 0..times {
                governor.admit().await.unwrap().record(CallOutcome::Failed).await;
            }
        };
        fail(20).await; // open
        tokio::time::advance(open_for).await;
        fail(1).await; // half-open: the probe, and open again
        tokio::time::advance(open_for).await;
        let probe = governor.admit().await.unwrap(); // half-open
        governor.deposit_shared(Some(probe)).await; // closed
        fail(20).await; // open
    });
    let target = "agentic.target=openai/gpt-x";
    let transitions = |state: &str| series(TRANSITIONS, &[&format!("agentic.breaker.state={state}"), target]);
    assert_eq!(
        sums,
        BTreeMap::from([
            (series(OPEN, &[target]), 1),
            (transitions("closed"), 1),
            (transitions("half_open"), 2),
            (transitions("open"), 3),
        ])
    );
}

#[test]
fn the_open_gauge_follows_every_change_this_process_sees_adopted_ones_included() {
    // Two processes' views of one fleet breaker (one key), told apart by their target names.
    let sums = sums_of(|| async {
        let store: Arc<dyn super::store::SharedStore> = Arc::new(TestStore::with_breakers());
        let view = |name: &str| {
            Governor::new("openai:3f9a0c".to_owned(), None, Some(store.clone())).with_breaker(
                name.to_owned(),
                "gpt-x",
                BreakerSettings::standard(),
            )
        };
        let (a, b) = (view("openai/gpt-x@a"), view("openai/gpt-x@b"));
        for _ in 0..20 {
            a.admit().await.unwrap().record(CallOutcome::Failed).await; // A opens it: A +1
        }
        assert!(b.admit().await.is_err(), "B adopts the open state: B +1 (before, nothing)");
        tokio::time::advance(BreakerSettings::standard().open_for()).await;
        let probe = b.admit().await.unwrap();
        probe.record(CallOutcome::Answered).await; // B's probe closes it: B -1
        assert!(a.admit().await.is_ok(), "A adopts the closed state: A -1 (before, nothing)");
    });
    let open: Vec<(&Series, &i64)> = sums.iter().filter(|((metric, _), _)| metric == OPEN).collect();
    // Each view is back to 0 (before: A stuck at +1, B at -1: a sum of 0 that hid two wrong views).
    assert_eq!(
        open,
        [
            (&series(OPEN, &["agentic.target=openai/gpt-x@a"]), &0),
            (&series(OPEN, &["agentic.target=openai/gpt-x@b"]), &0),
        ]
    );
}
