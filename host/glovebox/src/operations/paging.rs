//! The page a listing's `limit` and `cursor` ask for, the same on every
//! surface: a limit outside 1 to [`MAX_PAGE`] is refused naming it, never
//! quietly clamped; and those two arguments as the listings that page so
//! declare them ([`paged_args`]).

use super::OperationError;
use crate::page::{MAX_PAGE, PageRequest};

/// The page `limit` and `cursor` ask for, or why the limit is not one.
pub fn page_request(
    limit: Option<usize>,
    cursor: Option<String>,
) -> Result<PageRequest, OperationError> {
    if let Some(limit) = limit
        && !(1..=MAX_PAGE).contains(&limit)
    {
        return Err(OperationError::invalid(format!(
            "`limit` is {limit}: give 1 to {MAX_PAGE} and page on with `cursor`"
        )));
    }
    Ok(PageRequest { limit, cursor })
}

/// A listing's arguments: the struct as written, then its `limit` (of
/// which `$what` a page holds: 100 when absent, 500 at most) and its
/// `cursor`, the same in every listing that pages so (serde's `flatten`
/// would lose `deny_unknown_fields`, so they are spelled out once here).
macro_rules! paged_args {
    (
        $(#[$meta:meta])*
        pub struct $ty:ident paging $what:literal {
            $($(#[$fmeta:meta])* pub $field:ident: $fty:ty,)*
        }
    ) => {
        $(#[$meta])*
        pub struct $ty {
            $($(#[$fmeta])* pub $field: $fty,)*
            #[doc = concat!($what, " a page holds: 100 when absent, 500 at most.")]
            #[serde(default)]
            #[schemars(range(min = 1, max = 500))]
            pub limit: Option<usize>,
            /// Where the previous page ended (its `next_cursor`).
            #[serde(default)]
            #[schemars(length(max = $crate::operations::sizes::CURSOR_MAX))]
            pub cursor: Option<String>,
        }
    };
}
pub(super) use paged_args;
