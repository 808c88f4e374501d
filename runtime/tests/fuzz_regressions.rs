//! Inputs the fuzz targets (`fuzz/`) found to break the runtime, replayed. Those found in the HTTP
//! providers' decoders need the feature `providers`.

use std::time::Duration;

use agentic_runtime::{Runtime, Scripted, ScriptedProvider};

/// `retry_after`: `Retry-After: 1e19` parsed to 10^19 s, and noting it as the scope's cooldown
/// overflowed the clock (`Instant + wait` panicked). Such a wait now cools the scope for 100 years.
#[cfg(feature = "providers")]
#[test]
fn a_retry_after_beyond_the_clock_does_not_panic() {
    use agentic_runtime::__fuzz;
    use std::time::SystemTime;

    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let (wait, _) = __fuzz::retry_hints(None, Some(b"1e19"), None, now);
    assert_eq!(wait, Some(Duration::from_secs(10_000_000_000_000_000_000)));
    let cooldown = __fuzz::cooldown(wait.unwrap()).expect("a cooldown");
    assert!(cooldown > Duration::from_secs(99 * 365 * 24 * 60 * 60), "{cooldown:?}");
}

#[tokio::test(start_paused = true)]
async fn an_exec_told_to_wait_forever_gives_up_instead_of_panicking() {
    let provider = ScriptedProvider::new([Scripted::http(429, "Too Many Requests").with_retry_after(Duration::MAX)]);
    let error = Runtime::new(provider).exec("hi").await.expect_err("the wait is beyond the cap");
    assert!(error.to_string().contains("retry_after_cap_ms"), "{error}");
}

/// `sse`: an error event whose `type` held the API key (`"xsk-..._error"`) became the error's kind
/// (`"Xsk-...Error"`) unredacted, so the key showed in the error's text. The kind is redacted now.
#[cfg(feature = "providers")]
#[test]
fn an_error_type_holding_the_key_is_redacted_from_the_kind() {
    use agentic_runtime::__fuzz::{self, WireFormat};
    use agentic_runtime::provider::StreamEvent;

    let key = "sk-fuzz-KEY";
    let openai: &[u8] = br#"data: {"error":{"type":"xsk-fuzz-KEY_error","message":"m"}}

"#;
    let anthropic: &[u8] = br#"data: {"type":"error","error":{"type":"xsk-fuzz-KEY_error","message":"m"}}

"#;
    for (format, body) in [(WireFormat::OpenAi, openai), (WireFormat::Anthropic, anthropic)] {
        let items = __fuzz::stream(format, &[body], false, Some(key));
        let [Ok(StreamEvent::Error { error: Some(error), .. })] = items.as_slice() else { panic!("{items:?}") };
        assert!(!format!("{error} {error:?}").contains(key), "{error:?}");
        assert_eq!(error.kind(), "X<redacted>Error");
    }
}
