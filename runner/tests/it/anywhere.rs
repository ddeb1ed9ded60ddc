//! F8: a matrix file kept outside pingmatrix (with a crate, say) can have variants: they are
//! built from the checkout `matrix` was built in, or the one a variant's `repo` names.

use std::process::Command;

use crate::support::live::{Scratch, bin, out_text, tiny_matrix, write_config};

fn plan(config: &std::path::Path) -> std::process::Output {
    Command::new(bin("matrix"))
        .args(["plan", "--config"])
        .arg(config)
        .output()
        .unwrap()
}

#[test]
fn a_matrix_file_outside_the_checkout_plans_its_variants() {
    let d = Scratch::new("anywhere");
    let variants = |extra: &str| {
        tiny_matrix(&[("ping-epoll", bin("ping-epoll"), "")], 1, "", "").replacen(
            "\n[[scenarios]]",
            &format!(
                "\n[[services.variants]]\nname = \"slow\"\nargs = [\"--burn-iters\", \"1\"]\n{extra}\n\
                 [[services.variants]]\nname = \"head\"\nrev = \"HEAD\"\n\n[[scenarios]]"
            ),
            1,
        )
    };
    let m = write_config(&d, &variants(""));
    let out = plan(&m);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let text = out_text(&out);
    assert!(
        text.contains("ping-epoll@slow") && text.contains("ping-epoll@head"),
        "{text}"
    );

    // In a git repository that is not pingmatrix's (a crate's): still this checkout.
    let ok = Command::new("git")
        .arg("-C")
        .arg(&d.0)
        .args(["init", "-q"])
        .status()
        .unwrap();
    assert!(ok.success());
    let out = plan(&m);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));

    // `repo` naming something that is not a pingmatrix checkout: refused at the key.
    for (repo, why) in [
        ("nowhere", "is not a git checkout"),
        (".", "not pingmatrix's"),
    ] {
        let text = variants(&format!("repo = {repo:?}"));
        let m = write_config(&d, &text);
        let out = plan(&m);
        let err = out_text(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("services[0].variants[0].repo"), "{err}");
        assert!(err.contains(why), "{err}");
    }
    // And naming this checkout: fine.
    let here = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let m = write_config(&d, &variants(&format!("repo = {here:?}")));
    let out = plan(&m);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
}
