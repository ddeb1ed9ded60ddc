//! One fixed colour per service, identical in every chart and every run. Colours come from
//! the Okabe–Ito palette (distinguishable with the common colour-vision deficiencies),
//! extended with four of Paul Tol's muted colours for the nine services; the project's
//! services have fixed, distinct entries, any other name gets a stable hash-picked colour.

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

/// Services of this project, each pinned to one palette entry.
const FIXED: [(&str, usize); 12] = [
    ("ping-tokio-hyper", 0),
    ("ping-monoio", 1),
    ("ping-may-minihttp", 2),
    ("ping-tokio-per-core", 4),
    ("ping-axum", 8),
    ("ping-actix-web", 5),
    ("ping-glommio", 3),
    ("ping-compio", 9),
    ("ping-epoll", 7),
    ("hello-tokio-hyper", 4),
    ("hello-monoio", 5),
    ("hello-may-minihttp", 3),
];

pub fn colour(service: &str) -> RGBColor {
    if let Some((_, i)) = FIXED.iter().find(|(n, _)| *n == service) {
        return PALETTE[*i];
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
        let services = [
            "ping-tokio-hyper",
            "ping-monoio",
            "ping-may-minihttp",
            "ping-tokio-per-core",
            "ping-axum",
            "ping-actix-web",
            "ping-glommio",
            "ping-compio",
            "ping-epoll",
        ];
        for (i, a) in services.iter().enumerate() {
            for b in &services[i + 1..] {
                assert_ne!(colour(a), colour(b), "{a} and {b} share a colour");
            }
        }
    }
}
