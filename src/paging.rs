//! `--limit N --cursor C`: how every listing of the CLI pages (see
//! `glovebox::page`). The next page's cursor, when there is one, goes to
//! stderr, so stdout (and `--json`) stays the listing itself.

use glovebox::page::PageRequest;

/// The page a listing command asks for.
#[derive(clap::Args, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PageArgs {
    /// The most items to list (1 to 500; 100 when left out).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Where to go on from: the cursor the previous page printed.
    #[arg(long)]
    pub cursor: Option<String>,
}

impl PageArgs {
    pub fn request(&self) -> PageRequest {
        PageRequest {
            limit: self.limit,
            cursor: self.cursor.clone(),
        }
    }
}

/// Tells the operator how to ask for the next page, if there is one.
pub fn print_next(next: Option<&str>) {
    if let Some(cursor) = next {
        err!("more: `--cursor {cursor}` lists the next page");
    }
}
