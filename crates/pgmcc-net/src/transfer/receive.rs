//! The receiving side of a transfer: [`TransferReceiver`].
