//! One fixed colour per service, identical in every chart and every run. Colours come from
//! the Okabe–Ito palette (distinguishable with the common colour-vision deficiencies),
//! extended with four of Paul Tol's muted colours for the nine services; the project's
//! services have fixed, distinct entries (their `palette` in services/services.toml), any
//! other name gets a stable hash-picked colour.

use plotters::style::RGBColor;

const PALETTE: [RGBColor; 12] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(120, 120, 120), // grey (replaces Okabe–Ito's yellow, unreadable on white)
    RGBColor(0, 0, 0),       // black
    RGBColor(136, 34, 85),   // wine (Tol)
    RGBColor(68, 170, 153),  // teal (Tol)
    RGBColor(153, 153, 51),  // olive (Tol)
    RGBColor(170, 68, 153),  // purple (Tol)
];

/// Hello-world baselines with a fixed palette entry (the services' entries are in the
/// services list).
const FIXED_BASELINES: [(&str, usize); 3] = [
    ("hello-tokio-hyper", 4),
    ("hello-monoio", 5),
    ("hello-may-minihttp", 3),
];

pub fn colour(service: &str) -> RGBColor {
    let fixed = crate::catalogue::find(service)
        .map(|s| s.palette)
        .or_else(|| {
            FIXED_BASELINES
                .iter()
                .find(|(n, _)| *n == service)
                .map(|(_, i)| *i)
        });
    if let Some(i) = fixed.filter(|&i| i < PALETTE.len()) {
        return PALETTE[i];
    }
    // FNV-1a: stable across runs and platforms (std's hasher is randomly seeded).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in service.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    PALETTE[(h % PALETTE.len() as u64) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_and_stable() {
        assert_eq!(colour("ping-monoio"), RGBColor(213, 94, 0));
        assert_eq!(colour("some-new-runtime"), colour("some-new-runtime"));
        assert_ne!(colour("ping-tokio-hyper"), colour("ping-monoio"));
        let services: Vec<&str> = crate::catalogue::catalogue()
            .iter()
            .map(|s| {
                assert!(
                    s.palette < PALETTE.len(),
                    "{}: no palette entry {}",
                    s.name,
                    s.palette
                );
                s.name.as_str()
            })
            .collect();
        for (i, a) in services.iter().enumerate() {
            for b in &services[i + 1..] {
                assert_ne!(colour(a), colour(b), "{a} and {b} share a colour");
            }
        }
    }
}
