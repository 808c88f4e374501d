//! Every wire's provider reads the reasoning the chaos server streams in that wire's real shape as
//! `StreamEvent::ReasoningDelta`s before the answer, never as its text, and the exec's reply holds
//! the answer alone.

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::exec::RuntimeBuilder;
use agentic_runtime::message::Message;
use agentic_runtime::provider::{Request, StreamEvent};
use agentic_test_support::wires;
use futures_util::StreamExt as _;

#[tokio::test(start_paused = true)]
async fn every_wire_reads_the_reasoning_apart_from_the_answer() {
    let step = Step::ok("The answer is 4.").reasoning("Two and two make four.");
    let server = ChaosServer::start(Scenario::new().otherwise(step)).await.unwrap();
    for wire in wires::all() {
        let provider = wire.provider(&server);
        let history = [Message::user("2+2?")];
        let request = Request::new(&history);
        let events: Vec<StreamEvent> = provider.stream(&request).map(|event| event.unwrap()).collect().await;
        let (mut reasoning, mut text, mut first_text) = (String::new(), String::new(), None);
        for (at, event) in events.iter().enumerate() {
            match event {
                StreamEvent::ReasoningDelta(piece) => reasoning.push_str(piece),
                StreamEvent::TextDelta(piece) => {
                    first_text.get_or_insert(at);
                    text.push_str(piece);
                }
                _ => {}
            }
        }
        assert_eq!((reasoning.as_str(), text.as_str()), ("Two and two make four.", "The answer is 4."), "{wire}");
        let last_reasoning = events.iter().rposition(|event| matches!(event, StreamEvent::ReasoningDelta(_)));
        assert!(last_reasoning < first_text, "{wire}: the reasoning comes first: {events:?}");
        let runtime = RuntimeBuilder::from_shared(provider).with_jitter_seed(7).build().unwrap();
        assert_eq!(runtime.exec("2+2?").await.unwrap().text(), "The answer is 4.", "{wire}");
    }
}
