//! The project's services as one list (services/services.toml, compiled in by ping-catalogue):
//! name, crate dir, runtime, runtime model, I/O driver, chart colour. The runner's modules
//! reach the list through here. The matrix files still name their services themselves (they
//! are user configuration); a test here keeps both committed ones naming exactly these.

pub use ping_catalogue::{IO_DRIVERS, MODELS, Service, catalogue, find, runtime_crates};

#[cfg(test)]
mod tests {
    use super::*;

    /// `[[services]]` names of a matrix file in the repository root.
    fn matrix_services(file: &str) -> Vec<String> {
        let path = format!("{}/../{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let value: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        value["services"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}: no [[services]]"))
            .iter()
            .map(|s| s["binary"].as_str().expect("binary").to_owned())
            .collect()
    }

    #[test]
    fn both_matrix_files_name_exactly_the_listed_services() {
        let mut listed: Vec<String> = catalogue().iter().map(|s| s.name.clone()).collect();
        listed.sort();
        for file in ["matrix.toml", "matrix-full.toml"] {
            let mut named = matrix_services(file);
            named.sort();
            assert_eq!(named, listed, "{file} vs services/services.toml");
        }
    }

    #[test]
    fn models_and_drivers_are_known() {
        for s in catalogue() {
            assert!(MODELS.contains(&s.model.as_str()), "{}", s.name);
            assert!(IO_DRIVERS.contains(&s.io_driver.as_str()), "{}", s.name);
        }
        assert_eq!(find("ping-monoio").unwrap().io_driver, "io_uring-or-epoll");
    }
}
