//! What the tower layer hands async-openai of a 50 MiB error body costs the client no more than
//! what the layer read of it (16 KiB): a thread-local allocator counts the bytes the client's thread
//! holds at its peak while `create` runs against the chaos server, which serves from a thread (and a
//! runtime) of its own, whose bytes are not counted. Before, the layer handed the whole body back
//! and async-openai read it, then copied it into its `ApiError`: a peak of about 150 MB.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::tower::{RetryLayer, last_openai_error};
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
use async_openai::types::chat::CreateChatCompletionRequest;

/// Counts the bytes this thread allocated and has not freed, and their peak.
struct Peak;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static HIGHEST: Cell<i64> = const { Cell::new(0) };
}

fn count(bytes: i64) {
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + bytes);
        let _ = HIGHEST.try_with(|highest| highest.set(highest.get().max(live.get())));
    });
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as i64));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as i64 - layout.size() as i64);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Peak = Peak;

/// The most this thread held while `work` ran, above what it held before.
fn peak_of<T>(work: impl FnOnce() -> T) -> (i64, T) {
    let before = LIVE.with(Cell::get);
    HIGHEST.with(|highest| highest.set(before));
    let out = work();
    (HIGHEST.with(Cell::get) - before, out)
}

#[test]
fn a_50_mib_error_body_costs_async_openai_no_more_than_what_the_layer_read() {
    let body = format!("{{\"error\":{{\"message\":\"{}\"}}}}", "x".repeat(50 << 20));
    let step = Step::http_error(500).body(body).should_retry(false);
    let (address, stop) = (std::sync::mpsc::channel(), tokio::sync::oneshot::channel::<()>());
    let (stop_tx, stop_rx) = stop;
    let serving = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let server = ChaosServer::start(Scenario::new().otherwise(step)).await.expect("the chaos server starts");
            address.0.send(server.openai_base_url()).unwrap();
            let _ = stop_rx.await;
        });
    });
    let base_url = address.1.recv().unwrap();

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let config = OpenAIConfig::new().with_api_base(base_url).with_api_key("sk-memory-test");
    let service = RetryLayer::default().around(ReqwestService::new(agentic_test_support::http::client()));
    let client = async_openai::Client::build(agentic_test_support::http::client(), config).with_http_service(service);
    let request: CreateChatCompletionRequest = serde_json::from_value(serde_json::json!({
        "model": "test-model",
        "messages": [{"role": "user", "content": "What is the answer?"}],
    }))
    .unwrap();
    let (peak, error) = peak_of(|| runtime.block_on(client.chat().create(request)).unwrap_err());
    stop_tx.send(()).unwrap();
    serving.join().unwrap();

    let Some(OpenAIError::ApiError(response)) = last_openai_error(&error) else { panic!("{error}") };
    assert_eq!((response.status_code.as_u16(), response.api_error.message.len()), (500, 16 * 1024));
    eprintln!("peak bytes held by the client's thread during `create`: {peak}");
    assert!(peak < 4 << 20, "the client's thread held {peak} bytes at its peak");
}
