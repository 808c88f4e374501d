//! The help texts cannot drift from what the commands do: each example a `--help` shows is run
//! and compared with what it really prints, and the defaults read as they are.

use crate::common;

use common::agentic;

/// The block of `help` indented by two spaces that follows the line ending in `after`.
fn example_after<'a>(help: &'a str, after: &str) -> Vec<&'a str> {
    let start = help.find(after).unwrap_or_else(|| panic!("{after:?} not in the help:\n{help}")) + after.len();
    help[start..]
        .lines()
        .skip_while(|line| line.trim().is_empty())
        .take_while(|line| line.starts_with("  "))
        .map(|line| &line[2..])
        .collect()
}

#[test]
fn classifys_help_example_is_what_classify_prints() {
    let help = agentic(&["classify", "--help"], "");
    assert_eq!(help.code, 0, "{}", help.stderr);
    let shown = example_after(&help.stdout, "Requests\"` prints:");
    let real = agentic(&["classify", "429 Too Many Requests"], "");
    assert_eq!(real.code, 0, "{}", real.stderr);
    assert_eq!(shown, real.stdout.lines().collect::<Vec<_>>(), "the help's example has drifted:\n{}", help.stdout);
}

#[test]
fn every_option_shows_at_most_one_default() {
    for command in ["classify", "simulate", "ask", "chaos", "grade", "journal"] {
        let help = agentic(&[command, "--help"], "");
        assert_eq!(help.code, 0, "{command}: {}", help.stderr);
        // Each option's block: its `--flag` line (indented 2 or 6 spaces) and the description under it.
        // An unindented line (a heading, the text after the options) ends the block.
        let mut blocks: Vec<String> = Vec::new();
        let mut open = false;
        for line in help.stdout.lines() {
            let flag = line.starts_with("  ") && !line.starts_with("       ") && line.trim_start().starts_with('-');
            if flag {
                blocks.push(line.to_owned());
                open = true;
            } else if !line.is_empty() && !line.starts_with(' ') {
                open = false;
            } else if let Some(block) = blocks.last_mut().filter(|_| open) {
                block.push_str(line);
            }
        }
        assert!(blocks.len() > 1, "`{command} --help` has options");
        for block in blocks {
            assert!(block.matches("[default").count() <= 1, "`{command} --help` shows two defaults: {block}");
        }
    }
}

#[test]
fn the_top_level_help_names_every_command_and_the_exit_codes() {
    for flag in ["-h", "--help"] {
        let help = agentic(&[flag], "");
        assert_eq!(help.code, 0, "{}", help.stderr);
        let about = help.stdout.lines().next().unwrap_or_default();
        for word in ["classify", "simulate", "ask", "chaos", "grade", "failures"] {
            assert!(about.contains(word), "`agentic {flag}`'s about line leaves out {word}: {about}");
        }
    }
    let long = agentic(&["--help"], "");
    assert!(long.stdout.contains("`grade` skipped malformed lines"), "{}", long.stdout);
}

/// The chaos server serves every wire `ask --provider` names, and its help says so.
#[test]
fn the_chaos_help_names_the_four_wires_it_serves() {
    let top = agentic(&["--help"], "");
    let chaos_line = top.stdout.lines().find(|line| line.trim_start().starts_with("chaos")).unwrap();
    assert_eq!(
        chaos_line.split_whitespace().collect::<Vec<_>>().join(" "),
        "chaos Serve a fault-injecting server of the four model wires (Chat Completions, Anthropic Messages, \
         Gemini, OpenAI Responses) until stopped"
    );
    let help = agentic(&["chaos", "--help"], "");
    let help = help.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    for path in
        ["/v1/chat/completions", "/v1/messages", "/v1beta/models/{model}:streamGenerateContent", "/v1/responses"]
    {
        assert!(help.contains(&format!("(POST {path})")), "`agentic chaos --help` leaves out {path}:\n{help}");
    }
    assert!(!help.contains("OpenAI- and Anthropic-compatible"), "{help}");
}

/// The help texts speak of the rules, not of how the project was built: no issue number, no
/// "seed 003", in any command's help.
#[test]
fn no_help_names_an_issue_or_a_seed() {
    let commands: [&[&str]; 7] = [
        &["--help"],
        &["classify", "--help"],
        &["simulate", "--help"],
        &["ask", "--help"],
        &["chaos", "--help"],
        &["grade", "--help"],
        &["journal", "--help"],
    ];
    for args in commands {
        let help = agentic(args, "");
        assert_eq!(help.code, 0, "{args:?}: {}", help.stderr);
        let words: Vec<String> = help.stdout.split_whitespace().map(str::to_lowercase).collect();
        for pair in words.windows(2) {
            let numbered = pair[1].starts_with(|c: char| c.is_ascii_digit());
            assert!(
                !(numbered && ["issue", "seed"].contains(&pair[0].as_str())),
                "{args:?} says `{} {}`",
                pair[0],
                pair[1]
            );
        }
    }
}

/// `agentic journal --help` names every kind of failure a journal record may have.
#[test]
fn the_journal_help_names_every_kind() {
    let help = agentic(&["journal", "--help"], "");
    let help = help.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    let kinds = [
        "permanent",
        "exhausted",
        "programming",
        "context_overflow",
        "refused",
        "invalid_result",
        "max_iterations",
        "usage_limit",
    ];
    for kind in kinds {
        assert!(
            help.contains(&format!("{kind},")) || help.contains(&format!("{kind};")),
            "{kind} is not named:\n{help}"
        );
    }
}

/// `agentic ask --help` documents `--stream` and names every event `--stream --json` prints.
#[test]
fn the_ask_help_documents_stream_and_names_every_event() {
    let help = agentic(&["ask", "--help"], "");
    let help = help.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("--stream Write the answer as it arrives on a terminal"), "{help}");
    for event in ["text_delta", "reasoning_delta", "tool_call", "tool_result", "decision", "rewind", "done"] {
        assert!(help.contains(&format!("\"{event}\"")), "{event} is not named:\n{help}");
    }
}
