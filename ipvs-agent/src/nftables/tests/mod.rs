//! Golden bytes for each request, the batch framing, the answers, and the
//! decision of what a sync sends.

mod decision;
mod golden;
mod replies;
