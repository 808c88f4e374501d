//! `agentic ask` never shows a key pasted into a base URL it rejects.

use std::process::{Command, Stdio};

const KEY: &str = "sk-proj-Zq7vK2mN9xR4tB8wL1pC6hJ3fD5gS0yE";

#[test]
fn a_rejected_base_url_is_shown_without_the_key() {
    let cases = [
        (format!("ftp://user:{KEY}@host/v1?key={KEY}"), "ftp://<redacted>:<redacted>@host/v1?key=<redacted>"),
        // The key where the URL goes (the two values swapped).
        (KEY.to_owned(), "<redacted>"),
    ];
    for (url, shown) in cases {
        let output = Command::new(env!("CARGO_BIN_EXE_agentic"))
            .args(["ask", "--base-url", &url, "--api-key", KEY, "hi"])
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .stdin(Stdio::null())
            .output()
            .expect("the agentic binary runs");
        assert_eq!(output.status.code(), Some(2));
        assert_eq!(
            String::from_utf8(output.stderr).unwrap(),
            format!(
                "error: the base URL `{shown}` is not an http(s) URL: pass e.g. --base-url http://127.0.0.1:8080/v1\n"
            )
        );
        assert!(output.stdout.is_empty());
    }
}
