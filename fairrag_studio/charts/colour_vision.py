"""How far apart colours look, with normal colour vision and with the common colour-vision deficiencies.

Pure numpy, so the palette can be checked in a test:

* ``#RRGGBB`` → sRGB in [0, 1] → linear RGB (IEC 61966-2-1 transfer curve) → CIE XYZ (sRGB primaries, D65)
  → CIELAB (D65 white, the white of the sRGB matrix itself so that ``#FFFFFF`` is L* = 100, a* = b* = 0);
* the CIEDE2000 colour difference ΔE00 (CIE 142-2001), written from G. Sharma, W. Wu and E. N. Dalal (2005),
  "The CIEDE2000 color-difference formula: implementation notes, supplementary test data, and mathematical
  observations", *Color Research & Application* 30(1):21–30 — including its notes on the hue angle of a neutral
  colour (0), the mean hue when the two hues are more than 180° apart, and Δh' when one chroma is 0;
* dichromacy simulated with the matrices of G. M. Machado, M. M. Oliveira and L. A. F. Fernandes (2009),
  "A Physiologically-based Model for Simulation of Color Vision Deficiency", *IEEE Transactions on Visualization
  and Computer Graphics* 15(6):1291–1298 (doi:10.1109/TVCG.2009.113), at severity 1.0 (protanopia, deuteranopia,
  tritanopia). The matrices act on *linear* RGB; the result is clipped to the gamut before it goes to CIELAB.

ΔE00 ≈ 1 is a just-noticeable difference between large patches side by side; colours that must be told apart in
a legend, on a projector and as thin bars need far more (see ``tests/studio/test_palette.py`` for the bounds).

>>> round(delta_e2000([50.0, 2.6772, -79.7751], [50.0, 0.0, -82.7485]), 4)  # Sharma et al., pair 1
2.0425
>>> round(min_pairwise_distance(["#000000", "#FFFFFF"]), 1)
100.0
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "VISIONS", "hex_to_srgb", "srgb_to_linear", "linear_to_srgb", "linear_to_lab", "hex_to_lab", "simulate",
    "simulate_hex", "delta_e2000", "pairwise_distances", "min_pairwise_distance", "relative_luminance",
    "contrast_ratio",
]

VISIONS = ("normal", "protanopia", "deuteranopia", "tritanopia")

# Linear sRGB → XYZ: the sRGB primaries and D65 white (x, y) = (0.3127, 0.3290), to seven decimals.
_RGB_TO_XYZ = np.array([
    [0.4124564, 0.3575761, 0.1804375],
    [0.2126729, 0.7151522, 0.0721750],
    [0.0193339, 0.1191920, 0.9503041],
])
_WHITE = _RGB_TO_XYZ.sum(axis=1)  # XYZ of RGB (1, 1, 1), i.e. D65 (0.95047, 1.0, 1.08883)
_WCAG_LUMINANCE = np.array([0.2126, 0.7152, 0.0722])  # WCAG 2 rounds the Y row to four decimals

# Machado, Oliveira & Fernandes (2009), severity 1.0; rows give the simulated linear R, G, B.
_MACHADO_2009 = {
    "protanopia": np.array([
        [0.152286, 1.052583, -0.204868],
        [0.114503, 0.786281, 0.099216],
        [-0.003882, -0.048116, 1.051998],
    ]),
    "deuteranopia": np.array([
        [0.367322, 0.860646, -0.227968],
        [0.280085, 0.672501, 0.047413],
        [-0.011820, 0.042940, 0.968881],
    ]),
    "tritanopia": np.array([
        [1.255528, -0.076749, -0.178779],
        [-0.078411, 0.930809, 0.147602],
        [0.004733, 0.691367, 0.303900],
    ]),
}


def hex_to_srgb(colours: str | Sequence[str]) -> np.ndarray:
    """``#RRGGBB`` (or ``RRGGBB``, or a sequence of them) as sRGB in [0, 1], shape (..., 3)."""
    single = isinstance(colours, str)
    values = []
    for colour in [colours] if single else colours:
        text = str(colour).strip().lstrip("#")
        if len(text) != 6:
            raise ValueError(f"expected a #RRGGBB colour, got {colour!r}")
        values.append([int(text[i : i + 2], 16) for i in (0, 2, 4)])
    rgb = np.asarray(values, dtype=float).reshape(-1, 3) / 255.0
    return rgb[0] if single else rgb


def srgb_to_linear(rgb: np.ndarray) -> np.ndarray:
    """The sRGB transfer curve undone: gamma-encoded [0, 1] → linear light."""
    rgb = np.asarray(rgb, dtype=float)
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(linear: np.ndarray) -> np.ndarray:
    """Linear light → gamma-encoded sRGB (clipped to [0, 1])."""
    linear = np.clip(np.asarray(linear, dtype=float), 0.0, 1.0)
    return np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)


def linear_to_lab(linear: np.ndarray) -> np.ndarray:
    """Linear sRGB (..., 3) → CIELAB (..., 3), D65."""
    xyz = np.asarray(linear, dtype=float) @ _RGB_TO_XYZ.T / _WHITE
    epsilon, kappa = 216 / 24389, 24389 / 27
    f = np.where(xyz > epsilon, np.cbrt(xyz), (kappa * xyz + 16) / 116)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def _check_vision(vision: str) -> None:
    if vision not in VISIONS:
        raise ValueError(f"vision must be one of {', '.join(VISIONS)}; got {vision!r}")


def simulate(linear: np.ndarray, vision: str = "normal") -> np.ndarray:
    """Linear sRGB as seen with ``vision`` (Machado et al. 2009, severity 1.0), clipped to [0, 1]."""
    _check_vision(vision)
    linear = np.asarray(linear, dtype=float)
    if vision == "normal":
        return linear
    return np.clip(linear @ _MACHADO_2009[vision].T, 0.0, 1.0)


def _check_flare(flare: float) -> float:
    if not 0.0 <= flare < 1.0:
        raise ValueError(f"flare must be in [0, 1); got {flare!r}")
    return float(flare)


def hex_to_lab(colours: str | Sequence[str], vision: str = "normal", *, flare: float = 0.0) -> np.ndarray:
    """CIELAB of ``#RRGGBB`` colours, as seen with ``vision``.

    ``flare`` models stray light on a projection screen (or a glossy display): that fraction of white is added
    in linear light, ``(1 - flare) * rgb + flare``, and the eye adapts to the (still white) white. It lifts the
    dark colours most, so differences among them shrink.
    """
    linear = simulate(srgb_to_linear(hex_to_srgb(colours)), vision)
    flare = _check_flare(flare)
    return linear_to_lab(linear * (1 - flare) + flare if flare else linear)


def simulate_hex(colours: Sequence[str], vision: str) -> list[str]:
    """The colours as a person with ``vision`` would see them, as ``#RRGGBB`` (for previews)."""
    srgb = linear_to_srgb(simulate(srgb_to_linear(hex_to_srgb(list(colours))), vision))
    return ["#{:02X}{:02X}{:02X}".format(*row) for row in np.rint(srgb * 255).astype(int).tolist()]


def delta_e2000(lab1: np.ndarray | Sequence[float], lab2: np.ndarray | Sequence[float], *,
                k_l: float = 1.0, k_c: float = 1.0, k_h: float = 1.0) -> np.ndarray | float:
    """CIEDE2000 colour difference between CIELAB colours (broadcasting over leading axes).

    A float for two single colours, else an array. Follows Sharma, Wu & Dalal (2005), eqs. (1)–(22).
    """
    lab1, lab2 = np.asarray(lab1, dtype=float), np.asarray(lab2, dtype=float)
    l1, a1, b1 = lab1[..., 0], lab1[..., 1], lab1[..., 2]
    l2, a2, b2 = lab2[..., 0], lab2[..., 1], lab2[..., 2]

    # a* is stretched for near-neutral colours (G), then C' and h' are taken from (a', b*).
    c_mean = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_mean**7 / (c_mean**7 + 25.0**7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    # a neutral colour's hue is 0 by convention (atan2(0, 0) is 0 in numpy already)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360

    delta_l = l2 - l1
    delta_c = c2p - c1p
    chroma_product = c1p * c2p
    dh = h2p - h1p
    dh = np.where(dh > 180, dh - 360, np.where(dh < -180, dh + 360, dh))
    dh = np.where(chroma_product == 0, 0.0, dh)
    delta_h = 2 * np.sqrt(chroma_product) * np.sin(np.radians(dh) / 2)

    l_mean = (l1 + l2) / 2
    cp_mean = (c1p + c2p) / 2
    h_sum = h1p + h2p
    h_mean = np.where(np.abs(h1p - h2p) <= 180, h_sum / 2, np.where(h_sum < 360, (h_sum + 360) / 2, (h_sum - 360) / 2))
    h_mean = np.where(chroma_product == 0, h_sum, h_mean)

    t = (1 - 0.17 * np.cos(np.radians(h_mean - 30)) + 0.24 * np.cos(np.radians(2 * h_mean))
         + 0.32 * np.cos(np.radians(3 * h_mean + 6)) - 0.20 * np.cos(np.radians(4 * h_mean - 63)))
    delta_theta = 30 * np.exp(-(((h_mean - 275) / 25) ** 2))
    r_c = 2 * np.sqrt(cp_mean**7 / (cp_mean**7 + 25.0**7))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / np.sqrt(20 + (l_mean - 50) ** 2)
    s_c = 1 + 0.045 * cp_mean
    s_h = 1 + 0.015 * cp_mean * t
    r_t = -np.sin(np.radians(2 * delta_theta)) * r_c

    term_l = delta_l / (k_l * s_l)
    term_c = delta_c / (k_c * s_c)
    term_h = delta_h / (k_h * s_h)
    result = np.sqrt(term_l**2 + term_c**2 + term_h**2 + r_t * term_c * term_h)
    return float(result) if result.ndim == 0 else result


def pairwise_distances(colours: Sequence[str], vision: str = "normal", *, flare: float = 0.0) -> np.ndarray:
    """The (n, n) matrix of ΔE00 between ``#RRGGBB`` colours as seen with ``vision`` (diagonal 0); ``flare`` as
    in :func:`hex_to_lab`."""
    lab = hex_to_lab(list(colours), vision, flare=flare)
    return np.asarray(delta_e2000(lab[:, None, :], lab[None, :, :]))


def min_pairwise_distance(colours: Sequence[str], vision: str = "normal", *, flare: float = 0.0) -> float:
    """The smallest ΔE00 between any two of ``colours`` as seen with ``vision`` ("normal", "protanopia",
    "deuteranopia" or "tritanopia"), optionally under ``flare`` (see :func:`hex_to_lab`); ``inf`` for fewer
    than two colours."""
    _check_vision(vision)
    _check_flare(flare)
    if len(colours) < 2:
        return float("inf")
    distances = pairwise_distances(colours, vision, flare=flare)
    return float(distances[np.triu_indices(len(colours), k=1)].min())


def relative_luminance(colour: str) -> float:
    """WCAG 2 relative luminance of ``#RRGGBB`` (0 = black, 1 = white)."""
    return float(srgb_to_linear(hex_to_srgb(colour)) @ _WCAG_LUMINANCE)


def contrast_ratio(first: str, second: str) -> float:
    """WCAG 2 contrast ratio (1 to 21) between two ``#RRGGBB`` colours.

    >>> round(contrast_ratio("#000000", "#FFFFFF"), 2)
    21.0
    """
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)
