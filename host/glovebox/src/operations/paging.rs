//! The page a listing's `limit` and `cursor` ask for, the same on every
//! surface: a limit outside 1 to [`MAX_PAGE`] is refused naming it, never
//! quietly clamped.

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
