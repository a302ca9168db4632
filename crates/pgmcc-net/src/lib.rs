//! `pgmcc-net`: the real-socket runtime.
//!
//! What will live here (issue 8): the driver that runs the sans-IO core over UDP
//! encapsulation (OpenPGM ports 3055/3056) with socket2 and tokio, and the public async and
//! blocking `Sender`/`Receiver` API. Nothing is implemented yet.
