//! The sending side of a transfer over its passes: [`TransferSender`].
