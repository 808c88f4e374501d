//! One pass over a failure's text that finds every marker both layers look for.
//!
//! The text is lowercased once (copied only when it has an uppercase letter); one Aho-Corasick
//! automaton over the anchors of every pattern of every set finds, in one pass, which patterns may
//! match; a set's first pattern is then the first of those, confirmed by its own regex unless
//! finding an anchor is the match. The answer is the one the set's patterns give as regexes over the
//! lowercased text, in their order: the anchors only say where not to look.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex::Regex;

use super::patterns::{OVERFLOW, PERMANENT, Pattern, QUOTA, RETRY, RETRY_AFTER_TIME, RETRY_AFTER_TIME_ANCHORS};

/// A pattern set of docs/design.md §4 and §5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Set {
    Overflow,
    Quota,
    Retry,
    Permanent,
}

impl Set {
    const ALL: [Set; 4] = [Set::Overflow, Set::Quota, Set::Retry, Set::Permanent];

    fn patterns(self) -> &'static [Pattern] {
        match self {
            Set::Overflow => OVERFLOW,
            Set::Quota => QUOTA,
            Set::Retry => RETRY,
            Set::Permanent => PERMANENT,
        }
    }
}

/// The slot of the "retry in N s" text in [`Markers`], after the sets'.
const RETRY_AFTER_TIME_SLOT: usize = Set::ALL.len();

/// Which patterns' anchors a text holds: one bit per pattern, one word per set, then one for the
/// "retry in N s" text. Owned and small, so that a verdict of layer 1 can hand it to layer 2.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Markers([u64; RETRY_AFTER_TIME_SLOT + 1]);

impl Markers {
    /// The markers of `lowered`, a lowercased text.
    pub(crate) fn find(lowered: &str) -> Self {
        let table = &*TABLE;
        let mut markers = Markers::default();
        for found in table.automaton.find_overlapping_iter(lowered) {
            let patterns = &table.patterns_of_anchor[found.pattern().as_usize()];
            for (word, bits) in markers.0.iter_mut().zip(patterns) {
                *word |= bits;
            }
        }
        markers
    }

    /// The markers of either text: those of a text and of a prefix to it, when no anchor can span the
    /// two (see [`Scan::prefixed`]).
    fn union(self, other: Markers) -> Markers {
        let mut both = self;
        for (word, bits) in both.0.iter_mut().zip(other.0) {
            *word |= bits;
        }
        both
    }
}

/// The automaton over every anchor, and for each anchor the patterns it stands for.
struct Table {
    automaton: AhoCorasick,
    patterns_of_anchor: Vec<[u64; RETRY_AFTER_TIME_SLOT + 1]>,
    /// Each set's confirming regexes, by pattern (`None` for the exact ones).
    confirm: [Vec<Option<Regex>>; RETRY_AFTER_TIME_SLOT],
}

static TABLE: LazyLock<Table> = LazyLock::new(|| {
    let mut anchors: Vec<&'static str> = Vec::new();
    let mut patterns_of_anchor: Vec<[u64; RETRY_AFTER_TIME_SLOT + 1]> = Vec::new();
    let mut add = |anchor: &'static str, slot: usize, index: usize| {
        let position = anchors.iter().position(|known| *known == anchor).unwrap_or_else(|| {
            anchors.push(anchor);
            patterns_of_anchor.push(Default::default());
            anchors.len() - 1
        });
        patterns_of_anchor[position][slot] |= 1 << index;
    };
    for (slot, set) in Set::ALL.into_iter().enumerate() {
        for (index, pattern) in set.patterns().iter().enumerate() {
            for anchor in pattern.anchors {
                add(anchor, slot, index);
            }
        }
    }
    for anchor in RETRY_AFTER_TIME_ANCHORS {
        add(anchor, RETRY_AFTER_TIME_SLOT, 0);
    }
    let automaton = AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(&anchors)
        .expect("the anchors build an automaton");
    let confirm = Set::ALL.map(|set| {
        set.patterns()
            .iter()
            .map(|pattern| {
                (!pattern.exact).then(|| Regex::new(pattern.regex).expect("the built-in patterns are valid regexes"))
            })
            .collect()
    });
    Table { automaton, patterns_of_anchor, confirm }
});

/// A failure's text, its markers, and the text lowercased (for the regexes that confirm a marker).
pub(crate) struct Scan<'t> {
    text: &'t str,
    markers: Markers,
    lowered: OnceCell<Cow<'t, str>>,
}

impl<'t> Scan<'t> {
    /// One pass over `text`.
    pub(crate) fn new(text: &'t str) -> Self {
        let lowered = lowercase(text);
        let markers = Markers::find(&lowered);
        Self { text, markers, lowered: OnceCell::from(lowered) }
    }

    /// The scan of `text`, whose markers a scan of it (layer 1's) already found.
    pub(crate) fn with_markers(text: &'t str, markers: Markers) -> Self {
        Self { text, markers, lowered: OnceCell::new() }
    }

    /// The scan of `text`, which is `prefix` followed by a text whose markers are `rest`: only the
    /// prefix is scanned. Exact because no anchor holds a `:` or starts with a space, so none can
    /// span a `"<Kind>: "` prefix and the rest (a test checks the anchors).
    pub(crate) fn prefixed(text: &'t str, prefix: &str, rest: Markers) -> Self {
        debug_assert!(text.starts_with(prefix) && prefix.ends_with(": "));
        let markers = Markers::find(&lowercase(prefix)).union(rest);
        Self::with_markers(text, markers)
    }

    /// The text lowercased, made the first time a regex needs it.
    fn lowered(&self) -> &str {
        self.lowered.get_or_init(|| lowercase(self.text))
    }

    /// The markers found.
    pub(crate) fn markers(&self) -> Markers {
        self.markers
    }

    /// The text scanned, as it is.
    pub(crate) fn text(&self) -> &'t str {
        self.text
    }

    /// The label of the first pattern of `set` (in the documented order) that matches the text.
    pub(crate) fn first(&self, set: Set) -> Option<&'static str> {
        let slot = set as usize;
        let confirm = &TABLE.confirm[slot];
        let mut bits = self.markers.0[slot];
        while bits != 0 {
            let index = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let matched = match &confirm[index] {
                None => true,
                Some(regex) => regex.is_match(self.lowered()),
            };
            if matched {
                return Some(set.patterns()[index].label);
            }
        }
        None
    }

    /// The first pattern of `set` that is anchored at the start of the text (`^`) and matches
    /// `suffix`, a part of the text after a `"<Kind>: "`: the only patterns a part can match that the
    /// whole does not.
    pub(crate) fn first_at_start_of(&self, set: Set, suffix: &str) -> Option<&'static str> {
        let slot = set as usize;
        let mut bits = self.markers.0[slot];
        let mut lowered_suffix = None;
        while bits != 0 {
            let index = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if let Some(regex) = TABLE.confirm[slot][index].as_ref().filter(|regex| regex.as_str().starts_with('^')) {
                let lowered = lowered_suffix.get_or_insert_with(|| lowercase(suffix));
                if regex.is_match(lowered) {
                    return Some(set.patterns()[index].label);
                }
            }
        }
        None
    }

    /// Whether the text asks to retry after a stated time ("try again in 20 seconds").
    pub(crate) fn has_retry_after_time(&self) -> bool {
        self.may_state_a_wait() && RETRY_AFTER_TIME.is_match(self.text)
    }

    /// Whether the text holds a "retry in" or "try again in", which a stated wait starts with.
    pub(crate) fn may_state_a_wait(&self) -> bool {
        self.markers.0[RETRY_AFTER_TIME_SLOT] != 0
    }
}

/// `text` lowercased, copied only when it has an uppercase letter.
fn lowercase(text: &str) -> Cow<'_, str> {
    if text.chars().any(char::is_uppercase) { Cow::Owned(text.to_lowercase()) } else { Cow::Borrowed(text) }
}

#[cfg(test)]
mod tests {
    use regex::{RegexSet, RegexSetBuilder};

    use super::*;

    /// A set as docs/design.md §4 and §5 state it: case-insensitive regexes over the text as it is.
    fn reference(set: Set) -> RegexSet {
        let regexes = set.patterns().iter().map(|pattern| {
            if pattern.exact && pattern.anchors == [pattern.regex] {
                regex::escape(pattern.regex)
            } else {
                pattern.regex.to_owned()
            }
        });
        RegexSetBuilder::new(regexes).case_insensitive(true).build().unwrap()
    }

    /// The one pass gives what each set's case-insensitive regexes give, in their order, over the
    /// benchmark corpus of real error texts in three casings and some texts of other scripts.
    #[test]
    fn the_one_pass_agrees_with_each_sets_case_insensitive_regexes() {
        let corpus = include_str!("../../benches/corpus/errors.txt");
        let extra = ["RATE LIMIT", "Überlastet: 503", "İNVALID API KEY", "ΣERVER ERROR", "Connection_Reset", ""];
        let mut checked = 0;
        for set in Set::ALL {
            let reference = reference(set);
            for line in corpus.lines().chain(extra) {
                let toggled: String = line
                    .chars()
                    .enumerate()
                    .map(|(i, c)| if i % 2 == 0 { c.to_ascii_uppercase() } else { c })
                    .collect();
                for text in [line.to_owned(), line.to_uppercase(), toggled] {
                    let expected = reference.matches(&text).iter().next().map(|index| set.patterns()[index].label);
                    assert_eq!(Scan::new(&text).first(set), expected, "{set:?} on {text:?}");
                    checked += usize::from(expected.is_some());
                }
            }
        }
        assert!(checked > 300, "the corpus exercises the sets: {checked} matches");
    }

    /// What makes the one pass and [`Scan::prefixed`] exact.
    #[test]
    fn anchors_are_lowercase_and_cannot_span_a_kind_prefix() {
        let all = Set::ALL.iter().flat_map(|set| set.patterns()).flat_map(|pattern| pattern.anchors);
        for anchor in all.chain(RETRY_AFTER_TIME_ANCHORS) {
            assert!(!anchor.is_empty() && *anchor == anchor.to_lowercase(), "{anchor:?}");
            assert!(!anchor.contains(':') && !anchor.starts_with(' '), "{anchor:?}");
        }
        for set in Set::ALL {
            assert!(set.patterns().len() <= 64, "{set:?}: one bit per pattern");
            for pattern in set.patterns() {
                // A sanity check of the hand-written anchors (the corpus test above is the proof
                // that they miss nothing): each starts with a plain part of its regex.
                if !pattern.exact {
                    assert!(
                        pattern.anchors.iter().all(|anchor| pattern.regex.contains(anchor.split(' ').next().unwrap()))
                    );
                }
            }
        }
    }

    #[test]
    fn a_prefixed_scan_finds_what_a_whole_scan_finds() {
        let corpus = include_str!("../../benches/corpus/errors.txt");
        for line in corpus.lines() {
            for kind in ["ModelError", "RateLimitError", "AuthenticationError", "APIConnectionError", "BadRequestError"]
            {
                let prefix = format!("{kind}: ");
                let text = format!("{prefix}{line}");
                let whole = Scan::new(&text);
                let prefixed = Scan::prefixed(&text, &prefix, Scan::new(line).markers());
                assert_eq!(prefixed.markers(), whole.markers(), "{text:?}");
            }
        }
    }

    #[test]
    fn the_retry_after_time_is_confirmed_on_the_text_as_it_is() {
        assert!(Scan::new("Rate limit reached. Please try again in 2.5s.").has_retry_after_time());
        assert!(Scan::new("RETRY IN 20 SECONDS").has_retry_after_time());
        assert!(!Scan::new("please retry in a moment").has_retry_after_time());
        assert!(!Scan::new("overloaded").has_retry_after_time());
    }
}
