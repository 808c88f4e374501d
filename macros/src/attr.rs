//! The attribute's grammar: a flat, comma-separated list of `key = value` arguments.
//!
//! Each argument is parsed on its own, so a malformed one does not hide the others: every problem
//! becomes a `syn::Error` on the tokens at fault and parsing goes on with the next argument.

use proc_macro2::{Delimiter, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt as _;
use syn::{Error, Expr, ExprPath, Ident, Lit, LitInt, Path};

use crate::rules::limits::LimitKey;
use crate::rules::{Jitter, Key, PolicyValues, Preset, nearest};

/// A key of the attribute: a policy key of the shared rules, a spend limit, `preset`, `validate`,
/// `compact`, `tools` or `crate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Name {
    Policy(Key),
    Limit(LimitKey),
    Preset,
    Validate,
    Compact,
    Tools,
    Crate,
}

impl Name {
    fn all() -> impl Iterator<Item = Name> {
        Key::ALL.into_iter().map(Name::Policy).chain(LimitKey::ALL.map(Name::Limit)).chain([
            Name::Preset,
            Name::Validate,
            Name::Compact,
            Name::Tools,
            Name::Crate,
        ])
    }

    fn from_name(name: &str) -> Option<Name> {
        match name {
            "preset" => Some(Name::Preset),
            "validate" => Some(Name::Validate),
            "compact" => Some(Name::Compact),
            "tools" => Some(Name::Tools),
            "crate" => Some(Name::Crate),
            _ => Key::from_name(name).map(Name::Policy).or_else(|| LimitKey::from_name(name).map(Name::Limit)),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Name::Policy(key) => key.name(),
            Name::Limit(key) => key.name(),
            Name::Preset => "preset",
            Name::Validate => "validate",
            Name::Compact => "compact",
            Name::Tools => "tools",
            Name::Crate => "crate",
        }
    }

    /// A value to show in "write `key = value`" hints: the default where there is one.
    fn example(self) -> String {
        match self {
            Name::Policy(Key::Jitter) => "\"full\"".to_owned(),
            Name::Policy(key) => default_of(key)
                .unwrap_or(match key {
                    Key::MaxCalls => 6,
                    Key::BudgetMs => 120_000,
                    _ => 30_000,
                })
                .to_string(),
            Name::Limit(LimitKey::MaxToolCalls) => "10".to_owned(),
            Name::Limit(LimitKey::MaxCostUsd) => "0.25".to_owned(),
            Name::Limit(_) => "20000".to_owned(),
            Name::Preset => Preset::GeminiFreeTier.name().to_owned(),
            Name::Validate => "check_reply".to_owned(),
            Name::Compact => "DROP_OLDEST".to_owned(),
            Name::Tools => "TOOLS".to_owned(),
            Name::Crate => "\"my_crate::agentic\"".to_owned(),
        }
    }
}

/// The default of a numeric key, if it has one (`None` for the caps that are off by default).
fn default_of(key: Key) -> Option<u64> {
    let d = PolicyValues::DEFAULT;
    match key {
        Key::MaxRetries => Some(u64::from(d.max_retries)),
        Key::SessionRetries => Some(u64::from(d.session_retries)),
        Key::SessionBaseDelayMs => Some(d.session_base_delay_ms),
        Key::ExecBaseDelayMs => Some(d.exec_base_delay_ms),
        Key::MaxDelayMs => d.max_delay_ms,
        Key::MaxCalls => d.max_calls.map(u64::from),
        Key::TimeoutMs => Some(d.timeout_ms()),
        Key::BudgetMs => d.budget_ms,
        Key::RetryAfterCapMs => Some(d.retry_after_cap_ms),
        Key::ConnectTimeoutMs => Some(d.connect_timeout_ms()),
        Key::HeadersTimeoutMs => Some(d.headers_timeout_ms()),
        Key::FirstTokenTimeoutMs => Some(d.first_token_timeout_ms()),
        Key::IdleTimeoutMs => Some(d.idle_timeout_ms()),
        Key::TurnTimeoutMs => Some(d.turn_timeout_ms()),
        Key::MaxAnswerBytes => Some(d.max_answer_bytes()),
        Key::Jitter => None,
    }
}

/// A value that parsed, with the tokens to blame when a rule about it breaks: the whole
/// `key = value`, or a spend limit's value alone.
pub(crate) struct Arg<T> {
    pub(crate) value: T,
    pub(crate) tokens: TokenStream,
}

/// What `preset = ...` names: a preset of the shared rules (`preset = gemini_free_tier`), or a
/// `const` `RetryPolicy` of the user's (`preset = my::POLICY`), whose values the attribute cannot
/// read when it runs.
pub(crate) enum PresetValue {
    Named(Preset),
    Path(ExprPath),
}

/// A spend limit's value as written: a count (its sign and decimal digits, exact whatever their
/// size, which an `f64` is not past 2^53) or dollars.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LimitValue {
    Count { negative: bool, digits: String },
    Usd(f64),
}

/// The attribute's arguments, as far as they parsed.
#[derive(Default)]
pub(crate) struct Args {
    /// The numeric policy keys, in the order written.
    pub(crate) numbers: Vec<(Key, Arg<u64>)>,
    /// The spend limits, in the order written; judged by the limits' rule in `valid`.
    pub(crate) limits: Vec<(LimitKey, Arg<LimitValue>)>,
    /// The kind named by `jitter = "..."`.
    pub(crate) jitter: Option<Arg<Jitter>>,
    /// The policy the keys start from, instead of the defaults.
    pub(crate) preset: Option<Arg<PresetValue>>,
    pub(crate) validate: Option<Arg<ExprPath>>,
    /// The path of the `static` or `const` compactor named by `compact = PATH`.
    pub(crate) compact: Option<Arg<ExprPath>>,
    /// The path of the toolbox (a `static` holder or a function) named by `tools = PATH`.
    pub(crate) tools: Option<Arg<ExprPath>>,
    pub(crate) krate: Option<Arg<Path>>,
    /// Numeric keys that were written with a value that did not parse: the rules must not guess them.
    pub(crate) unparsed: Vec<Key>,
}

/// Parses every argument; each problem is pushed to `errors` and the argument is left out.
pub(crate) fn parse(args: TokenStream, errors: &mut Vec<Error>) -> Args {
    let mut parsed = Args::default();
    let mut seen: Vec<(Name, String)> = Vec::new();
    for (tokens, comma) in split_on_commas(args) {
        if tokens.is_empty() {
            if let Some(comma) = comma {
                errors.push(Error::new(comma.span(), "expected `key = value` before `,`"));
            }
            continue;
        }
        match argument(&tokens) {
            Ok((name, key_ident, value)) => {
                if let Some((_, first)) = seen.iter().find(|(seen, _)| *seen == name) {
                    errors.push(Error::new(
                        key_ident.span(),
                        format!("duplicate key `{}`: it is already set to {first}; remove one", name.name()),
                    ));
                    continue;
                }
                seen.push((name, show(value)));
                let all: TokenStream = tokens.iter().cloned().collect();
                if let Err(error) = store(&mut parsed, name, value, all) {
                    if let Name::Policy(key) = name {
                        parsed.unparsed.push(key);
                    }
                    errors.push(error);
                }
            }
            Err(error) => errors.push(error),
        }
    }
    parsed
}

/// Splits at the commas that are not inside `<...>` (a `validate` path may have generic arguments).
/// Each piece comes with the comma that ends it.
fn split_on_commas(args: TokenStream) -> Vec<(Vec<TokenTree>, Option<Punct>)> {
    let mut pieces = Vec::new();
    let mut current = Vec::new();
    let mut depth = 0usize;
    let mut previous_joint: Option<char> = None;
    for tree in args {
        if let TokenTree::Punct(punct) = &tree {
            let arrow = matches!(previous_joint, Some('-' | '='));
            match punct.as_char() {
                '<' => depth += 1,
                '>' if !arrow => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    pieces.push((std::mem::take(&mut current), Some(punct.clone())));
                    previous_joint = None;
                    continue;
                }
                _ => {}
            }
            previous_joint = (punct.spacing() == Spacing::Joint).then(|| punct.as_char());
        } else {
            previous_joint = None;
        }
        current.push(tree);
    }
    if !current.is_empty() {
        pieces.push((current, None));
    }
    pieces
}

/// One argument: `key = value`, with a known key and a non-empty value.
fn argument(tokens: &[TokenTree]) -> Result<(Name, Ident, &[TokenTree]), Error> {
    let Some(TokenTree::Ident(key)) = tokens.first() else {
        return Err(Error::new_spanned(
            to_stream(tokens),
            format!("expected `key = value`, found `{}`; for example `max_retries = 3`", show(tokens)),
        ));
    };
    let written = key.unraw().to_string();
    let Some(name) = Name::from_name(&written) else {
        return Err(Error::new(key.span(), unknown_key(&written)));
    };
    let example = name.example();
    match tokens.get(1) {
        None => Err(Error::new(key.span(), format!("`{written}` needs a value: `{written} = {example}`"))),
        // `=` is `Joint` when a punctuation character follows (`budget_ms =,`); `==` and `=>` are not `=`.
        Some(TokenTree::Punct(eq))
            if eq.as_char() == '='
                && !matches!(tokens.get(2), Some(TokenTree::Punct(next))
                    if eq.spacing() == Spacing::Joint && matches!(next.as_char(), '=' | '>')) =>
        {
            if tokens.len() == 2 {
                return Err(Error::new(
                    eq.span(),
                    format!("`{written}` needs a value after `=`: `{written} = {example}`"),
                ));
            }
            Ok((name, key.clone(), &tokens[2..]))
        }
        Some(TokenTree::Group(group)) if group.delimiter() != Delimiter::None => {
            let inner = group.stream();
            let value = if inner.is_empty() { example } else { show_stream(inner) };
            Err(Error::new_spanned(
                to_stream(tokens),
                format!("expected `{written} = {value}`, found `{}`", show(tokens)),
            ))
        }
        Some(other) => Err(Error::new(
            other.span(),
            format!("expected `=` after `{written}`, found `{other}`; write `{written} = {example}`"),
        )),
    }
}

fn unknown_key(written: &str) -> String {
    let lower = written.to_lowercase();
    let suggestion = if lower.contains("valid") || lower.contains("check") {
        Some("validate")
    } else if let Some(limit) = limit_meant(&lower) {
        Some(limit.name())
    } else if lower.contains("tool") || lower.contains("mcp") {
        Some("tools")
    } else if lower.contains("compact") || lower.contains("compress") || lower.contains("summar") {
        Some("compact")
    } else if lower.contains("preset") || lower.contains("profile") {
        Some("preset")
    } else if lower.contains("crate") {
        Some("crate")
    } else {
        let names: Vec<&str> = Key::ALL.map(Key::name).into_iter().chain(LimitKey::ALL.map(LimitKey::name)).collect();
        nearest(&lower, &names)
    };
    let keys: Vec<String> = Name::all().map(|name| format!("`{}`", name.name())).collect();
    let keys = keys.join(", ");
    match suggestion {
        Some(near) => format!("unknown key `{written}`; did you mean `{near}`? the keys are {keys}"),
        None => format!("unknown key `{written}`; the keys are {keys}"),
    }
}

/// The spend limit an unknown key most likely means: the nearest limit's name (`max_total_token`),
/// or one that names what the limits count (`max_tokens`, `max_cost`, `budget_usd`, `max_tool_call`).
fn limit_meant(lower: &str) -> Option<LimitKey> {
    if let Some(near) = nearest(lower, &LimitKey::ALL.map(LimitKey::name)) {
        return LimitKey::from_name(near);
    }
    if lower.contains("cost") || lower.contains("usd") || lower.contains("dollar") || lower.contains("spend") {
        Some(LimitKey::MaxCostUsd)
    } else if lower.contains("tool") && lower.contains("call") {
        Some(LimitKey::MaxToolCalls)
    } else if lower.contains("token") {
        Some(if lower.contains("input") || lower.contains("prompt") {
            LimitKey::MaxInputTokens
        } else if lower.contains("output") || lower.contains("completion") {
            LimitKey::MaxOutputTokens
        } else {
            LimitKey::MaxTotalTokens
        })
    } else {
        None
    }
}

/// Checks the value's type and range and stores it.
fn store(parsed: &mut Args, name: Name, value: &[TokenTree], all: TokenStream) -> Result<(), Error> {
    match name {
        Name::Policy(Key::Jitter) => {
            parsed.jitter = Some(Arg { value: jitter(value)?, tokens: all });
        }
        Name::Policy(key) => {
            let number = number(key, value)?;
            parsed.numbers.push((key, Arg { value: number, tokens: all }));
        }
        // Blamed on the value alone: the rule is about the number.
        Name::Limit(key) => parsed.limits.push((key, Arg { value: limit(key, value)?, tokens: to_stream(value) })),
        Name::Preset => parsed.preset = Some(Arg { value: preset(value)?, tokens: all }),
        Name::Validate => parsed.validate = Some(Arg { value: path(name, value)?, tokens: all }),
        Name::Compact => parsed.compact = Some(Arg { value: path(name, value)?, tokens: all }),
        Name::Tools => parsed.tools = Some(Arg { value: path(name, value)?, tokens: all }),
        Name::Crate => parsed.krate = Some(Arg { value: krate(value)?, tokens: all }),
    }
    Ok(())
}

/// An unsigned integer literal within the key's range.
fn number(key: Key, value: &[TokenTree]) -> Result<u64, Error> {
    let name = key.name();
    let example = Name::Policy(key).example();
    let (negative, literal) = match value {
        [TokenTree::Punct(minus), TokenTree::Literal(literal)] if minus.as_char() == '-' => (true, literal),
        [TokenTree::Literal(literal)] => (false, literal),
        _ => return Err(not_a_literal(name, "an integer", "the policy is checked", &example, value)),
    };
    let span = literal.span();
    let spanned = to_stream(value);
    match Lit::new(literal.clone()) {
        Lit::Int(int) => in_range(key, &int, negative, span, spanned),
        Lit::Str(text) => {
            let inner = text.value();
            let fix = if inner.trim().parse::<u64>().is_ok() { inner.trim().to_owned() } else { example };
            Err(Error::new(
                span,
                format!("`{name}` takes an integer, found the string {}; write `{name} = {fix}`", show(value)),
            ))
        }
        Lit::Float(float) => Err(Error::new_spanned(
            spanned,
            format!("`{name}` takes a whole number, found `{}{float}`", if negative { "-" } else { "" }),
        )),
        _ => Err(Error::new_spanned(
            spanned,
            format!("`{name}` takes an integer, found `{}`; write e.g. `{name} = {example}`", show(value)),
        )),
    }
}

/// The error for a number key's value that is no literal: a name (a constant, which the attribute
/// cannot read when the function compiles) or any other expression. `takes` is what the key takes
/// ("an integer"), `checked` what is judged when the function compiles ("the policy is checked").
fn not_a_literal(name: &str, takes: &str, checked: &str, example: &str, value: &[TokenTree]) -> Error {
    let found = show(value);
    let named = match value.first() {
        Some(TokenTree::Ident(ident)) => ident != "true" && ident != "false",
        _ => false,
    };
    let message = if named && value.iter().all(|tree| matches!(tree, TokenTree::Ident(_) | TokenTree::Punct(_))) {
        format!(
            "`{name}` takes {takes} literal, found `{found}`; {checked} when the function compiles, so \
             write the number, e.g. `{name} = {example}`"
        )
    } else {
        format!("`{name}` takes {takes}, found `{found}`; write e.g. `{name} = {example}`")
    };
    Error::new_spanned(to_stream(value), message)
}

/// An integer literal's value, if its suffix, sign and size fit the key's type and range.
fn in_range(key: Key, int: &LitInt, negative: bool, span: Span, spanned: TokenStream) -> Result<u64, Error> {
    let name = key.name();
    let max = key.max_value();
    let ty = if max == u64::MAX { "u64" } else { "u32" };
    let suffix = int.suffix();
    if !suffix.is_empty() && suffix != ty {
        return Err(Error::new(span, format!("`{name}` is a `{ty}`, found `{int}`; drop the `{suffix}` suffix")));
    }
    let digits = int.base10_digits();
    if negative {
        return Err(Error::new_spanned(
            spanned,
            format!("`{name}` (-{digits}) must not be negative; it is a `{ty}`, from 0 to {max}"),
        ));
    }
    match digits.parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(Error::new(span, format!("`{name}` ({digits}) is out of range: it is a `{ty}`, at most {max}"))),
    }
}

/// What a spend limit takes, in words: "a whole number of tokens", "a number of US dollars".
fn limit_takes(key: LimitKey) -> &'static str {
    match key {
        LimitKey::MaxInputTokens | LimitKey::MaxOutputTokens | LimitKey::MaxTotalTokens => "a whole number of tokens",
        LimitKey::MaxToolCalls => "a whole number of tool calls",
        LimitKey::MaxCostUsd => "a number of US dollars",
    }
}

/// A spend limit's value: an integer literal for a count, an integer or float literal for dollars,
/// with an optional `-` (which the limits' rule refuses, in its own words). Its range is the
/// rule's, judged in `valid`.
fn limit(key: LimitKey, value: &[TokenTree]) -> Result<LimitValue, Error> {
    let name = key.name();
    let takes = limit_takes(key);
    let example = Name::Limit(key).example();
    let (negative, literal) = match value {
        [TokenTree::Punct(minus), TokenTree::Literal(literal)] if minus.as_char() == '-' => (true, literal),
        [TokenTree::Literal(literal)] => (false, literal),
        _ => {
            let kind = if key.is_count() { "an integer" } else { "a number" };
            return Err(not_a_literal(name, kind, "the limits are judged", &example, value));
        }
    };
    let span = literal.span();
    let spanned = to_stream(value);
    let ty = if key.is_count() { "a `u64`" } else { "an `f64`" };
    let wrong_suffix = |suffix: &str, written: &dyn std::fmt::Display| {
        Error::new(span, format!("`{name}` is {ty}, found `{written}`; drop the `{suffix}` suffix"))
    };
    match Lit::new(literal.clone()) {
        Lit::Int(int) if !matches!(int.suffix(), "" | "u64") && key.is_count() => Err(wrong_suffix(int.suffix(), &int)),
        Lit::Int(int) if !matches!(int.suffix(), "" | "f64") && !key.is_count() => {
            Err(wrong_suffix(int.suffix(), &int))
        }
        Lit::Float(float) if !matches!(float.suffix(), "" | "f64") => Err(wrong_suffix(float.suffix(), &float)),
        Lit::Int(int) if key.is_count() => Ok(LimitValue::Count { negative, digits: int.base10_digits().to_owned() }),
        Lit::Int(int) => Ok(LimitValue::Usd(signed(negative, int.base10_digits()))),
        Lit::Float(float) if !key.is_count() => Ok(LimitValue::Usd(signed(negative, float.base10_digits()))),
        Lit::Float(float) => {
            let written = format!("{}{}", if negative { "-" } else { "" }, float.base10_digits());
            let whole = written.parse::<f64>().ok().filter(|value| value.fract() == 0.0 && (1.0..1e16).contains(value));
            let fix = whole.map(|value| format!("; write `{name} = {value}`")).unwrap_or_default();
            Err(Error::new_spanned(spanned, format!("`{name}` takes {takes}, found `{written}`{fix}")))
        }
        Lit::Str(text) => {
            let inner = text.value();
            let inner = inner.trim();
            let parses = if key.is_count() {
                inner.parse::<u64>().is_ok()
            } else {
                inner.parse::<f64>().is_ok_and(f64::is_finite)
            };
            let fix = if parses { inner.to_owned() } else { example };
            Err(Error::new(
                span,
                format!("`{name}` takes {takes}, found the string {}; write `{name} = {fix}`", show(value)),
            ))
        }
        _ => Err(Error::new_spanned(
            spanned,
            format!("`{name}` takes {takes}, found `{}`; write e.g. `{name} = {example}`", show(value)),
        )),
    }
}

/// A literal's decimal digits as an `f64`, negated after a `-` (`1e400` is infinite: past every
/// limit, which the rule says).
fn signed(negative: bool, digits: &str) -> f64 {
    let value = digits.parse::<f64>().unwrap_or(f64::INFINITY);
    if negative { -value } else { value }
}

fn jitter_kinds() -> String {
    let kinds: Vec<String> = Jitter::NAMES.iter().map(|kind| format!("\"{kind}\"")).collect();
    let (last, rest) = kinds.split_last().expect("five kinds");
    format!("{} and {last}", rest.join(", "))
}

/// A string naming a jitter kind.
fn jitter(value: &[TokenTree]) -> Result<Jitter, Error> {
    let spanned = to_stream(value);
    if let [TokenTree::Literal(literal)] = value {
        if let Lit::Str(text) = Lit::new(literal.clone()) {
            let kind = text.value();
            return match Jitter::from_name(&kind) {
                Some(jitter) => Ok(jitter),
                None => Err(Error::new(
                    literal.span(),
                    format!("unknown `jitter` kind \"{kind}\"; the kinds are {}", jitter_kinds()),
                )),
            };
        }
    }
    // `jitter = full` or `jitter = Jitter::Full`: say how to quote it.
    let last_ident = value.iter().rev().find_map(|tree| match tree {
        TokenTree::Ident(ident) => Some(ident.to_string().to_lowercase()),
        _ => None,
    });
    let message = match last_ident.filter(|word| Jitter::from_name(word).is_some()) {
        Some(kind) => format!("`jitter` takes a string, found `{}`; write `jitter = \"{kind}\"`", show(value)),
        None => {
            format!("`jitter` takes a string naming a kind, found `{}`; the kinds are {}", show(value), jitter_kinds())
        }
    };
    Err(Error::new_spanned(spanned, message))
}

/// A preset's name, or the path of a `const` policy. A lone lowercase word is a preset's name (a
/// `const` is written in upper case), so an unknown one is a typo of a preset, said so on the word.
fn preset(value: &[TokenTree]) -> Result<PresetValue, Error> {
    let names = Preset::listed(false);
    let or_const = "or the path of a `const` `RetryPolicy`, e.g. `preset = MY_POLICY`";
    let named = |written: &str| Preset::ALL.into_iter().find(|preset| preset.name() == written);
    match value {
        [TokenTree::Ident(ident)] => {
            let written = ident.unraw().to_string();
            if let Some(preset) = named(&written) {
                return Ok(PresetValue::Named(preset));
            }
            if written.starts_with(|c: char| c.is_ascii_lowercase()) {
                let near = nearest(&written, &Preset::ALL.map(Preset::name));
                let hint = near.map(|near| format!("did you mean `{near}`? ")).unwrap_or_default();
                return Err(Error::new(
                    ident.span(),
                    format!("unknown preset `{written}`; {hint}the presets are {names}, {or_const}"),
                ));
            }
        }
        [TokenTree::Literal(literal)] => {
            if let Lit::Str(text) = Lit::new(literal.clone()) {
                let fix = match Preset::from_name(&text.value()) {
                    Some(preset) => format!("write `preset = {preset}` without quotes"),
                    None => format!("the presets are {names}, {or_const}"),
                };
                return Err(Error::new(
                    literal.span(),
                    format!("`preset` takes a name, found the string {}; {fix}", show(value)),
                ));
            }
        }
        _ => {}
    }
    let spanned = to_stream(value);
    match syn::parse2::<Expr>(spanned.clone()) {
        Ok(Expr::Path(path)) if path.attrs.is_empty() && path.qself.is_none() => Ok(PresetValue::Path(path)),
        _ => {
            // `gemini-free-tier`, the command line's spelling.
            let fix = match Preset::from_name(&show(value).replace(' ', "")) {
                Some(preset) => format!("; write `preset = {preset}`"),
                None => String::new(),
            };
            Err(Error::new_spanned(
                spanned,
                format!("`preset` takes a preset's name ({names}) {or_const}, found `{}`{fix}", show(value)),
            ))
        }
    }
}

/// The path a `validate`, `compact` or `tools` key names: the check function, the compactor, or
/// the toolbox.
fn path(name: Name, value: &[TokenTree]) -> Result<ExprPath, Error> {
    let spanned = to_stream(value);
    let key = name.name();
    let (expected, instead) = match name {
        Name::Compact => (
            "`compact` takes the path of a `static` or `const` whose type implements `Compactor`",
            "put the compactor in a `static` and write `compact = THAT_STATIC`",
        ),
        Name::Tools => (
            "`tools` takes the path of a `static` `LazyLock<Toolbox>` or `OnceLock<Toolbox>`, or of a function \
             `fn() -> Toolbox`",
            "move the expression into a `fn() -> Toolbox` and write `tools = that_fn`",
        ),
        _ => (
            "`validate` takes the path of a function `fn(&Reply) -> Result<(), E>`",
            "move the closure into a `fn` and write `validate = that_fn`",
        ),
    };
    match syn::parse2::<Expr>(spanned.clone()) {
        Ok(Expr::Path(path)) if path.attrs.is_empty() => Ok(path),
        Ok(Expr::Lit(syn::ExprLit { lit: Lit::Str(text), .. })) => {
            let fix = match text.parse::<Path>() {
                Ok(path) => format!("; write `{key} = {}` without quotes", show_stream(path.to_token_stream())),
                Err(_) => String::new(),
            };
            Err(Error::new_spanned(spanned, format!("{expected}, found the string {}{fix}", show(value))))
        }
        Ok(Expr::Closure(_)) => Err(Error::new_spanned(spanned, format!("{expected}, found a closure; {instead}"))),
        Ok(Expr::Call(_) | Expr::MethodCall(_)) if matches!(name, Name::Compact | Name::Tools) => {
            Err(Error::new_spanned(spanned, format!("{expected}, found the expression `{}`; {instead}", show(value))))
        }
        _ => Err(Error::new_spanned(spanned, format!("{expected}, found `{}`", show(value)))),
    }
}

/// A string holding the path through which the runtime crate is reached.
fn krate(value: &[TokenTree]) -> Result<Path, Error> {
    let spanned = to_stream(value);
    if let [TokenTree::Literal(literal)] = value {
        if let Lit::Str(text) = Lit::new(literal.clone()) {
            return text.parse_with(Path::parse_mod_style).map_err(|_| {
                Error::new(
                    literal.span(),
                    format!(
                        "`crate` ({}) is not a path; write the path through which `agentic_runtime` \
                         is reached, e.g. `crate = \"my_crate::agentic\"`",
                        show(value)
                    ),
                )
            });
        }
    }
    let fix = match syn::parse2::<Path>(spanned.clone()) {
        Ok(path) => format!("; write `crate = \"{}\"`", show_stream(path.to_token_stream())),
        Err(_) => "; write the path as a string, e.g. `crate = \"my_crate::agentic\"`".to_owned(),
    };
    Err(Error::new_spanned(spanned, format!("`crate` takes a string, found `{}`{fix}", show(value))))
}

fn to_stream(tokens: &[TokenTree]) -> TokenStream {
    tokens.iter().cloned().collect()
}

/// Tokens as a person would write them (`a::b`, `-1`, `f(x)`), for messages.
pub(crate) fn show(tokens: &[TokenTree]) -> String {
    show_stream(to_stream(tokens))
}

pub(crate) fn show_stream(tokens: TokenStream) -> String {
    let mut out = String::new();
    write_tokens(&mut out, tokens);
    out
}

fn write_tokens(out: &mut String, tokens: TokenStream) {
    // Binary operators get a space on each side; everything else is written tight.
    let wide = |punct: &Punct| punct.spacing() == Spacing::Alone && "=*/+%^".contains(punct.as_char());
    // Whether the last token was a word (ident, literal, group), and whether it asks for a space.
    let mut last_word = false;
    let mut space_after = false;
    let mut joined = false;
    for tree in tokens {
        let space = match &tree {
            TokenTree::Punct(punct) => (wide(punct) && !joined) || space_after,
            TokenTree::Group(group) => space_after || (last_word && group.delimiter() == Delimiter::Brace),
            _ => space_after || last_word,
        };
        if space && !out.is_empty() {
            out.push(' ');
        }
        (last_word, space_after, joined) = match tree {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{ ", " }"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                write_tokens(out, group.stream());
                out.push_str(close);
                (true, false, false)
            }
            TokenTree::Punct(punct) => {
                out.push(punct.as_char());
                (false, wide(&punct) || punct.as_char() == ',', punct.spacing() == Spacing::Joint)
            }
            other => {
                out.push_str(&other.to_string());
                (true, false, false)
            }
        };
    }
}

/// The span to blame when nothing better exists: the attribute itself.
pub(crate) fn attribute_span() -> Span {
    Span::call_site()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(text: &str) -> TokenStream {
        text.parse().expect("valid tokens")
    }

    #[test]
    fn commas_inside_generic_arguments_do_not_split() {
        let pieces = split_on_commas(stream("validate = pick::<u8, fn() -> u8>, max_retries = 2,"));
        let shown: Vec<String> = pieces.iter().map(|(tokens, _)| show(tokens)).collect();
        assert_eq!(shown, ["validate = pick::<u8, fn()->u8>", "max_retries = 2"]);
    }

    #[test]
    fn values_are_shown_as_written() {
        for (written, shown) in [("a::b::C", "a::b::C"), ("2 * 1000", "2 * 1000"), ("-1", "-1"), ("f(x, y)", "f(x, y)")]
        {
            assert_eq!(show_stream(stream(written)), shown);
        }
    }

    #[test]
    fn every_argument_is_judged_and_the_good_ones_kept() {
        let mut errors = Vec::new();
        let args = parse(
            stream("max_retries = 2, bogus = 1, jitter = \"equal\", budget_ms = \"x\", max_retries = 3"),
            &mut errors,
        );
        assert_eq!(errors.len(), 3);
        assert_eq!(args.numbers.len(), 1);
        assert_eq!(args.numbers[0].1.value, 2);
        assert_eq!(args.jitter.map(|arg| arg.value), Some(Jitter::Equal));
        assert_eq!(args.unparsed, [Key::BudgetMs]);
    }

    fn errors_of(text: &str) -> Vec<String> {
        let mut errors = Vec::new();
        parse(stream(text), &mut errors);
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn limits_are_read_as_written_and_wrong_kinds_say_what_the_key_takes() {
        let mut errors = Vec::new();
        let args = parse(
            stream("max_total_tokens = 20_000, max_cost_usd = 1, max_input_tokens = -7, max_cost_usd = 2"),
            &mut errors,
        );
        let values: Vec<(LimitKey, LimitValue)> =
            args.limits.iter().map(|(key, arg)| (*key, arg.value.clone())).collect();
        assert_eq!(
            values,
            [
                (LimitKey::MaxTotalTokens, LimitValue::Count { negative: false, digits: "20000".to_owned() }),
                (LimitKey::MaxCostUsd, LimitValue::Usd(1.0)),
                (LimitKey::MaxInputTokens, LimitValue::Count { negative: true, digits: "7".to_owned() }),
            ]
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].to_string(), "duplicate key `max_cost_usd`: it is already set to 1; remove one");
        // The limit's value alone is blamed, not its key.
        assert_eq!(show_stream(args.limits[2].1.tokens.clone()), "-7");

        assert_eq!(
            errors_of(
                "max_total_tokens = 1.5, max_tool_calls = 2.0, max_output_tokens = \"500\", max_cost_usd = \"$1\""
            ),
            [
                "`max_total_tokens` takes a whole number of tokens, found `1.5`",
                "`max_tool_calls` takes a whole number of tool calls, found `2.0`; write `max_tool_calls = 2`",
                "`max_output_tokens` takes a whole number of tokens, found the string \"500\"; write `max_output_tokens = 500`",
                "`max_cost_usd` takes a number of US dollars, found the string \"$1\"; write `max_cost_usd = 0.25`",
            ]
        );
        assert_eq!(
            errors_of("max_cost_usd = 0.25f32, max_tool_calls = 3u8"),
            [
                "`max_cost_usd` is an `f64`, found `0.25f32`; drop the `f32` suffix",
                "`max_tool_calls` is a `u64`, found `3u8`; drop the `u8` suffix",
            ]
        );
        assert_eq!(
            errors_of("max_cost_usd = BUDGET, max_tool_calls = true"),
            [
                "`max_cost_usd` takes a number literal, found `BUDGET`; the limits are judged when the function \
                 compiles, so write the number, e.g. `max_cost_usd = 0.25`",
                "`max_tool_calls` takes an integer, found `true`; write e.g. `max_tool_calls = 10`",
            ]
        );
    }

    #[test]
    fn a_misspelt_limit_is_suggested() {
        for (written, meant) in [
            ("max_total_token", "max_total_tokens"),
            ("max_tokens", "max_total_tokens"),
            ("max_prompt_tokens", "max_input_tokens"),
            ("max_completion_tokens", "max_output_tokens"),
            ("max_cost", "max_cost_usd"),
            ("budget_usd", "max_cost_usd"),
            ("max_tool_call", "max_tool_calls"),
            ("tool_calls", "max_tool_calls"),
            // The other keys' hints are as before.
            ("toolbox", "tools"),
            ("max_retry", "max_retries"),
            ("budget", "budget_ms"),
        ] {
            let message = unknown_key(written);
            assert!(message.contains(&format!("did you mean `{meant}`?")), "{written}: {message}");
        }
    }
}
