//! A result set is untrusted input: people download, share and compare them. Everything read
//! from one passes through here once, as it is loaded (`set::load`), so that nothing read from
//! it reaches a command line as an option, a path outside its run, or the terminal as a
//! control sequence:
//!
//! - every string's control characters are made visible text (`\u{1b}`), so printing a
//!   result set's text can never clear a screen or move the cursor ([`visible`]);
//! - cell keys, which become file names, are plain file names ([`check_key`]);
//! - commits, which are handed to git, are hex ([`check_commit`]);
//! - paths a cell records (flame graph files) stay inside the run ([`check_relative`]).
//!
//! [`visible`] is also the one escaping for text that does not come from a file's contents
//! but may still be hostile — directory names, and errors that quote them — when printed.

use std::borrow::Cow;
use std::path::{Component, Path};

use anyhow::Context;
use serde::de::DeserializeOwned;

use super::schema::Profile;
use super::schema::{CellResult, ResultsFile, RunRecord};

/// Whether `c` must not reach a terminal as itself: C0 controls but newline and tab, DEL, C1
/// controls, and the Unicode direction overrides that reorder what a line appears to say.
fn is_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every control character written as visible text (`\u{1b}`); newlines and tabs
/// stay. The one escaping for printing anything a result set (or its directory's name) holds.
pub fn visible(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_control(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Every string in a parsed JSON document (object keys too) made [`visible`].
fn make_visible(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            if let Cow::Owned(o) = visible(s) {
                *s = o;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(make_visible),
        Value::Object(m) => {
            if m.keys().any(|k| k.chars().any(is_control)) {
                let old = std::mem::take(m);
                for (k, mut v) in old {
                    make_visible(&mut v);
                    m.insert(visible(&k).into_owned(), v);
                }
            } else {
                m.values_mut().for_each(make_visible);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The largest magnitude a number of a result set may have: what a u64 holds (a count, bytes,
/// a Unix time in microseconds). Below it, sums of squares over any number of repetitions stay
/// finite; a huge finite value (1e300) summed to infinity, which results.json then held as
/// `null` and could not be read back.
pub const MAX_NUMBER: f64 = u64::MAX as f64;

/// Every number in a parsed JSON document finite and within [`MAX_NUMBER`]; Err names the
/// first that is not by its place (`.reps[0].server.cpu_us_per_request`).
pub fn check_numbers(v: &serde_json::Value) -> anyhow::Result<()> {
    fn walk(v: &serde_json::Value, at: &mut String) -> anyhow::Result<()> {
        use serde_json::Value;
        match v {
            Value::Number(n) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                anyhow::ensure!(
                    x.is_finite() && x.abs() <= MAX_NUMBER,
                    "{} = {n} is out of range (a result's numbers are finite and at most {:e} \
                     in size)",
                    if at.is_empty() { "." } else { at.as_str() },
                    MAX_NUMBER
                );
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    let len = at.len();
                    at.push_str(&format!("[{i}]"));
                    walk(x, at)?;
                    at.truncate(len);
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    let len = at.len();
                    at.push('.');
                    at.push_str(&visible(k));
                    walk(x, at)?;
                    at.truncate(len);
                }
            }
            Value::Null | Value::Bool(_) | Value::String(_) => {}
        }
        Ok(())
    }
    walk(v, &mut String::new())
}

/// A JSON file of a result set, parsed with every string made [`visible`] and every number
/// checked ([`check_numbers`]).
pub fn read_json<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    check_numbers(&v).with_context(|| format!("{}", path.display()))?;
    make_visible(&mut v);
    serde_json::from_value(v).with_context(|| format!("parsing {}", path.display()))
}

/// A cell key is a plain file name (`cells/<key>.json`, `flamegraphs/<key>.svg`): letters,
/// digits and `-_.@+`, not starting with a dot — never a path, `..` or an option.
pub fn check_key(key: &str) -> anyhow::Result<()> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_.@+".contains(c);
    anyhow::ensure!(
        !key.is_empty() && key.len() <= 240 && !key.starts_with('.') && key.chars().all(ok),
        "cell key {:?} is not a cell key (letters, digits, '-', '_', '.', '@', '+'; \
         it names files in the run directory)",
        key
    );
    Ok(())
}

/// A recorded name views print as is (a TLS suite, "http/1.1"): letters, digits and `-_./+`,
/// so it cannot become markup.
pub fn check_word(w: &str) -> anyhow::Result<()> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_./+".contains(c);
    anyhow::ensure!(
        w.len() <= 80 && w.chars().all(ok),
        "{:?} is not a plain name (letters, digits, '-', '_', '.', '/', '+')",
        visible(w)
    );
    Ok(())
}

/// A recorded commit: a hex object name (4 to 64 digits) or "unknown".
pub fn check_commit(commit: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        commit == "unknown"
            || ((4..=64).contains(&commit.len()) && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "git commit {:?} is not a commit hash (hex digits)",
        commit
    );
    Ok(())
}

/// A path recorded in a run, relative to its directory: no root, no `..`.
pub fn check_relative(p: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(
        !p.as_os_str().is_empty() && p.components().all(|c| matches!(c, Component::Normal(_))),
        "path {:?} is not inside the run directory (absolute, or with '..')",
        p.display().to_string()
    );
    Ok(())
}

/// The checks on results.json.
pub fn check_results(r: &ResultsFile) -> anyhow::Result<()> {
    for c in &r.cells {
        check_key(&c.key)?;
        if let Some(t) = &c.tls {
            for w in [
                &t.version,
                &t.suite,
                &t.key_exchange,
                &t.alpn,
                &t.server_key,
            ] {
                check_word(w).with_context(|| format!("{}: tls", c.key))?;
            }
        }
    }
    for v in &r.verdicts {
        check_key(&v.key)?;
    }
    if let Some(d) = &r.drift {
        check_key(&d.key)?;
    }
    Ok(())
}

/// The checks on run.json: the plan's keys and every commit git could be handed.
pub fn check_run(r: &RunRecord) -> anyhow::Result<()> {
    for c in &r.plan {
        check_key(&c.key)?;
    }
    for n in &r.not_applicable {
        check_key(&n.service).context("not_applicable: a service")?;
        check_key(&n.scenario).context("not_applicable: a scenario")?;
    }
    let env = &r.environment;
    if let Some(c) = &env.source.git_commit {
        check_commit(c).context("environment.source.git_commit")?;
    }
    if let Some(b) = env
        .loadgen_version
        .as_deref()
        .and_then(|v| pingmatrix_stamp::find(v.as_bytes()))
    {
        check_commit(&b.commit).context("environment.loadgen_version")?;
    }
    Ok(())
}

/// The checks on a cell file: its key, and its flame graph files inside the run.
pub fn check_cell(c: &CellResult) -> anyhow::Result<()> {
    check_key(&c.cell.key)?;
    check_key(&c.summary.key)?;
    if let Some(Profile::Recorded(r)) = c.flamegraph.as_ref().and_then(|f| f.profile.as_ref()) {
        check_relative(&r.folded)?;
        for p in r.svg.iter().chain(&r.perf_data) {
            check_relative(p)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_out_of_range_are_refused_with_their_place() {
        let ok: serde_json::Value =
            serde_json::from_str(r#"{"a": [1, -2.5, 18446744073709551615], "b": null}"#).unwrap();
        check_numbers(&ok).unwrap();
        let huge: serde_json::Value =
            serde_json::from_str(r#"{"reps": [{"x": 1}, {"x": 1e300}]}"#).unwrap();
        let e = check_numbers(&huge).unwrap_err().to_string();
        assert!(e.contains(".reps[1].x = 1e+300 is out of range"), "{e}");
        let negative: serde_json::Value = serde_json::from_str(r#"[-1e30]"#).unwrap();
        assert!(check_numbers(&negative).is_err());
    }

    #[test]
    fn control_characters_become_visible_text() {
        assert_eq!(visible("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(visible("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(
            visible("x\r\u{7f}\u{9b}\u{202e}"),
            "x\\u{d}\\u{7f}\\u{9b}\\u{202e}"
        );
        let mut v: serde_json::Value =
            serde_json::json!({"k\u{1b}": ["\u{1b}[31mred", {"n": 1, "s": "\u{7}"}]});
        make_visible(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"k\\u{1b}": ["\\u{1b}[31mred", {"n": 1, "s": "\\u{7}"}]})
        );
    }

    #[test]
    fn keys_commits_and_paths_from_a_result_set_are_checked() {
        for k in [
            "ping-epoll__ping__c64__pinned",
            "ping-tokio-hyper@tokio-1.50.0__ping-open__r20000__pinned",
        ] {
            check_key(k).unwrap();
        }
        for k in [
            "",
            "..",
            "../x",
            "/etc/passwd",
            "a/b",
            ".hidden",
            "--output=x",
            "a\\b",
        ] {
            assert!(check_key(k).is_err(), "{k:?}");
        }
        check_commit("492c110060d6a94811e21950bde2765b2de24847").unwrap();
        check_commit("unknown").unwrap();
        for c in ["--output=/tmp/x", "HEAD", "", "abc", "12345g7", "-1234"] {
            assert!(check_commit(c).is_err(), "{c:?}");
        }
        check_relative(Path::new("flamegraphs/a.folded")).unwrap();
        for p in ["/tmp/a.folded", "../a.folded", "flamegraphs/../../a", ""] {
            assert!(check_relative(Path::new(p)).is_err(), "{p:?}");
        }
    }
}
