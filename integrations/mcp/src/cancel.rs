//! A request whose future is dropped before its answer still tells the server it is cancelled.

use rmcp::RoleClient;
use rmcp::model::{CancelledNotificationParam, RequestId};
use rmcp::service::Peer;

/// Sends `notifications/cancelled` for the request `id` if dropped before [`CancelOnDrop::disarm`].
pub(crate) struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl CancelOnDrop {
    /// A guard for the request `id` sent to `peer`.
    pub(crate) fn new(peer: Peer<RoleClient>, id: RequestId) -> Self {
        Self { peer: Some(peer), id }
    }

    /// The answer came: nothing to cancel.
    pub(crate) fn disarm(mut self) {
        self.peer = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let params = CancelledNotificationParam::new(Some(self.id.clone()), Some("the call was dropped".to_owned()));
        runtime.spawn(async move {
            let _ = peer.notify_cancelled(params).await;
        });
    }
}
