//! The HTML shell: inline style and script (from `runner/assets/viewer/`, compiled in) and
//! the view model embedded as JSON, escaped so no `</script>` or `<!--` can end it early.
//! One file, no network: it opens from `file://` as it does over HTTP. The site's compare
//! pairs are scripts beside it (`pair_script`) that its compare view inserts on demand.

const STYLE: &str = include_str!("../../../assets/viewer/style.css");
const COMMON_JS: &str = include_str!("../../../assets/viewer/common.js");
const RUN_JS: &str = include_str!("../../../assets/viewer/run.js");
const SITE_JS: &str = include_str!("../../../assets/viewer/site.js");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Run,
    Site,
}

/// `<` `>` `&` as JSON escapes: the text stays valid JSON and can hold no markup.
pub fn escape_json_for_script(json: &str) -> String {
    let mut s = String::with_capacity(json.len() + 64);
    for ch in json.chars() {
        match ch {
            '<' => s.push_str("\\u003c"),
            '>' => s.push_str("\\u003e"),
            '&' => s.push_str("\\u0026"),
            // Line and paragraph separators are valid JSON but were not valid JS strings.
            '\u{2028}' => s.push_str("\\u2028"),
            '\u{2029}' => s.push_str("\\u2029"),
            c => s.push(c),
        }
    }
    s
}

fn escape_text(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The function a pair's script calls with its comparison (site.js defines it).
pub const PAIR_CALLBACK: &str = "pingmatrixPair";

/// A compare pair as a script: one call with the pair's JSON, which is a valid JS literal
/// once U+2028/9 are escaped (and holds no markup, as in the page).
pub fn pair_script(json: &str) -> String {
    format!(
        "// pingmatrix matrix {}: one compare pair of the site, loaded by its index.html.\n{PAIR_CALLBACK}({});\n",
        env!("CARGO_PKG_VERSION"),
        escape_json_for_script(json)
    )
}

/// The page around its data. The empty `data:` icon keeps browsers from asking the server
/// for /favicon.ico (a 404, i.e. a console error, over HTTP).
pub fn render(title: &str, kind: Kind, json: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        serde_json::from_str::<serde_json::Value>(json).is_ok(),
        "the viewer's data is not valid JSON"
    );
    let script = match kind {
        Kind::Run => RUN_JS,
        Kind::Site => SITE_JS,
    };
    let kind_name = match kind {
        Kind::Run => "run",
        Kind::Site => "site",
    };
    Ok(format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<meta name=\"generator\" content=\"pingmatrix matrix {version}\">\n\
<title>{title}</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>\n{STYLE}</style>\n</head>\n\
<body data-kind=\"{kind_name}\">\n<div id=\"app\"><noscript>This page draws its tables and charts with JavaScript; results.md next to it has the same numbers as text.</noscript></div>\n\
<script type=\"application/json\" id=\"data\">{data}</script>\n\
<script>\n{COMMON_JS}\n{script}\n</script>\n</body>\n</html>\n",
        version = env!("CARGO_PKG_VERSION"),
        title = escape_text(title),
        data = escape_json_for_script(json),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_json_cannot_close_its_script_and_still_parses() {
        let json = r#"{"reason":"</script><script>alert(1)</script> & <!-- \u2028"}"#;
        let html = render("a <b> run", Kind::Run, json).unwrap();
        let start = html.find("id=\"data\">").unwrap() + "id=\"data\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        let embedded = &html[start..end];
        assert!(!embedded.contains('<') && !embedded.contains('>'));
        let back: serde_json::Value = serde_json::from_str(embedded).unwrap();
        assert_eq!(
            back["reason"],
            "</script><script>alert(1)</script> & <!-- \u{2028}"
        );
        assert!(html.contains("<title>a &lt;b&gt; run</title>"));
    }

    #[test]
    fn the_page_needs_no_network() {
        let html = render("t", Kind::Site, "{}").unwrap();
        for needle in [
            "src=\"http",
            "href=\"http",
            "fetch(",
            "XMLHttpRequest",
            "@import",
            "url(",
        ] {
            assert!(!html.contains(needle), "page refers to {needle}");
        }
    }

    /// A malformed fragment (`#tab=%`) used to throw in decodeURIComponent and leave the
    /// page blank. Runs the page's own state reader under node, where there is one.
    #[test]
    fn a_malformed_fragment_is_ignored_not_fatal() {
        let harness = format!(
            "const document = {{ getElementById: () => ({{ textContent: \"{{}}\" }}) }};\n\
             const location = {{ hash: \"#tab=%&level=c64&%E0%A4%A=x&sort&=y&view=a%20b\" }};\n\
             {COMMON_JS}\n\
             console.log(JSON.stringify(state.get()));\n"
        );
        let out = match std::process::Command::new("node")
            .args(["-e", &harness])
            .output()
        {
            Ok(o) => o,
            Err(_) => {
                eprintln!("node not found: the fragment check is left to the browser test");
                return;
            }
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(got, serde_json::json!({"level": "c64", "view": "a b"}));
    }

    #[test]
    fn a_pair_script_is_one_call_with_the_json() {
        let json = r#"{"file":"compare/a__b.js","markdown":"| a </script> |"}"#;
        let js = pair_script(json);
        let call = js.lines().nth(1).unwrap();
        let arg = call
            .strip_prefix(&format!("{PAIR_CALLBACK}("))
            .and_then(|c| c.strip_suffix(");"))
            .unwrap();
        let back: serde_json::Value = serde_json::from_str(arg).unwrap();
        assert_eq!(back["markdown"], "| a </script> |");
        assert!(SITE_JS.contains(&format!("window.{PAIR_CALLBACK} =")));
    }

    #[test]
    fn invalid_json_is_refused() {
        assert!(render("t", Kind::Run, "{").is_err());
    }
}
