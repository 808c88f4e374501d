//! The transport seen through a window that counts `notifications/tools/list_changed` as it
//! passes, in the order of the stream.
//!
//! rmcp hands a notification to the client's handler on a task of its own, so a handler could
//! hear of a change after the answer to the call that caused it (a tool that installs tools). The
//! count here moves before the service reads the next message, so a call whose answer arrives
//! after the notification sees the change, and waits for the new list (see `toolbox.rs`).

use std::borrow::Cow;
use std::future::Future;

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::watch;

/// A transport that bumps `changes` on every `tools/list_changed` it receives.
pub(crate) struct CountChanges<T> {
    inner: T,
    changes: watch::Sender<u64>,
}

impl<T> CountChanges<T> {
    /// `inner`, counting into `changes`.
    pub(crate) fn new(inner: T, changes: watch::Sender<u64>) -> Self {
        Self { inner, changes }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for CountChanges<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(notification)) = &message
            && matches!(notification.notification, ServerNotification::ToolListChangedNotification(_))
        {
            self.changes.send_modify(|count| *count += 1);
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
