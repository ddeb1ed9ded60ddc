//! `matrix variants list|prune` on a made-up variant cache, and `matrix which --crate`
//! against this checkout's Cargo.lock: the real binary, its output and exit status.

use std::path::Path;
use std::process::Command;

use crate::support::live::{Scratch, bin, out_text};

fn variants(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(bin("matrix"))
        .arg("variants")
        .args(args)
        .env("PINGMATRIX_VARIANTS_DIR", dir)
        .output()
        .unwrap()
}

#[test]
fn variants_list_shows_each_build_and_prune_frees_what_no_run_reads() {
    let d = Scratch::new("variants-cache");
    let cache = d.join("variants");
    let built = cache.join("0123456789abcdef");
    for sub in [
        "bin",
        "build/release/deps",
        "src/services",
        "patches/httparse",
    ] {
        std::fs::create_dir_all(built.join(sub)).unwrap();
    }
    let bin_path = built.join("bin/ping-epoll");
    std::fs::write(&bin_path, vec![7u8; 4_000]).unwrap();
    std::fs::write(
        built.join("build/release/deps/libbig.rlib"),
        vec![0u8; 3_000_000],
    )
    .unwrap();
    std::fs::write(built.join("src/services/Cargo.toml"), vec![0u8; 20_000]).unwrap();
    std::fs::write(built.join("patches/httparse/lib.rs"), vec![0u8; 10_000]).unwrap();
    let record = serde_json::json!({
        "service": "ping-epoll@head", "base": "ping-epoll", "variant": "head", "rev": "HEAD",
        "commit": "bc75609d1e73".repeat(3),
        "patches": {"httparse": {"source": "git", "git": "file:///x", "rev": "pr",
                                 "commit": "4bb278637a01".repeat(3)}},
        "resolved": {}, "cargo_lock_sha256": "0", "cache_key": "0123456789abcdef",
        "build_command": "cargo build", "cached": false,
        "binary": bin_path.display().to_string(), "binary_sha256": "0"
    });
    std::fs::write(built.join("variant.json"), record.to_string()).unwrap();
    // Interrupted: a build directory and no record.
    let partial = cache.join("fedcba9876543210/build");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::write(partial.join("x"), vec![0u8; 1_000]).unwrap();

    let out = variants(&cache, &["list"]);
    let text = out_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("2 entries"), "{text}");
    assert!(
        text.contains("built ping-epoll@head at bc75609d1e73, httparse from git 4bb278637a01"),
        "{text}"
    );
    assert!(text.contains("incomplete"), "{text}");

    let out = variants(&cache, &["prune"]);
    let text = out_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // The build directory, the source tree and the patch sources: 3,030,000 bytes.
    assert!(
        text.contains("freed 3.0 MB (3030000 bytes) (3 removed"),
        "{text}"
    );
    assert!(
        text.contains("removed ") && text.contains("/build"),
        "{text}"
    );
    assert!(bin_path.is_file() && built.join("variant.json").is_file());
    assert!(!built.join("build").exists());
    assert!(
        partial.is_dir(),
        "an incomplete entry is kept: it may be building now"
    );
    let listed = out_text(&variants(&cache, &["list"]));
    assert!(
        listed.contains("built ping-epoll@head"),
        "still reusable: {listed}"
    );

    let out = variants(&cache, &["prune", "--all"]);
    let text = out_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let all = 4_000 + record.to_string().len() + 1_000;
    assert!(
        text.contains(&format!("({all} bytes) (2 removed)")),
        "{text}"
    );
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0);
}

#[test]
fn which_names_every_service_linking_a_crate_and_refuses_bad_names() {
    let which = |k: &str| {
        Command::new(bin("matrix"))
            .args(["which", "--crate", k])
            .output()
            .unwrap()
    };
    let out = which("httparse");
    let text = out_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let n = runner::catalogue::catalogue().len();
    assert!(
        text.contains(&format!("httparse: linked into {n} of {n} services")),
        "{text}"
    );
    assert!(
        text.contains("ping-epoll") && text.contains("directly"),
        "{text}"
    );
    assert!(
        text.contains("ping-tokio-hyper") && text.contains("through hyper"),
        "{text}"
    );
    for (bad, why) in [
        ("no-such-crate", "no service links"),
        ("httparse;rm", "not a crate name"),
        ("a b", "not a crate name"),
        ("", "not a crate name"),
    ] {
        let out = which(bad);
        let text = out_text(&out);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {text}");
        assert!(text.contains(why), "{bad:?}: {text}");
    }
}
