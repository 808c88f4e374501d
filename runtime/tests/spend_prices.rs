//! Prices: built in code, and read from litellm's `model_prices_and_context_window.json` (an
//! excerpt of real entries with junk among them); the size bound, malformed input, and costs worked
//! out by hand.

use agentic_test_support::temp_file::TempFile;

use agentic_runtime::message::Usage;
use agentic_runtime::spend::{MAX_PRICES_FILE_BYTES, Price, Prices, PricesError};

/// Real entries of litellm's file (2026), whole or cut to a few of their fields, and entries of
/// every shape that prices nothing. `gemini-2.0-flash` of `vertex_ai-language-models` is shaped like
/// litellm's; its prices are this test's, to tell it from the Gemini API's.
const FIXTURE: &str = include_str!("fixtures/litellm_prices.json");

/// Whether `a` and `b` are the same dollars, to the float error of a product.
fn same_usd(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-6)
}

fn price<'a>(prices: &'a Prices, target: &str) -> &'a Price {
    prices.price_of(target).unwrap_or_else(|| panic!("{target} has no price"))
}

#[test]
fn litellm_prices_are_read_for_the_runtime_providers_and_junk_is_skipped() {
    let prices = Prices::from_litellm_json(FIXTURE).expect("litellm's format");

    let nano = price(&prices, "openai/gpt-5.4-nano");
    let per_million = [nano.input_per_million(), nano.output_per_million(), nano.cached_input_per_million()];
    assert!(per_million.iter().zip([0.2, 1.25, 0.02]).all(|(&read, real)| same_usd(read, real)), "{per_million:?}");
    // No cache-write price: cache writes at the input price.
    assert!(same_usd(nano.cache_write_per_million(), 0.2));

    let haiku = price(&prices, "anthropic/claude-haiku-4-5");
    assert!(same_usd(haiku.input_per_million(), 1.0) && same_usd(haiku.output_per_million(), 5.0));
    assert!(same_usd(haiku.cached_input_per_million(), 0.1) && same_usd(haiku.cache_write_per_million(), 1.25));
    assert!(prices.price_of("anthropic/claude-3-haiku-20240307").is_some());
    // A key with its provider in front is the model after it.
    assert!(same_usd(price(&prices, "anthropic/claude-prefixed").output_per_million(), 15.0));

    // Gemini's: keyed `gemini/..`, found as the runtime names the target and as litellm does; the
    // Gemini API's price wins over Vertex AI's for the same model, wherever each is in the file.
    let flash = price(&prices, "gcp.gemini/gemini-2.0-flash");
    assert!(same_usd(flash.input_per_million(), 0.1) && same_usd(flash.cached_input_per_million(), 0.025));
    assert_eq!(prices.price_of("gemini/gemini-2.0-flash"), Some(flash));
    // Vertex AI's alone prices a model (free here).
    assert_eq!(price(&prices, "gcp.gemini/gemini-flash-experimental").worst_case_usd(1_000, 1_000), 0.0);

    // Skipped: `sample_spec`, an image model, other providers, a model without a token price, and
    // every junk entry (a price that is text, negative or missing, a provider that is no text).
    for unpriced in [
        "openai/sample_spec",
        "openai/1024-x-1024/dall-e-2",
        "groq/openai/gpt-oss-120b",
        "openai/gpt-oss-120b",
        "nlp_cloud/chatdolphin",
        "gradient_ai/openai-gpt-4o-mini",
        "openai/junk/text-price",
        "openai/junk/negative-price",
        "anthropic/junk/bad-cached-price",
        "openai/junk/provider-not-text",
        "openai/junk/no-output-price",
    ] {
        assert!(prices.price_of(unpriced).is_none(), "{unpriced} is priced");
    }
    assert_eq!(prices.len(), 6, "{prices:?}");
}

#[test]
fn costs_are_those_worked_out_by_hand() {
    let prices = Prices::from_litellm_json(FIXTURE).unwrap();
    // OpenAI counts the cached tokens in the input: 1 000 in of which 400 cached, 200 out, at
    // $0.20 / $0.02 / $1.25 per million: 600 × 0.20 + 400 × 0.02 + 200 × 1.25 = 378 per million.
    let openai = price(&prices, "openai/gpt-5.4-nano").cost_usd(&Usage::new(1_000, 200).with_cache_read(400));
    assert!(same_usd(openai, 378e-6), "{openai}");
    // Anthropic counts them apart: 20 in, 100 read, 5 written, 10 out, at $1 / $0.10 / $1.25 / $5:
    // 20 + 10 + 6.25 + 50 = 86.25 per million.
    let usage = Usage::new(20, 10).with_cache_read(100).with_cache_creation(5);
    let anthropic = price(&prices, "anthropic/claude-haiku-4-5").cost_usd(&usage);
    assert!(same_usd(anthropic, 86.25e-6), "{anthropic}");
    // The worst case: every input token at the dearest input price (a cache write's, $1.25), the
    // output at $5: 8 000 × 1.25 + 1 000 × 5 = 15 000 per million.
    let worst = price(&prices, "anthropic/claude-haiku-4-5").worst_case_usd(8_000, 1_000);
    assert!(same_usd(worst, 0.015), "{worst}");
    assert!(anthropic <= price(&prices, "anthropic/claude-haiku-4-5").worst_case_usd(125, 10));
}

#[test]
fn prices_in_code_are_checked_and_found_by_target() {
    let mini = Price::per_million(0.15, 0.60).unwrap().with_cached_input(0.075).unwrap();
    let prices = Prices::new()
        .with("openai/gpt-4o-mini", Price::per_million(9.0, 9.0).unwrap())
        .unwrap()
        .with("openai/gpt-4o-mini", mini)
        .unwrap()
        .with("scripted/m-1", Price::per_million(1.0, 2.0).unwrap())
        .unwrap()
        .with("gemini/gemini-2.5-flash", Price::per_million(0.3, 2.5).unwrap())
        .unwrap();
    // The last price of a target replaces the one before.
    assert_eq!(prices.price_of("openai/gpt-4o-mini"), Some(&mini));
    assert!(prices.price_of("gcp.gemini/gemini-2.5-flash").is_some());
    assert!(prices.price_of("openai/gpt-4o").is_none() && prices.price_of("gpt-4o-mini").is_none());
    assert_eq!(prices.len(), 3);
    let cost = price(&prices, "scripted/m-1").cost_usd(&Usage::new(500_000, 250_000));
    assert!(same_usd(cost, 1.0), "{cost}");

    for target in ["", "  ", "openai/", "/gpt-4o-mini"] {
        let error = Prices::new().with(target, mini).unwrap_err();
        assert_eq!(error.key(), "target", "{target:?}");
        assert!(error.message().contains("<provider>/<model>"), "{}", error.message());
    }
    let error = Price::per_million(0.15, -0.6).unwrap_err();
    assert_eq!(error.key(), "output_per_million");
    assert!(error.message().contains("-0.6") && error.message().contains("0 or more"), "{}", error.message());
}

#[test]
fn malformed_json_is_an_error_at_its_line_and_column() {
    let text = "{\n  \"gpt-4o-mini\": {\n    \"input_cost_per_token\": 1e-07,,\n  }\n}";
    match Prices::from_litellm_json(text).unwrap_err() {
        PricesError::Json { line, column, message } => {
            assert_eq!((line, column), (3, 35), "{message}");
            assert!(!message.contains("at line"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let error = Prices::from_litellm_json(text).unwrap_err().to_string();
    assert!(error.contains("line 3 column 35"), "{error}");

    // Not an object, cut short, something after it, a price nested past any file's depth or past
    // a float: each an error.
    let nested = |depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let deep_price = format!("{{\"m\": {{\"input_cost_per_token\": {}}}}}", nested(100_000));
    for text in [
        "[1, 2]",
        "",
        "{\"gpt-4o\": {",
        "{} {}",
        "\u{feff}{}",
        &deep_price,
        "{\"m\": {\"input_cost_per_token\": 1e400}}",
    ] {
        let error = Prices::from_litellm_json(text).unwrap_err();
        assert!(matches!(error, PricesError::Json { .. }), "{:.80}: {error:?}", text);
    }
    // Fields and entries no price reads are skipped however deep they go, without a stack to overflow.
    for deep_junk in
        [format!("{{\"m\": {{\"notes\": {}}}}}", nested(100_000)), format!("{{\"m\": {}}}", nested(100_000))]
    {
        assert!(matches!(Prices::from_litellm_json(&deep_junk), Err(PricesError::NoPrices)));
    }
    let error = Prices::from_litellm_json("[1, 2]").unwrap_err().to_string();
    assert!(error.contains("an object keyed by model name"), "{error}");
}

#[test]
fn text_that_prices_no_model_of_ours_is_an_error() {
    let only_others = r#"{"sample_spec": {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
        "litellm_provider": "one of https://docs.litellm.ai/docs/providers"},
        "groq/llama-3.1-8b-instant": {"input_cost_per_token": 5e-08, "output_cost_per_token": 8e-08, "litellm_provider": "groq"}}"#;
    for text in ["{}", only_others, r#"{"name": "my-app", "version": "1.0.0"}"#] {
        let error = Prices::from_litellm_json(text).unwrap_err();
        assert!(matches!(error, PricesError::NoPrices), "{error:?}");
        assert!(error.to_string().contains("model_prices_and_context_window.json"), "{error}");
    }
}

#[test]
fn prices_past_the_size_bound_are_refused() {
    // At the bound: litellm's excerpt padded with spaces to exactly the limit is read.
    let mut at_limit = FIXTURE.to_owned();
    at_limit.push_str(&" ".repeat(MAX_PRICES_FILE_BYTES as usize - FIXTURE.len()));
    assert_eq!(Prices::from_litellm_json(&at_limit).unwrap().len(), 6);
    at_limit.push(' ');
    let error = Prices::from_litellm_json(&at_limit).unwrap_err();
    assert!(matches!(error, PricesError::TooLarge { bytes, limit } if bytes == limit + 1), "{error:?}");
    assert!(error.to_string().contains("16777216"), "{error}");

    // A file that says it is larger is refused unread (a sparse file: no 16 MiB written).
    let file = TempFile::new("prices-too-large.json");
    std::fs::File::create(file.path()).unwrap().set_len(MAX_PRICES_FILE_BYTES + 1).unwrap();
    let error = Prices::from_litellm_file(file.path()).unwrap_err();
    assert!(matches!(error, PricesError::TooLarge { bytes, .. } if bytes == MAX_PRICES_FILE_BYTES + 1), "{error:?}");
}

/// A file that claims no size (a device) is read no further than the bound.
#[cfg(target_os = "linux")]
#[test]
fn an_endless_file_is_read_no_further_than_the_bound() {
    let error = Prices::from_litellm_file("/dev/zero").unwrap_err();
    assert!(matches!(error, PricesError::TooLarge { bytes, .. } if bytes == MAX_PRICES_FILE_BYTES + 1), "{error:?}");
}

#[test]
fn files_are_read_and_their_errors_name_them() {
    let file = TempFile::with_contents("litellm-prices.json", FIXTURE);
    assert_eq!(Prices::from_litellm_file(file.path()).unwrap(), Prices::from_litellm_json(FIXTURE).unwrap());

    let missing = file.path().with_file_name("no-such-prices.json");
    let error = Prices::from_litellm_file(&missing).unwrap_err();
    assert!(matches!(&error, PricesError::Read { path, .. } if *path == missing), "{error:?}");
    assert!(error.to_string().contains("no-such-prices.json"), "{error}");

    let latin1 = TempFile::new("prices-latin1.json");
    std::fs::write(latin1.path(), b"{\"caf\xe9\": {}}").unwrap();
    let error = Prices::from_litellm_file(latin1.path()).unwrap_err().to_string();
    assert!(error.contains("byte 5 is not UTF-8"), "{error}");
}
