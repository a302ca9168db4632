//! The low-weight controller's receiver side (`docs/lowweight.md`), switched on by
//! OPT_LOWWEIGHT on ODATA: with LW_NO_ACKS no receiver ACKs, neither as the named receiver
//! nor in answer to an election request; with LW_QUICK_NAK the receiver the packet names as
//! the worst (the acker field of OPT_PGMCC_DATA) NAKs the gaps it reveals without back-off,
//! the quick NAKer, while everyone else keeps NAK_BO_IVL.

use std::net::IpAddr;

use pgm_wire::{Options, LW_NO_ACKS, LW_QUICK_NAK};

/// True when this ODATA makes the receiver whose NLA is `nla` the quick NAKer.
pub(crate) fn quick_naker(opts: &Options<'_>, nla: IpAddr) -> bool {
    opts.lowweight.is_some_and(|l| l.flags & LW_QUICK_NAK != 0)
        && opts.pgmcc_data.is_some_and(|d| d.acker == nla)
}

/// True when this ODATA forbids ACKs.
pub(crate) fn silences_acks(opts: &Options<'_>) -> bool {
    opts.lowweight.is_some_and(|l| l.flags & LW_NO_ACKS != 0)
}
