//! Where the server is in the scenario's script: one place shared by every request, or, for a
//! scenario scripted [per conversation](crate::Scenario::per_conversation), one place per
//! conversation, at most [`MAX_CONVERSATIONS`] of them (the one that has gone longest without a
//! request is forgotten first).

use std::collections::{BTreeMap, HashMap};

use crate::scenario::Cursor;

/// The most conversations a server scripted per conversation keeps its place in. Past it, the
/// conversation that has gone longest without a request is forgotten: if it comes back, it is a
/// new conversation and starts the script again. A place is a few dozen bytes, so the bound holds
/// the server's memory at a few hundred kilobytes whatever the clients send.
pub const MAX_CONVERSATIONS: usize = 10_000;

/// The places in the script, from the server's start or its last reset.
#[derive(Debug, Default)]
pub(crate) struct Scripts {
    /// The place of a scenario whose script every request shares.
    shared: Cursor,
    /// The place of each conversation, by its key.
    conversations: HashMap<u64, Place>,
    /// The conversations' keys by when they last had a request: the first is forgotten first.
    by_recency: BTreeMap<u64, u64>,
    /// A counter of requests, which orders `by_recency`.
    clock: u64,
    /// How many conversations have been seen: the next one's number.
    seen: u64,
}

#[derive(Debug)]
struct Place {
    cursor: Cursor,
    /// The conversation's number, from 0 in the order the server first saw it.
    number: u64,
    /// When it last had a request, on `Scripts::clock`.
    last: u64,
}

impl Scripts {
    /// The place of the conversation `key` (`None`: the shared script) and the conversation's
    /// number. A request of conversation `key` enters it: a new one starts at the top of the
    /// script (forgetting the least recent one when [`MAX_CONVERSATIONS`] are kept), a known one
    /// becomes the most recent.
    pub(crate) fn enter(&mut self, key: Option<u64>) -> (Cursor, Option<u64>) {
        let Some(key) = key else {
            return (self.shared.clone(), None);
        };
        self.clock += 1;
        let now = self.clock;
        if let Some(place) = self.conversations.get_mut(&key) {
            self.by_recency.remove(&place.last);
            place.last = now;
            self.by_recency.insert(now, key);
            return (place.cursor.clone(), Some(place.number));
        }
        if self.conversations.len() >= MAX_CONVERSATIONS {
            if let Some((_, oldest)) = self.by_recency.pop_first() {
                self.conversations.remove(&oldest);
            }
        }
        let number = self.seen;
        self.seen += 1;
        self.conversations.insert(key, Place { cursor: Cursor::default(), number, last: now });
        self.by_recency.insert(now, key);
        (Cursor::default(), Some(number))
    }

    /// Move the place of conversation `key` (`None`: the shared script) to `cursor`, once its
    /// request took a step.
    pub(crate) fn advance(&mut self, key: Option<u64>, cursor: Cursor) {
        match key {
            None => self.shared = cursor,
            Some(key) => {
                if let Some(place) = self.conversations.get_mut(&key) {
                    place.cursor = cursor;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use crate::step::Step;

    /// The index of the step conversation `key` gets next, and moves it on.
    fn take(scripts: &mut Scripts, scenario: &Scenario, key: Option<u64>) -> Option<usize> {
        let (mut cursor, _) = scripts.enter(key);
        let (_, at) = cursor.next(scenario);
        scripts.advance(key, cursor);
        at.index
    }

    #[test]
    fn each_conversation_has_its_own_place_and_the_least_recent_is_forgotten() {
        let scenario = Scenario::new().then(Step::http_error(429)).then(Step::ok("a"));
        let mut scripts = Scripts::default();
        assert_eq!(take(&mut scripts, &scenario, Some(1)), Some(0));
        assert_eq!(take(&mut scripts, &scenario, Some(2)), Some(0));
        assert_eq!(take(&mut scripts, &scenario, Some(1)), Some(1));
        assert_eq!(take(&mut scripts, &scenario, None), Some(0), "the shared script is apart");
        // Fill the table: conversation 2 is the least recent, then 1 is touched.
        for key in 3..=MAX_CONVERSATIONS as u64 {
            scripts.enter(Some(key));
        }
        assert_eq!(scripts.enter(Some(1)).1, Some(0));
        let (_, number) = scripts.enter(Some(u64::MAX));
        assert_eq!(number, Some(MAX_CONVERSATIONS as u64));
        assert_eq!(scripts.conversations.len(), MAX_CONVERSATIONS);
        assert!(!scripts.conversations.contains_key(&2), "the least recent is forgotten");
        assert_eq!(take(&mut scripts, &scenario, Some(1)), None, "conversation 1 kept its place: the default");
        assert_eq!(take(&mut scripts, &scenario, Some(2)), Some(0), "a forgotten one starts again");
    }
}
