//! Enums that are spelled as words on the command line, in configs and in the log.
//!
//! The `named_enum!` macro lives in `glovebox-manifest` (the bottom crate), whose
//! value types (`Role`, `Cap`) use it too; it is forwarded here so the host's
//! enums keep writing `crate::names::named_enum!(Type, "what")`.

pub(crate) use glovebox_manifest::named_enum;
