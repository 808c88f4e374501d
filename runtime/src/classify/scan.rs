//! One pass over a failure's text that finds every marker both layers look for.
//!
//! The text is lowercased once (copied only when it has an uppercase letter); one Aho-Corasick
//! automaton over the anchors of every pattern of every set finds, in one pass, which patterns may
//! match; a set's first pattern is then the first of those, confirmed by its own regex unless
//! finding an anchor is the match. The answer is the one the set's patterns give as regexes over the
//! lowercased text, in their order: the anchors only say where not to look.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;
use std::sync::LazyLock;

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind};
use regex::{Regex, RegexBuilder};

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
    /// The markers of `lowered`, a lowercased text or an ASCII one: the automaton takes ASCII letters
    /// of either case alike, so that an ASCII text needs no lowercased copy (for ASCII, lowercasing
    /// changes only the letters' case).
    fn find(lowered: &str) -> Self {
        let table = &*TABLE;
        let mut markers = Markers::default();
        let bytes = lowered.as_bytes();
        if bytes.len() < LANES_FROM_BYTES {
            markers.walk(table, table.start, bytes, 0..bytes.len());
            return markers;
        }
        // A DFA walk waits on one table load per byte; four walks over four parts of the text,
        // interleaved, wait on four at once. Each part is a quarter of the text and the longest
        // anchor but one byte more, so that an anchor that starts in a quarter ends in its part; the
        // last part ends where the text does (overlapping the third more).
        let length = (bytes.len().div_ceil(4) + MAX_ANCHOR - 1).min(bytes.len());
        let quarter = bytes.len().div_ceil(4);
        let starts = [0, quarter, 2 * quarter, bytes.len()].map(|start| start.min(bytes.len() - length));
        let [a, b, c, d] = starts.map(|start| &bytes[start..start + length]);
        let dfa = &table.dfa;
        let [mut sa, mut sb, mut sc, mut sd] = [table.start; 4];
        for (step, (((&ba, &bb), &bc), &bd)) in a.iter().zip(b).zip(c).zip(d).enumerate() {
            sa = dfa.next_state(Anchored::No, sa, ba);
            sb = dfa.next_state(Anchored::No, sb, bb);
            sc = dfa.next_state(Anchored::No, sc, bc);
            sd = dfa.next_state(Anchored::No, sd, bd);
            // Rare: most bytes end no anchor.
            if dfa.is_match(sa) | dfa.is_match(sb) | dfa.is_match(sc) | dfa.is_match(sd) {
                for (state, start) in [sa, sb, sc, sd].into_iter().zip(starts) {
                    if dfa.is_match(state) {
                        markers.mark(table, state, bytes, start + step + 1);
                    }
                }
            }
        }
        markers
    }

    /// Walks the DFA over `bytes[range]` from `state`, marking every anchor that ends on the way.
    fn walk(&mut self, table: &Table, mut state: StateID, bytes: &[u8], range: Range<usize>) {
        let dfa = &table.dfa;
        for at in range {
            state = dfa.next_state(Anchored::No, state, bytes[at]);
            if dfa.is_match(state) {
                self.mark(table, state, bytes, at + 1);
            }
        }
    }

    /// Adds the patterns of the anchors that end at `end` (a match state): a short anchor's at
    /// once, a long text's when the text before `end` is it.
    #[inline]
    fn mark(&mut self, table: &Table, state: StateID, bytes: &[u8], end: usize) {
        for index in 0..table.dfa.match_len(state) {
            let anchor = &table.anchors[table.dfa.match_pattern(state, index).as_usize()];
            for (word, bits) in self.0.iter_mut().zip(&anchor.matches) {
                *word |= bits;
            }
            for &(slot, bit, text) in &anchor.ends_of {
                let ends_here = end
                    .checked_sub(text.len())
                    .is_some_and(|start| bytes[start..end].eq_ignore_ascii_case(text.as_bytes()));
                if ends_here {
                    self.0[slot] |= bit;
                }
            }
        }
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

/// Texts from this many bytes are walked in four interleaved parts.
const LANES_FROM_BYTES: usize = 48;

/// The longest anchor the automaton holds: a longer plain text is found by its last bytes, then
/// compared whole. Short anchors keep the interleaved parts' overlap short.
const MAX_ANCHOR: usize = 12;

/// What one anchor of the automaton stands for.
#[derive(Default)]
struct Anchor {
    /// The patterns that may match where it is (one bit per pattern, one word per slot).
    matches: [u64; RETRY_AFTER_TIME_SLOT + 1],
    /// The long plain texts it is the end of, each with its slot and bit: a match where the text
    /// before the anchor's end is that text.
    ends_of: Vec<(usize, u64, &'static str)>,
}

/// The automaton over every anchor, and what each anchor stands for.
struct Table {
    /// Reports, at each position, every anchor that ends there (`MatchKind::Standard`).
    dfa: DFA,
    start: StateID,
    anchors: Vec<Anchor>,
    /// Each set's confirming regexes, by pattern (`None` for the plain ones): as written, for a
    /// lowercased text, and case-insensitive, for an ASCII text as it is (the same matches: ASCII has
    /// no letter whose case folds to another script's).
    confirm: [Vec<Option<(Regex, Regex)>>; RETRY_AFTER_TIME_SLOT],
}

static TABLE: LazyLock<Table> = LazyLock::new(|| {
    let mut texts: Vec<&'static str> = Vec::new();
    let mut anchors: Vec<Anchor> = Vec::new();
    let mut anchor = |text: &'static str| -> usize {
        texts.iter().position(|known| *known == text).unwrap_or_else(|| {
            texts.push(text);
            texts.len() - 1
        })
    };
    for (slot, set) in Set::ALL.into_iter().enumerate() {
        for (index, pattern) in set.patterns().iter().enumerate() {
            let bit = 1u64 << index;
            for &text in pattern.anchors {
                let (short, end_of) = match (pattern.exact, text.len() > MAX_ANCHOR) {
                    (true, true) => (&text[text.len() - MAX_ANCHOR..], Some(text)),
                    // Any part of a part every match holds is held by every match too.
                    (false, true) => (&text[..MAX_ANCHOR], None),
                    (_, false) => (text, None),
                };
                let position = anchor(short);
                anchors.resize_with(anchors.len().max(position + 1), Anchor::default);
                match end_of {
                    Some(text) => anchors[position].ends_of.push((slot, bit, text)),
                    None => anchors[position].matches[slot] |= bit,
                }
            }
        }
    }
    for text in RETRY_AFTER_TIME_ANCHORS {
        let position = anchor(text);
        anchors.resize_with(anchors.len().max(position + 1), Anchor::default);
        anchors[position].matches[RETRY_AFTER_TIME_SLOT] |= 1;
    }
    // ASCII letters of either case take the same transitions: an ASCII text is walked as it is.
    let dfa = DFA::builder()
        .match_kind(MatchKind::Standard)
        .ascii_case_insensitive(true)
        .build(&texts)
        .expect("the anchors build an automaton");
    let start = dfa.start_state(Anchored::No).expect("an unanchored search is built in");
    let confirm = Set::ALL.map(|set| {
        set.patterns()
            .iter()
            .map(|pattern| {
                (!pattern.exact).then(|| {
                    let regex = |insensitive| {
                        RegexBuilder::new(pattern.regex)
                            .case_insensitive(insensitive)
                            .build()
                            .expect("the built-in patterns are valid regexes")
                    };
                    (regex(false), regex(true))
                })
            })
            .collect()
    });
    #[cfg(test)]
    TABLE_BUILT.store(true, std::sync::atomic::Ordering::Relaxed);
    Table { dfa, start, anchors, confirm }
});

/// Set once [`TABLE`] is built: what `classify::tests` checks a fresh process for.
#[cfg(test)]
pub(crate) static TABLE_BUILT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A failure's text, its markers, and the text lowercased (for the regexes that confirm a marker).
pub(crate) struct Scan<'t> {
    text: &'t str,
    markers: Markers,
    lowered: OnceCell<Cow<'t, str>>,
    /// A short ASCII text lowercased, without a heap copy.
    lowered_inline: OnceCell<InlineLowered>,
    /// Whether the text is ASCII, known once asked (a pass over the text).
    ascii: OnceCell<bool>,
}

/// The longest ASCII text lowercased into [`Scan::lowered_inline`]: most error texts.
const INLINE_BYTES: usize = 256;

/// An ASCII text of at most [`INLINE_BYTES`] lowercased in place.
struct InlineLowered {
    bytes: [u8; INLINE_BYTES],
    length: usize,
}

impl InlineLowered {
    fn as_str(&self) -> &str {
        // Lowercased ASCII is ASCII: valid UTF-8.
        std::str::from_utf8(&self.bytes[..self.length]).unwrap_or_default()
    }
}

impl<'t> Scan<'t> {
    /// One pass over `text`.
    pub(crate) fn new(text: &'t str) -> Self {
        // ASCII is lowercased by the walk itself; any other text first, as `str::to_lowercase` does.
        if text.is_ascii() {
            let scan = Self::with_markers(text, Markers::find(text));
            let _ = scan.ascii.set(true);
            return scan;
        }
        let lowered = lowercase(text);
        let markers = Markers::find(&lowered);
        let scan = Self { lowered: OnceCell::from(lowered), ..Self::with_markers(text, markers) };
        let _ = scan.ascii.set(false);
        scan
    }

    /// The scan of `text`, whose markers a scan of it (layer 1's) already found.
    pub(crate) fn with_markers(text: &'t str, markers: Markers) -> Self {
        Self { text, markers, lowered: OnceCell::new(), lowered_inline: OnceCell::new(), ascii: OnceCell::new() }
    }

    /// The scan of `text`, which is `prefix` followed by a text whose markers are `rest`: only the
    /// prefix is scanned. Exact because no anchor holds a `:` or starts with a space, so none can
    /// span a `"<Kind>: "` prefix and the rest (a test checks the anchors).
    pub(crate) fn prefixed(text: &'t str, prefix: &str, rest: Markers) -> Self {
        debug_assert!(text.starts_with(prefix) && prefix.ends_with(": "));
        let markers = Scan::new(prefix).markers.union(rest);
        Self::with_markers(text, markers)
    }

    /// Whether a confirming regex matches the text lowercased (made the first time a regex needs
    /// it, on the stack when short), or, for a long ASCII text, matches it case-insensitively.
    fn confirm(&self, (as_written, insensitive): &(Regex, Regex)) -> bool {
        if let Some(lowered) = self.lowered.get() {
            return as_written.is_match(lowered);
        }
        if let Some(inline) = self.lowered_inline.get() {
            return as_written.is_match(inline.as_str());
        }
        if !*self.ascii.get_or_init(|| self.text.is_ascii()) {
            return as_written.is_match(self.lowered.get_or_init(|| lowercase(self.text)));
        }
        if self.text.len() > INLINE_BYTES {
            return insensitive.is_match(self.text);
        }
        let inline = self.lowered_inline.get_or_init(|| {
            let mut bytes = [0; INLINE_BYTES];
            bytes[..self.text.len()].copy_from_slice(self.text.as_bytes());
            bytes[..self.text.len()].make_ascii_lowercase();
            InlineLowered { bytes, length: self.text.len() }
        });
        as_written.is_match(inline.as_str())
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
                Some(regexes) => self.confirm(regexes),
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
            if let Some((regex, _)) =
                TABLE.confirm[slot][index].as_ref().filter(|(regex, _)| regex.as_str().starts_with('^'))
            {
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
        let corpus = include_str!("../../corpus/errors.txt");
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
        let corpus = include_str!("../../corpus/errors.txt");
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
