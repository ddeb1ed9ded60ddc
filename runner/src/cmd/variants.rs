//! `matrix variants list|prune`: the variant build cache and the space it takes.

use std::process::ExitCode;

use crate::cli::VariantsCommand;
use crate::config::home_checkout;
use crate::results::untrusted::visible;
use crate::variant::{cache, cache_root};

pub fn cmd(c: &VariantsCommand) -> anyhow::Result<ExitCode> {
    let root = match (std::env::var_os("PINGMATRIX_VARIANTS_DIR"), home_checkout()) {
        (Some(_), _) => cache_root(std::path::Path::new(".")),
        (None, Some(repo)) => cache_root(&repo),
        (None, None) => anyhow::bail!(
            "no variant cache: this matrix is not in a pingmatrix checkout and \
             PINGMATRIX_VARIANTS_DIR is not set"
        ),
    };
    match c {
        VariantsCommand::List => print!("{}", cache::list(&root)),
        VariantsCommand::Prune { all } => {
            let p = cache::prune(&root, *all)?;
            for d in &p.removed {
                println!("removed {}", visible(&d.display().to_string()));
            }
            println!(
                "{}: freed {} ({} removed{})",
                root.display(),
                cache::bytes_text(p.freed),
                p.removed.len(),
                if *all {
                    ""
                } else {
                    "; built variants keep their binary and record and are still reused"
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
