//! A request's forced tool choice, and what it makes of a step's answer: a model that must call a
//! tool answers with a call, whatever the script says it would have done (see the
//! [crate docs](crate#forced-tool-choice)).

use crate::step::{Step, ToolUse};

/// What a request lets the model do with its tools, as its wire says it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum ToolChoice {
    /// Answer in text or call any tool: no `tool_choice` (or `auto`, `none`, Gemini's `AUTO`).
    #[default]
    Auto,
    /// Call one of the tools: Anthropic `{"type": "any"}`, OpenAI `"required"`, Gemini `ANY` with
    /// several or no `allowedFunctionNames` (`among` them; empty: any offered tool).
    Any { among: Vec<String> },
    /// Call this tool: Anthropic `{"type": "tool", "name"}`, OpenAI `{"type": "function",
    /// "function": {"name"}}`, Responses `{"type": "function", "name"}`, Gemini `ANY` with one
    /// `allowedFunctionNames`.
    Tool(String),
}

/// A step as the request's tool choice makes it answer.
#[derive(Debug)]
pub(crate) struct Forced {
    /// The step, its calls rewritten when the choice forbids them.
    pub(crate) step: Step,
    /// The tool whose arguments the step's text is sent as (its wire renders a text answer as a
    /// call of it), if the choice forces a call and the step sends text.
    pub(crate) answer_tool: Option<String>,
    /// The tool the choice made the answer call instead of what the step scripted (a text sent
    /// as its arguments, or a call of another tool renamed), for the journal.
    pub(crate) changed_to: Option<String>,
}

impl ToolChoice {
    /// The tool a text answer becomes a call of: the forced tool, or under `any` the last tool
    /// allowed (the last offered: where a client that carries a typed answer in a tool, as
    /// agentic's Anthropic provider does, puts that tool). `None` when no call is forced, or when
    /// no tool is offered.
    fn answer_tool(&self, offered: &[String]) -> Option<String> {
        match self {
            Self::Auto => None,
            Self::Any { among } => among.last().or(offered.last()).cloned(),
            Self::Tool(name) => Some(name.clone()),
        }
    }

    /// What this choice makes of `step`, for a request that offered the tools `offered`.
    pub(crate) fn apply(&self, step: Step, offered: &[String]) -> Forced {
        let Some(tool) = self.answer_tool(offered) else {
            return Forced { step, answer_tool: None, changed_to: None };
        };
        let texted = step.completion().is_some();
        match step {
            Step::ToolUse(t) => {
                let (t, renamed) = self.calls_only(t, &tool);
                Forced { step: Step::ToolUse(t), answer_tool: None, changed_to: renamed.then_some(tool) }
            }
            step if texted => Forced { step, answer_tool: Some(tool.clone()), changed_to: Some(tool) },
            step => Forced { step, answer_tool: None, changed_to: None },
        }
    }

    /// A tool-use answer under a forced choice: calls only (a model made to call a tool says
    /// nothing first), and for a forced tool one call of it: the step's first call of that tool,
    /// else its first call renamed, its input as is. Whether a call was renamed or dropped.
    fn calls_only(&self, mut t: ToolUse, tool: &str) -> (ToolUse, bool) {
        t.text = None;
        let Self::Tool(_) = self else {
            return (t, false);
        };
        let own = t.calls.iter().position(|(name, _)| name == tool);
        let changed = t.calls.len() != 1 || own.is_none();
        let (_, input) = t.calls.swap_remove(own.unwrap_or(0));
        t.calls = vec![(tool.to_owned(), input)];
        (t, changed)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn offered() -> Vec<String> {
        vec!["lookup".to_owned(), "Answer".to_owned()]
    }

    fn calls(forced: &Forced) -> Vec<(String, serde_json::Value)> {
        match &forced.step {
            Step::ToolUse(t) => {
                assert_eq!(t.text, None, "a forced call says nothing first");
                t.calls.clone()
            }
            other => panic!("not a tool use: {other:?}"),
        }
    }

    #[test]
    fn a_forced_tool_turns_text_and_other_calls_into_a_call_of_it() {
        let choice = ToolChoice::Tool("Answer".to_owned());
        let text = choice.apply(Step::ok(r#"{"n": 1}"#).into(), &offered());
        assert_eq!((text.answer_tool.as_deref(), text.changed_to.as_deref()), (Some("Answer"), Some("Answer")));
        assert!(matches!(text.step, Step::Ok(_)), "its wire renders the text as the call's arguments");

        let other = choice.apply(Step::tool_use("lookup", json!({"q": "x"})).text("Let me look.").into(), &offered());
        assert_eq!(calls(&other), [("Answer".to_owned(), json!({"q": "x"}))]);
        assert_eq!(other.changed_to.as_deref(), Some("Answer"));

        let own = Step::tool_use("lookup", json!({})).call("Answer", json!({"n": 2}));
        let own = choice.apply(own.into(), &offered());
        assert_eq!(calls(&own), [("Answer".to_owned(), json!({"n": 2}))]);

        let already = choice.apply(Step::tool_use("Answer", json!({"n": 3})).into(), &offered());
        assert_eq!((calls(&already).len(), already.changed_to), (1, None), "what a model would do: unchanged");

        let error = choice.apply(Step::http_error(429).into(), &offered());
        assert_eq!(error.changed_to, None, "an error carries no answer to change");
    }

    #[test]
    fn any_tool_turns_text_into_a_call_of_the_last_allowed_and_keeps_calls() {
        let any = ToolChoice::Any { among: Vec::new() };
        let text = any.apply(Step::ok("{}").into(), &offered());
        assert_eq!(text.changed_to.as_deref(), Some("Answer"));
        let call = any.apply(Step::tool_use("lookup", json!({"q": "x"})).text("Looking.").into(), &offered());
        assert_eq!((calls(&call), call.changed_to), (vec![("lookup".to_owned(), json!({"q": "x"}))], None));
        let among = ToolChoice::Any { among: vec!["lookup".to_owned()] };
        assert_eq!(among.apply(Step::ok("{}").into(), &offered()).changed_to.as_deref(), Some("lookup"));
        assert_eq!(any.apply(Step::ok("{}").into(), &[]).answer_tool, None, "no tool to call: text stays text");
        assert_eq!(ToolChoice::Auto.apply(Step::ok("{}").into(), &offered()).answer_tool, None);
    }
}
