//! The success path of `exec` through both layers adds no heap allocation of the retry machinery's
//! own: it allocates exactly what one bare model call allocates.

use agentic_runtime::message::{ContentBlock, Message};
use agentic_runtime::provider::Request;
use agentic_runtime::{Runtime, Scripted, ScriptedProvider, exec};

use agentic_test_support::counting_alloc::{Counting, count};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn exec_success_path_allocates_only_what_the_call_itself_does() {
    let tokio = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    // Warm up lazily initialised state (tokio's thread-locals, the pattern sets are not touched).
    let warm = Runtime::new(ScriptedProvider::new([Scripted::ok("warm")]));
    tokio.block_on(warm.exec("warm")).unwrap();

    for _ in 0..3 {
        let provider = ScriptedProvider::new([Scripted::ok("the answer")]);
        let runtime = Runtime::new(provider);
        let (through_layers, reply) = count(&tokio, runtime.exec("the question"));
        assert_eq!(reply.unwrap().text(), "the answer");

        let provider = ScriptedProvider::new([Scripted::ok("the answer")]);
        let (bare, text) = count(&tokio, async {
            let history = vec![Message::user("the question")];
            let message = exec::call_once(&provider, &Request::new(&history), None).await.unwrap();
            match message.content.into_iter().next() {
                Some(ContentBlock::Text { text }) => text,
                other => panic!("unexpected {other:?}"),
            }
        });
        assert_eq!(text, "the answer");
        assert!(bare > 0, "the counter counts");
        assert_eq!(
            through_layers, bare,
            "exec through both layers made {through_layers} allocations, a bare call {bare}"
        );
    }
}
