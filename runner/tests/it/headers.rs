//! A scenario's `headers` (F15): recorded in the cell spec, sent by loadgen and by the
//! instruction count alike — a browser's 14 headers cost a parser more than `Host` alone.

use std::path::Path;

use crate::support::live::{
    bin, matrix_at, only_run_dir, out_text, read, tiny_matrix, write_config,
};

#[test]
fn browser_like_headers_are_recorded_and_counted() {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("headers-browser");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let text = tiny_matrix(&[("ping-epoll", bin("ping-epoll"), "")], 1, "", "")
        .replace("connections = [4]", "connections = [1]")
        .replacen(
            "\n[[scenarios]]",
            "\n[[scenarios]]\nname = \"browser\"\npath = \"/ping\"\nheaders = \"browser-like\"\n\
             expect_body_bytes = 4\nload = { model = \"closed\", connections = [1] }\n\
             \n[[scenarios]]",
            1,
        );
    let m = write_config(&d, &text);
    let out_dir = d.join("out");
    let out = matrix_at(
        &m,
        &out_dir,
        &[
            "run",
            "--quiet",
            "--only",
            "scenario=ping,browser",
            "--count-instructions",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let run = only_run_dir(&out_dir);
    let cell = |scenario: &str| -> serde_json::Value {
        read(
            &run.join("cells")
                .join(format!("ping-epoll__{scenario}__c1__pinned.json")),
        )
    };
    let (plain, browser) = (cell("ping"), cell("browser"));
    assert_eq!(browser["status"], "ok", "{browser}");
    let headers = browser["cell"]["headers"].as_array().unwrap();
    assert_eq!(headers.len(), 14, "{headers:?}");
    assert!(
        headers[5]
            .as_str()
            .unwrap()
            .starts_with("User-Agent: Mozilla/5.0")
    );
    assert!(plain["cell"].get("headers").is_none(), "{plain}");
    let per = |c: &serde_json::Value| {
        c["reps"][0]["instructions"]["per_request"]
            .as_f64()
            .unwrap_or_else(|| panic!("no count: {c}"))
    };
    let (p, b) = (per(&plain), per(&browser));
    eprintln!("instructions/request: plain {p:.0}, browser-like {b:.0}");
    // 14 more headers to parse and 631 more bytes to read: the count sent them too.
    assert!(b > p * 1.05, "plain {p}, browser-like {b}");
    let plan: serde_json::Value = read(&run.join("run.json"));
    let spec = plan["plan"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scenario"] == "browser")
        .unwrap();
    assert_eq!(spec["headers"].as_array().map(Vec::len), Some(14));
    std::fs::remove_dir_all(&d).unwrap();
}
