//! One fixed colour per service, identical in every chart and every run. Colours come from
//! the Okabe–Ito palette (distinguishable with the common colour-vision deficiencies); the
//! project's services have fixed entries, any other name gets a stable hash-picked colour.

use plotters::style::RGBColor;

const OKABE_ITO: [RGBColor; 8] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(120, 120, 120), // grey (replaces Okabe–Ito's yellow, unreadable on white)
    RGBColor(0, 0, 0),       // black
];

/// Services of this project, each pinned to one palette entry.
const FIXED: [(&str, usize); 6] = [
    ("ping-tokio-hyper", 0),
    ("ping-monoio", 1),
    ("ping-may-minihttp", 2),
    ("hello-tokio-hyper", 4),
    ("hello-monoio", 5),
    ("hello-may-minihttp", 3),
];

pub fn colour(service: &str) -> RGBColor {
    if let Some((_, i)) = FIXED.iter().find(|(n, _)| *n == service) {
        return OKABE_ITO[*i];
    }
    // FNV-1a: stable across runs and platforms (std's hasher is randomly seeded).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in service.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    OKABE_ITO[(h % OKABE_ITO.len() as u64) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_and_stable() {
        assert_eq!(colour("ping-monoio"), RGBColor(213, 94, 0));
        assert_eq!(colour("some-new-runtime"), colour("some-new-runtime"));
        assert_ne!(colour("ping-tokio-hyper"), colour("ping-monoio"));
    }
}
