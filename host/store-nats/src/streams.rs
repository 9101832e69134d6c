//! JetStream streams that several hosts create and write at the same moment:
//! joining a stream another host is creating, and publishing to one that
//! another host has just created and that is not yet taking its subjects.
//! The log stream, the buckets and the work queues all go through these two.

use std::time::Duration;

use async_nats::jetstream::{self, ErrorCode, stream};

use crate::inner::Inner;

/// The stream `config` names, created when absent. Hosts starting together
/// all find it absent and all ask to create it; while the first creation is
/// being applied, the server answers the others "subjects overlap" (10065) or
/// "name in use" (10058). Those answers mean "made by someone else": look
/// again (for up to two seconds) and join the stream that is there. A stream
/// of another deployment on the same subjects keeps answering 10065, and that
/// error is returned.
pub(crate) async fn get_or_join_stream(
    js: &jetstream::Context,
    config: stream::Config,
) -> Result<stream::Stream, jetstream::context::CreateStreamError> {
    let mut tries = 0;
    loop {
        match js.get_or_create_stream(config.clone()).await {
            Err(e)
                if tries < 100
                    && matches!(e.kind(),
                        jetstream::context::CreateStreamErrorKind::JetStream(err)
                            if err.error_code() == ErrorCode::STREAM_SUBJECT_OVERLAP
                                || err.error_code() == ErrorCode::STREAM_NAME_EXIST) =>
            {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => return other,
        }
    }
}

impl Inner {
    /// Sends `message` on `subject` and waits for the stream's ack. A stream
    /// another host has just created is listed before it takes its subjects
    /// (see `get_or_join_stream`): a publish in that moment reaches no stream
    /// ("no responders": nothing was stored) and is sent again, for up to
    /// two seconds.
    pub(crate) async fn publish(
        &self,
        subject: &str,
        message: jetstream::message::PublishMessage,
    ) -> Result<jetstream::publish::PublishAck, jetstream::context::PublishError> {
        let mut tries = 0;
        loop {
            let acked = match self
                .js
                .send_publish(subject.to_string(), message.clone())
                .await
            {
                Ok(ack) => ack.await,
                Err(e) => Err(e),
            };
            match acked {
                Err(e)
                    if tries < 100
                        && e.kind() == jetstream::context::PublishErrorKind::StreamNotFound =>
                {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                acked => return acked,
            }
        }
    }
}
